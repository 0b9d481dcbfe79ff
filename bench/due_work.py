"""The selection of due work (zeroarchive/crawl/due_work.py) on a large MariaDB archive.

Fills a MariaDB database with ``--sites`` news sites and ``--articles`` articles (article
ids follow their creation over the last two years, sites interleaved), most of them
finished, ``--scheduled`` of them still on their plan and ``--due`` of those due now, by
bulk ``INSERT ... SELECT`` from MariaDB's sequence engine. Then times, as `scrapy schedule`
runs a round: ``due_sites()`` (which sites have due work), and ``--batches`` successive
``claim_due()`` batches of ``ZEROARCHIVE_DUE_BATCH`` (500) over all of them, each leasing
what it hands out, so later batches must pass over the leased ones; as many over two fifths of the
sites (a claim for one site type of several); then the embedded crawl's per-site batch
(``claim_due()`` for one site). Every lease taken is released at
the end, so a kept database (``--keep``: database ``zeroarchive_bench_due_work``, reused
when it holds as many articles) measures the same state again.

    python bench/due_work.py [--articles 10000000] [--sites 500] [--due 200000] [--keep]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import create_engine, text, update  # noqa: E402

from zeroarchive.core.schedule import DAY  # noqa: E402
from zeroarchive.crawl.due_work import claim_due, due_sites  # noqa: E402
from zeroarchive.storage.archive import Archive, open_archive  # noqa: E402
from zeroarchive.storage.engine import make_engine, migrate  # noqa: E402
from zeroarchive.storage.schema import article  # noqa: E402

MARIADB = os.environ.get("ZEROARCHIVE_TEST_MARIADB", "mysql+pymysql://root@127.0.0.1:3306")
KEPT = "zeroarchive_bench_due_work"
CHUNK = 1_000_000
SPAN = 730 * DAY
BATCH = 500


def fill(url: str, sites: int, articles: int, scheduled: int, due: int, now: int) -> float:
    """Articles n = 1..articles: site n % sites, created evenly over SPAN up to ``now``; the
    newest ``scheduled`` are on their plan, the oldest ``due`` of those due now."""
    engine = make_engine(url)
    migrate(engine)
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO Site (site_id, name, url, type, config, is_active, created_at,"
                " updated_at, last_crawl_at, next_crawl_at, last_list_ok_at)"
                " SELECT seq, CONCAT('site-', seq), CONCAT('https://site-', seq, '.example/'),"
                " 'news', '{\"article\": \"/a/\"}', 1, :first, :first, :now, :later, :now"
                f" FROM seq_1_to_{sites}"
            ),
            {"first": now - SPAN, "now": now, "later": now + 600},
        )
    first_scheduled = articles - scheduled + 1
    for start in range(1, articles + 1, CHUNK):
        end = min(start + CHUNK - 1, articles)
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO Article (article_id, site_id, url, url_hash, article_type,"
                    " created_at, first_snapshot_at, last_snapshot_at, next_snapshot_at,"
                    " snapshot_count, failure_count, stop_reason, snapshot_interval,"
                    " lease_until)"
                    " SELECT seq, 1 + seq % :sites,"
                    " CONCAT('https://site-', 1 + seq % :sites, '.example/a/', seq),"
                    " UNHEX(LPAD(HEX(seq), 32, '0')), 'Article', c, c, c,"
                    # Due ones are spread over the last day, the rest within the next hour.
                    " CASE WHEN seq < :first_scheduled THEN 0"
                    " WHEN seq < :first_scheduled + :due"
                    "  THEN :now - DAY_S + (seq - :first_scheduled) * DAY_S DIV :due"
                    " ELSE :now + 1 + seq % 3600 END,"
                    " 1 + seq % 24, IF(seq % 20 = 0, 1, 0),"
                    " IF(seq < :first_scheduled, 'plan_complete', NULL), 3600, 0"
                    " FROM (SELECT seq, :now - :span + seq * :span DIV :articles AS c,"
                    f" {DAY} AS DAY_S FROM seq_{start}_to_{end}) AS numbers"
                ),
                {
                    "sites": sites,
                    "first_scheduled": first_scheduled,
                    "due": due,
                    "now": now,
                    "span": SPAN,
                    "articles": articles,
                },
            )
        print(f"  filled {end:,} articles in {time.perf_counter() - started:.0f} s", flush=True)
    with engine.connect() as conn:
        conn.execute(text("ANALYZE TABLE Article, Site"))
    engine.dispose()
    return time.perf_counter() - started


def timed(function, *args):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = function(*args)
    return result, (time.perf_counter() - started) * 1000


def claim_batches(
    archive: Archive, site_ids: list[int], now: int, batches: int, leased: list[int]
) -> list[float]:
    """Milliseconds of each of ``batches`` claims over ``site_ids``; what they lease is
    added to ``leased``."""
    times = []
    for _ in range(batches):
        claimed, ms = timed(claim_due, archive, site_ids, now, BATCH, 3600)
        times.append(ms)
        leased.extend(article.article_id for article in claimed)
    return times


def measure(url: str, now: int, batches: int) -> None:
    archive = open_archive(url=url)
    leased: list[int] = []
    try:
        due, ms = timed(due_sites, archive, ("news",), now)
        print(f"due_sites: {len(due.sites)} sites with due work in {ms:.0f} ms")
        site_ids = list(due.sites)
        times = claim_batches(archive, site_ids, now, batches, leased)
        print(
            f"claim_due over all {len(site_ids)} sites, {batches} batches of {BATCH}:"
            f" {len(leased)} handed out; per batch median {statistics.median(times):.0f} ms,"
            f" max {max(times):.0f} ms (first {times[0]:.0f} ms, last {times[-1]:.0f} ms)"
        )
        part = site_ids[: len(site_ids) * 2 // 5]
        subset = claim_batches(archive, part, now, batches, leased)
        print(
            f"claim_due over {len(part)} of the sites (one type of several), {batches} batches:"
            f" median {statistics.median(subset):.0f} ms, max {max(subset):.0f} ms"
        )
        one_site = []
        for site_id in site_ids[:batches]:
            claimed, ms = timed(claim_due, archive, [site_id], now, BATCH, 3600)
            one_site.append(ms)
            leased.extend(article.article_id for article in claimed)
        print(
            f"claim_due for one site (the embedded crawl's batch), {len(one_site)} sites:"
            f" median {statistics.median(one_site):.0f} ms, max {max(one_site):.0f} ms"
        )
    finally:
        with archive.engine.begin() as conn:
            for start in range(0, len(leased), 1000):
                conn.execute(
                    update(article)
                    .where(article.c.article_id.in_(leased[start : start + 1000]))
                    .values(lease_until=0, lease_owner=None)
                )
        archive.engine.dispose()


def filled_articles(url: str) -> int:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT COUNT(*) FROM Article")).scalar_one())
    except Exception:
        return 0
    finally:
        engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=10_000_000)
    parser.add_argument("--sites", type=int, default=500)
    parser.add_argument("--scheduled", type=int, default=400_000)
    parser.add_argument("--due", type=int, default=200_000)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--keep", action="store_true", help="keep the filled database")
    args = parser.parse_args()
    if not 0 <= args.due <= args.scheduled <= args.articles:
        parser.error("need 0 <= --due <= --scheduled <= --articles")
    name = KEPT if args.keep else f"zeroarchive_bench_due_{os.getpid()}"
    url = f"{MARIADB}/{name}"
    admin = create_engine(f"{MARIADB}/test")
    now = int(time.time())
    try:
        if args.keep and filled_articles(url) == args.articles:
            engine = make_engine(url)
            migrate(engine)
            with engine.connect() as conn:
                first = conn.execute(text("SELECT MIN(created_at) FROM Site")).scalar_one()
            engine.dispose()
            now = int(first) + SPAN
            print(f"Reusing {name} ({args.articles:,} articles)")
        else:
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
                conn.execute(text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
            seconds = fill(url, args.sites, args.articles, args.scheduled, args.due, now)
            print(f"Filled {args.articles:,} articles over {args.sites} sites in {seconds:.0f} s")
        measure(url, now, args.batches)
    finally:
        if not args.keep:
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        admin.dispose()


if __name__ == "__main__":
    main()
