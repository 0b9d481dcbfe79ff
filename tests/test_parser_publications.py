"""parse_snapshots and export_publications on both backends (SQLite file, real MariaDB):
incremental, idempotent, versioned; the publication tables and the real CLI."""

from __future__ import annotations

import gc
import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, func, select
from sqlalchemy.engine import Connection

from tests.conftest import FIXTURES, REPO, scrapy
from zeroarchive.core.items import FetchedPage
from zeroarchive.core.progress import Progress
from zeroarchive.parser import PARSER_VERSION
from zeroarchive.parser.run import ParseRunConfig, _parser_processes, parse_pending
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.publications import AddedVersion, PublicationStore
from zeroarchive.storage.schema import (
    article,
    article_snapshot,
    parse_inbox,
    parse_progress,
    parser_info,
    producer,
    producer_mapping,
    publication,
    publication_mapping,
)

NOW = 1_700_000_000  # any fixed time, never the clock
URL = "https://news.ltn.com.tw/news/politics/breakingnews/994343"
PTT_URL = "https://www.ptt.cc/bbs/Gossiping/M.1459688662.A.CFE.html"
PAGE = gzip.decompress(
    (FIXTURES / "tw-news-2014" / "html" / "liberty_times_news_s1.html.gz").read_bytes()
)
EDITED = PAGE.replace("停止禁食".encode(), "結束禁食".encode())
SAME_TEXT = PAGE + b"\n<!-- served by another cache node -->\n"


@pytest.fixture
def archive(db_url: str) -> Archive:
    return open_archive(url=db_url)


def add_site(archive: Archive, name: str, site_type: str, url: str) -> int:
    config = {"article": "/news/"} if site_type == "news" else {}
    spec = parse_spec({"name": name, "url": url, "type": site_type, "config": config})
    return archive.sites.upsert(spec, NOW)[0]


def add_article(archive: Archive, site_id: int, article_type: str, url: str) -> int:
    archive.articles.add(site_id, article_type, [url], NOW)
    with archive.engine.connect() as conn:
        return int(
            conn.execute(select(article.c.article_id).where(article.c.url == url)).scalar_one()
        )


def snapshot(archive: Archive, ids: tuple[int, int], at: int, body: bytes, url: str) -> None:
    archive.snapshots.save(
        [
            FetchedPage(
                article_id=ids[0],
                site_id=ids[1],
                article_type="news",
                fetched_at=at,
                status=200,
                final_url=url,
                headers={"Content-Type": ["text/html; charset=utf-8"]},
                encoding="utf-8",
                body=body,
            )
        ]
    )


def rows(archive: Archive, table: Any) -> list[Any]:
    with archive.engine.connect() as conn:
        return list(conn.execute(select(table)))


def count(archive: Archive, table: Any) -> int:
    with archive.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


@pytest.fixture
def news(archive: Archive) -> tuple[int, int]:
    site_id = add_site(archive, "ltn", "news", "https://news.ltn.com.tw/")
    return add_article(archive, site_id, "Article", URL), site_id


def test_consecutive_identical_snapshots_make_one_version(
    archive: Archive, news: tuple[int, int]
) -> None:
    for offset, body in enumerate((PAGE, PAGE, SAME_TEXT)):
        snapshot(archive, news, NOW + offset * 3600, body, URL)
    stats = parse_pending(archive.engine, ParseRunConfig(), now=NOW)
    assert stats["parser/new_publication"] == 1
    assert stats["parser/unchanged_snapshot"] == 1  # same bytes: not even parsed again
    assert stats["parser/same_publication"] == 1  # other bytes, same publication
    [row] = rows(archive, publication)
    assert row.version == 1
    assert row.first_seen_at == NOW
    assert row.last_seen_at == NOW + 2 * 3600
    assert {m.publication_id for m in rows(archive, publication_mapping)} == {row.publication_id}


def test_an_edit_makes_a_new_version(archive: Archive, news: tuple[int, int]) -> None:
    snapshot(archive, news, NOW, PAGE, URL)
    snapshot(archive, news, NOW + 3600, EDITED, URL)
    stats = parse_pending(archive.engine, ParseRunConfig(), now=NOW)
    assert stats["parser/new_version"] == 1
    first, second = sorted(rows(archive, publication), key=lambda r: r.version)
    assert (first.version, second.version) == (1, 2)
    assert "林義雄宣布停止禁食" in first.title
    assert "林義雄宣布結束禁食" in second.title
    assert second.first_seen_at == NOW + 3600


def test_hooks_see_each_new_version_inside_its_transaction(
    archive: Archive, news: tuple[int, int]
) -> None:
    for offset, body in enumerate((PAGE, SAME_TEXT, EDITED)):
        snapshot(archive, news, NOW + offset * 3600, body, URL)
    seen: list[tuple[int, int, int, bool]] = []

    def hook(conn: Connection, added: AddedVersion) -> None:
        # The version is visible to the hook's own transaction before it commits.
        stored = conn.execute(
            select(publication.c.title).where(publication.c.publication_id == added.publication_id)
        ).scalar_one()
        seen.append(
            (added.article_id, added.version, added.snapshot_at, stored == added.parsed.title)
        )

    parse_pending(archive.engine, ParseRunConfig(), now=NOW, hooks=[hook])
    assert seen == [(news[0], 1, NOW, True), (news[0], 2, NOW + 2 * 3600, True)]


def test_a_failing_hook_takes_its_version_back(archive: Archive, news: tuple[int, int]) -> None:
    snapshot(archive, news, NOW, PAGE, URL)

    def hook(conn: Connection, added: AddedVersion) -> None:
        raise RuntimeError("index is away")

    with pytest.raises(RuntimeError, match="index is away"):
        parse_pending(archive.engine, ParseRunConfig(), now=NOW, hooks=[hook])
    assert count(archive, publication) == 0
    assert count(archive, publication_mapping) == 0
    # Nothing was lost: the next run parses the snapshot again.
    assert parse_pending(archive.engine, ParseRunConfig(), now=NOW)["parser/new_publication"] == 1


def test_publication_fields(archive: Archive, news: tuple[int, int]) -> None:
    snapshot(archive, news, NOW, PAGE, URL)
    parse_pending(archive.engine, ParseRunConfig(), now=NOW)
    [row] = rows(archive, publication)
    assert row.title == "義光禁食》林義雄宣布停止禁食 願再為台奮鬥"
    assert "最新消息！前民" in row.publication_text
    assert row.published_at == 1398840577
    assert row.last_updated_at == NOW  # the page declares no edit time
    assert row.language is None  # the page declares none
    assert row.canonical_url == "http://news.ltn.com.tw/news/politics/breakingnews/998126"
    assert row.comment_count == 0
    assert json.loads(row.metadata)["meta"]
    assert row.parser_version == rows(archive, parser_info)[0].parser_version


def test_producer_per_site(archive: Archive, news: tuple[int, int]) -> None:
    snapshot(archive, news, NOW, PAGE, URL)
    parse_pending(archive.engine, ParseRunConfig(), now=NOW)
    [made] = rows(archive, producer)
    assert (made.name, made.type, made.url) == ("ltn", "news", "https://news.ltn.com.tw/")
    assert json.loads(made.languages) == []  # the page declares no language
    [mapping] = rows(archive, producer_mapping)
    assert (mapping.site_id, mapping.producer_id) == (news[1], made.producer_id)


def test_incremental_and_idempotent(archive: Archive, news: tuple[int, int]) -> None:
    snapshot(archive, news, NOW, PAGE, URL)
    parse_pending(archive.engine, ParseRunConfig(), now=NOW)
    again = parse_pending(archive.engine, ParseRunConfig(), now=NOW)
    assert again["parser/parsed"] == 0
    snapshot(archive, news, NOW + 3600, EDITED, URL)
    later = parse_pending(archive.engine, ParseRunConfig(), now=NOW + 3600)
    assert later["parser/parsed"] == 1
    assert later["parser/new_version"] == 1
    assert count(archive, publication) == 2
    assert count(archive, publication_mapping) == 2


def test_a_new_parser_version_parses_everything_again(
    archive: Archive, news: tuple[int, int]
) -> None:
    snapshot(archive, news, NOW, PAGE, URL)
    parse_pending(archive.engine, ParseRunConfig(parser_version="old"), now=NOW)
    stats = parse_pending(archive.engine, ParseRunConfig(parser_version="new"), now=NOW)
    assert stats["parser/new_publication"] == 1
    assert {r.parser_version for r in rows(archive, publication)} == {"old", "new"}
    assert {r.parser_version for r in rows(archive, parser_info)} == {"old", "new"}


def test_reparse_replaces_this_versions_results(archive: Archive, news: tuple[int, int]) -> None:
    snapshot(archive, news, NOW, PAGE, URL)
    parse_pending(archive.engine, ParseRunConfig(), now=NOW)
    stats = parse_pending(archive.engine, ParseRunConfig(reparse=True), now=NOW)
    assert stats["parser/discarded"] == 1
    assert stats["parser/new_publication"] == 1
    assert count(archive, publication) == 1


def test_a_bad_snapshot_is_recorded_and_the_others_go_on(
    archive: Archive, news: tuple[int, int]
) -> None:
    ptt_site = add_site(archive, "gossiping", "ptt", "https://www.ptt.cc/bbs/Gossiping/index.html")
    ptt = (add_article(archive, ptt_site, "PTT", PTT_URL), ptt_site)
    snapshot(archive, ptt, NOW, b"<html><body>not a post</body></html>", PTT_URL)
    snapshot(archive, news, NOW, PAGE, URL)
    stats = parse_pending(archive.engine, ParseRunConfig(), now=NOW)
    assert stats["parser/errors"] == 1
    assert stats["parser/new_publication"] == 1
    failed = [m for m in rows(archive, publication_mapping) if m.status == "error"]
    assert [m.article_id for m in failed] == [ptt[0]]
    assert "main-content" in failed[0].error


def test_ptt_post_through_the_store(archive: Archive) -> None:
    site_id = add_site(archive, "gossiping", "ptt", "https://www.ptt.cc/bbs/Gossiping/index.html")
    ids = (add_article(archive, site_id, "PTT", PTT_URL), site_id)
    post = REPO / "tests" / "fixtures" / "ptt" / "tommady-pttifierLib__TestContentHTML.html"
    body = post.read_bytes()
    snapshot(archive, ids, NOW, body, PTT_URL)
    parse_pending(archive.engine, ParseRunConfig(site_id=site_id), now=NOW)
    [row] = rows(archive, publication)
    assert row.comment_count == 8
    assert json.loads(row.comments)[0]["user"] == "skyexers"
    assert row.author == "senyek9527"
    [made] = rows(archive, producer)
    assert json.loads(made.languages) == ["zh-Hant-TW"]


def test_the_commands_parse_and_export(db_url: str, tmp_path: Path) -> None:
    archive = open_archive(url=db_url)
    site_id = add_site(archive, "ltn", "news", "https://news.ltn.com.tw/")
    ids = (add_article(archive, site_id, "Article", URL), site_id)
    snapshot(archive, ids, NOW, PAGE, URL)
    snapshot(archive, ids, NOW + 3600, EDITED, URL)
    parsed = scrapy("parse_snapshots", "--site", "ltn", db_url=db_url, cwd=tmp_path)
    assert parsed.returncode == 0, parsed.output
    assert "2 snapshot(s) parsed" in parsed.output
    assert "parse_snapshots: 2 snapshots done in" in parsed.output
    again = scrapy("parse_snapshots", db_url=db_url, cwd=tmp_path)
    assert "0 snapshot(s) parsed" in again.output
    out = tmp_path / "publications.jsonl.gz"
    exported = scrapy("export_publications", "--out", str(out), db_url=db_url, cwd=tmp_path)
    assert exported.returncode == 0, exported.output
    with gzip.open(out, "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    assert [r["version"] for r in records] == [1, 2]
    assert records[0]["producer"] == "ltn"
    assert records[0]["title"] == "義光禁食》林義雄宣布停止禁食 願再為台奮鬥"
    assert records[1]["hashtags"] == [] and isinstance(records[1]["metadata"], dict)


def mapped_at(archive: Archive, stamp: int) -> set[tuple[int, int, str]]:
    """The (article, snapshot, parser version) mappings a run stamped ``stamp`` wrote."""
    return {
        (m.article_id, m.snapshot_at, m.parser_version)
        for m in rows(archive, publication_mapping)
        if m.parsed_at == stamp
    }


def test_a_run_parses_exactly_the_snapshots_without_a_mapping_for_its_version(
    archive: Archive, news: tuple[int, int]
) -> None:
    other = (add_article(archive, news[1], "Article", URL + "?p=2"), news[1])
    snapshot(archive, news, NOW, PAGE, URL)
    snapshot(archive, other, NOW, PAGE, URL)
    parse_pending(archive.engine, ParseRunConfig(parser_version="v1"), now=NOW)
    snapshot(archive, news, NOW + 3600, EDITED, URL)
    snapshot(archive, other, NOW + 3600, PAGE, URL)
    snapshot(archive, other, NOW + 7200, EDITED, URL)
    stats = parse_pending(archive.engine, ParseRunConfig(parser_version="v1", batch=2), now=NOW + 1)
    assert mapped_at(archive, NOW + 1) == {
        (news[0], NOW + 3600, "v1"),
        (other[0], NOW + 3600, "v1"),
        (other[0], NOW + 7200, "v1"),
    }
    assert (stats["parser/parsed"], stats["parser/unchanged_snapshot"]) == (2, 1)
    assert (
        parse_pending(archive.engine, ParseRunConfig(parser_version="v1"), now=NOW + 2)[
            "parser/parsed"
        ]
        == 0
    )
    assert mapped_at(archive, NOW + 2) == set()
    # A new parser version has parsed nothing yet: all five snapshots again.
    parse_pending(archive.engine, ParseRunConfig(parser_version="v2", batch=2), now=NOW + 3)
    assert mapped_at(archive, NOW + 3) == {
        (article_id, at, "v2")
        for article_id in (news[0], other[0])
        for at in (NOW, NOW + 3600, NOW + 7200)
        if (article_id, at) != (news[0], NOW + 7200)
    }


def test_progress_is_told_the_runs_total_and_each_snapshot(
    archive: Archive, news: tuple[int, int]
) -> None:
    other = (add_article(archive, news[1], "Article", URL + "?p=2"), news[1])
    snapshot(archive, news, NOW, PAGE, URL)
    snapshot(archive, other, NOW, PAGE, URL)
    full_pass = Progress("parse", stream=io.StringIO(), bar=False)
    parse_pending(archive.engine, ParseRunConfig(), now=NOW, progress=full_pass)
    assert (full_pass.total, full_pass.done) == (2, 2)
    snapshot(archive, news, NOW + 3600, EDITED, URL)
    snapshot(archive, other, NOW + 3600, PAGE, URL)
    snapshot(archive, other, NOW + 7200, EDITED, URL)
    from_inbox = Progress("parse", stream=io.StringIO(), bar=False)
    parse_pending(archive.engine, ParseRunConfig(), now=NOW + 1, progress=from_inbox)
    assert (from_inbox.total, from_inbox.done) == (3, 3)


def test_a_run_with_nothing_new_reads_no_snapshot(
    archive: Archive, news: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot(archive, news, NOW, PAGE, URL)
    snapshot(archive, news, NOW + 3600, EDITED, URL)
    parse_pending(archive.engine, ParseRunConfig(), now=NOW)

    def unexpected(*args: object) -> None:
        raise AssertionError(f"read a snapshot that was already parsed: {args[1:]}")

    monkeypatch.setattr("zeroarchive.parser.run.read_snapshot", unexpected)
    assert parse_pending(archive.engine, ParseRunConfig(), now=NOW)["parser/parsed"] == 0


def test_a_new_snapshot_compares_with_the_latest_parsed_one(
    archive: Archive, news: tuple[int, int]
) -> None:
    snapshot(archive, news, NOW, PAGE, URL)
    snapshot(archive, news, NOW + 3600, EDITED, URL)
    parse_pending(archive.engine, ParseRunConfig(), now=NOW)
    snapshot(archive, news, NOW + 7200, EDITED + b"<!-- another cache node -->", URL)
    stats = parse_pending(archive.engine, ParseRunConfig(), now=NOW)
    assert stats["parser/same_publication"] == 1
    assert sorted(r.version for r in rows(archive, publication)) == [1, 2]


def test_unparsed_snapshots_by_site_and_since_in_batches(
    archive: Archive, news: tuple[int, int]
) -> None:
    ptt_site = add_site(archive, "gossiping", "ptt", "https://www.ptt.cc/bbs/Gossiping/index.html")
    ptt = (add_article(archive, ptt_site, "PTT", PTT_URL), ptt_site)
    for hour in range(5):
        snapshot(archive, news, NOW + hour * 3600, PAGE + bytes(hour), URL)
    snapshot(archive, ptt, NOW, b"<html></html>", PTT_URL)
    store = PublicationStore(archive.engine, "v1")
    batches = list(store.iter_unparsed(batch=2))
    assert [len(b) for b in batches] == [2, 2, 2]
    assert [(u.article_id, u.snapshot_at) for b in batches for u in b] == [
        *((news[0], NOW + hour * 3600) for hour in range(5)),
        (ptt[0], NOW),
    ]
    assert [u.article_id for b in store.iter_unparsed(site_id=ptt_site) for u in b] == [ptt[0]]
    since = [u.snapshot_at for b in store.iter_unparsed(news[1], NOW + 7200) for u in b]
    assert since == [NOW + 7200, NOW + 10800, NOW + 14400]


def stored_results(archive: Archive) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Every publication and every snapshot's mapping, without ids and parse times."""
    versions = {r.publication_id: r.version for r in rows(archive, publication)}
    published = sorted(
        tuple(
            value for key, value in r._mapping.items() if key not in ("publication_id", "parsed_at")
        )
        for r in rows(archive, publication)
    )
    mapped = sorted(
        (m.article_id, m.snapshot_at, m.status, m.error, versions.get(m.publication_id))
        for m in rows(archive, publication_mapping)
    )
    return published, mapped


def test_parser_processes_store_what_one_process_stores(db_url: str, tmp_path: Path) -> None:
    archive = open_archive(url=db_url)
    site_id = add_site(archive, "ltn", "news", "https://news.ltn.com.tw/")
    news = (add_article(archive, site_id, "Article", URL), site_id)
    # Unchanged, same text, an edit, an unparsable page between two equal ones (the second
    # is parsed ahead, then found unchanged), the first text again.
    for hour, body in enumerate((PAGE, PAGE, SAME_TEXT, EDITED, b"  ", EDITED, PAGE)):
        snapshot(archive, news, NOW + hour * 3600, body, URL)
    for name in ("china_times_s1", "cna_s1", "ettoday_s1", "liberty_times_news_s2"):
        page = gzip.decompress(
            (FIXTURES / "tw-news-2014" / "html" / f"{name}.html.gz").read_bytes()
        )
        url = f"https://news.ltn.com.tw/news/{name}"
        snapshot(archive, (add_article(archive, site_id, "Article", url), site_id), NOW, page, url)
    ptt_site = add_site(archive, "gossiping", "ptt", "https://www.ptt.cc/bbs/Gossiping/index.html")
    ptt = (add_article(archive, ptt_site, "PTT", PTT_URL), ptt_site)
    snapshot(archive, ptt, NOW, b"<html><body>not a post</body></html>", PTT_URL)

    in_processes = scrapy("parse_snapshots", "--workers", "2", db_url=db_url, cwd=tmp_path)
    assert "10 snapshot(s) parsed" in in_processes.output, in_processes.output
    assert "2 error(s)" in in_processes.output
    by_processes = stored_results(archive)
    assert len(by_processes[0]) == 7  # three versions of the first article, four others
    in_one = scrapy("parse_snapshots", "--reparse", db_url=db_url, cwd=tmp_path)
    assert "10 snapshot(s) parsed" in in_one.output, in_one.output
    assert stored_results(archive) == by_processes


def _date_languages_loaded() -> int:
    from dateparser.languages.loader import default_loader

    return len(default_loader._loaded_locales)


def test_parser_processes_start_with_dateparser_languages_loaded() -> None:
    """Loaded once in the process they are forked from, not by each on its first undated
    page (about 1.8 CPU s a process), and frozen there: no collection walks them."""
    with _parser_processes(2) as pool:
        assert pool is not None
        assert pool.submit(_date_languages_loaded).result() >= 200
        assert pool.submit(gc.get_freeze_count).result() > 0


@pytest.mark.parametrize("workers", [1, 2])
def test_a_parser_crash_is_logged_counted_and_the_others_go_on(
    archive: Archive, news: tuple[int, int], workers: int, caplog: pytest.LogCaptureFixture
) -> None:
    dcard_site = add_site(archive, "dcard", "dcard", "https://www.dcard.tw/f/trending")
    dcard_url = "https://www.dcard.tw/f/talk/p/1"
    dcard = (add_article(archive, dcard_site, "Dcard", dcard_url), dcard_site)
    # A post whose content is a number: the Dcard parser's text helpers raise TypeError.
    snapshot(archive, dcard, NOW, b'{"post": {"id": 1, "content": 5}}', dcard_url)
    snapshot(archive, news, NOW, PAGE, URL)
    stats = parse_pending(archive.engine, ParseRunConfig(workers=workers), now=NOW)
    assert (stats["parser/crashes"], stats["parser/errors"]) == (1, 1)
    assert stats["parser/new_publication"] == 1
    [failed] = [m for m in rows(archive, publication_mapping) if m.status == "error"]
    assert failed.article_id == dcard[0]
    assert failed.error.startswith("crash TypeError")
    assert f"Parser crashed on snapshot {dcard[0]}@{NOW}" in caplog.text


# --- The inbox and the progress: a run reads only what was stored since (migration 0011).


def inbox(archive: Archive) -> list[tuple[int, int]]:
    with archive.engine.connect() as conn:
        query = select(parse_inbox.c.article_id, parse_inbox.c.snapshot_at)
        return sorted((int(a), int(at)) for a, at in conn.execute(query))


def no_full_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    def unexpected(*args: object) -> None:
        raise AssertionError("a run whose progress is complete went over every snapshot")

    monkeypatch.setattr(PublicationStore, "iter_unparsed", unexpected)


def run(archive: Archive, stamp: int, **config: Any) -> Any:
    return parse_pending(archive.engine, ParseRunConfig(**config), now=stamp)


def test_the_first_run_goes_over_everything_later_ones_over_the_inbox(
    archive: Archive, news: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot(archive, news, NOW, PAGE, URL)
    assert inbox(archive) == [(news[0], NOW)]  # the trigger, in the snapshot's transaction
    first = run(archive, NOW)
    assert (first["parser/full_pass"], first["parser/new_publication"]) == (1, 1)
    assert inbox(archive) == []
    no_full_pass(monkeypatch)
    assert run(archive, NOW + 1)["parser/parsed"] == 0
    snapshot(archive, news, NOW + 3600, EDITED, URL)
    later = run(archive, NOW + 2)
    assert (later["parser/full_pass"], later["parser/new_version"]) == (0, 1)
    assert mapped_at(archive, NOW + 2) == {(news[0], NOW + 3600, PARSER_VERSION)}
    assert inbox(archive) == []


def test_snapshots_stored_below_parsed_ones_are_parsed(
    archive: Archive, news: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """New snapshots of an older article, and an imported one older than a parsed one,
    sort before what was parsed last: the inbox still holds them."""
    newer = (add_article(archive, news[1], "Article", URL + "?p=2"), news[1])
    snapshot(archive, news, NOW + 7200, PAGE, URL)
    snapshot(archive, newer, NOW + 7200, PAGE, URL)
    run(archive, NOW)
    no_full_pass(monkeypatch)
    snapshot(archive, news, NOW + 10800, EDITED, URL)
    snapshot(archive, newer, NOW, EDITED, URL)  # as import_warc stores an old capture
    run(archive, NOW + 1)
    assert mapped_at(archive, NOW + 1) == {
        (news[0], NOW + 10800, PARSER_VERSION),
        (newer[0], NOW, PARSER_VERSION),
    }
    assert inbox(archive) == []


def test_a_failed_parse_is_mapped_and_leaves_the_inbox_a_failed_run_does_not(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    ptt_site = add_site(archive, "gossiping", "ptt", "https://www.ptt.cc/bbs/Gossiping/index.html")
    ptt = (add_article(archive, ptt_site, "PTT", PTT_URL), ptt_site)
    news_site = add_site(archive, "ltn", "news", "https://news.ltn.com.tw/")
    news = (add_article(archive, news_site, "Article", URL), news_site)
    run(archive, NOW)
    snapshot(archive, ptt, NOW, b"<html><body>not a post</body></html>", PTT_URL)
    snapshot(archive, news, NOW, PAGE, URL)

    def database_gone(*args: object) -> None:
        raise ConnectionError("the database went away")

    with monkeypatch.context() as patched:
        patched.setattr(PublicationStore, "add_version", database_gone)
        with pytest.raises(ConnectionError):
            run(archive, NOW + 1)
    # The bad post was mapped (an error) before the run died on the news page; the batch
    # stays in the inbox, and the next run parses the news page only.
    assert [m.status for m in rows(archive, publication_mapping)] == ["error"]
    assert inbox(archive) == [(ptt[0], NOW), (news[0], NOW)]
    no_full_pass(monkeypatch)
    stats = run(archive, NOW + 2)
    assert (stats["parser/new_publication"], stats["parser/errors"]) == (1, 0)
    assert inbox(archive) == []
    assert sorted(m.status for m in rows(archive, publication_mapping)) == ["error", "ok"]


def test_a_reparse_of_a_site_keeps_the_progress_of_the_rest(
    archive: Archive, news: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    ptt_site = add_site(archive, "gossiping", "ptt", "https://www.ptt.cc/bbs/Gossiping/index.html")
    ptt = (add_article(archive, ptt_site, "PTT", PTT_URL), ptt_site)
    post = REPO / "tests" / "fixtures" / "ptt" / "tommady-pttifierLib__TestContentHTML.html"
    snapshot(archive, ptt, NOW, post.read_bytes(), PTT_URL)
    snapshot(archive, news, NOW, PAGE, URL)
    run(archive, NOW)
    again = run(archive, NOW + 1, site_id=news[1], reparse=True)
    assert (again["parser/discarded"], again["parser/new_publication"]) == (1, 1)
    assert mapped_at(archive, NOW + 1) == {(news[0], NOW, PARSER_VERSION)}
    no_full_pass(monkeypatch)
    assert run(archive, NOW + 2)["parser/parsed"] == 0
    assert len(rows(archive, publication_mapping)) == 2


def test_a_reparse_that_fails_leaves_a_full_pass_to_the_next_run(
    archive: Archive, news: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot(archive, news, NOW, PAGE, URL)
    run(archive, NOW)

    def database_gone(*args: object) -> None:
        raise ConnectionError("the database went away")

    with monkeypatch.context() as patched:
        patched.setattr(PublicationStore, "add_version", database_gone)
        with pytest.raises(ConnectionError):
            run(archive, NOW + 1, site_id=news[1], reparse=True)
    assert rows(archive, publication_mapping) == [] and inbox(archive) == []
    stats = run(archive, NOW + 2)
    assert (stats["parser/full_pass"], stats["parser/new_publication"]) == (1, 1)


def test_a_site_or_since_run_leaves_the_rest_of_the_inbox(
    archive: Archive, news: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    ptt_site = add_site(archive, "gossiping", "ptt", "https://www.ptt.cc/bbs/Gossiping/index.html")
    ptt = (add_article(archive, ptt_site, "PTT", PTT_URL), ptt_site)
    snapshot(archive, ptt, NOW, b"<html></html>", PTT_URL)
    # Incomplete progress: a run over one site is a full pass of that site only.
    assert run(archive, NOW, site_id=news[1])["parser/full_pass"] == 1
    assert inbox(archive) == [(ptt[0], NOW)]
    run(archive, NOW + 1)
    no_full_pass(monkeypatch)
    snapshot(archive, news, NOW, PAGE, URL)
    snapshot(archive, news, NOW + 3600, EDITED, URL)
    run(archive, NOW + 2, since=NOW + 3600)
    assert mapped_at(archive, NOW + 2) == {(news[0], NOW + 3600, PARSER_VERSION)}
    assert inbox(archive) == [(news[0], NOW)]
    run(archive, NOW + 3)
    assert mapped_at(archive, NOW + 3) == {(news[0], NOW, PARSER_VERSION)}
    assert inbox(archive) == []


def test_a_version_that_drains_the_inbox_sends_the_others_back_to_a_full_pass(
    archive: Archive, news: tuple[int, int]
) -> None:
    snapshot(archive, news, NOW, PAGE, URL)
    run(archive, NOW, parser_version="v1")
    assert run(archive, NOW, parser_version="v2")["parser/full_pass"] == 1
    snapshot(archive, news, NOW + 3600, EDITED, URL)
    assert run(archive, NOW + 1, parser_version="v1")["parser/full_pass"] == 0
    assert inbox(archive) == []
    stats = run(archive, NOW + 2, parser_version="v2")
    assert (stats["parser/full_pass"], stats["parser/new_version"]) == (1, 1)
    assert mapped_at(archive, NOW + 2) == {(news[0], NOW + 3600, "v2")}


def test_a_full_pass_overtaken_by_another_version_does_not_complete(
    archive: Archive, news: tuple[int, int]
) -> None:
    v1, v2 = PublicationStore(archive.engine, "v1"), PublicationStore(archive.engine, "v2")
    run(archive, NOW, parser_version="v1")
    started = v2.progress()
    snapshot(archive, news, NOW, PAGE, URL)
    # v2's pass went by before the snapshot came; v1 drains it from the inbox meanwhile.
    run(archive, NOW + 1, parser_version="v1")
    assert not v2.mark_complete(started.generation)
    assert not v2.progress().complete
    assert v1.progress().complete


def test_an_inbox_row_whose_snapshot_was_rotated_away_leaves(
    archive: Archive, news: tuple[int, int]
) -> None:
    run(archive, NOW)
    snapshot(archive, news, NOW, PAGE, URL)
    with archive.engine.begin() as conn:
        conn.execute(delete(article_snapshot))
    stats = run(archive, NOW + 1)
    assert (stats["parser/parsed"], stats["parser/errors"]) == (0, 0)
    assert inbox(archive) == []


def test_progress_rows(archive: Archive, news: tuple[int, int]) -> None:
    snapshot(archive, news, NOW, PAGE, URL)
    run(archive, NOW, parser_version="v1")
    run(archive, NOW, parser_version="v2", site_id=news[1])
    assert sorted((r.parser_version, bool(r.complete)) for r in rows(archive, parse_progress)) == [
        ("v1", True),
        ("v2", False),
    ]
