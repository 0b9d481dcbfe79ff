"""Full-text search on both engines (SQLite FTS5, MariaDB Mroonga): the same query
language and the same answers, fed by the parser's hook; the real `scrapy search` CLI."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import delete, select

from tests.conftest import FIXTURES, REPO, scrapy
from zeroarchive.core.items import FetchedPage, Parsed
from zeroarchive.parser import PARSER_VERSION
from zeroarchive.search import open_index
from zeroarchive.search.fold import chinese_forms
from zeroarchive.search.index import MAX_TOTAL, Hits, SearchIndex, SearchRequest, index_hook
from zeroarchive.search.query import QueryError, parse_query
from zeroarchive.search.reindex import reindex
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.publications import (
    ArticleInfo,
    PublicationStore,
    VersionHook,
    flush_hooks,
)
from zeroarchive.storage.schema import publication, publication_mapping

NOW = 1_700_000_000
DAY = 86_400
LTN_URL = "https://news.ltn.com.tw/news/politics/breakingnews/994343"
LTN_PAGE = gzip.decompress(
    (FIXTURES / "tw-news-2014" / "html" / "liberty_times_news_s1.html.gz").read_bytes()
)
LTN_EDIT = ("停止禁食".encode(), "結束禁食".encode())

#: (site, article, title, text, published_at): a small archive of mixed scripts.
DOCS = [
    ("news", 1, "台海情勢升溫", "國防部說，台海周邊出現共機。專家分析統戰手法。", 9),
    ("news", 2, "疫苗到貨", "第二批ＢＮＴ疫苗今天抵達，指揮中心說明接種順序。", 8),
    ("news", 3, "台湾疫苗新闻", "简体中文的报道：台湾海峡局势与疫苗。", 7),
    ("farm", 4, "Vaccine myths", "The vaccines do not alter DNA. A vaccine is tested.", 6),
    ("farm", 5, "COVID-19 update", "New covid 19 cases; the covid-19 vaccine rollout.", 5),
    ("farm", 6, "ワクチン接種", "東京都は新型コロナワクチンの接種を始めた。", 4),
    ("news", 7, "백신 접종", "정부는 코로나19 백신 접종을 시작했다.", 3),
    ("news", 8, "台", "台。單字標題與單字內文", 2),
    ("farm", 9, "Ｆｕｌｌ　ｗｉｄｔｈ", "ＴＡＩＷＡＮ Strait and c++ (NEAR) OR * ^ : 'x'", 1),
]


def add_site(archive: Archive, name: str, url: str, article: str = "/a/") -> int:
    """A news site of the archive (its id)."""
    spec = parse_spec({"name": name, "url": url, "type": "news", "config": {"article": article}})
    return archive.sites.upsert(spec, NOW)[0]


def make_archive(url: str) -> tuple[Archive, SearchIndex, dict[int, int]]:
    archive = open_archive(url=url)
    index = open_index(archive.engine)
    assert index.available() is None
    sites = {}
    for name in ("news", "farm"):
        sites[name] = add_site(archive, name, f"https://{name}.example/")
    articles = {}
    hooks = (index_hook(index),)
    for name, number, title, body, days_ago in DOCS:
        published = NOW - days_ago * DAY
        articles[number] = add(
            archive, index, sites[name], number, title, body, published, hooks=hooks
        )
    flush_hooks(hooks)
    return archive, index, articles


def add(
    archive: Archive,
    index: SearchIndex,
    site_id: int,
    number: int,
    title: str,
    body: str,
    published: int | None,
    at: int = NOW,
    canonical_url: str | None = None,
    hooks: tuple[VersionHook, ...] | None = None,
) -> int:
    """A version of an article, indexed: its index rows written at once, or with
    ``hooks`` (a build's) when the caller flushes them, as a parse run writes many
    versions' at once (each flush cost MariaDB a Mroonga write of its own)."""
    url = f"https://site{site_id}.example/a/{number}"
    archive.articles.add(site_id, "news", [url], NOW)
    article_id = (
        archive.articles.ids_for_urls([url])[url]
        if hasattr(archive.articles, "ids_for_urls")
        else _article_id(archive, url)
    )
    store = PublicationStore(archive.engine, PARSER_VERSION)
    store.register_parser({}, NOW)  # as parse_snapshots does before its first publication
    parsed = Parsed(
        canonical_url=canonical_url or url, title=title, text=body, published_at=published
    )
    info = ArticleInfo(article_id, site_id, "news", url)
    if hooks is not None:
        store.add_version(info, at, parsed, parsed.digest(), at, hooks)
        return article_id
    hooks = (index_hook(index),)
    store.add_version(info, at, parsed, parsed.digest(), at, hooks)
    flush_hooks(hooks)  # as a parse run does when it ends
    return article_id


def _article_id(archive: Archive, url: str) -> int:
    from zeroarchive.storage.schema import article

    with archive.engine.connect() as conn:
        return int(
            conn.execute(select(article.c.article_id).where(article.c.url == url)).scalar_one()
        )


@pytest.fixture
def searched(db_url: str) -> Iterator[tuple[Archive, SearchIndex, dict[int, int]]]:
    yield make_archive(db_url)


@pytest.fixture(scope="module")
def searched_once(module_db_url: str) -> tuple[Archive, SearchIndex, dict[int, int]]:
    """The archive of ``DOCS`` built once per engine for the tests that only search it
    (106 of them: one build took 2 s of MariaDB's time, most of their run)."""
    return make_archive(module_db_url)


def run(index: SearchIndex, raw: str, **options: object) -> Hits:
    fold = chinese_forms if options.pop("fold", False) else None
    request = SearchRequest(parse_query(raw, fold), PARSER_VERSION, **options)  # type: ignore[arg-type]
    return index.search(request)


def numbers(hits: Hits, articles: dict[int, int]) -> list[int]:
    back = {article_id: number for number, article_id in articles.items()}
    return sorted(back[hit.article_id] for hit in hits.hits)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("台海", [1]),  # two CJK characters
        ("台", [1, 3, 8]),  # one character, also at the end of a run
        ("疫苗", [2, 3]),
        ("台湾海峡", [3]),  # four characters, contiguous
        ("海峽", []),  # Traditional: only the Simplified text has the strait
        ("統戰", [1]),
        ("bnt疫苗", [2]),  # full-width Latin folded, CJK glued to it
        ("vaccine", [4, 5]),  # whole words: not "vaccines"
        ("VACCINE", [4, 5]),
        ("vacc", []),
        ("vaccines", [4]),
        ("covid-19", [5]),
        ('"covid 19"', [5]),
        ("covid-19 -rollout", []),
        ("疫苗 -台湾", [2]),
        ("疫苗 -bnt", [3]),
        ("ワクチン", [6]),
        ("ン", [6]),
        ("백신", [7]),
        ("코로나19", [7]),
        ("taiwan strait", [9]),
        ('"taiwan strait"', [9]),
        ('"strait taiwan"', []),
        ("full width", [9]),
        ("c++", [9]),
        ("NEAR", [9]),
        ("OR", [9]),
        ("(near)", [9]),
        ('"taiwan', [9]),  # unbalanced quote: the rest is the phrase
        ("'x'", [9]),
        ("x'; DROP TABLE publication; --", []),
        ("NEAR OR ^ : *", [9]),  # each an operator somewhere; here all text, all there
        ("taiwan*", []),  # no prefix search: "taiwan*" as written
        ("strait:", []),
        ("c++ -(near)", []),
        ("DNA. -DNA", []),
    ],
)
def test_both_engines_give_the_same_exact_answers(
    searched_once: tuple[Archive, SearchIndex, dict[int, int]], query: str, expected: list[int]
) -> None:
    _, index, articles = searched_once
    hits = run(index, query)
    assert numbers(hits, articles) == expected
    assert hits.total == len(expected) and not hits.capped


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("說台海", []),  # a CJK string across punctuation (說，台海)
        ("共機專家", []),
        ("升溫國防", []),  # from the title into the body
        ("台台", []),
        ("批bnt疫苗", [2]),  # CJK, Latin, CJK glued
        ('"批 bnt"', []),  # no space there
        ('"the covid 19"', []),
        ("strait and", [9]),
        ('"批bnt疫"', [2]),  # a lone CJK character ending a longer string: checked on the text
        ("ン接", [6]),
        ("x", [9]),  # a one-letter word, whole
        ("d", []),
        ("19", [5, 7]),  # digits after Hangul are a word of their own
        ("ン 東京都", [6]),  # a lone character before a phrase (Groonga: prefixes last)
        ("ン vaccine", []),
        ("疫苗 -台", [2]),
        ("疫苗 -台 -bnt", []),
    ],
)
def test_edges_of_the_exact_index(
    searched_once: tuple[Archive, SearchIndex, dict[int, int]], query: str, expected: list[int]
) -> None:
    _, index, articles = searched_once
    assert numbers(run(index, query), articles) == expected


def test_the_engine_answers_what_the_text_holds(
    searched_once: tuple[Archive, SearchIndex, dict[int, int]],
) -> None:
    """Strings cut at random from the archive's own texts (with the edges of runs,
    punctuation and spaces they happen to hold): the engine's answer is the text's."""
    import random

    from zeroarchive.search.match import Matcher
    from zeroarchive.search.plan import plan
    from zeroarchive.search.text import normalize

    _, index, articles = searched_once
    texts = {number: (normalize(title), normalize(body)) for _, number, title, body, _ in DOCS}
    rng = random.Random(23)
    exact = 0
    pieces = []
    for _ in range(120):
        source = rng.choice([t for pair in texts.values() for t in pair])
        start = rng.randrange(len(source))
        raw = source[start : start + rng.randint(1, 8)].strip()
        if raw and not raw.startswith("-"):
            pieces.append(raw)
    for raw in pieces:
        other = rng.choice(pieces).split()[0]
        for query in (raw, f'"{raw}"', f"{raw.split()[0]} -{other}", f'{other} "{raw}"'):
            try:
                parsed = parse_query(query)
            except QueryError:
                continue
            matcher = Matcher(parsed)
            expected = sorted(n for n, (t, b) in texts.items() if matcher.holds(t, b))
            found = run(index, query)
            assert numbers(found, articles) == expected, query
            assert found.total == len(expected), query
            exact += plan(parsed).exact
    assert exact > 250  # most went through the engine alone


def test_a_deleted_article_s_span_ends_at_its_deletion(
    searched: tuple[Archive, SearchIndex, dict[int, int]],
) -> None:
    from zeroarchive.storage.schema import article_event

    archive, index, articles = searched
    news = archive.sites.get("news")
    assert news is not None

    def event(kind: str, at: int) -> None:
        with archive.engine.begin() as conn:
            conn.execute(
                article_event.insert().values(
                    article_id=articles[2],
                    site_id=news.site_id,
                    kind=kind,
                    detected_at=at,
                    evidence="status:404",
                    before_snapshot_at=NOW,
                    after_snapshot_at=at,
                )
            )

    def spans() -> list[dict[str, int | None]]:
        [hit] = run(index, "bnt", all_versions=True).hits
        return hit.as_json()["versions"]  # type: ignore[no-any-return]

    assert spans() == [{"from": NOW, "to": None}]
    event("deleted", NOW + 500)
    assert spans() == [{"from": NOW, "to": NOW + 500}]
    event("restored", NOW + 900)
    assert spans() == [{"from": NOW, "to": NOW + 500}, {"from": NOW + 900, "to": None}]
    assert run(index, "bnt").total == 1  # its text is still found


def test_checked_on_the_text_with_all_versions(
    searched: tuple[Archive, SearchIndex, dict[int, int]],
) -> None:
    archive, index, articles = searched
    farm = archive.sites.get("farm")
    assert farm is not None
    add(archive, index, farm.site_id, 5, "COVID update", "Cases fell.", NOW, NOW + 100)
    assert numbers(run(index, "covid-19"), articles) == []
    hits = run(index, "covid-19", all_versions=True)
    assert numbers(hits, articles) == [5] and hits.total == 1
    assert hits.hits[0].as_json()["versions"] == [{"from": NOW, "to": NOW + 100}]


def test_fold_chinese_finds_the_other_script(
    searched_once: tuple[Archive, SearchIndex, dict[int, int]],
) -> None:
    _, index, articles = searched_once
    assert numbers(run(index, "臺灣疫苗"), articles) == []
    assert numbers(run(index, "台灣 疫苗", fold=True), articles) == [3]
    assert numbers(run(index, "海峽", fold=True), articles) == [3]
    assert numbers(run(index, "统战", fold=True), articles) == [1]


#: Taiwan's, Hong Kong's and the mainland's spellings of the same words.
VARIANT_DOCS = [
    (1, "台灣選情", "國防部長說台灣海峽情勢升溫，心裡着急。"),
    (2, "臺灣選情", "國防部長說臺灣海峽情勢升溫，心裏著急。"),
    (3, "台湾选情", "国防部长说台湾海峡情势升温，心里着急。"),
    (4, "颱風消息", "颱風今天登陸，停班停課。"),
]


#: (query, the articles it finds with --fold-chinese)
VARIANT_QUERIES = [
    ("台湾", [1, 2, 3]),
    ("臺灣", [1, 2, 3]),
    ("台灣", [1, 2, 3]),
    ("心裡著急", [1, 2, 3]),
    ("臺 -颱風", [1, 2, 3]),
    ("颱", [1, 2, 3, 4]),  # 颱 folds with 台 (Simplified writes both 台)
    # More spellings than an engine is asked for: found by its pieces, judged on the text.
    ("國防部長說臺灣海峽情勢", [1, 2, 3]),
    ("国防部长说台湾海峡局势", []),
]


def test_fold_chinese_finds_every_spelling_from_any(db_url: str) -> None:
    archive = open_archive(url=db_url)
    index = open_index(archive.engine)
    site_id = add_site(archive, "news", "https://news.example/")
    articles = {
        number: add(archive, index, site_id, number, title, body, NOW)
        for number, title, body in VARIANT_DOCS
    }
    for query, expected in VARIANT_QUERIES:
        hits = run(index, query, fold=True)
        assert (query, numbers(hits, articles), hits.total) == (query, expected, len(expected))
        for hit in hits.hits:
            assert "«" in hit.snippet.marked()
    assert numbers(run(index, "台灣"), articles) == [1]
    assert numbers(run(index, "臺 -颱風"), articles) == [2]


def test_filters_sites_dates_and_sort(
    searched_once: tuple[Archive, SearchIndex, dict[int, int]],
) -> None:
    archive, index, articles = searched_once
    farm = archive.sites.get("farm")
    assert farm is not None
    assert numbers(run(index, "vaccine", site_ids=(farm.site_id,)), articles) == [4, 5]
    news = archive.sites.get("news")
    assert news is not None
    assert numbers(run(index, "vaccine", site_ids=(news.site_id,)), articles) == []
    assert numbers(run(index, "疫苗", since=NOW - 7 * DAY), articles) == [3]
    assert numbers(run(index, "疫苗", until=NOW - 7 * DAY), articles) == [2]
    dated = run(index, "台", sort="date")
    assert [h.article_id for h in dated.hits] == [articles[8], articles[3], articles[1]]
    # Relevance: the one with the word in its title and short text comes first.
    ranked = run(index, "台")
    assert ranked.hits[0].article_id == articles[8]
    page = run(index, "台", sort="date", offset=1, limit=1)
    assert [h.article_id for h in page.hits] == [articles[3]] and page.total == 3
    # With a filter the total comes with the page; past the last page it is counted alone.
    for offset, shown in ((0, 2), (1, 1), (2, 0), (7, 0)):
        page = run(index, "vaccine", site_ids=(farm.site_id,), offset=offset)
        assert (len(page.hits), page.total) == (shown, 2)
    for offset, shown in ((0, 1), (3, 0)):
        page = run(index, "疫苗", since=NOW - 7 * DAY, offset=offset)
        assert (len(page.hits), page.total) == (shown, 1)


def test_snippet_marks_the_match_in_the_original_text(
    searched_once: tuple[Archive, SearchIndex, dict[int, int]],
) -> None:
    _, index, _ = searched_once
    hit = run(index, "bnt").hits[0]
    assert "«ＢＮＴ»" in hit.snippet.marked()
    record = hit.as_json()
    assert set(record) == {
        *("article_id", "site", "url", "canonical_url", "title", "published_at", "snippet"),
        "score",
    }
    assert record["site"] == "news" and record["published_at"] == NOW - 8 * DAY


def test_a_hit_carries_the_url_archived_beside_the_one_the_page_claims(
    db_url: str, tmp_path: Path
) -> None:
    """A content farm's copy names the victim's article as its canonical URL: the hit must
    say where the copy was archived."""
    archive = open_archive(url=db_url)
    index = open_index(archive.engine)
    farm = add_site(archive, "farm", "https://farm.example/")
    victim = "https://news.example/story/1"
    add(archive, index, farm, 1, "轉載", "農場轉載的新聞全文", NOW, canonical_url=victim)
    [hit] = run(index, "農場").hits
    assert (hit.url, hit.canonical_url) == (f"https://site{farm}.example/a/1", victim)
    record = hit.as_json()
    assert (record["url"], record["canonical_url"]) == (hit.url, victim)
    shown = scrapy("search", "農場", db_url=db_url, cwd=tmp_path)
    assert f"· {hit.url}\n" in shown.stdout and f"names as its own: {victim}" in shown.stdout


def test_versions_edited_out_are_found_with_their_spans(
    searched: tuple[Archive, SearchIndex, dict[int, int]],
) -> None:
    archive, index, _ = searched
    news = archive.sites.get("news")
    assert news is not None
    first, second, third = NOW + 100, NOW + 200, NOW + 300
    url_number = 20
    add(archive, index, news.site_id, url_number, "聲明", "他說要停止禁食。", NOW, first)
    article_id = add(archive, index, news.site_id, url_number, "聲明", "他說要結束。", NOW, second)
    add(archive, index, news.site_id, url_number, "聲明", "他說要停止禁食並離開。", NOW, third)
    assert run(index, "禁食").total == 1  # the latest version holds it again
    assert run(index, "離開 -禁食").total == 0
    hits = run(index, "停止禁食", all_versions=True)
    assert [h.article_id for h in hits.hits] == [article_id]
    spans = hits.hits[0].as_json()["versions"]
    assert spans == [{"from": first, "to": second}, {"from": third, "to": None}]
    # Edited out for good: only --all-versions finds it, its span closed.
    add(archive, index, news.site_id, url_number, "聲明", "全部刪除。", NOW, NOW + 400)
    assert run(index, "停止禁食").total == 0
    spans = run(index, "停止禁食", all_versions=True).hits[0].as_json()["versions"]
    assert spans == [{"from": first, "to": second}, {"from": third, "to": NOW + 400}]


def test_deleted_publications_leave_no_hit_and_reused_ids_no_stale_match(
    searched: tuple[Archive, SearchIndex, dict[int, int]],
) -> None:
    archive, index, articles = searched
    with archive.engine.begin() as conn:
        # What a reparse does (PublicationStore.discard): the ids may be handed out again.
        conn.execute(delete(publication).where(publication.c.article_id == articles[9]))
        conn.execute(
            delete(publication_mapping).where(publication_mapping.c.article_id == articles[9])
        )
    assert run(index, "taiwan").total == 0
    farm = archive.sites.get("farm")
    assert farm is not None
    add(archive, index, farm.site_id, 9, "Other", "Nothing about the strait.", NOW)
    assert run(index, "taiwan").total == 0
    assert run(index, "strait").total == 1


def test_all_versions_counts_each_article_once_wherever_its_versions_hold_it(
    searched: tuple[Archive, SearchIndex, dict[int, int]],
) -> None:
    """Latest only, older only, both: each article is one hit, ranked by its newest
    version that holds the query (on MariaDB: the latest counted in Groonga, the older
    ones added)."""
    archive, index, _ = searched
    news, farm = archive.sites.get("news"), archive.sites.get("farm")
    assert news is not None and farm is not None
    versions = {
        31: (news.site_id, ["alpha beta", "alpha"]),
        32: (farm.site_id, ["beta", "gamma", "delta"]),
        33: (news.site_id, ["beta", "beta gamma"]),
        34: (news.site_id, ["gamma"]),
        35: (news.site_id, ["鯨港 藥劑 covid", "雁城 藥劑", "鯨鄉"]),
    }
    ids = {}
    hooks = (index_hook(index),)
    for number, (site_id, texts) in versions.items():
        for at, body in enumerate(texts):
            published = NOW - (40 - number) * DAY
            ids[number] = add(
                archive, index, site_id, number, "t", body, published, NOW + at, hooks=hooks
            )
    flush_hooks(hooks)
    back = {article_id: number for number, article_id in ids.items()}

    def found(raw: str, **options: object) -> tuple[list[int], int]:
        hits = run(index, raw, sort="date", **options)
        return [back[h.article_id] for h in hits.hits], hits.total

    assert found("beta") == ([33], 1)
    assert found("beta", all_versions=True) == ([33, 32, 31], 3)
    assert found("beta", all_versions=True, offset=1, limit=1) == ([32], 3)
    assert found("beta", all_versions=True, site_ids=(farm.site_id,)) == ([32], 1)
    assert found("gamma", all_versions=True) == ([34, 33, 32], 3)
    assert found("beta -alpha", all_versions=True) == ([33, 32], 2)
    assert found("delta", all_versions=True) == ([32], 1)
    # A lone CJK character (a prefix in Groonga) and exclusions, held by older versions.
    assert found("鯨 -covid", all_versions=True) == ([35], 1)
    assert found("鯨 -covid") == ([35], 1)
    assert found("藥劑 -鯨") == ([], 0)
    assert found("藥劑 -鯨", all_versions=True) == ([35], 1)
    assert found("港 藥劑", all_versions=True) == ([35], 1)
    [hit] = run(index, "藥劑 -鯨", all_versions=True).hits
    assert hit.version == 2
    [hit] = run(index, "gamma", all_versions=True, site_ids=(farm.site_id,)).hits
    assert hit.version == 2  # its newest version that holds it
    ranked = run(index, "beta", all_versions=True).hits
    assert {back[h.article_id] for h in ranked} == {31, 32, 33}


def test_all_versions_pages_read_in_rank_order_are_the_whole_ranking_cut(
    searched: tuple[Archive, SearchIndex, dict[int, int]],
) -> None:
    """Older versions that outrank their article's newer holding one are passed over, also
    when a whole read of the ranking holds nothing else: every page of one hit is the next
    article of the whole ranking, each at its newest version that holds the query."""
    archive, index, _ = searched
    news = archive.sites.get("news")
    assert news is not None
    ids = {}
    hooks = (index_hook(index),)
    for number in range(60, 80):
        texts = ["quokka " * 6 + f"first{number}", f"quokka and wombat {number}"]
        if number % 2:
            texts.append(f"wombat only {number}")  # the latest no longer holds quokka
        for at, body in enumerate(texts):
            ids[number] = add(
                archive, index, news.site_id, number, "t", body, None, NOW + at, hooks=hooks
            )
    flush_hooks(hooks)
    back = {article_id: number for number, article_id in ids.items()}
    for sort in ("relevance", "date"):
        whole = run(index, "quokka", all_versions=True, sort=sort, limit=100)
        assert whole.total == 20
        assert sorted(back[h.article_id] for h in whole.hits) == list(range(60, 80))
        # Each at its second version: the newest that holds the query.
        assert {h.version for h in whole.hits} == {2}
        for offset in range(20):
            [hit] = run(index, "quokka", all_versions=True, sort=sort, offset=offset, limit=1).hits
            assert (hit.article_id, hit.version, hit.score) == (
                whole.hits[offset].article_id,
                whole.hits[offset].version,
                whole.hits[offset].score,
            )
    # The latest versions alone: only the even articles still hold it.
    latest = run(index, "quokka", limit=100)
    assert sorted(back[h.article_id] for h in latest.hits) == list(range(60, 80, 2))


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "the query is empty"),
        ("   ", "the query is empty"),
        ("!!! ，。？ ***", "no letter, digit or CJK character"),
        ("-疫苗", "only excludes"),
        ("台" * 10_240, "too long"),
        (" ".join(f"w{i}" for i in range(40)), "too many terms"),
    ],
)
def test_bad_queries_are_refused_with_one_line(raw: str, message: str) -> None:
    with pytest.raises(QueryError, match=message) as caught:
        parse_query(raw)
    assert "\n" not in str(caught.value)


def test_more_than_the_cap_says_so(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import zeroarchive.search.index as index_module

    _, index, _ = make_archive(db_url)
    monkeypatch.setattr(index_module, "MAX_TOTAL", 2)
    hits = run(index, "台")
    assert hits.capped and hits.total == 2 and hits.total_line() == "2+ hits"
    assert MAX_TOTAL == 10_000


def test_search_cli(db_url: str, tmp_path: object) -> None:
    make_archive(db_url)
    done = scrapy("search", "疫苗", "--json", db_url=db_url, cwd=REPO)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert {r["title"] for r in records} == {"疫苗到貨", "台湾疫苗新闻"}
    assert done.stderr.strip().splitlines()[-1] == "2 hits"
    readable = scrapy(
        "search", "vaccine", "--site", "farm", "--sort", "date", db_url=db_url, cwd=REPO
    )
    assert "1. COVID-19 update" in readable.stdout and "«vaccine»" in readable.stdout
    assert readable.stderr.strip().splitlines()[-1] == "2 hits"
    for bad in ([""], ["***"], ["台" * 10_240], ['"unbalanced'], ["x", "--since", "yesterday"]):
        done = scrapy("search", *bad, db_url=db_url, cwd=REPO)
        assert "Traceback" not in done.stderr, done.stderr
    done = scrapy("search", "***", db_url=db_url, cwd=REPO)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "error: the query has no letter, digit or CJK character to search for "
        "(only punctuation or symbols)"
    ]


def test_reindex_rebuilds_and_resumes_where_it_stopped(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive, index, articles = make_archive(db_url)
    expected = numbers(run(index, "台"), articles)
    with archive.engine.begin() as conn:
        index.clear(conn)
    assert run(index, "台").total == 0
    calls = []
    real = index.index_publications

    def stop_on_the_third(conn: object, rows: list[tuple[int, str, str]]) -> None:
        calls.append(len(rows))
        if len(calls) == 3:
            raise KeyboardInterrupt
        real(conn, rows)  # type: ignore[arg-type]

    monkeypatch.setattr(index, "index_publications", stop_on_the_third)
    with pytest.raises(SystemExit) as stopped:
        reindex(archive.engine, index, PARSER_VERSION, batch=2)
    assert stopped.value.code == 130
    monkeypatch.undo()
    done, resumed = reindex(archive.engine, index, PARSER_VERSION, batch=2)
    assert resumed and done == len(DOCS) - 4
    assert numbers(run(index, "台"), articles) == expected
    # Again from scratch: nothing twice, nothing left behind.
    done, resumed = reindex(archive.engine, index, PARSER_VERSION)
    assert (done, resumed) == (len(DOCS), False)
    assert numbers(run(index, "台"), articles) == expected
    farm = archive.sites.get("farm")
    assert farm is not None
    done, _ = reindex(archive.engine, index, PARSER_VERSION, site_id=farm.site_id)
    assert done == 4
    assert numbers(run(index, "vaccine"), articles) == [4, 5]
    assert numbers(run(index, "台"), articles) == expected


def test_parse_snapshots_feeds_the_index_and_the_cli_finds_edits(
    db_url: str, tmp_path: Path
) -> None:
    """A real page (Liberty Times, 2014) and its edit, through the real commands."""
    archive = open_archive(url=db_url)
    site_id = add_site(archive, "ltn", "https://news.ltn.com.tw/", "/news/")
    archive.articles.add(site_id, "Article", [LTN_URL], NOW)
    article_id = _article_id(archive, LTN_URL)
    for at, body in ((NOW, LTN_PAGE), (NOW + 3600, LTN_PAGE.replace(*LTN_EDIT))):
        archive.snapshots.save(
            [
                FetchedPage(
                    article_id=article_id,
                    site_id=site_id,
                    article_type="news",
                    fetched_at=at,
                    status=200,
                    final_url=LTN_URL,
                    headers={"Content-Type": ["text/html; charset=utf-8"]},
                    encoding="utf-8",
                    body=body,
                )
            ]
        )
    parsed = scrapy("parse_snapshots", db_url=db_url, cwd=tmp_path)
    assert parsed.returncode == 0, parsed.output
    found = scrapy("search", "停止禁食", "--json", db_url=db_url, cwd=tmp_path)
    assert found.stdout == "" and found.stderr.splitlines()[-1] == "0 hits"
    found = scrapy("search", "結束禁食", "--json", db_url=db_url, cwd=tmp_path)
    [hit] = [json.loads(line) for line in found.stdout.splitlines()]
    assert hit["article_id"] == article_id and "«結束禁食»" in hit["title"] + hit["snippet"]
    found = scrapy("search", "停止禁食", "--all-versions", "--json", db_url=db_url, cwd=tmp_path)
    [hit] = [json.loads(line) for line in found.stdout.splitlines()]
    assert hit["versions"] == [{"from": NOW, "to": NOW + 3600}]
    assert found.stderr.splitlines()[-1] == "1 hits"
    again = scrapy("reindex", db_url=db_url, cwd=tmp_path)
    assert again.returncode == 0 and "2 publication(s) indexed" in again.stderr
    found = scrapy("search", "林義雄", "--all-versions", db_url=db_url, cwd=tmp_path)
    assert found.stderr.splitlines()[-1] == "1 hits"


def test_snippets_of_long_texts_mark_the_match_where_it_is() -> None:
    from zeroarchive.search.match import Matcher

    matcher = Matcher(parse_query("vaccine 疫苗"))
    body = "ｘ" * 3000 + " a Vaccine and 疫苗 " + "y" * 3000 + " vaccines VACCINE"
    marked = matcher.snippet("title", body).marked()
    assert marked.startswith("…") and marked.endswith("…")
    assert "a «Vaccine» and «疫苗»" in marked
    # Only a part of the text is folded to find it; a word cut at that part's edge is no
    # match (vaccines), a whole one at the end still is.
    tail = matcher.snippet("t", "z" * 200 + " vaccines VACCINE").marked()
    assert tail.endswith("vaccines «VACCINE»")
    assert matcher.snippet("疫苗", "").marked() == "«疫苗»"


def test_search_migration_goes_down_and_up_again(db_url: str) -> None:
    """From the newest schema (db_url's archive, migrated once per process)."""
    from alembic import command
    from sqlalchemy import inspect

    from zeroarchive.storage.engine import _alembic_config, make_engine

    engine = make_engine(db_url)
    config = _alembic_config(engine)
    command.downgrade(config, "0011")
    tables = set(inspect(engine).get_table_names())
    assert not {"search_doc", "search_reindex", "publication_search"} & tables
    command.upgrade(config, "heads")
    assert {"search_doc", "search_reindex", "publication_search"} <= set(
        inspect(engine).get_table_names()
    )
    engine.dispose()


@given(st.text(max_size=60))
def test_the_fast_fold_is_nfkc_casefold(text: str) -> None:
    import unicodedata

    from zeroarchive.search.text import normalize

    reference = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    assert normalize(text) == " ".join(reference.split())


def _tokens_run_by_run(folded: str) -> str:
    """``index_text`` as its docstring says it, one run at a time (the reference)."""
    from zeroarchive.search.text import CJK_SPACE, MAX_TOKEN, RUN, SEPARATOR, is_cjk

    parts: list[str] = []
    previous = None
    for found in RUN.finditer(folded):
        run = found.group()
        if previous is not None:
            gap = folded[previous.end() : found.start()]
            if gap and not gap.isspace():
                parts.append(SEPARATOR)
            elif gap and is_cjk(run) != is_cjk(previous.group()):
                parts.append(CJK_SPACE)
        if is_cjk(run):
            parts.extend(run[i : i + 2] for i in range(len(run) - 1))
            parts.append(run[-1])
        else:
            parts.append(run[:MAX_TOKEN])
        previous = found
    return " ".join(parts)


@given(
    st.lists(
        st.sampled_from(
            ["a", "Ab", "_", "9", "台", "灣海", "ン", "한", " ", ",", "-", "é", "x" * 70]
        )
    ).map("".join)
    | st.text(max_size=80)
)
def test_index_text_cuts_the_runs_as_one_run_at_a_time_would(text: str) -> None:
    from zeroarchive.search.text import index_text, normalize

    folded = normalize(text)
    assert index_text(folded) == _tokens_run_by_run(folded)


def test_a_compaction_stopped_halfway_is_finished_on_the_next_open(mariadb_db_url: str) -> None:
    """reindex ends by rebuilding Groonga's index (keys disabled, then enabled): stopped
    between the two, the next process to open the index enables it again."""
    from sqlalchemy import text

    import zeroarchive.search.mroonga as mroonga

    archive, index, articles = make_archive(mariadb_db_url)
    with archive.engine.begin() as conn:
        conn.execute(text(f"ALTER TABLE {mroonga.TABLE} DISABLE KEYS"))
    mroonga._READY.clear()
    assert index.available() is None
    assert numbers(run(index, "疫苗"), articles) == [2, 3]


def test_a_whole_reindex_builds_groonga_s_index_once_at_its_end(
    mariadb_db_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A whole reindex stops Groonga's index while it loads (keys disabled: building it
    once at the end is a third of the server's work): a search meanwhile says so in one
    line, a process opening the index does not enable the keys under it, and the run,
    stopped and resumed, ends with the index whole."""
    import zeroarchive.search.mroonga as mroonga
    from zeroarchive.search.index import IndexUnavailable

    archive, index, articles = make_archive(mariadb_db_url)
    expected = numbers(run(index, "疫苗"), articles)
    calls = []
    real = index.index_publications

    def stop_on_the_second(conn: object, docs: list[object]) -> None:
        calls.append(len(docs))
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(conn, docs)  # type: ignore[arg-type]

    monkeypatch.setattr(index, "index_publications", stop_on_the_second)
    with pytest.raises(SystemExit):
        reindex(archive.engine, index, PARSER_VERSION, batch=2)
    monkeypatch.undo()
    with pytest.raises(IndexUnavailable, match="being rebuilt"):
        run(index, "疫苗")
    mroonga._READY.clear()
    assert index.available() is None
    with archive.engine.connect() as conn:
        assert mroonga._keys_disabled(conn)
    found = scrapy("search", "疫苗", db_url=mariadb_db_url, cwd=tmp_path)
    assert found.returncode == 1, found.output
    assert "being rebuilt" in found.output and "Traceback" not in found.output
    done, resumed = reindex(archive.engine, index, PARSER_VERSION, batch=2)
    assert resumed and done == len(DOCS) - 2
    with archive.engine.connect() as conn:
        assert not mroonga._keys_disabled(conn)
    assert numbers(run(index, "疫苗"), articles) == expected


def test_a_version_rolled_back_after_indexing_leaves_no_trace_in_the_index(
    searched: tuple[Archive, SearchIndex, dict[int, int]],
) -> None:
    """Mroonga's writes are not transactional: a parse transaction rolled back after the
    index hook (a later hook failing, say) puts the documents it wrote back as they were."""
    archive, index, articles = searched
    news = archive.sites.get("news")
    assert news is not None
    url = f"https://site{news.site_id}.example/a/2"
    parsed = Parsed(canonical_url=url, title="全新標題", text="全新內容。", published_at=NOW)
    info = ArticleInfo(articles[2], news.site_id, "news", url)

    def fails(conn: object, added: object) -> None:
        raise RuntimeError("a later hook fails")

    store = PublicationStore(archive.engine, PARSER_VERSION)
    with pytest.raises(RuntimeError):
        store.add_version(
            info, NOW + 50, parsed, parsed.digest(), NOW + 50, (index_hook(index), fails)
        )
    for all_versions in (False, True):
        nothing = run(index, "全新內容", all_versions=all_versions)
        assert (nothing.total, nothing.hits) == (0, ())
        # The version before is still its article's latest (its mark rewritten back).
        assert numbers(run(index, "bnt", all_versions=all_versions), articles) == [2]


def _new_version(archive: Archive, articles: dict[int, int], number: int, body: str) -> tuple:
    """What add_version takes for a new version of a ``news`` article of DOCS."""
    news = archive.sites.get("news")
    assert news is not None
    url = f"https://site{news.site_id}.example/a/{number}"
    parsed = Parsed(canonical_url=url, title="新標題", text=body, published_at=NOW)
    return ArticleInfo(articles[number], news.site_id, "news", url), parsed


def _in_mroonga_and_search_doc(archive: Archive) -> tuple[set[int], set[int]]:
    from sqlalchemy import text

    import zeroarchive.search.mroonga as mroonga
    from zeroarchive.storage.schema import search_doc

    with archive.engine.connect() as conn:
        written = set(conn.execute(text(f"SELECT doc_id FROM {mroonga.TABLE}")).scalars())
        return written, set(conn.execute(select(search_doc.c.doc_id)).scalars())


def test_the_parse_hook_writes_mroonga_after_the_commits_many_versions_at_once(
    mariadb_db_url: str,
) -> None:
    """Each Mroonga statement costs the server about 1 ms of its own: the hook writes
    search_doc in the version's transaction and Mroonga's rows of many versions in one
    statement when flushed; the versions they made older are marked in the same write."""
    from sqlalchemy import event

    import zeroarchive.search.mroonga as mroonga

    archive, index, articles = make_archive(mariadb_db_url)
    statements: list[str] = []

    def writes(statements: list[str]) -> list[str]:
        return [
            s
            for s in statements
            if s.startswith(("INSERT", "DELETE", "UPDATE")) and mroonga.TABLE in s
        ]

    event.listen(
        archive.engine,
        "before_cursor_execute",
        lambda conn, cursor, statement, *rest: statements.append(statement),
    )
    hooks = (index_hook(index),)
    store = PublicationStore(archive.engine, PARSER_VERSION)
    for n in range(3):
        info, parsed = _new_version(archive, articles, 2, f"改寫的第{n}版內容")
        store.add_version(info, NOW + n + 1, parsed, parsed.digest(), NOW + n + 1, hooks)
    written, indexed = _in_mroonga_and_search_doc(archive)
    assert len(indexed - written) == 3  # committed, not yet written
    assert not writes(statements)
    flush_hooks(hooks)
    assert len(writes(statements)) == 2  # one DELETE (of rows to rewrite) and one INSERT
    assert _in_mroonga_and_search_doc(archive)[0] == indexed
    assert numbers(run(index, "改寫的第2版"), articles) == [2]
    assert run(index, "改寫的第1版").total == 0
    assert run(index, "bnt").total == 0  # the first version is an older one now
    for old in ("bnt", "改寫的第0版", "改寫的第1版"):
        assert numbers(run(index, old, all_versions=True), articles) == [2]


def test_groonga_counts_and_ranks_a_search_in_one_statement(mariadb_db_url: str) -> None:
    """A MATCH took one statement to count the hits (MariaDB stepping through each) and
    another to rank them, each finding them anew: 100+ ms at 1,000,000 publications
    (bench/README.md). Groonga's own select does both, with the same answers; with
    --all-versions the older versions are read from it too."""
    from sqlalchemy import event

    archive, index, articles = make_archive(mariadb_db_url)
    hooks = (index_hook(index),)
    info, parsed = _new_version(archive, articles, 2, "指揮中心說明接種順序。")
    PublicationStore(archive.engine, PARSER_VERSION).add_version(
        info, NOW + 1, parsed, parsed.digest(), NOW + 1, hooks
    )
    flush_hooks(hooks)
    statements: list[str] = []
    event.listen(
        archive.engine,
        "before_cursor_execute",
        lambda conn, cursor, statement, *rest: statements.append(statement),
    )
    hits = run(index, "疫苗")
    assert numbers(hits, articles) == [3] and hits.total == 1
    # The lexicon's parser versions, then the select.
    assert sum("mroonga_command" in s for s in statements) == 2
    hits = run(index, "疫苗", all_versions=True, since=(NOW - 9 * DAY) // DAY * DAY)
    assert numbers(hits, articles) == [2, 3] and hits.total == 2
    assert not [s for s in statements if "MATCH" in s]


def test_a_search_finds_its_parser_version_s_publications_only(db_url: str) -> None:
    """After a parser upgrade the index holds both versions' publications until a reindex.
    On MariaDB each document holds its parser version's token; asking for the searched
    version's, every document's, cost Groonga about 45 ms at 1,000,000 publications, so
    the other versions' are excluded instead, and none is asked for after a reindex."""
    from sqlalchemy import event

    from zeroarchive.search.mroonga import _mark

    archive, index, articles = make_archive(db_url)
    sent: list[str] = []
    event.listen(
        archive.engine,
        "before_cursor_execute",
        lambda conn, cursor, statement, parameters, *rest: sent.append(str(parameters)),
    )
    mine = '"' + _mark("q", PARSER_VERSION) + '"'
    assert numbers(run(index, "台海"), articles) == [1]
    assert not [p for p in sent if mine in p]
    store = PublicationStore(archive.engine, "0.old")
    store.register_parser({}, NOW)
    info, parsed = _new_version(archive, articles, 1, "舊解析器的台海文字")
    hooks = (index_hook(index),)
    store.add_version(info, NOW + 1, parsed, parsed.digest(), NOW + 1, hooks)
    flush_hooks(hooks)
    for all_versions in (False, True):
        assert numbers(run(index, "台海", all_versions=all_versions), articles) == [1]
        assert run(index, "舊解析器", all_versions=all_versions).total == 0
        old = index.search(SearchRequest(parse_query("台海"), "0.old", all_versions=all_versions))
        assert [hit.title for hit in old.hits] == ["新標題"]
    if db_url.startswith("mysql"):
        assert [p for p in sent if '-"' + _mark("q", "0.old") + '"' in p]
        assert not [p for p in sent if mine in p.replace("-" + mine, "")]


def test_all_versions_asks_only_about_the_articles_its_page_may_show(
    mariadb_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--all-versions on MariaDB: whether an article's latest version also holds the query
    is asked (by article token) only of the older hits that would rank on the page; asking
    of all took 10 ms per 1,000 at 1,000,000 publications. The pages are SQL's."""
    from sqlalchemy import event

    from zeroarchive.search.mroonga import MroongaIndex

    archive, index, _ = make_archive(mariadb_db_url)
    news = archive.sites.get("news")
    assert news is not None
    hooks = (index_hook(index),)
    for number in range(20, 32):  # the word edited out of 12 articles, kept in 2 of them
        old = f"舊文字{number}號"
        add(archive, index, news.site_id, number, "標題", old, NOW - number, hooks=hooks)
        body = f"舊文字{number}號" if number % 6 == 0 else f"新文字{number}號"
        add(archive, index, news.site_id, number, "標題", body, NOW - number, NOW + 10, hooks=hooks)
    flush_hooks(hooks)
    asked: list[int] = []
    event.listen(
        archive.engine,
        "before_cursor_execute",
        lambda conn, cursor, statement, parameters, *rest: asked.append(
            str(parameters).count('"ÿs')
        ),
    )
    pages = []
    for offset in (0, 3, 10):
        for sort in ("relevance", "date"):
            asked.clear()
            hits = run(index, "舊文字", all_versions=True, limit=3, offset=offset, sort=sort)
            pages.append((hits.total, [h.publication_id for h in hits.hits]))
            assert sum(asked) <= offset + 3  # the articles on this page and those before
    monkeypatch.setattr(MroongaIndex, "_fast", lambda *args: None)
    assert pages == [
        (hits.total, [h.publication_id for h in hits.hits])
        for hits in (
            run(index, "舊文字", all_versions=True, limit=3, offset=offset, sort=sort)
            for offset in (0, 3, 10)
            for sort in ("relevance", "date")
        )
    ]
    assert pages[0][0] == 12


def test_all_versions_past_the_cap_counts_no_further(
    mariadb_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With more latest hits than the cap, an --all-versions total on MariaDB is "N+"
    without Groonga's count of articles (a drilldown over every version that holds the
    query: 10-20 ms at 1,000,000 publications); under the cap it is counted exactly."""
    from sqlalchemy import event

    import zeroarchive.search.index as index_module
    import zeroarchive.search.mroonga as mroonga

    archive, index, articles = make_archive(mariadb_db_url)
    news = archive.sites.get("news")
    assert news is not None
    add(archive, index, news.site_id, 1, "情勢", "國防部說。", NOW - 9 * DAY, at=NOW + 10)
    sent: list[str] = []
    event.listen(
        archive.engine,
        "before_cursor_execute",
        lambda conn, cursor, statement, parameters, *rest: sent.append(str(parameters)),
    )
    hits = run(index, "台", all_versions=True)
    assert numbers(hits, articles) == [1, 3, 8] and hits.total == 3
    assert [p for p in sent if "drilldown" in p]
    sent.clear()
    for module in (index_module, mroonga):
        monkeypatch.setattr(module, "MAX_TOTAL", 1)
    hits = run(index, "台", all_versions=True)
    assert hits.capped and hits.total_line() == "1+ hits"
    assert not [p for p in sent if "drilldown" in p]


def test_versions_committed_by_a_run_stopped_before_its_flush_are_written_by_the_next(
    mariadb_db_url: str,
) -> None:
    """A parse run killed between a commit and its flush: the next index to take a version
    writes what search_doc holds beyond Mroonga's newest row, and the other versions of
    those articles (their latest marks changed with them)."""
    import zeroarchive.search.mroonga as mroonga

    archive, index, articles = make_archive(mariadb_db_url)
    store = PublicationStore(archive.engine, PARSER_VERSION)
    info, parsed = _new_version(archive, articles, 2, "遺失的版本")
    store.add_version(info, NOW + 1, parsed, parsed.digest(), NOW + 1, (index_hook(index),))
    mroonga._DUE.clear()  # the process died
    written, indexed = _in_mroonga_and_search_doc(archive)
    assert len(indexed - written) == 1
    later = open_index(archive.engine)
    hooks = (index_hook(later),)
    info, parsed = _new_version(archive, articles, 7, "下一次的版本")
    store.add_version(info, NOW + 2, parsed, parsed.digest(), NOW + 2, hooks)
    flush_hooks(hooks)
    assert _in_mroonga_and_search_doc(archive)[0] == _in_mroonga_and_search_doc(archive)[1]
    assert numbers(run(later, "遺失的版本"), articles) == [2]
    # The version the lost one made older is marked so, though its row is not new.
    assert run(later, "bnt").total == 0
    assert numbers(run(later, "bnt", all_versions=True), articles) == [2]
    assert numbers(run(later, "下一次的版本"), articles) == [7]
    assert numbers(run(later, "백신", all_versions=True), articles) == [7]
    assert run(later, "백신").total == 0


def test_a_parse_run_that_fails_still_writes_what_it_committed(mariadb_db_url: str) -> None:
    """parse_pending flushes its hooks however it ends: a hook failing on the second new
    version (rolled back) leaves the first, committed, in Mroonga."""
    from zeroarchive.parser.run import ParseRunConfig, parse_pending

    archive = open_archive(url=mariadb_db_url)
    index = open_index(archive.engine)
    assert index.available() is None
    site_id = add_site(archive, "ltn", "https://news.ltn.com.tw/", "/")
    urls = [LTN_URL, LTN_URL + "?copy"]
    archive.articles.add(site_id, "Article", urls, NOW)
    for n, url in enumerate(urls):
        page = LTN_PAGE.replace(*LTN_EDIT) if n else LTN_PAGE
        archive.snapshots.save(
            [
                FetchedPage(
                    article_id=_article_id(archive, url),
                    site_id=site_id,
                    article_type="news",
                    fetched_at=NOW,
                    status=200,
                    final_url=url,
                    headers={"Content-Type": ["text/html; charset=utf-8"]},
                    encoding="utf-8",
                    body=page,
                )
            ]
        )
    seen: list[object] = []

    def fails_on_the_second(conn: object, added: object) -> None:
        seen.append(added)
        if len(seen) == 2:
            raise RuntimeError("a later hook fails")

    with pytest.raises(RuntimeError):
        parse_pending(
            archive.engine,
            ParseRunConfig(),
            now=NOW,
            hooks=(index_hook(index), fails_on_the_second),
        )
    written, indexed = _in_mroonga_and_search_doc(archive)
    assert written == indexed and len(indexed) == 1
    assert run(index, "停止禁食").total == 1
    assert run(index, "結束禁食").total == 0


#: Texts where Groonga's tokenizer (on MariaDB) could cut otherwise than ``index_text``:
#: CJK beside words, punctuation between runs, one- and two-character CJK words, kana
#: with repeat and prolonged marks, Hangul syllables and conjoining jamo, runs a space
#: apart, words of letters and digits, words longer than MAX_TOKEN, private-use characters
#: and words that look like the engine's own spellings.
HARD = [
    ("人々", "人々の時々。東京・大阪〇〇年、カーナビ〻"),
    ("한국", "ᄀᄁ 한국어 백신 접종을 시작했다. 코로나19 백신"),
    ("台灣 海峽", "台灣 海峽與台灣海峽；台 灣；台，灣"),
    ("covid19", "covid19 c_d café naïve ß straße 2021年 abc台灣def"),
    ("long", "x" * 70 + "y " + "z" * 64 + " 台" + "q" * 65),
    ("marks", "台\ue000灣 a\ue123b \ue002 ÿwgdgphggjgedbdj ÿq ᄀ한"),
]


def _forms(folded: str) -> set[str]:
    """Strings of runs and spaces in ``folded``, up to 12 characters: every piece between
    punctuation, cut at its words' ends and at each character of its CJK runs."""
    from zeroarchive.search.text import RUN, is_cjk

    found = set()
    for piece in re.split(r"[^\w\s]|_", folded):
        cuts = {0, len(piece)}
        for run in RUN.finditer(piece):
            cuts |= {run.start(), run.end()}
            if is_cjk(run.group()):
                cuts |= set(range(run.start(), run.end()))
        for a in cuts:
            for b in cuts:
                if 0 < b - a <= 12 and piece[a:b].strip() == piece[a:b]:
                    found.add(piece[a:b])
    return found


def test_the_hard_cases_give_exactly_the_texts_answers(db_url: str) -> None:
    """Every phrase of runs cut from these texts finds exactly the texts that hold it (the
    Matcher's judgement on the text), on both engines: on MariaDB Groonga cuts the stored
    text into the tokens SQLite is given."""
    from zeroarchive.search.match import Matcher
    from zeroarchive.search.text import normalize

    archive = open_archive(url=db_url)
    index = open_index(archive.engine)
    assert index.available() is None
    site_id = add_site(archive, "hard", "https://hard.example/")
    ids = [
        add(archive, index, site_id, n, title, body, NOW) for n, (title, body) in enumerate(HARD)
    ]
    forms = sorted(set().union(*(_forms(normalize(f"{t} {b}")) for t, b in HARD)))
    assert len(forms) > 250
    wrong = []
    for form in forms:
        query = parse_query(f'"{form}"')
        want = {
            article_id
            for article_id, (title, body) in zip(ids, HARD, strict=True)
            if Matcher(query).holds(normalize(title), normalize(body))
        }
        hits = index.search(SearchRequest(query, PARSER_VERSION, limit=len(HARD)))
        if {hit.article_id for hit in hits.hits} != want or hits.total != len(want):
            wrong.append(form)
    assert not wrong, (
        f"{len(wrong)} of {len(forms)} answered otherwise than the texts: {wrong[:20]}"
    )


def test_dates_are_filtered_in_groonga_as_sql_filters_them(
    mariadb_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--since/--until on MariaDB: Groonga's filter on its date column finds what SQL over
    search_doc finds, with and without --all-versions (an article whose latest version
    holds the query outside the range and an older one inside it included), for whole
    UTC days and other bounds alike."""
    from zeroarchive.search.mroonga import MroongaIndex

    archive, index, articles = make_archive(mariadb_db_url)
    news = archive.sites.get("news")
    assert news is not None
    # Article 3 holds 疫苗 7 days ago and again now; article 2's newer version dropped it.
    add(archive, index, news.site_id, 3, "台湾疫苗新闻", "疫苗的后续报道。", NOW, at=NOW + 10)
    add(archive, index, news.site_id, 2, "到貨", "第二批今天抵達。", NOW - 5 * DAY, at=NOW + 20)
    today = NOW // DAY * DAY
    ranges = [(today - 8 * DAY, today - 3 * DAY), (today - 3 * DAY, None), (None, today - 6 * DAY)]
    ranges += [(today - 40 * DAY, today + DAY), (today - 2 * DAY, today - DAY)]
    ranges += [(NOW - 5 * DAY, NOW + 10), (NOW - 7 * DAY, NOW - 7 * DAY + 1), (None, NOW + 10)]
    fast = []
    for query in ("疫苗", "台", "vaccine", '"covid 19"', "疫苗 -台湾"):
        for since, until in ranges:
            for all_versions in (False, True):
                options = {"since": since, "until": until, "all_versions": all_versions}
                hits = run(index, query, **options)
                fast.append((hits.total, sorted(h.publication_id for h in hits.hits)))
    monkeypatch.setattr(MroongaIndex, "_fast", lambda *args: None)
    slow = []
    for query in ("疫苗", "台", "vaccine", '"covid 19"', "疫苗 -台湾"):
        for since, until in ranges:
            for all_versions in (False, True):
                options = {"since": since, "until": until, "all_versions": all_versions}
                hits = run(index, query, **options)
                slow.append((hits.total, sorted(h.publication_id for h in hits.hits)))
    assert fast == slow
    assert sum(total for total, _ in fast) > 20  # not all empty
    assert numbers(run(index, "疫苗", until=today - 3 * DAY, all_versions=True), articles) == [2, 3]


def test_the_parse_hook_writes_mroonga_once_enough_versions_are_due(
    mariadb_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long parse run does not keep its versions out of the index to its end: once
    FLUSH_EVERY committed documents are due, the hook writes them (on a connection of
    its own) before it takes the next version."""
    import zeroarchive.search.mroonga as mroonga

    archive, index, articles = make_archive(mariadb_db_url)
    monkeypatch.setattr(mroonga, "FLUSH_EVERY", 2)
    hooks = (index_hook(index),)
    store = PublicationStore(archive.engine, PARSER_VERSION)
    for n, number in enumerate((2, 7, 1)):
        info, parsed = _new_version(archive, articles, number, f"第{n}次改寫")
        store.add_version(info, NOW + n + 1, parsed, parsed.digest(), NOW + n + 1, hooks)
    written, indexed = _in_mroonga_and_search_doc(archive)
    # Versions 2 and 7 were written, with the versions they made older; 1 is due.
    assert len(indexed - written) == 1
    flush_hooks(hooks)
    assert _in_mroonga_and_search_doc(archive)[0] == indexed
    assert numbers(run(index, "次改寫"), articles) == [1, 2, 7]
