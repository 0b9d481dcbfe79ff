"""`scrapy site_stats` on a large archive: its grouped queries over N articles.

Fills a fresh database (SQLite file, or a new MariaDB database) with ``--sites`` sites and
``--articles`` articles spread over the last 400 days with mixed schedule states, by bulk
inserts; then times ``site_stats()`` (the command's whole query work) ``--repeat`` times.
With ``--keep`` the filled databases (``bench-site-stats.db`` in the system's temporary
directory, MariaDB database ``zeroarchive_bench_site_stats``) stay for the next run, which
reuses them when they hold as many articles, brought to the newest schema first.

    python bench/site_stats.py [--articles 1000000] [--sites 200] [--backend sqlite|mariadb|both]
        [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import create_engine, text  # noqa: E402

from zeroarchive.core.schedule import DAY, STOP  # noqa: E402
from zeroarchive.storage.engine import make_engine, migrate  # noqa: E402
from zeroarchive.storage.schema import article, site  # noqa: E402
from zeroarchive.storage.site_stats import SiteStatsConfig, site_stats  # noqa: E402

MARIADB = os.environ.get("ZEROARCHIVE_TEST_MARIADB", "mysql+pymysql://root@127.0.0.1:3306")
CHUNK = 20_000
KEPT = "zeroarchive_bench_site_stats"


def filled_articles(url: str) -> int:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT COUNT(*) FROM Article")).scalar_one())
    except Exception:
        return 0
    finally:
        engine.dispose()


def fill(url: str, sites: int, articles: int, now: int) -> float:
    engine = make_engine(url)
    migrate(engine)
    rng = random.Random(5)
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(
            site.insert(),
            [
                {
                    "name": f"site-{n}",
                    "url": f"https://site-{n}.example/",
                    "type": "news",
                    "config": "{}",
                    "is_active": n % 10 != 0,
                    "created_at": now - 500 * DAY,
                    "updated_at": now - 500 * DAY,
                    "last_crawl_at": now - 600,
                    "next_crawl_at": now,
                    "last_list_ok_at": now - 600,
                }
                for n in range(1, sites + 1)
            ],
        )
    done = 0
    while done < articles:
        rows = []
        for n in range(done, min(done + CHUNK, articles)):
            created = now - int(rng.random() ** 2 * 400 * DAY)
            finished = now - created > DAY
            rows.append(
                {
                    "site_id": rng.randint(1, sites),
                    "url": f"https://example/a/{n}",
                    "url_hash": secrets.token_bytes(16),
                    "article_type": "Article",
                    "created_at": created,
                    "first_snapshot_at": created,
                    "last_snapshot_at": created,
                    "next_snapshot_at": STOP if finished else created + rng.randint(0, 2 * 3600),
                    "snapshot_count": rng.randint(1, 25),
                    "failure_count": rng.choice((0, 0, 0, 0, 1, 5)),
                    "stop_reason": rng.choice(("plan_complete", "gone:http_404"))
                    if finished
                    else None,
                    "lease_until": 0,
                }
            )
        with engine.begin() as conn:
            conn.execute(article.insert(), rows)
        done += len(rows)
    engine.dispose()
    return time.perf_counter() - started


def measure(url: str, now: int, repeat: int) -> list[float]:
    engine = make_engine(url)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        stats = site_stats(engine, now, SiteStatsConfig(3, 3600))
        times.append(time.perf_counter() - started)
    assert stats and sum(s.articles for s in stats) > 0
    engine.dispose()
    return times


def run(backend: str, sites: int, articles: int, repeat: int, keep: bool) -> None:
    now = int(time.time())
    admin = create_engine(f"{MARIADB}/test")
    tmp = tempfile.TemporaryDirectory()
    if backend == "sqlite":
        path = (Path(tempfile.gettempdir()) if keep else Path(tmp.name)) / "bench-site-stats.db"
        url = f"sqlite:///{path}"
    else:
        name = KEPT if keep else f"zeroarchive_bench_{secrets.token_hex(4)}"
        url = f"{MARIADB}/{name}"
    reuse = keep and filled_articles(url) == articles
    if not reuse and backend == "sqlite":
        path.unlink(missing_ok=True)
    elif not reuse:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
            conn.execute(text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
    try:
        if reuse:
            engine = make_engine(url)
            migrate(engine)
            # Measure at the fill's clock: the sites were created 500 days before it.
            with engine.connect() as conn:
                first = conn.execute(text("SELECT MIN(created_at) FROM Site")).scalar_one()
            engine.dispose()
            now, filled = int(first) + 500 * DAY, 0.0
        else:
            filled = fill(url, sites, articles, now)
        times = measure(url, now, repeat)
    finally:
        if backend == "mariadb" and not keep:
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE {name}"))
        admin.dispose()
        tmp.cleanup()
    print(
        f"{backend:8} {articles:>9} articles, {sites} sites: "
        + ("reused the kept database" if reuse else f"filled in {filled:.1f} s")
        + f"; site_stats best {min(times):.2f} s, median {statistics.median(times):.2f} s"
        f" ({repeat} runs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=1_000_000)
    parser.add_argument("--sites", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--backend", choices=("sqlite", "mariadb", "both"), default="both")
    parser.add_argument("--keep", action="store_true", help="keep the filled databases")
    args = parser.parse_args()
    for backend in ("sqlite", "mariadb") if args.backend == "both" else (args.backend,):
        run(backend, args.sites, args.articles, args.repeat, args.keep)


if __name__ == "__main__":
    main()
