"""Search on real news pages, checked against the publications' own texts.

Real Taiwanese, Chinese, Japanese and Korean pages (tests/fixtures, each folder's
SOURCE.txt) are parsed by the archive's parser and indexed; then hundreds of queries drawn
from those texts (CJK strings of 1-6 characters, Latin words, ANDed pairs, exclusions and
strings that occur nowhere) must find every publication that holds them and no other, on
both engines. The oracle is plain Python on the stored title and text, folded with NFKC and
case folding, independent of the engines' tokenisers.
"""

from __future__ import annotations

import functools
import gzip
import json
import lzma
import random
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import select

from tests import parse_once
from tests.conftest import FIXTURES
from zeroarchive.core.items import Parsed
from zeroarchive.parser import PARSER_VERSION
from zeroarchive.search import open_index
from zeroarchive.search.fold import canonical, chinese_forms, variants
from zeroarchive.search.index import SearchIndex, SearchRequest, index_hook
from zeroarchive.search.query import parse_query
from zeroarchive.search.text import CJK
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.publications import ArticleInfo, PublicationStore, flush_hooks
from zeroarchive.storage.schema import article

NOW = 1_700_000_000
CJK_RUN = re.compile(f"[{CJK}]+")
LATIN_WORD = re.compile(r"[a-z]{3,12}")
#: A word character that is not CJK: what bounds a Latin word.
WORD_CHAR = f"[^\\W{CJK}]"


@pytest.fixture(autouse=True, scope="module")
def _parse_once(tmp_path_factory: pytest.TempPathFactory) -> None:
    parse_once.share_in(tmp_path_factory)


def parsed_pages() -> list[tuple[str, Parsed]]:
    """Each real page as the parser reads it: parsed once per run for both engines, whichever
    test processes run them (tests/parse_once.py)."""
    return [(url, parse_once.parsed("Article", raw, enc, url)) for url, raw, enc in real_pages()]


def real_pages() -> list[tuple[str, bytes, str]]:
    """(url, raw bytes, encoding) of every real news page the fixtures hold."""
    pages = []
    for folder, opener in (("tw-news-2014", gzip.decompress), ("tw-news-twnews", lzma.decompress)):
        expected = json.loads((FIXTURES / folder / "expected.json").read_text("utf-8"))
        base = FIXTURES / folder / ("html" if folder == "tw-news-2014" else "")
        for name, facts in sorted(expected.items()):
            pages.append((facts["url"], opener((base / name).read_bytes()), facts["charset"]))
    gold = json.loads((FIXTURES / "cjk-news" / "gold.json").read_text("utf-8"))
    for name, facts in sorted(gold.items()):
        raw = gzip.decompress((FIXTURES / "cjk-news" / "html" / f"{name}.html.gz").read_bytes())
        url = facts.get("url") or f"https://{name}.example/article"
        pages.append((url, raw, "utf-8"))
    return pages


def fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


@dataclass(frozen=True)
class Stored:
    article_id: int
    title: str
    text: str

    @functools.cached_property
    def folded(self) -> tuple[str, str]:
        return fold(self.title), fold(self.text)

    def spelt(self, spelling: Callable[[str], str]) -> Stored:
        return Stored(self.article_id, spelling(fold(self.title)), spelling(fold(self.text)))

    def holds(self, term: str) -> bool:
        """Whether the title or the text holds ``term`` as the search promises: a CJK
        string anywhere, a Latin word whole."""
        if CJK_RUN.fullmatch(term):
            return any(term in field for field in self.folded)
        whole = re.compile(f"(?<!{WORD_CHAR}){re.escape(term)}(?!{WORD_CHAR})")
        return any(whole.search(field) for field in self.folded)


@pytest.fixture
def archived(db_url: str) -> Iterator[tuple[SearchIndex, list[Stored]]]:
    archive = open_archive(url=db_url)
    index = open_index(archive.engine)
    assert index.available() is None
    spec = parse_spec(
        {"name": "news", "url": "https://news.example/", "type": "news", "config": {"article": "/"}}
    )
    site_id = archive.sites.upsert(spec, NOW)[0]
    store = PublicationStore(archive.engine, PARSER_VERSION)
    stored = []
    hooks = (index_hook(index),)
    for url, parsed in parsed_pages():
        archive.articles.add(site_id, "news", [url], NOW)
        with archive.engine.connect() as conn:
            article_id = conn.execute(
                select(article.c.article_id).where(article.c.url == url)
            ).scalar_one()
        info = ArticleInfo(article_id, site_id, "news", url)
        store.add_version(info, NOW, parsed, parsed.digest(), NOW, hooks)
        stored.append(Stored(article_id, parsed.title or "", parsed.text or ""))
    flush_hooks(hooks)  # as a parse run does when it ends
    yield index, stored


def queries(stored: list[Stored]) -> list[str]:
    """Queries drawn from the texts, the same every run."""
    rng = random.Random(2026)
    runs = [run for doc in stored for run in CJK_RUN.findall(fold(doc.text + " " + doc.title))]
    words = sorted({w for doc in stored for w in LATIN_WORD.findall(fold(doc.text)) if w.isascii()})
    chars = sorted({char for run in runs for char in run})
    drawn = []
    for _ in range(160):
        run = rng.choice(runs)
        size = rng.randint(1, min(6, len(run)))
        start = rng.randrange(len(run) - size + 1)
        drawn.append(run[start : start + size])
    drawn += rng.sample(words, min(30, len(words)))
    # Strings of characters the texts hold, mostly in no text.
    drawn += ["".join(rng.choice(chars) for _ in range(rng.randint(2, 4))) for _ in range(30)]
    # Two terms ANDed, and one excluded.
    pairs = [(rng.choice(drawn[:160]), rng.choice(drawn[:190])) for _ in range(40)]
    drawn += [f"{a} {b}" for a, b in pairs[:20]] + [f"{a} -{b}" for a, b in pairs[20:]]
    return drawn


def expected(stored: list[Stored], raw: str) -> set[int]:
    found = set()
    for doc in stored:
        terms = raw.split()
        wanted = [t for t in terms if not t.startswith("-")]
        unwanted = [t[1:] for t in terms if t.startswith("-")]
        if all(doc.holds(t) for t in wanted) and not any(doc.holds(t) for t in unwanted):
            found.add(doc.article_id)
    return found


def test_every_publication_that_holds_a_query_is_found_and_no_other(
    archived: tuple[SearchIndex, list[Stored]],
) -> None:
    index, stored = archived
    assert len(stored) >= 40
    drawn = queries(stored)
    sizes = [len(expected(stored, raw)) for raw in drawn]
    # Not a trivial check: queries held by none, by a few and by many texts.
    assert sum(1 for n in sizes if n == 0) >= 20
    assert sum(1 for n in sizes if 1 <= n < 10) >= 60
    assert sum(1 for n in sizes if n >= 10) >= 15
    wrong = []
    for raw in drawn:
        request = SearchRequest(parse_query(raw), PARSER_VERSION, limit=len(stored))
        hits = index.search(request)
        found = {hit.article_id for hit in hits.hits}
        want = expected(stored, raw)
        if found != want or hits.total != len(want):
            wrong.append((raw, sorted(want - found), sorted(found - want), hits.total))
    assert not wrong, f"{len(wrong)} queries answered wrongly: {wrong[:10]}"
    # --fold-chinese: each query respelt (a character's variants drawn at random), found
    # wherever the texts hold it in any spelling.
    rng = random.Random(40)
    respelt = [
        "".join(rng.choice(variants(char)) for char in raw) for raw in drawn[:100] + drawn[-20:]
    ]
    # The oracle: texts and query with every character as its class's canonical one.
    spelt = [doc.spelt(canonical) for doc in stored]
    widened = 0
    for raw in respelt:
        request = SearchRequest(parse_query(raw, chinese_forms), PARSER_VERSION, limit=len(stored))
        hits = index.search(request)
        found = {hit.article_id for hit in hits.hits}
        want = expected(spelt, canonical(raw))
        widened += want != expected(stored, raw)
        if found != want or hits.total != len(want):
            wrong.append((raw, sorted(want - found), sorted(found - want), hits.total))
    assert not wrong, f"{len(wrong)} folded queries answered wrongly: {wrong[:10]}"
    assert widened >= 40  # the folding finds what the spelling alone does not
