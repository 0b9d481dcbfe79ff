"""What recovery costs `scrapy schedule` each round on a large MariaDB archive.

Every round looks for lease owners (``holders()``: the owners of live article leases and
walks starting with ``w``) before it asks redis which of them still beat; once a worker is
found dead, ``release_owners()`` makes what it held due again; after redis lost its queues,
``release_in_flight()`` does so for everything leased. Fills a database with ``--articles``
articles of ``--sites`` news sites, ``--leased`` of them leased by ``--workers`` workers
(as many queued), then times each of these ``--repeat`` times, and ``holders()`` side by
side with the same query told to ignore ``ix_Article_lease_owner`` (what it would cost
without migration 0014's index).

    python bench/recovery.py [--articles 1000000] [--sites 200] [--leased 4000] [--workers 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import create_engine, text  # noqa: E402

from zeroarchive.core.owners import worker_owner  # noqa: E402
from zeroarchive.storage.engine import make_engine, migrate  # noqa: E402
from zeroarchive.storage.leases import holders, release_in_flight, release_owners  # noqa: E402

MARIADB = os.environ.get("ZEROARCHIVE_TEST_MARIADB", "mysql+pymysql://root@127.0.0.1:3306")
NOW = 1_800_000_000


def fill(url: str, sites: int, articles: int, leased: int, workers: list[str]) -> float:
    engine = make_engine(url)
    migrate(engine)
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO Site (site_id, name, url, type, config, is_active, created_at,"
                " updated_at, last_crawl_at, next_crawl_at, last_list_ok_at)"
                " SELECT seq, CONCAT('site-', seq), CONCAT('https://site-', seq, '.example/'),"
                " 'news', '{\"article\": \"/a/\"}', 1, 0, 0, 0, :later, 0"
                f" FROM seq_1_to_{sites}"
            ),
            {"later": NOW + 600},
        )
        conn.execute(
            text(
                "INSERT INTO Article (article_id, site_id, url, url_hash, article_type,"
                " created_at, first_snapshot_at, last_snapshot_at, next_snapshot_at,"
                " snapshot_count, failure_count, snapshot_interval, lease_until, lease_owner)"
                " SELECT seq, 1 + seq % :sites,"
                " CONCAT('https://site-', 1 + seq % :sites, '.example/a/', seq),"
                " UNHEX(LPAD(HEX(seq), 32, '0')), 'Article', 0, 0, 0, :due, 1, 0, 3600, 0,"
                # Done before migration 0014: owners of the old form (hex) stay behind.
                " IF(seq % 3 = 0, SUBSTR(MD5(seq), 1, 16), NULL)"
                f" FROM seq_1_to_{articles}"
            ),
            {"sites": sites, "due": NOW + 3600},
        )
        # The newest ``leased`` articles are in flight: half held by workers, half queued.
        for n, owner in enumerate(workers):
            conn.execute(
                text(
                    "UPDATE Article SET lease_until = :until, lease_owner = :owner"
                    " WHERE article_id > :first AND article_id % :w = :n"
                ),
                {
                    "until": NOW + 3600,
                    "owner": owner if n % 2 == 0 else "q" + owner[1:],
                    "first": articles - leased,
                    "w": len(workers),
                    "n": n,
                },
            )
        conn.execute(text("ANALYZE TABLE Article"))
    engine.dispose()
    return time.perf_counter() - started


def timed(function: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=1_000_000)
    parser.add_argument("--sites", type=int, default=200)
    parser.add_argument("--leased", type=int, default=4000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    name = f"zeroarchive_bench_recovery_{uuid.uuid4().hex[:8]}"
    admin = create_engine(MARIADB)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
    url = f"{MARIADB}/{name}?charset=utf8mb4"
    try:
        workers = [worker_owner() for _ in range(args.workers)]
        seconds = fill(url, args.sites, args.articles, args.leased, workers)
        print(f"filled {args.articles} articles, {args.leased} leased, in {seconds:.1f} s")
        engine = make_engine(url)
        with_index, found = timed(lambda: holders(engine, "w", NOW), args.repeat)
        scan = (
            "SELECT DISTINCT lease_owner FROM Article IGNORE INDEX (ix_Article_lease_owner)"
            " WHERE lease_owner >= 'w' AND lease_owner < 'x' AND lease_until > :now"
        )

        def without_index() -> object:
            with engine.connect() as conn:
                return set(conn.execute(text(scan), {"now": NOW}).scalars())

        without, found_too = timed(without_index, args.repeat)
        assert found == found_too, (found, found_too)
        print(f"holders() every round: {with_index:.2f} ms (index); {without:.1f} ms without it;")
        print(f"  ratio {without / with_index:.0f}x; {len(found)} worker owner(s) found")  # type: ignore[arg-type]
        dead = {workers[0]}
        started = time.perf_counter()
        released = release_owners(engine, dead, NOW + 1)
        one = (time.perf_counter() - started) * 1000
        print(f"release_owners() of one dead worker: {one:.1f} ms ({released.articles} leases)")
        started = time.perf_counter()
        released = release_in_flight(engine, ["news"], NOW + 1)
        lost = (time.perf_counter() - started) * 1000
        print(f"release_in_flight() after a flush: {lost:.0f} ms ({released.articles} leases)")
        engine.dispose()
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP DATABASE {name}"))
        admin.dispose()


if __name__ == "__main__":
    main()
