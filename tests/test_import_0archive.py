"""`scrapy import_0archive`: a 0archive database built with ZeroScraper's own migrations
on MariaDB, filled with the rows a running 0archive held, imported into SQLite and into
MariaDB, compared row by row; a second run adds nothing; a killed run resumed ends with
the same rows; the schedule goes on from 0archive's."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.engine import Engine

from tests.conftest import REPO, Schema, fresh_mariadb, scrapy, start_scrapy
from tests.zeroscraper_db import build_zeroscraper
from tests.zeroscraper_rows import (
    APRIL_2020,
    FUTURE,
    MARCH_2020,
    NOW,
    PAST,
    ZeroArchiveRows,
    add_article,
    add_site,
    add_snapshot,
    add_snapshots,
    fill,
    page,
)
from zeroarchive.core.urls import canonicalize_url, url_hash
from zeroarchive.sources import label_types
from zeroarchive.storage.articles import ArticleStore
from zeroarchive.storage.engine import make_engine
from zeroarchive.storage.from_0archive.sites import map_site
from zeroarchive.storage.from_0archive.source import (
    OldSite,
    OldSnapshot,
    ZeroArchiveDb,
    prefetched,
)
from zeroarchive.storage.schema import (
    article,
    article_snapshot,
    legacy_id,
    site,
    site_article_days,
)
from zeroarchive.storage.snapshots import read_snapshot

CLOCK = {"ZEROARCHIVE_FAKE_NOW": str(NOW)}
SKIPPED_ARTICLES = {10, 11}
NO_ARTICLE = 999


def _zeroscraper_head(url: str) -> None:
    build_zeroscraper(url).dispose()


#: 0archive's schema at its migrations' head: three databases of this module and test_verify's
#: have it, migrated for the first of a test process, then made from its statements.
ZEROSCRAPER = Schema(_zeroscraper_head)


@pytest.fixture(scope="module")
def zeroscraper() -> Iterator[tuple[str, ZeroArchiveRows]]:
    """A 0archive database at its migrations' head, with fill()'s rows (only read)."""
    with fresh_mariadb(ZEROSCRAPER) as url:
        engine = create_engine(url)
        rows = fill(engine)
        engine.dispose()
        yield url, rows


@pytest.fixture
def archive(_migrated_sqlite: Path, tmp_path: Path) -> str:
    """A new SQLite archive, migrated (a copy of conftest's): each import's migration of a
    new file cost it 0.4 CPU s."""
    path = tmp_path / "archive.db"
    shutil.copyfile(_migrated_sqlite, path)
    return f"sqlite:///{path}"


def run_import(source: str, target: str, *extra: str) -> str:
    """The command's log (stderr), then its last line (stdout)."""
    done = scrapy("import_0archive", source, *extra, db_url=target, cwd=REPO, extra_env=CLOCK)
    assert done.returncode == 0, done.output
    return done.stderr + done.stdout


def new_id(engine: Engine, url: str) -> int:
    with engine.connect() as conn:
        found = conn.execute(
            select(article.c.article_id).where(article.c.url_hash == url_hash(url))
        ).scalar()
    assert found is not None, url
    return int(found)


def articles_by_url(engine: Engine) -> dict[str, dict[str, Any]]:
    with engine.connect() as conn:
        return {row["url"]: dict(row) for row in conn.execute(select(article)).mappings()}


def expected_snapshots(rows: ZeroArchiveRows) -> dict[tuple[str, int], bytes]:
    """(canonical URL, time) -> bytes of every snapshot that must come over."""
    out = {}
    for (_, old_id, at), raw in rows.snapshots.items():
        if raw is None or old_id in SKIPPED_ARTICLES or old_id == NO_ARTICLE:
            continue
        out[(canonicalize_url(rows.articles[old_id]["url"]), at)] = raw
    return out


def dump(engine: Engine) -> dict[str, Any]:
    """The archive's rows without their ids: equal dumps mean equal archives."""
    with engine.connect() as conn:
        sites = {r.site_id: r for r in conn.execute(select(site))}
        arts = {r.article_id: r for r in conn.execute(select(article))}
        snaps = conn.execute(select(article_snapshot)).all()
    return {
        "sites": sorted(
            (s.name, s.url, s.type, s.category, s.config, bool(s.is_active), s.airtable_id)
            for s in sites.values()
        ),
        "articles": sorted(
            (
                a.url,
                sites[a.site_id].name,
                a.article_type,
                a.created_at,
                a.first_snapshot_at,
                a.last_snapshot_at,
                a.next_snapshot_at,
                a.snapshot_count,
                a.stop_reason,
                arts[a.redirect_to].url if a.redirect_to else None,
                bytes(a.last_content_hash or b"").hex(),
            )
            for a in arts.values()
        ),
        "snapshots": sorted(
            (
                arts[s.article_id].url,
                s.snapshot_at,
                bytes(s.content_hash).hex(),
                s.raw_data is None,
                s.encoding,
                s.raw_size,
                bool(s.rendered),
            )
            for s in snaps
        ),
    }


def test_import_brings_every_site_article_and_snapshot_over_and_again_adds_nothing(
    zeroscraper: tuple[str, ZeroArchiveRows], db_url: str
) -> None:
    source, rows = zeroscraper
    output = run_import(source, db_url)
    assert output.rstrip().splitlines()[-1] == (
        "imported 4 sites, 13 articles, 16 snapshots (6 skipped)"
    ), output
    for named in (
        "skipped article 10 (ftp://news.example.tw/news/10): URL rejected",
        "skipped article 11 (https://news.example.tw/news/11): its site 99 is not in 0archive",
        "skipped snapshot ArticleSnapshot(11, 1585699500): its article 11 was skipped",
        "skipped snapshot ArticleSnapshot(999, 1585699560): no article 999 in 0archive",
        "skipped snapshot ArticleSnapshot(12, 1585699620): raw_data is NULL",
        "site 3 (文山伯 (search), fb_page): kept inactive",
        "snapshot ArticleSnapshot202003(4, 1583020800): not valid UTF-8 text",
        "skipped 0archive's SiteStats: 1 row (its daily counts",
        "skipped 0archive's Variable: 1 row (last_dump; its processes' locks",
    ):
        assert named in output, named
    assert output.count("skipped 0archive's Variable") == 1
    engine = make_engine(db_url)

    with engine.connect() as conn:
        sites = {r.airtable_id: r for r in conn.execute(select(site))}
    assert (sites["rec0001"].type, sites["rec0001"].category) == ("news", "news_website")
    assert json.loads(sites["rec0001"].config) == {
        "article": r"/news/\d+",
        "following": "/list",
        "depth": 2,
        "delay": 1.5,
    }
    assert sites["rec0001"].is_active and sites["rec0001"].last_crawl_at == NOW - 600
    assert sites["rec0002"].type == "ptt"
    fb = sites["rec0003"]
    assert (fb.type, fb.category, bool(fb.is_active)) == ("facebook", "fb_page", False)
    farm = sites["rec0004"]
    assert not farm.is_active and json.loads(farm.config)["render"] is True

    found = articles_by_url(engine)
    one = found["https://news.example.tw/news/1"]
    assert (one["first_snapshot_at"], one["last_snapshot_at"]) == (
        MARCH_2020 - 60,
        APRIL_2020 + 86400,
    )
    assert (one["snapshot_count"], one["next_snapshot_at"], one["stop_reason"]) == (4, FUTURE, None)
    assert bytes(one["last_content_hash"]) == hashlib.sha256(page("cna_s2")).digest()
    stopped = found["https://news.example.tw/news/4"]
    assert (stopped["next_snapshot_at"], stopped["stop_reason"]) == (0, "plan_complete")
    assert found["https://news.example.tw/news/5"]["next_snapshot_at"] == PAST
    assert found["https://news.example.tw/news/9"]["next_snapshot_at"] == NOW
    moved = found["https://news.example.tw/news/6"]
    assert (moved["next_snapshot_at"], moved["stop_reason"]) == (0, "moved")
    assert moved["redirect_to"] == new_id(engine, "https://news.example.tw/news/7")
    assert found["https://news.example.tw/news/8"]["redirect_to"] == new_id(
        engine, "https://news.example.tw/news/80"
    )
    assert found["https://news.example.tw/news/80"]["next_snapshot_at"] == NOW
    assert (
        found["https://www.ptt.cc/bbs/Gossiping/M.1585699200.A.123.html"]["article_type"] == "PTT"
    )
    assert found["https://www.facebook.com/100/posts/200"]["article_type"] == "FBPost"
    assert "ftp://news.example.tw/news/10" not in found
    assert len(found) == 12  # 13 of 0archive's rows, 1-3 merged into one, plus news/80
    # What SiteStats counted of new articles, the archive counts from the articles.
    with engine.connect() as conn:
        news = sites["rec0001"].site_id
        per_day = {
            int(row.day): int(row.articles)
            for row in conn.execute(
                select(site_article_days).where(site_article_days.c.site_id == news)
            )
        }
    by_day: dict[int, int] = {}
    for row in found.values():
        if row["site_id"] == news:
            by_day[row["created_at"] // 86400] = by_day.get(row["created_at"] // 86400, 0) + 1
    assert per_day == by_day and sum(by_day.values()) == 9

    expected = expected_snapshots(rows)
    with engine.connect() as conn:
        stored = conn.execute(select(article_snapshot)).all()
    assert len(stored) == len(expected) == 16
    for (url, at), raw in expected.items():
        snapshot = read_snapshot(engine, new_id(engine, url), at)
        assert snapshot.raw == raw, (url, at)
        assert snapshot.content_hash == hashlib.sha256(raw).digest()
    by_key = {(row.article_id, row.snapshot_at): row for row in stored}
    four = new_id(engine, "https://news.example.tw/news/4")
    assert by_key[(four, MARCH_2020 + 3600)].raw_data is None  # the unchanged repeat
    assert by_key[(four, MARCH_2020)].encoding != "utf-8"
    assert by_key[(one["article_id"], APRIL_2020 + 7200)].raw_data is None  # cna_s1 again
    # A changed page refers to its article's stand-alone frame of the same month, as a
    # crawled re-snapshot does; never across months (rotation drops a month at once).
    referring = [row for row in stored if row.codec == "zstd-ref"]
    assert {row.article_id for row in referring} == {one["article_id"], four}
    for row in referring:
        reference = by_key[(row.article_id, row.reference_at)]
        assert (reference.codec, reference.reference_at) == ("zstd", None)
        assert row.snapshot_at_date.replace(day=1) == reference.snapshot_at_date.replace(day=1)
    five = new_id(engine, "https://news.example.tw/news/5")
    assert by_key[(five, APRIL_2020 + 60)].codec == "zstd"  # its reference is of March
    farm_post = new_id(engine, "http://qiqi.today/12345")
    assert by_key[(farm_post, APRIL_2020 + 700)].rendered
    before = dump(engine)
    engine.dispose()

    again = run_import(source, db_url)
    assert again.rstrip().splitlines()[-1] == (
        "imported 0 sites, 0 articles, 0 snapshots (6 skipped)"
    ), again
    assert "already imported before: 4 sites, 13 articles, 16 snapshots" in again
    engine = make_engine(db_url)
    assert dump(engine) == before
    engine.dispose()


def test_dry_run_counts_and_names_the_problems_and_writes_nothing(
    zeroscraper: tuple[str, ZeroArchiveRows], tmp_path: Path
) -> None:
    source, _ = zeroscraper
    target = tmp_path / "archive.db"
    output = run_import(source, f"sqlite:///{target}", "--dry-run")
    assert output.rstrip().splitlines()[-1] == (
        "dry run: would import 4 sites, 13 articles, 16 snapshots (6 skipped)"
    ), output
    for named in (
        "problem: site 3 (文山伯 (search), fb_page): kept inactive",
        "problem: snapshot ArticleSnapshot202003(4, 1583020800): not valid UTF-8 text",
        "problem: snapshot ArticleSnapshot202003(9, 1583021100): not valid UTF-8 text",
        "skipped article 11 (https://news.example.tw/news/11): its site 99 is not in 0archive",
        "skipped 0archive's Variable: 1 row (last_dump;",
    ):
        assert named in output, named
    assert not target.exists()


def test_only_the_sites_asked_for(zeroscraper: tuple[str, ZeroArchiveRows], archive: str) -> None:
    source, _ = zeroscraper
    db = archive
    output = run_import(source, db, "--sites", "2,4", "--batch", "1")
    assert output.rstrip().splitlines()[-1] == (
        "imported 2 sites, 2 articles, 2 snapshots (0 skipped)"
    ), output
    assert "SiteStats" not in output  # its one row is of site 1
    missing = scrapy("import_0archive", source, "--sites", "77", db_url=db, cwd=REPO)
    assert missing.returncode != 0 and "no site 77 in the 0archive database" in missing.output


def test_the_schedule_goes_on_from_0archives(
    zeroscraper: tuple[str, ZeroArchiveRows], archive: str
) -> None:
    source, _ = zeroscraper
    db = archive
    run_import(source, db)
    engine = make_engine(db)
    with engine.connect() as conn:
        news = conn.execute(select(site.c.site_id).where(site.c.airtable_id == "rec0001")).scalar()
    store = ArticleStore(engine)

    def due(at: int) -> set[str]:
        return {a.url for a in store.claim_due([news], at, 100, lease=1)}

    # Nothing is handed out before its next_snapshot_at; what was due in 0archive is due.
    assert due(NOW) == {
        "https://news.example.tw/news/5",
        "https://news.example.tw/news/9",
        "https://news.example.tw/news/80",
    }
    assert due(FUTURE - 1) == {
        "https://news.example.tw/news/5",
        "https://news.example.tw/news/9",
        "https://news.example.tw/news/80",
    }
    # At 0archive's next time the scheduled ones come; stopped and moved ones never do.
    assert due(FUTURE) == {
        "https://news.example.tw/news/1",
        "https://news.example.tw/news/5",
        "https://news.example.tw/news/7",
        "https://news.example.tw/news/9",
        "https://news.example.tw/news/12",
        "https://news.example.tw/news/80",
    }
    engine.dispose()


def test_map_site_keeps_a_site_no_spider_can_crawl_inactive() -> None:
    old = OldSite(
        3,
        "fb_page",
        "文山伯",
        "https://www.facebook.com/search/top/?q=x",
        "{}",
        True,
        "rec7xrqokEMg3s5L9",
        None,
    )
    mapped = map_site(old, label_types())
    assert mapped.problem and not mapped.spec.is_active
    assert (mapped.spec.type, mapped.spec.category) == ("facebook", "fb_page")
    blog = OldSite(
        5, "blog", "部落", "https://blog.example/", '{"article": "/p/"}', True, "recB", None
    )
    mapped = map_site(blog, label_types())
    assert "unknown type 'blog'" in (mapped.problem or "")
    assert (mapped.spec.type, mapped.spec.category, mapped.spec.is_active) == (
        "news",
        "blog",
        False,
    )
    assert map_site(blog, label_types({"blog": "content_farm"})).spec.type == "content_farm"


def big_zeroscraper(url: str, articles: int = 40, per_article: int = 10) -> None:
    """A 0archive with enough snapshots for a run to be killed in the middle, in the
    database at ``url`` (0archive's schema at its head)."""
    engine = create_engine(url)
    rows = ZeroArchiveRows()
    pages = [page(name) for name in ("cna_s1", "cna_s2", "ettoday_s1", "tvbs_s1", "udn_s2")]
    add_site(engine, 1)
    snapshots = []
    for article_id in range(1, articles + 1):
        add_article(
            engine,
            rows,
            article_id,
            snapshot_count=per_article,
            next_snapshot_at=FUTURE if article_id % 2 else 0,
        )
        for n in range(per_article):
            raw = pages[(article_id + n) % len(pages)]
            if raw == pages[-1]:  # a Big5 page: the live (utf8mb4) table cannot hold it
                raw = pages[0] + f"<!-- {n} -->".encode()
            snapshots.append((article_id, APRIL_2020 + n * 3600, raw))
    # One transaction for the 400 rows: one each took 0.02-0.1 s of MariaDB's commits.
    add_snapshots(engine, rows, snapshots)
    engine.dispose()


@pytest.fixture(scope="module")
def big_source(
    tmp_path_factory: pytest.TempPathFactory, _migrated_sqlite: Path
) -> Iterator[tuple[str, Any]]:
    """``big_zeroscraper``'s 0archive (only read by the imports) and what an import left
    undisturbed makes of it (``dump`` of a clean SQLite archive), built once for the
    module: each engine's killed import is compared against it."""
    with fresh_mariadb(ZEROSCRAPER) as source:
        big_zeroscraper(source)
        path = tmp_path_factory.mktemp("clean") / "clean.db"
        shutil.copyfile(_migrated_sqlite, path)
        clean = f"sqlite:///{path}"
        run_import(source, clean)
        expected = make_engine(clean)
        yield source, dump(expected)
        expected.dispose()


def count(db: str | Engine, table: str) -> int:
    engine = create_engine(db) if isinstance(db, str) else db
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar_one())
    except Exception:
        return 0
    finally:
        if engine is not db:
            engine.dispose()


def kill_when(source: str, db: str, table: str, at_least: int) -> int:
    """Start an import and kill it (SIGKILL) once ``table`` has ``at_least`` rows."""
    env = {
        **os.environ,
        **CLOCK,
        "ZEROARCHIVE_DB_URL": db,
        "PYTHONPATH": str(REPO),
        "SCRAPY_SETTINGS_MODULE": "settings.base",
    }
    process = start_scrapy(["import_0archive", source, "--batch", "2"], env, REPO)
    # One engine for every look: a new one each time took a core of its own on a busy
    # machine, and the import it watched ran the slower.
    engine = create_engine(db)
    try:
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            if count(engine, table) >= at_least:
                process.send_signal(signal.SIGKILL)
                break
            # Every 50 ms: the import writes two snapshots a batch, so the kill still lands
            # far before the 400th (at the 60th, both engines, load 30); every 10 ms the
            # test (and MariaDB) ran a few hundred COUNTs more while the import ran.
            time.sleep(0.05)
        return process.wait(timeout=60)
    finally:
        engine.dispose()
        if process.poll() is None:
            process.kill()


def test_a_killed_import_resumed_ends_with_the_same_rows(
    db_url: str, big_source: tuple[str, Any]
) -> None:
    # An archive already migrated (the run's first step, not what is killed here): a new
    # one migrated by each import cost MariaDB a second of DDL and SQLite 0.4 CPU s.
    source, expected = big_source
    assert kill_when(source, db_url, "ArticleSnapshot", 60) == -signal.SIGKILL
    assert 60 <= count(db_url, "ArticleSnapshot") < 400  # killed in the middle
    output = run_import(source, db_url)
    assert "already imported before: 1 sites, 40 articles" in output
    resumed = make_engine(db_url)
    assert dump(resumed) == expected
    with resumed.connect() as conn:
        mapped = conn.execute(select(func.count()).select_from(legacy_id)).scalar_one()
    assert mapped == 41  # every site and article once
    resumed.dispose()


def test_snapshots_the_archive_holds_are_not_read_again(
    zeroscraper: tuple[str, ZeroArchiveRows],
) -> None:
    source_url, rows = zeroscraper
    source = ZeroArchiveDb(source_url)
    month = "ArticleSnapshot202003"
    asked: list[list[tuple[int, int]]] = []

    def imported(keys: list[OldSnapshot]) -> set[tuple[int, int]]:
        asked.append([(k.article_id, k.snapshot_at) for k in keys])
        return {(k.article_id, k.snapshot_at) for k in keys if k.article_id == 4}

    try:
        assert source.keyed(month)
        # The live table is utf8mb4: its bytes are UTF-8 for certain, and not checked again.
        assert source.holds_utf8("ArticleSnapshot") and not source.holds_utf8(month)
        batches = list(source.snapshots(month, None, 2, 1 << 20, imported))
    finally:
        source.close()
    in_month = sorted((a, at) for (table, a, at) in rows.snapshots if table == month)
    # Every key was offered in key order, two at a time; the bytes came only for the others.
    assert [key for page in asked for key in page] == in_month
    assert {len(page) for page in asked[:-1]} == {2}
    read = {(s.article_id, s.snapshot_at): s.raw for b in batches for s in b.rows}
    assert read == {(a, at): rows.snapshots[(month, a, at)] for a, at in in_month if a != 4}
    assert sum(b.already for b in batches) == sum(1 for a, _ in in_month if a == 4) == 3
    assert not any(b.utf8 for b in batches)


def test_a_month_table_without_the_key_is_read_in_one_pass(archive: str) -> None:
    with fresh_mariadb(ZEROSCRAPER) as source:
        engine = create_engine(source)
        rows = ZeroArchiveRows()
        add_site(engine, 1)
        add_article(engine, rows, 1, snapshot_count=3, last_snapshot_at=APRIL_2020)
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE ArticleSnapshot_202003 LIKE ArticleSnapshot"))
            conn.execute(
                text(
                    "ALTER TABLE ArticleSnapshot_202003 DROP PRIMARY KEY,"
                    " MODIFY raw_data MEDIUMTEXT CHARACTER SET latin1"
                )
            )
        month = page("udn_s1")  # Big5
        add_snapshot(engine, rows, 1, MARCH_2020, month, "ArticleSnapshot_202003")
        add_snapshot(engine, rows, 1, MARCH_2020 + 60, page("cna_s1"), "ArticleSnapshot_202003")
        add_snapshot(engine, rows, 1, APRIL_2020, page("cna_s2"))
        engine.dispose()
        reader = ZeroArchiveDb(source)
        assert not reader.keyed("ArticleSnapshot_202003") and reader.keyed("ArticleSnapshot")
        reader.close()
        db = archive
        output = run_import(source, db)
        assert output.rstrip().splitlines()[-1] == (
            "imported 1 sites, 1 articles, 3 snapshots (0 skipped)"
        ), output
        archive = make_engine(db)
        new = new_id(archive, "https://news.example.tw/news/1")
        for (_, _, at), raw in rows.snapshots.items():
            assert read_snapshot(archive, new, at).raw == raw
        archive.dispose()
        again = run_import(source, db)
        assert "already imported before: 1 sites, 1 articles, 3 snapshots" in again


def test_prefetched_reads_ahead_and_hands_on_errors_and_stops_when_left() -> None:
    def batches(fail: bool) -> Iterator[list[int]]:
        for n in range(5):
            yield [n]
        if fail:
            raise OSError("the 0archive database went away")

    assert list(prefetched(batches(False))) == [[0], [1], [2], [3], [4]]
    with pytest.raises(OSError, match="went away"):
        list(prefetched(batches(True)))
    reader = prefetched(batches(False))
    assert next(reader) == [0]
    reader.close()  # the reading thread ends too


def test_a_source_that_is_no_0archive_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'archive.db'}"
    for url, says in (
        ("sqlite:///zeroscraper.db", "a 0archive database is MySQL or MariaDB, not sqlite"),
        ("mysql+pymysql://nobody:secret@127.0.0.1:3306/zs", "Access denied for user 'nobody'"),
    ):
        done = scrapy("import_0archive", url, db_url=db, cwd=REPO)
        assert done.returncode == 2, done.output
        assert says in done.stderr and "Traceback" not in done.stderr
        assert "secret" not in done.stderr
