"""The archive database on both backends: migrations, sites, articles, snapshots, export.

Every test takes ``db_url``, so it runs on a SQLite file and on a fresh MariaDB database.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import random
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
import zstandard
from sqlalchemy import func, inspect, select, text, update
from sqlalchemy.engine import Engine

from tests.conftest import FIXTURES
from zeroarchive.core.items import FailedFetch, FetchedPage
from zeroarchive.core.schedule import (
    FAILURE_BACKOFF_BASE,
    HOUR,
    MAX_FAILURES,
    STOP,
)
from zeroarchive.core.urls import url_hash
from zeroarchive.sites.record import SiteSpec, parse_spec
from zeroarchive.sources import plan_for_type
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.articles import claim_query
from zeroarchive.storage.engine import (
    MIGRATIONS_DIR,
    current_revision,
    head_revision,
    make_engine,
    migrate,
)
from zeroarchive.storage.schema import article, article_snapshot, site
from zeroarchive.storage.snapshots import iter_snapshots, read_snapshot

NOW = 1_700_000_000  # 2023-11-14 22:13:20 UTC: any fixed time, never the clock
NEWS = plan_for_type("news")
PAGES = FIXTURES / "tw-news-2014" / "html"
TABLES = {"Site", "Article", "ArticleSnapshot"}


def corpus_page(name: str) -> bytes:
    return gzip.decompress((PAGES / f"{name}.html.gz").read_bytes())


@pytest.fixture
def archive(db_url: str) -> Archive:
    return open_archive(url=db_url)


def news_spec(name: str = "cna", url: str = "https://www.cna.com.tw/", **extra: Any) -> SiteSpec:
    raw = {"name": name, "url": url, "type": "news", "config": {"article": "/news/"}}
    return parse_spec({**raw, **extra})


def add_site(archive: Archive, name: str = "cna", site_type: str = "news") -> int:
    config = {"article": "/news/"} if site_type != "ptt" else {}
    path = "/bbs/Board/index.html" if site_type == "ptt" else "/"
    spec = parse_spec(
        {"name": name, "url": f"https://{name}.example{path}", "type": site_type, "config": config}
    )
    site_id, outcome = archive.sites.upsert(spec, NOW)
    assert outcome == "added"
    return site_id


def add_articles(archive: Archive, site_id: int, urls: Sequence[str], now: int = NOW) -> list[int]:
    archive.articles.add(site_id, "news", urls, now)
    return [article_id(archive, url) for url in urls]


def article_id(archive: Archive, url: str) -> int:
    with archive.engine.connect() as conn:
        query = select(article.c.article_id).where(article.c.url_hash == url_hash(url))
        return int(conn.execute(query).scalar_one())


def article_row(archive: Archive, article_id: int) -> Any:
    with archive.engine.connect() as conn:
        return conn.execute(select(article).where(article.c.article_id == article_id)).one()


def snapshot_rows(archive: Archive, article_id: int | None = None) -> list[Any]:
    query = select(article_snapshot).order_by(
        article_snapshot.c.article_id, article_snapshot.c.snapshot_at
    )
    if article_id is not None:
        query = query.where(article_snapshot.c.article_id == article_id)
    with archive.engine.connect() as conn:
        return list(conn.execute(query))


def count_rows(engine: Engine, table: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def set_article(archive: Archive, article_id: int, **values: Any) -> None:
    with archive.engine.begin() as conn:
        conn.execute(update(article).where(article.c.article_id == article_id).values(**values))


def page(
    article_id: int,
    site_id: int,
    at: int,
    body: bytes,
    *,
    encoding: str = "utf-8",
    moved_to: str | None = None,
    final_url: str = "https://www.cna.com.tw/news/aipl/201401010001.aspx",
    status: int = 200,
) -> FetchedPage:
    return FetchedPage(
        article_id=article_id,
        site_id=site_id,
        article_type="news",
        fetched_at=at,
        status=status,
        final_url=final_url,
        headers={
            "Content-Type": [f"text/html; charset={encoding}"],
            "Set-Cookie": ["a=1", "b=2"],
            "Content-Disposition": ["inline; filename=新聞.html"],
        },
        encoding=encoding,
        body=body,
        moved_to=moved_to,
    )


def failure(article_id: int, site_id: int, at: int, status: int | None = None) -> FailedFetch:
    reason = f"http_{status}" if status else "timeout"
    return FailedFetch(article_id, site_id, at, reason, status)


# --- migrations ---------------------------------------------------------------------------


def schema_of(engine: Engine) -> dict[str, Any]:
    inspector = inspect(engine)
    return {
        name: (
            [(c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns(name)],
            inspector.get_pk_constraint(name)["constrained_columns"],
            sorted((i["name"], tuple(i["column_names"])) for i in inspector.get_indexes(name)),
        )
        for name in TABLES
    }


def test_migrate_creates_the_schema_and_is_idempotent(blank_db_url: str) -> None:
    engine = make_engine(blank_db_url)
    try:
        assert current_revision(engine) is None
        assert TABLES.isdisjoint(inspect(engine).get_table_names())

        assert migrate(engine) == (None, head_revision())
        assert current_revision(engine) == head_revision()
        tables = set(inspect(engine).get_table_names())
        assert tables >= {*TABLES, "alembic_version"}
        columns = schema_of(engine)
        with engine.begin() as conn:
            conn.execute(
                site.insert().values(
                    name="kept",
                    url="https://kept.example/",
                    type="news",
                    created_at=1,
                    updated_at=1,
                )
            )

        assert migrate(engine) == (head_revision(), head_revision())
        assert current_revision(engine) == head_revision()
        assert set(inspect(engine).get_table_names()) == tables
        assert schema_of(engine) == columns
        assert count_rows(engine, site) == 1
        with engine.connect() as conn:
            versions = conn.execute(text("SELECT version_num FROM alembic_version")).all()
        # One row per head: features branch their revisions from 0001.
        assert sorted(row[0] for row in versions) == head_revision().split("+")
    finally:
        engine.dispose()


def test_revisions_read_without_alembic_agree_with_alembic(db_url: str) -> None:
    """On a migrated archive (db_url's)."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    assert head_revision() == "+".join(sorted(ScriptDirectory(str(MIGRATIONS_DIR)).get_heads()))
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            by_alembic = MigrationContext.configure(conn).get_current_heads()
        assert current_revision(engine) == "+".join(sorted(by_alembic))
    finally:
        engine.dispose()


def test_a_database_a_newer_release_migrated_is_run_on_unchanged(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A rolling upgrade's old workers: the schema is past what their code knows (db_url's
    archive, migrated, then marked as a newer release's)."""
    engine = make_engine(db_url)
    try:
        newer = "9999"
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM alembic_version"))
            conn.execute(text("INSERT INTO alembic_version VALUES (:v)"), {"v": newer})
        columns = schema_of(engine)
        with caplog.at_level(logging.WARNING, logger="zeroarchive.storage.engine"):
            assert migrate(engine) == (newer, newer)
        assert current_revision(engine) == newer and schema_of(engine) == columns
        assert "newer than this code knows" in caplog.text
    finally:
        engine.dispose()


@pytest.mark.usefixtures("tests_tls_sharing_off")
def test_pymysql_connections_share_one_tls_context(mariadb_db_url: str) -> None:
    """Each new connection built its own (55 ms of CPU, most of a MariaDB connect)."""
    assert mariadb_db_url.startswith("mysql+pymysql")
    engine = make_engine(mariadb_db_url)
    try:
        first, second = engine.raw_connection(), engine.raw_connection()
        try:
            assert first.dbapi_connection is not second.dbapi_connection
            assert first.dbapi_connection.ctx is second.dbapi_connection.ctx  # type: ignore[union-attr]
            cursor = second.cursor()
            cursor.execute("SELECT 1")
            assert cursor.fetchone() == (1,)
        finally:
            first.close()
            second.close()
    finally:
        engine.dispose()


def test_open_archive_migrates_once_and_shares_the_engine(blank_db_url: str) -> None:
    first = open_archive(url=blank_db_url)
    assert current_revision(first.engine) == head_revision()
    assert open_archive(url=blank_db_url) is first


# --- sites --------------------------------------------------------------------------------


def site_times(archive: Archive, site_id: int) -> tuple[int, int]:
    with archive.engine.connect() as conn:
        query = select(site.c.created_at, site.c.updated_at).where(site.c.site_id == site_id)
        created_at, updated_at = conn.execute(query).one()
    return created_at, updated_at


def test_upsert_reports_added_unchanged_and_updated(archive: Archive) -> None:
    site_id, outcome = archive.sites.upsert(news_spec(), NOW)
    assert outcome == "added"
    assert site_times(archive, site_id) == (NOW, NOW)

    assert archive.sites.upsert(news_spec(), NOW + 10) == (site_id, "unchanged")
    assert site_times(archive, site_id) == (NOW, NOW)

    changes: list[dict[str, Any]] = [
        {"config": {"article": "/news/", "depth": 2}},
        {"url": "https://www.cna.com.tw/list/"},
        {"type": "content_farm"},
        {"active": False},
        {"airtable_id": "recABC123"},
    ]
    for step, change in enumerate(changes, start=1):
        at = NOW + 100 * step
        spec = news_spec(**change)
        assert archive.sites.upsert(spec, at) == (site_id, "updated"), change
        assert site_times(archive, site_id) == (NOW, at)
        assert archive.sites.upsert(spec, at + 1) == (site_id, "unchanged"), change
        assert site_times(archive, site_id) == (NOW, at)

    # The last spec is the base one plus an Airtable id.
    stored = archive.sites.get(site_id)
    assert stored is not None
    assert (stored.url, stored.type, stored.is_active, stored.config.depth) == (
        "https://www.cna.com.tw/",
        "news",
        True,
        3,
    )
    with archive.engine.connect() as conn:
        query = select(site.c.airtable_id).where(site.c.site_id == site_id)
        assert conn.execute(query).scalar_one() == "recABC123"
    assert count_rows(archive.engine, site) == 1


def test_get_by_id_by_name_and_by_numeric_string(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    numeric = add_site(archive, "2024")
    assert numeric != 2024

    by_id = archive.sites.get(cna)
    assert by_id is not None
    assert (by_id.site_id, by_id.name, by_id.url) == (cna, "cna", "https://cna.example/")
    assert by_id.config.is_article("https://cna.example/news/1")
    by_string = archive.sites.get(str(cna))
    assert by_string is not None and by_string.name == "cna"
    by_name = archive.sites.get("cna")
    assert by_name is not None and by_name.site_id == cna
    # No site has id 2024, so the numeric string falls back to the name.
    by_numeric_name = archive.sites.get("2024")
    assert by_numeric_name is not None and by_numeric_name.site_id == numeric
    # An id wins over a name that looks like it.
    by_numeric_id = archive.sites.get(str(numeric))
    assert by_numeric_id is not None and by_numeric_id.site_id == numeric

    assert archive.sites.get("missing") is None
    assert archive.sites.get(9999) is None
    assert archive.sites.get("9999") is None


def test_due_rows_respect_next_crawl_at_is_active_and_type(archive: Archive) -> None:
    news = add_site(archive, "news-due", "news")
    later = add_site(archive, "news-later", "news")
    gov = add_site(archive, "gov-due", "gov")
    ptt = add_site(archive, "ptt-due", "ptt")
    inactive_spec = parse_spec(
        {
            "name": "off",
            "url": "https://off.example/",
            "config": {"article": "/a/"},
            "active": False,
        }
    )
    inactive, _ = archive.sites.upsert(inactive_spec, NOW)
    archive.sites.mark_list_crawl(later, NOW, NOW + 600)

    def due(types: tuple[str, ...], now: int) -> list[int]:
        return [row["site_id"] for row in archive.sites.due_rows(types, now)]

    assert due(("news",), NOW) == [news]
    assert due(("news", "gov"), NOW) == [news, gov]
    assert due(("ptt",), NOW) == [ptt]
    assert due(("dcard",), NOW) == []
    assert due(("news",), NOW + 599) == [news]
    assert due(("news",), NOW + 600) == [news, later]
    assert inactive not in due(("news", "gov", "ptt"), NOW + 10**6)


def test_due_rows_with_snapshots_adds_sites_whose_articles_are_due(archive: Archive) -> None:
    walked = add_site(archive, "walked")
    leased = add_site(archive, "leased")
    idle = add_site(archive, "idle")
    for site_id in (walked, leased, idle):
        archive.sites.mark_list_crawl(site_id, NOW, NOW + 600)
    add_articles(archive, walked, ["https://walked.example/news/1"])
    add_articles(archive, leased, ["https://leased.example/news/1"])
    assert archive.articles.claim_due([leased], NOW, 10, lease=300)

    def due(now: int, **which: bool) -> list[int]:
        return [row["site_id"] for row in archive.sites.due_rows(("news",), now, **which)]

    assert due(NOW) == []
    assert due(NOW, snapshots=True) == [walked]
    assert due(NOW, lists=False, snapshots=True) == [walked]
    assert due(NOW + 300, lists=False, snapshots=True) == [walked, leased]
    assert due(NOW + 600, lists=False, snapshots=True) == [walked, leased]
    assert due(NOW + 600, snapshots=True) == [walked, leased, idle]
    assert due(NOW + 600, lists=False) == []


def test_mark_list_crawl_and_listing_counts_articles(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    udn = add_site(archive, "udn")
    empty = add_site(archive, "empty")
    archive.articles.add(cna, "news", [f"https://cna.example/news/{n}" for n in range(3)], NOW)
    archive.articles.add(udn, "news", ["https://udn.example/news/1"], NOW)
    archive.sites.mark_list_crawl(cna, NOW + 5, NOW + 605)

    rows = {row.site_id: row for row in archive.sites.listing()}
    assert list(rows) == [cna, udn, empty]
    assert [rows[s].articles for s in (cna, udn, empty)] == [3, 1, 0]
    assert (rows[cna].last_crawl_at, rows[cna].next_crawl_at) == (NOW + 5, NOW + 605)
    assert (rows[udn].last_crawl_at, rows[udn].next_crawl_at) == (0, 0)
    assert (rows[cna].name, rows[cna].type, rows[cna].url, rows[cna].is_active) == (
        "cna",
        "news",
        "https://cna.example/",
        True,
    )


# --- articles -----------------------------------------------------------------------------


def test_add_returns_how_many_are_new_and_never_inserts_twice(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    udn = add_site(archive, "udn")
    a, b, c = (f"https://cna.example/news/{n}" for n in range(3))

    assert archive.articles.add(cna, "news", [], NOW) == 0
    assert archive.articles.add(cna, "news", [a, b], NOW) == 2
    assert archive.articles.add(cna, "news", [a, b], NOW + 1) == 0
    assert archive.articles.add(cna, "news", [c, a, c, c], NOW + 2) == 1
    # Another site finding the same canonical URL does not make a second article.
    assert archive.articles.add(udn, "news", [a, c], NOW + 3) == 0
    assert count_rows(archive.engine, article) == 3

    with archive.engine.connect() as conn:
        rows = conn.execute(select(article).order_by(article.c.article_id)).all()
    assert [row.url for row in rows] == [a, b, c]
    assert {row.site_id for row in rows} == {cna}
    assert [row.created_at for row in rows] == [NOW, NOW, NOW + 2]
    for row in rows:
        assert bytes(row.url_hash) == url_hash(row.url)
        assert len(bytes(row.url_hash)) == 16
        assert row.next_snapshot_at == row.created_at
        assert (row.snapshot_count, row.failure_count, row.lease_until) == (0, 0, 0)
        assert (row.redirect_to, row.stop_reason, row.last_content_hash) == (None, None, None)
        assert row.article_type == "news"
    with archive.engine.connect() as conn:
        lengths = conn.execute(select(func.length(article.c.url_hash))).scalars().all()
    assert lengths == [16, 16, 16]


def test_add_records_the_publication_times_a_list_gives(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    a, b, c = (f"https://cna.example/news/{n}" for n in range(3))
    archive.articles.add(cna, "news", [a], NOW)
    # A feed gives b's time and a's; a page without times gives nothing, and a later
    # time for an article that has one already changes nothing.
    archive.articles.add(cna, "news", [a, b, c], NOW + 1, {a: NOW - 60, b: NOW - 30})
    archive.articles.add(cna, "news", [a], NOW + 2, {a: NOW + 99})
    with archive.engine.connect() as conn:
        rows = conn.execute(select(article.c.url, article.c.published_at)).all()
    assert dict(rows) == {a: NOW - 60, b: NOW - 30, c: None}


def test_add_and_claim_stores_links_and_leases_the_sites_due_articles(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    udn = add_site(archive, "udn")
    [old] = add_articles(archive, cna, ["https://cna.example/news/old"], NOW - 60)
    [other] = add_articles(archive, udn, ["https://udn.example/news/1"], NOW - 60)
    a, b = "https://cna.example/news/a", "https://cna.example/news/b"

    new, due = archive.articles.add_and_claim(
        cna, "news", [a, b, a], NOW, {a: NOW - 5}, 10, 600, "worker-1"
    )
    # What add() and then claim_due() give: the new links counted, the site's due
    # articles (the one due before them first) leased to the owner; not the other site's.
    assert new == 2
    assert [(d.article_id, d.url) for d in due] == [
        (old, "https://cna.example/news/old"),
        (article_id(archive, a), a),
        (article_id(archive, b), b),
    ]
    for row in (article_row(archive, d.article_id) for d in due):
        assert (row.lease_until, row.lease_owner, row.site_id) == (NOW + 600, "worker-1", cna)
    assert article_row(archive, article_id(archive, a)).published_at == NOW - 5
    assert article_row(archive, other).lease_until == 0
    # Stored once; nothing left due for the site, and the same links again are not new.
    assert archive.articles.add_and_claim(cna, "news", [a, b], NOW, None, 10, 600, "w2") == (
        0,
        [],
    )
    assert count_rows(archive.engine, article) == 4
    # A retry of a write whose commit went through unseen gets its claim back (same owner).
    new, again = archive.articles.add_and_claim(cna, "news", [a], NOW, None, 10, 600, "worker-1")
    assert (new, {d.article_id for d in again}) == (0, {d.article_id for d in due})


def test_new_articles_are_due_now(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    url = "https://cna.example/news/1"
    archive.articles.add(cna, "news", [url], NOW)
    assert archive.articles.claim_due([cna], NOW - 1, 10) == []
    [due] = archive.articles.claim_due([cna], NOW, 10)
    assert (due.article_id, due.site_id, due.url, due.article_type) == (
        article_id(archive, url),
        cna,
        url,
        "news",
    )


def test_claim_due_oldest_first_within_limit_and_leased(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    # Inserted in this order, so ids do not follow due times.
    first_id, second_id, third_id = (
        add_articles(archive, cna, [f"https://cna.example/news/{n}"], NOW + due)[0]
        for n, due in enumerate((30, 10, 20))
    )
    assert [first_id, second_id, third_id] == sorted([first_id, second_id, third_id])
    tied = add_articles(archive, cna, ["https://cna.example/news/tied"], NOW + 10)[0]
    assert archive.articles.count_due([cna], NOW + 100) == 4

    claimed = archive.articles.claim_due([cna], NOW + 100, 2, lease=600)
    assert [due.article_id for due in claimed] == [second_id, tied]
    assert article_row(archive, second_id).lease_until == NOW + 700
    assert article_row(archive, first_id).lease_until == 0

    claimed = archive.articles.claim_due([cna], NOW + 100, 5, lease=600)
    assert [due.article_id for due in claimed] == [third_id, first_id]
    assert archive.articles.claim_due([cna], NOW + 100, 5, lease=600) == []
    assert archive.articles.claim_due([cna], NOW + 699, 5, lease=600) == []

    # The lease ran out (a worker died holding it): the articles are handed out again.
    claimed = archive.articles.claim_due([cna], NOW + 700, 3, lease=600)
    assert [due.article_id for due in claimed] == [second_id, tied, third_id]
    claimed = archive.articles.claim_due([cna], NOW + 700, 3, lease=600)
    assert [due.article_id for due in claimed] == [first_id]


def test_claim_due_skips_stopped_redirected_future_and_other_sites(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    udn = add_site(archive, "udn")
    due, stopped, redirected, future = add_articles(
        archive, cna, [f"https://cna.example/news/{n}" for n in range(4)]
    )
    [other] = add_articles(archive, udn, ["https://udn.example/news/1"])
    set_article(archive, stopped, next_snapshot_at=STOP)
    set_article(archive, redirected, redirect_to=due)
    set_article(archive, future, next_snapshot_at=NOW + 3600)

    assert archive.articles.claim_due([], NOW, 10) == []
    assert [d.article_id for d in archive.articles.claim_due([cna], NOW + 10, 10)] == [due]
    assert [d.article_id for d in archive.articles.claim_due([udn], NOW + 10, 10)] == [other]
    assert [d.article_id for d in archive.articles.claim_due([cna, udn], NOW + 3600, 10)] == [
        future
    ]
    # Stopped and redirected articles are never due, however late it gets.
    assert archive.articles.count_due([cna], NOW + 10**9) == 2
    later = archive.articles.claim_due([cna, udn], NOW + 10**9, 10)
    assert [d.article_id for d in later] == [due, other, future]


def test_claim_due_does_not_hand_out_rows_another_claimer_is_leasing(db_url: str) -> None:
    """Two claimers at once (workers on several hosts, or two list pages stored together)
    must not get the same article.

    A second connection leases the rows in an open transaction, as a concurrent claim_due
    does between its UPDATE and COMMIT; a claim that waited for it must not hand them out.
    """
    archive = open_archive(url=db_url)
    cna = add_site(archive, "cna")
    ids = add_articles(archive, cna, [f"https://cna.example/news/{n}" for n in range(3)])
    claimed: list[int] = []
    errors: list[BaseException] = []

    def claim() -> None:
        try:
            claimed.extend(d.article_id for d in archive.articles.claim_due([cna], NOW, 10))
        except BaseException as exc:  # surfaced in the main thread below
            errors.append(exc)

    with archive.engine.connect() as other:
        other.execute(
            update(article).where(article.c.article_id.in_(ids[:2])).values(lease_until=NOW + 3600)
        )
        worker = threading.Thread(target=claim)
        worker.start()
        time.sleep(0.5)
        other.commit()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert errors == []
    assert claimed == [ids[2]]


# --- snapshots ----------------------------------------------------------------------------


def test_first_snapshot_is_compressed_and_reads_back_identical(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    [aid] = add_articles(archive, cna, ["https://cna.example/news/1"])
    body = corpus_page("cna_s1")
    archive.articles.claim_due([cna], NOW, 10)

    [result] = archive.snapshots.save([page(aid, cna, NOW, body)])
    assert (result.article_id, result.outcome, result.moved_from) == (aid, "saved", None)
    assert 0 < result.stored_bytes < len(body) // 2

    [row] = snapshot_rows(archive, aid)
    assert row.raw_data is not None
    assert len(bytes(row.raw_data)) == result.stored_bytes
    assert (row.codec, row.raw_size, row.status) == ("zstd", len(body), 200)
    assert bytes(row.content_hash) == hashlib.sha256(body).digest()
    assert str(row.snapshot_at_date) == "2023-11-14"

    stored = read_snapshot(archive.engine, aid, NOW)
    assert stored.raw == body
    assert (stored.article_id, stored.snapshot_at, stored.status) == (aid, NOW, 200)
    assert stored.encoding == "utf-8"
    assert stored.final_url == "https://www.cna.com.tw/news/aipl/201401010001.aspx"
    assert stored.headers == {
        "Content-Type": ["text/html; charset=utf-8"],
        "Set-Cookie": ["a=1", "b=2"],
        "Content-Disposition": ["inline; filename=新聞.html"],
    }
    assert stored.content_hash == hashlib.sha256(body).digest()

    row = article_row(archive, aid)
    assert (row.first_snapshot_at, row.last_snapshot_at, row.snapshot_count) == (NOW, NOW, 1)
    assert (row.next_snapshot_at, row.lease_until, row.failure_count) == (NOW + HOUR, 0, 0)
    assert bytes(row.last_content_hash) == hashlib.sha256(body).digest()


def test_big5_page_keeps_its_bytes_and_encoding(archive: Archive) -> None:
    ltn = add_site(archive, "ltn")
    [aid] = add_articles(archive, ltn, ["https://ltn.example/news/1"])
    body = corpus_page("liberty_times_big5_s1")
    archive.snapshots.save([page(aid, ltn, NOW, body, encoding="big5")])
    stored = read_snapshot(archive.engine, aid, NOW)
    assert (stored.raw, stored.encoding) == (body, "big5")
    assert "自由" in stored.raw.decode(stored.encoding, errors="replace")


def test_unchanged_snapshot_stores_no_bytes_and_reads_back_the_original(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    [aid] = add_articles(archive, cna, ["https://cna.example/news/1"])
    first, second = corpus_page("cna_s1"), corpus_page("cna_s2")
    times = [NOW + HOUR * n for n in range(5)]
    bodies = [first, first, second, second, first]

    outcomes = []
    for at, body in zip(times, bodies, strict=True):
        [result] = archive.snapshots.save([page(aid, cna, at, body)])
        outcomes.append(result.outcome)
        if result.outcome == "unchanged":
            assert result.stored_bytes == 0
    assert outcomes == ["saved", "unchanged", "saved", "unchanged", "saved"]

    rows = snapshot_rows(archive, aid)
    assert [row.snapshot_at for row in rows] == times
    assert [row.raw_data is None for row in rows] == [False, True, False, True, False]
    # Changed re-snapshots are compressed against the first one (same month).
    assert [row.codec for row in rows] == ["zstd", None, "zstd-ref", None, "zstd-ref"]
    assert [row.reference_at for row in rows] == [None, None, NOW, None, NOW]
    assert [row.raw_size for row in rows] == [len(body) for body in bodies]
    for at, body in zip(times, bodies, strict=True):
        stored = read_snapshot(archive.engine, aid, at)
        assert stored.raw == body
        assert (stored.encoding, stored.status, stored.snapshot_at) == ("utf-8", 200, at)
    row = article_row(archive, aid)
    assert (row.snapshot_count, row.first_snapshot_at, row.last_snapshot_at) == (
        5,
        NOW,
        times[-1],
    )


def stamped(body: bytes, n: int) -> bytes:
    """``body`` with a few bytes in its middle changed, as an ad id or a clock changes."""
    middle = len(body) // 2
    return body[:middle] + b"<!-- ad %06d -->" % n + body[middle:]


DECEMBER = 1_701_388_800  # 2023-12-01 00:00:00 UTC, the month after NOW's


def test_changed_resnapshots_refer_to_a_frame_of_their_own_month(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    [aid] = add_articles(archive, cna, ["https://cna.example/news/1"])
    body = corpus_page("cna_s1")
    times = [NOW + HOUR * n for n in range(4)] + [DECEMBER - 1, DECEMBER, DECEMBER + HOUR]
    bodies = [stamped(body, n) for n in range(len(times))]
    # Two pages of one article in one batch: the second refers to the first.
    results = archive.snapshots.save(
        [page(aid, cna, at, b) for at, b in zip(times[:2], bodies[:2], strict=True)]
    )
    for at, b in zip(times[2:], bodies[2:], strict=True):
        results += archive.snapshots.save([page(aid, cna, at, b)])

    rows = snapshot_rows(archive, aid)
    assert [row.codec for row in rows] == ["zstd"] + ["zstd-ref"] * 4 + ["zstd", "zstd-ref"]
    assert [row.reference_at for row in rows] == [None] + [NOW] * 4 + [None, DECEMBER]
    assert [r.referenced for r in results] == [row.codec == "zstd-ref" for row in rows]
    full = results[0].stored_bytes
    assert all(r.stored_bytes < full // 20 for r in results if r.referenced)
    for at, b in zip(times, bodies, strict=True):
        assert read_snapshot(archive.engine, aid, at).raw == b
    for batch in (1, 3, 200):
        assert [e.snapshot.raw for e in iter_snapshots(archive.engine, batch=batch)] == bodies
    # An unchanged snapshot that repeats a zstd-ref frame's bytes reads them back too.
    archive.snapshots.save([page(aid, cna, DECEMBER + 2 * HOUR, bodies[-1])])
    assert read_snapshot(archive.engine, aid, DECEMBER + 2 * HOUR).raw == bodies[-1]
    assert iter_snapshots_raw(archive.engine, since=DECEMBER + HOUR) == [bodies[-1]] * 2


def iter_snapshots_raw(engine: Engine, **filters: Any) -> list[bytes]:
    return [e.snapshot.raw for e in iter_snapshots(engine, **filters)]


def test_rows_of_every_codec_read_back(archive: Archive) -> None:
    """Rows as older versions wrote them (zlib, none, zstd without reference_at) and as
    this one does (zstd, zstd-ref, unchanged) all read back through read_snapshot."""
    cna = add_site(archive, "cna")
    [aid] = add_articles(archive, cna, ["https://cna.example/news/1"])
    body = corpus_page("cna_s1")
    archive.snapshots.save([page(aid, cna, NOW, body)])
    archive.snapshots.save([page(aid, cna, NOW + HOUR, stamped(body, 1))])
    archive.snapshots.save([page(aid, cna, NOW + 2 * HOUR, stamped(body, 1))])
    old_rows = {
        NOW + 3 * HOUR: (zlib.compress(stamped(body, 3)), "zlib"),
        NOW + 4 * HOUR: (stamped(body, 4), "none"),
        NOW + 5 * HOUR: (zstandard.ZstdCompressor().compress(stamped(body, 5)), "zstd"),
    }
    with archive.engine.begin() as conn:
        for at, (data, codec) in old_rows.items():
            n = (at - NOW) // HOUR
            row = snapshot_rows(archive, aid)[0]._asdict()
            conn.execute(
                article_snapshot.insert().values(
                    {
                        **row,
                        "snapshot_at": at,
                        "content_hash": hashlib.sha256(stamped(body, n)).digest(),
                        "raw_data": data,
                        "codec": codec,
                        "reference_at": None,
                    }
                )
            )
    codecs = [row.codec for row in snapshot_rows(archive, aid)]
    assert codecs == ["zstd", "zstd-ref", None, "zlib", "none", "zstd"]
    expected = [body, stamped(body, 1), stamped(body, 1)]
    expected += [stamped(body, n) for n in (3, 4, 5)]
    # A changed page refers to the article's latest stand-alone frame, an old row here.
    with archive.engine.begin() as conn:
        conn.execute(
            update(article)
            .where(article.c.article_id == aid)
            .values(last_content_hash=hashlib.sha256(stamped(body, 5)).digest())
        )
    archive.snapshots.save([page(aid, cna, NOW + 6 * HOUR, stamped(body, 6))])
    assert snapshot_rows(archive, aid)[-1].reference_at == NOW + 5 * HOUR
    expected.append(stamped(body, 6))
    for n, raw in enumerate(expected):
        assert read_snapshot(archive.engine, aid, NOW + n * HOUR).raw == raw
    assert iter_snapshots_raw(archive.engine) == expected


def test_a_frame_whose_reference_is_gone_fails_clearly(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    [aid] = add_articles(archive, cna, ["https://cna.example/news/1"])
    body = corpus_page("cna_s1")
    archive.snapshots.save([page(aid, cna, NOW, body)])
    archive.snapshots.save([page(aid, cna, NOW + HOUR, stamped(body, 1))])
    with archive.engine.begin() as conn:
        conn.execute(article_snapshot.delete().where(article_snapshot.c.snapshot_at == NOW))
    with pytest.raises(LookupError, match=f"reference snapshot of article {aid} at {NOW}"):
        read_snapshot(archive.engine, aid, NOW + HOUR)


def test_same_second_is_recorded_once(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    [aid] = add_articles(archive, cna, ["https://cna.example/news/1"])
    results = archive.snapshots.save([page(aid, cna, NOW, b"<p>one</p>")])
    results += archive.snapshots.save([page(aid, cna, NOW, b"<p>two</p>")])
    assert [r.outcome for r in results] == ["saved", "duplicate"]
    assert read_snapshot(archive.engine, aid, NOW).raw == b"<p>one</p>"
    assert article_row(archive, aid).snapshot_count == 1


def test_snapshots_follow_the_news_plan(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    [aid] = add_articles(archive, cna, ["https://cna.example/news/1"])
    # (snapshot taken at, next one due): an hour after the first, then, as every snapshot
    # changes, halving down to 15 min (adaptive); the last at first seen + 1 day.
    steps = [
        (NOW, NOW + HOUR),
        (NOW + HOUR, NOW + HOUR + 1800),
        (NOW + 2 * HOUR + 1800, NOW + 2 * HOUR + 2700),
        (NOW + 23 * HOUR, NOW + 23 * HOUR + 900),
        (NOW + 23 * HOUR + 1800, NOW + 23 * HOUR + 2700),
        (NOW + 24 * HOUR, STOP),
    ]
    due_at = NOW
    for count, (at, expected) in enumerate(steps, start=1):
        claimed = archive.articles.claim_due([cna], at, 10)
        assert [d.article_id for d in claimed] == ([aid] if due_at <= at else [])
        archive.snapshots.save([page(aid, cna, at, f"<p>{at}</p>".encode())])
        due_at = expected
        row = article_row(archive, aid)
        assert row.next_snapshot_at == expected, at - NOW
        assert (row.snapshot_count, row.first_snapshot_at, row.last_snapshot_at) == (
            count,
            NOW,
            at,
        )
        assert row.lease_until == 0
    assert archive.articles.claim_due([cna], NOW + 10**6, 10) == []


def test_one_batch_saves_many_articles(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    ids = add_articles(archive, cna, [f"https://cna.example/news/{n}" for n in range(4)])
    bodies = [f"<html>{n}</html>".encode() for n in range(4)]
    results = archive.snapshots.save(
        [page(aid, cna, NOW + 5, body) for aid, body in zip(ids, bodies, strict=True)]
    )
    assert [(r.article_id, r.outcome) for r in results] == [(aid, "saved") for aid in ids]
    for aid, body in zip(ids, bodies, strict=True):
        assert read_snapshot(archive.engine, aid, NOW + 5).raw == body
    assert archive.snapshots.save([]) == []


def test_five_megabytes_of_random_bytes_round_trip(archive: Archive, db_url: str) -> None:
    cna = add_site(archive, "cna")
    [aid] = add_articles(archive, cna, ["https://cna.example/news/big"])
    body = random.Random(20140101).randbytes(5 * 1024 * 1024)
    [result] = archive.snapshots.save([page(aid, cna, NOW, body)])
    assert result.outcome == "saved"
    assert result.stored_bytes >= len(body)
    assert read_snapshot(archive.engine, aid, NOW).raw == body
    [exported] = list(iter_snapshots(archive.engine))
    assert exported.snapshot.raw == body
    if db_url.startswith("mysql"):
        with archive.engine.connect() as conn:
            column_type = conn.execute(
                text(
                    "SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA ="
                    " DATABASE() AND TABLE_NAME = 'ArticleSnapshot' AND COLUMN_NAME = 'raw_data'"
                )
            ).scalar_one()
        assert column_type == "longblob"


def test_moved_to_a_new_url_creates_the_article_and_redirects_the_old(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    old_url, new_url = "https://cna.example/news/1?from=rss", "https://cna.example/news/1"
    [old] = add_articles(archive, cna, [old_url])
    archive.articles.claim_due([cna], NOW, 10)
    body = corpus_page("cna_s1")

    [result] = archive.snapshots.save([page(old, cna, NOW + 60, body, moved_to=new_url)])
    assert result.outcome == "saved"
    assert result.moved_from == old
    new = result.article_id
    assert new != old
    assert new == article_id(archive, new_url)

    moved = article_row(archive, new)
    assert (moved.site_id, moved.url, moved.article_type) == (cna, new_url, "news")
    assert (moved.snapshot_count, moved.last_snapshot_at) == (1, NOW + 60)
    assert moved.next_snapshot_at == NOW + 60 + HOUR
    assert read_snapshot(archive.engine, new, NOW + 60).raw == body
    assert snapshot_rows(archive, old) == []

    gone = article_row(archive, old)
    assert (gone.redirect_to, gone.next_snapshot_at, gone.stop_reason) == (new, STOP, "moved")
    assert (gone.lease_until, gone.snapshot_count) == (0, 0)
    assert [d.article_id for d in archive.articles.claim_due([cna], NOW + 10**6, 10)] == [new]


def test_moved_to_an_existing_article_reuses_it(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    old_url, known_url = "https://cna.example/news/old", "https://cna.example/news/known"
    old, known = add_articles(archive, cna, [old_url, known_url])
    archive.snapshots.save([page(known, cna, NOW, b"<p>known</p>")])

    [result] = archive.snapshots.save(
        [page(old, cna, NOW + 60, b"<p>known</p>", moved_to=known_url)]
    )
    assert (result.article_id, result.moved_from, result.outcome) == (known, old, "unchanged")
    assert count_rows(archive.engine, article) == 2
    assert article_row(archive, old).redirect_to == known
    assert article_row(archive, known).snapshot_count == 2
    assert read_snapshot(archive.engine, known, NOW + 60).raw == b"<p>known</p>"

    # A page that names its own URL has not moved.
    [result] = archive.snapshots.save(
        [page(known, cna, NOW + 120, b"<p>again</p>", moved_to=known_url)]
    )
    assert (result.article_id, result.moved_from, result.outcome) == (known, None, "saved")
    assert article_row(archive, known).redirect_to is None


def test_failures_back_off_then_stop(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    [aid] = add_articles(archive, cna, ["https://cna.example/news/1"])
    at = NOW
    for count in range(1, MAX_FAILURES):
        archive.articles.claim_due([cna], at, 10)
        results = archive.snapshots.record_failures([failure(aid, cna, at, 503)])
        assert results == [(aid, None)]
        row = article_row(archive, aid)
        assert row.failure_count == count
        assert row.next_snapshot_at == at + FAILURE_BACKOFF_BASE * 2 ** (count - 1)
        assert row.lease_until == 0
        assert row.stop_reason == "last_error:http_503"
        at = row.next_snapshot_at

    results = archive.snapshots.record_failures([failure(aid, cna, at)])
    assert results == [(aid, f"failed_{MAX_FAILURES}_times:timeout")]
    row = article_row(archive, aid)
    assert (row.failure_count, row.next_snapshot_at) == (MAX_FAILURES, STOP)
    assert row.stop_reason == f"failed_{MAX_FAILURES}_times:timeout"
    assert archive.articles.claim_due([cna], NOW + 10**6, 10) == []


def test_gone_pages_stop_at_once(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    gone, deleted, flaky = add_articles(
        archive, cna, [f"https://cna.example/news/{n}" for n in range(3)]
    )
    results = archive.snapshots.record_failures(
        [failure(gone, cna, NOW, 404), failure(deleted, cna, NOW, 410), failure(flaky, cna, NOW)]
    )
    assert results == [(gone, "gone:http_404"), (deleted, "gone:http_410"), (flaky, None)]
    row = article_row(archive, gone)
    assert (row.next_snapshot_at, row.stop_reason, row.failure_count) == (
        STOP,
        "gone:http_404",
        1,
    )
    assert article_row(archive, flaky).stop_reason == "last_error:timeout"
    assert archive.snapshots.record_failures([]) == []


def test_a_successful_snapshot_resets_the_failures(archive: Archive) -> None:
    cna = add_site(archive, "cna")
    [aid] = add_articles(archive, cna, ["https://cna.example/news/1"])
    archive.snapshots.record_failures([failure(aid, cna, NOW)])
    archive.snapshots.record_failures([failure(aid, cna, NOW + 300, 500)])
    assert article_row(archive, aid).failure_count == 2

    archive.snapshots.save([page(aid, cna, NOW + 900, b"<p>back</p>")])
    row = article_row(archive, aid)
    assert (row.failure_count, row.next_snapshot_at) == (0, NOW + 900 + HOUR)
    assert row.stop_reason is None

    # The count starts again from one: the first back-off again.
    archive.snapshots.record_failures([failure(aid, cna, NOW + 2 * HOUR)])
    row = article_row(archive, aid)
    assert (row.failure_count, row.next_snapshot_at) == (1, NOW + 2 * HOUR + 300)


# --- export -------------------------------------------------------------------------------


@pytest.fixture
def exported_archive(archive: Archive) -> Iterator[tuple[Archive, dict[str, int], list[Any]]]:
    """Three articles on two sites, with changed and unchanged snapshots, saved out of order.

    Yields the archive, the site ids, and the expected (article_id, at, site_id, url, raw).
    """
    cna = add_site(archive, "cna")
    udn = add_site(archive, "udn")
    a1, a2 = add_articles(archive, cna, ["https://cna.example/news/1", "https://cna.example/n/2"])
    [a3] = add_articles(archive, udn, ["https://udn.example/news/3"])
    urls = {a1: "https://cna.example/news/1", a2: "https://cna.example/n/2"}
    urls[a3] = "https://udn.example/news/3"
    sites = {a1: cna, a2: cna, a3: udn}
    first, second = corpus_page("cna_s1"), corpus_page("cna_s2")
    plan = [
        (a3, NOW + 10, b"<p>udn</p>"),
        (a1, NOW, first),
        (a2, NOW + 5, b"<p>two</p>"),
        (a1, NOW + HOUR, first),
        (a3, NOW + HOUR + 10, b"<p>udn</p>"),
        (a1, NOW + 2 * HOUR, second),
        (a2, NOW + HOUR + 5, b"<p>two</p>"),
        (a1, NOW + 3 * HOUR, second),
        (a2, NOW + 2 * HOUR + 5, b"<p>two, edited</p>"),
    ]
    archive.snapshots.save([page(aid, sites[aid], at, body) for aid, at, body in plan[:3]])
    for aid, at, body in plan[3:]:
        archive.snapshots.save([page(aid, sites[aid], at, body)])
    expected = sorted((aid, at, sites[aid], urls[aid], body) for aid, at, body in plan)
    yield archive, {"cna": cna, "udn": udn}, expected


def exported(engine: Engine, **filters: Any) -> list[Any]:
    return [
        (e.snapshot.article_id, e.snapshot.snapshot_at, e.site_id, e.url, e.snapshot.raw)
        for e in iter_snapshots(engine, **filters)
    ]


def test_iter_snapshots_yields_every_snapshot_in_order(
    exported_archive: tuple[Archive, dict[str, int], list[Any]],
) -> None:
    archive, _, expected = exported_archive
    assert len(expected) == 9
    assert exported(archive.engine) == expected
    [unchanged] = [
        e.snapshot for e in iter_snapshots(archive.engine) if e.snapshot.snapshot_at == NOW + HOUR
    ]
    assert unchanged.raw == corpus_page("cna_s1")
    assert (unchanged.encoding, unchanged.status) == ("utf-8", 200)
    assert unchanged.headers["Set-Cookie"] == ["a=1", "b=2"]


@pytest.mark.parametrize("batch", [1, 2, 3, 4, 200])
def test_iter_snapshots_in_small_batches_is_complete(
    exported_archive: tuple[Archive, dict[str, int], list[Any]], batch: int
) -> None:
    archive, sites, expected = exported_archive
    assert exported(archive.engine, batch=batch) == expected
    since = NOW + HOUR
    assert exported(archive.engine, batch=batch, site_id=sites["cna"], since=since) == [
        snap for snap in expected if snap[2] == sites["cna"] and snap[1] >= since
    ]


def test_iter_snapshots_filters_by_site_and_since(
    exported_archive: tuple[Archive, dict[str, int], list[Any]],
) -> None:
    archive, sites, expected = exported_archive
    udn = [snap for snap in expected if snap[2] == sites["udn"]]
    assert len(udn) == 2
    assert exported(archive.engine, site_id=sites["udn"]) == udn
    assert exported(archive.engine, site_id=sites["cna"], batch=3) == [
        snap for snap in expected if snap[2] == sites["cna"]
    ]
    # Unchanged snapshots after `since` repeat bytes stored before it.
    since = NOW + HOUR
    later = exported(archive.engine, since=since, batch=3)
    assert later == [snap for snap in expected if snap[1] >= since]
    assert len(later) == 6
    assert exported(archive.engine, since=NOW + 10 * HOUR) == []
    assert exported(archive.engine, site_id=9999) == []


def test_a_claim_reads_an_index_in_claim_order_on_mariadb(mariadb_db_url: str) -> None:
    """No sort of the due rows, on a table small enough that a scan looks cheaper (USE
    INDEX let MariaDB scan and sort here). The 10M-article case where MariaDB, left to
    choose, sorted 200 sites' due rows for minutes is in bench/due_work.py."""
    archive = open_archive(url=mariadb_db_url)
    sites = [add_site(archive, f"site{n}") for n in range(4)]
    for site_id in sites:
        urls = [f"https://site{site_id}.example/news/{n}" for n in range(50)]
        add_articles(archive, site_id, urls, NOW - 3600)
    with archive.engine.begin() as conn:
        conn.execute(text("ANALYZE TABLE Article"))
    for asked, index in ((sites[:1], "ix_Article_site_next"), (sites[:3], "ix_Article_scheduled")):
        sql = claim_query(asked, NOW, 10).compile(
            archive.engine, compile_kwargs={"literal_binds": True}
        )
        with archive.engine.connect() as conn:
            plan = conn.execute(text(f"EXPLAIN {sql}")).one()
        assert (plan.key, "filesort" in plan.Extra) == (index, False), plan
    assert len(archive.articles.claim_due(sites[:3], NOW, 10)) == 10
