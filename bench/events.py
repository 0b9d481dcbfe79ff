"""Events: choosing the long-tail watch's articles on a large archive, the cost of deletion
detection per snapshot batch, and the watch's requests per day against its budget.

1. Fills a database (SQLite file, or a MariaDB database of its own) with ``--sites`` news
   sites and ``--articles`` articles inside the engine (``fill``: bulk ``INSERT ... SELECT``
   from a recursive CTE on SQLite, from the sequence engine on MariaDB; 10M in 80-150 s on
   SQLite, 210-280 s on MariaDB): a tenth still on their plan, the rest finished with a
   watch check due at times spread over the last year and the next (about half due now).
   Then prints the plan of ``watch_query`` (the choice of one site's due watch checks,
   longest waiting first, ``LIMIT`` the default budget of 1000), times it for ``--probes``
   sites, and a full ``promote_watch`` (choose, make due, spend the budget) over every site.
2. Times ``last_snapshots`` and ``sort_answers`` (every deletion sign of
   zeroarchive/events/signs.py, soft-404 probe comparison included) against
   ``SnapshotStore.save`` on the same batch of 500 real pages (tests/fixtures/cjk-news),
   side by side in CPU seconds (on ``--db``), for first snapshots, noise-only changes,
   edits and unchanged pages: the share detection adds (``--detection-only``; ``--profile`` prints
   where its time goes).
3. The watch's requests per day: the default cadence's demand for the filled archive's
   finished articles against what ``promote_watch`` hands out in one day (the budget).

    python bench/events.py [--articles 2000000] [--sites 200] [--db sqlite|mariadb]
                           [--detection-only | --watch-only] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import gzip
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from importlib import import_module
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import create_engine, func, select, text  # noqa: E402
from sqlalchemy.engine import Connection  # noqa: E402

from zeroarchive.core.items import FetchedPage  # noqa: E402
from zeroarchive.core.schedule import DAY, STOP  # noqa: E402
from zeroarchive.events.answers import last_snapshots, sort_answers  # noqa: E402
from zeroarchive.events.signs import Probe  # noqa: E402
from zeroarchive.events.watch import promote_watch, watch_query  # noqa: E402
from zeroarchive.sites.record import DEFAULT_WATCH  # noqa: E402
from zeroarchive.storage.archive import close_archives, open_archive  # noqa: E402
from zeroarchive.storage.engine import make_engine, migrate  # noqa: E402
from zeroarchive.storage.schema import article  # noqa: E402
from zeroarchive.storage.sites import site_from_row  # noqa: E402

MARIADB = os.environ.get("ZEROARCHIVE_TEST_MARIADB", "mysql+pymysql://root@127.0.0.1:3306")
BENCH_DB = "zeroarchive_bench_events"
DETECT_DB = "zeroarchive_bench_events_detection"
NOW = 1_800_000_000
SPAN = 365 * DAY
CHUNK = 1_000_000


def _numbers(dialect: str, start: int, end: int) -> str:
    if dialect == "sqlite":
        return (
            f"(WITH RECURSIVE s(seq) AS (SELECT {start} UNION ALL SELECT seq + 1 FROM s"
            f" WHERE seq < {end}) SELECT seq FROM s)"
        )
    return f"(SELECT seq FROM seq_{start}_to_{end})"


def _article_triggers(conn: Connection) -> dict[str, str]:
    """The statements that create Article's triggers (migration 0008's site totals), as the
    database keeps them."""
    if conn.dialect.name == "sqlite":
        rows = conn.execute(
            text(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
                " AND tbl_name = 'Article'"
            )
        )
        return {row.name: row.sql for row in rows}
    names = conn.execute(
        text(
            "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS"
            " WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'Article'"
        )
    ).scalars()
    return {
        name: conn.execute(text(f"SHOW CREATE TRIGGER {name}")).one()[2] for name in list(names)
    }


def _site_totals(conn: Connection) -> None:
    """Count the filled articles into the site totals, as migration 0008 first did (its
    triggers were off during the fill)."""
    stats = import_module("zeroarchive.storage.migrations.versions.0008_site_stats_totals")
    day = stats._Sql(conn.dialect.name).day("Article")
    conn.execute(text("DELETE FROM SiteArticleDays"))
    conn.execute(text("DELETE FROM SiteArticleTotals"))
    conn.execute(
        text(
            "INSERT INTO SiteArticleDays (day, site_id, articles)"
            f" SELECT {day}, site_id, COUNT(*) FROM Article GROUP BY {day}, site_id"
        )
    )
    sums = ", ".join(f"SUM({expression})" for expression in stats._finished("Article"))
    # One scan: by (site_id, created_at) MariaDB read every row by its key, 60 s for 1M.
    scan = "Article NOT INDEXED" if conn.dialect.name == "sqlite" else "Article USE INDEX ()"
    conn.execute(
        text(
            f"INSERT INTO SiteArticleTotals (site_id, articles, {', '.join(stats.FINISHED)})"
            f" SELECT site_id, COUNT(*), {sums} FROM {scan} GROUP BY site_id"
        )
    )


def fill(url: str, sites: int, articles: int) -> float:
    """Fill the archive inside the database: one ``INSERT ... SELECT`` of all the articles
    (SQLite: a recursive CTE in chunks; MariaDB: the sequence engine, one statement so that
    InnoDB loads the empty table in bulk, sorting each index once), with Article's site-total
    triggers off and, on SQLite, its secondary indexes built after (row by row they cost
    2M articles 292 s on SQLite and 585 s on MariaDB)."""
    engine = make_engine(url)
    migrate(engine)
    dialect = engine.dialect.name
    concat = "||" if dialect == "sqlite" else None
    started = time.perf_counter()

    def cat(*parts: str) -> str:
        return f" {concat} ".join(parts) if concat else f"CONCAT({', '.join(parts)})"

    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO Site (site_id, name, url, type, config, is_active, created_at,"
                " updated_at, last_crawl_at, next_crawl_at, last_list_ok_at)"
                f" SELECT seq, {cat(repr('site-'), 'seq')},"
                f" {cat(repr('https://site-'), 'seq', repr('.example/'))}, 'news',"
                ' \'{"article": "/a/"}\', 1, :first, :first, :now, :later, :now'
                f" FROM {_numbers(dialect, 1, sites)} AS n"
            ),
            {"first": NOW - 2 * SPAN, "now": NOW, "later": NOW + 600},
        )
        triggers = _article_triggers(conn)
        for name in triggers:
            conn.execute(text(f"DROP TRIGGER {name}"))
        # InnoDB sorts every index of an empty table it loads in bulk; SQLite builds them
        # faster after the rows than row by row.
        later = list(article.indexes) if dialect == "sqlite" else []
        for index in later:
            index.drop(conn)
    url_expr = cat(repr("https://site-"), "(1 + seq % :sites)", repr(".example/a/"), "seq")
    # Rising keys, as the rows come: a random url_hash would make every insert a random
    # write into its unique index.
    hash_expr = (
        "CAST(printf('%016d', seq) AS BLOB)"
        if dialect == "sqlite"
        else "UNHEX(LPAD(HEX(seq), 32, '0'))"
    )
    chunk = CHUNK if dialect == "sqlite" else articles
    for start in range(1, articles + 1, chunk):
        end = min(start + chunk - 1, articles)
        with engine.begin() as conn:
            if dialect != "sqlite":
                conn.execute(text("SET SESSION unique_checks = 0, foreign_key_checks = 0"))
            conn.execute(
                text(
                    "INSERT INTO Article (article_id, site_id, url, url_hash, article_type,"
                    " created_at, first_snapshot_at, last_snapshot_at, next_snapshot_at,"
                    " snapshot_count, failure_count, stop_reason, snapshot_interval,"
                    " lease_until, watch_at)"
                    f" SELECT seq, 1 + seq % :sites, {url_expr},"
                    f" {hash_expr}, 'Article', c, c, c,"
                    # A tenth on their plan (due within the hour), the rest finished.
                    " CASE WHEN seq % 10 = 0 THEN :now + 1 + seq % 3600 ELSE 0 END,"
                    " 24, 0, CASE WHEN seq % 10 = 0 THEN NULL ELSE 'plan_complete' END,"
                    " 3600, 0,"
                    # Watch checks due from a year ago to a year ahead: about half due now.
                    " CASE WHEN seq % 10 = 0 THEN 0"
                    " ELSE :now - :span + (seq * 7919) % (2 * :span) END"
                    " FROM (SELECT seq, :now - :span + (seq * :span) / :articles AS c"
                    f" FROM {_numbers(dialect, start, end)} AS n) AS numbers"
                ),
                {"sites": sites, "now": NOW, "span": SPAN, "articles": articles},
            )
            if dialect != "sqlite":
                conn.execute(text("SET SESSION unique_checks = 1, foreign_key_checks = 1"))
        print(f"  filled {end:,} articles in {time.perf_counter() - started:.0f} s", flush=True)
    with engine.begin() as conn:
        for index in later:
            index.create(conn)
        print(f"  indexed in {time.perf_counter() - started:.0f} s", flush=True)
        _site_totals(conn)
        for statement in triggers.values():
            # As written: no bound parameters (a trigger's LIKE '%\\:blocked' holds a colon).
            cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            cursor.execute(statement)
            cursor.close()
        print(f"  counted in {time.perf_counter() - started:.0f} s", flush=True)
    with engine.connect() as conn:
        conn.execute(text("ANALYZE" if dialect == "sqlite" else "ANALYZE TABLE Article, Site"))
    engine.dispose()
    return time.perf_counter() - started


def choose(url: str, sites: int, probes: int) -> None:
    engine = create_engine(url)
    times = []
    step = max(1, sites // probes)
    with engine.connect() as conn:
        explain = "EXPLAIN QUERY PLAN" if conn.dialect.name == "sqlite" else "EXPLAIN"
        query = watch_query(1, NOW, 1000).compile(conn, compile_kwargs={"literal_binds": True})
        for row in conn.execute(text(f"{explain} {query}")):
            print("  plan:", " | ".join(str(value) for value in row))
        for site_id in range(1, sites + 1, step):
            started = time.perf_counter()
            chosen = conn.execute(watch_query(site_id, NOW, 1000)).all()
            times.append((time.perf_counter() - started) * 1000)
        assert len(chosen) == 1000, len(chosen)
    print(
        f"choose 1000 watch checks of one site: median {statistics.median(times):.1f} ms, "
        f"max {max(times):.1f} ms over {len(times)} sites"
    )
    with engine.connect() as conn:
        finished = conn.execute(
            select(func.count()).select_from(article).where(article.c.next_snapshot_at == STOP)
        ).scalar_one()
        site_rows = conn.execute(text("SELECT * FROM Site")).mappings().all()
    records = [site_from_row(row) for row in site_rows]
    started = time.perf_counter()
    promoted = promote_watch(engine, records, NOW)
    seconds = time.perf_counter() - started
    budget = sum(r.config.watch_budget for r in records)
    handed = sum(promoted.values())
    again = sum(promote_watch(engine, records, NOW + 3600).values())
    demand = finished * len(DEFAULT_WATCH) / 365
    print(
        f"promote_watch over {len(records)} sites: {seconds * 1000:.0f} ms "
        f"({seconds * 1000 / len(records):.1f} ms per site), {handed:,} checks handed out; "
        f"an hour later the same day: {again}"
    )
    print(
        f"requests per day: default cadence demands ~{demand:,.0f}/day for {finished:,} "
        f"finished articles; handed out {handed:,} (budget {budget:,}/day): "
        f"{'within' if handed + again <= budget else 'OVER'} the budget"
    )
    engine.dispose()


#: The detection rounds: what each batch of 500 pages is, against the articles' last
#: snapshots. A first snapshot and an edit that changes the size are searched for a removal
#: notice; noise (a counter, a token) and an unchanged page are the article again.
ROUNDS = (
    ("first snapshots", b"<!-- views 1000 -->"),
    ("noise-only changes", b"<!-- views 1001 -->"),
    ("edits (+2 KB of text)", b"<!-- views 1001 --><p>" + "更正說明。".encode() * 136 + b"</p>"),
    ("unchanged", b"<!-- views 1001 --><p>" + "更正說明。".encode() * 136 + b"</p>"),
)


def detection(db: str, profile: bool = False) -> None:
    html = [
        gzip.decompress(path.read_bytes())
        for path in sorted((REPO / "tests/fixtures/cjk-news/html").glob("*.html.gz"))
    ]
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/a.db"
        if db == "mariadb":
            url = f"{MARIADB}/{DETECT_DB}"
            server = create_engine(MARIADB)
            with server.begin() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {DETECT_DB}"))
                conn.execute(text(f"CREATE DATABASE {DETECT_DB} CHARACTER SET utf8mb4"))
        archive = open_archive(url=url)
        from zeroarchive.sites.record import SiteSpec

        site_id, _ = archive.sites.upsert(
            SiteSpec(name="s", url="https://s.example/", type="news", config={}), NOW
        )
        urls = [f"https://s.example/a/{i}" for i in range(500)]
        archive.articles.add(site_id, "Article", urls, NOW)
        with archive.engine.connect() as conn:
            ids = list(conn.execute(select(article.c.article_id)).scalars())
        site = archive.sites.get(site_id)
        assert site is not None
        probe = Probe(site_id, NOW, "Not found", "Sorry, nothing here. Home")
        profiler = cProfile.Profile() if profile else None
        for round_, (name, tail) in enumerate(ROUNDS):
            at = NOW + round_ * 3600
            pages = [
                FetchedPage(
                    i, site_id, "Article", at, 200, url, {}, "utf-8", html[i % len(html)] + tail
                )
                for i, url in zip(ids, urls, strict=True)
            ]
            # CPU seconds: the machine may be shared; both sides are measured alike.
            started = time.process_time()
            if profiler:
                profiler.enable()
            last = last_snapshots(archive.engine, ids)
            sorted_ = sort_answers(pages, [], {site_id: site}, {site_id: probe}, last.size, last.at)
            if profiler:
                profiler.disable()
            detect = time.process_time() - started
            assert len(sorted_.pages) == len(pages)
            started = time.process_time()
            archive.snapshots.save(pages)
            save = time.process_time() - started
            print(
                f"500 pages, {name}: detection {detect * 1000:.0f} ms, save "
                f"{save * 1000:.0f} ms: detection adds {detect / save:.0%}"
            )
        if profiler:
            pstats.Stats(profiler).sort_stats("tottime").print_stats(12)
    if db == "mariadb":
        close_archives()
        with server.begin() as conn:
            conn.execute(text(f"DROP DATABASE {DETECT_DB}"))
        server.dispose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--articles", type=int, default=2_000_000)
    parser.add_argument("--sites", type=int, default=200)
    parser.add_argument("--probes", type=int, default=50)
    parser.add_argument("--db", choices=("sqlite", "mariadb"), default="sqlite")
    parser.add_argument(
        "--detection-only", action="store_true", help="time deletion detection only"
    )
    parser.add_argument(
        "--profile", action="store_true", help="profile the detection (cProfile, by own time)"
    )
    parser.add_argument(
        "--watch-only", action="store_true", help="fill and time the watch's choice only"
    )
    args = parser.parse_args()
    if not args.watch_only:
        detection(args.db, args.profile)
    if args.detection_only:
        return
    if args.db == "sqlite":
        tmp = tempfile.mkdtemp()
        url = f"sqlite:///{tmp}/bench.db"
    else:
        server = create_engine(MARIADB)
        with server.begin() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {BENCH_DB}"))
            conn.execute(text(f"CREATE DATABASE {BENCH_DB} CHARACTER SET utf8mb4"))
        server.dispose()
        url = f"{MARIADB}/{BENCH_DB}"
    print(f"filling {args.articles:,} articles, {args.sites} sites ({args.db})")
    print(f"filled in {fill(url, args.sites, args.articles):.0f} s")
    choose(url, args.sites, args.probes)
    if args.db == "sqlite":
        shutil.rmtree(tmp)  # 2.4 GB at 10M articles
    else:
        server = create_engine(MARIADB)
        with server.begin() as conn:
            conn.execute(text(f"DROP DATABASE {BENCH_DB}"))
        server.dispose()


if __name__ == "__main__":
    main()
