"""The generic parser on real saved Taiwanese news pages (tw-news-2014, tw-news-twnews) and
the extraction benchmark's dev pages: one test per field."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import lzma
import re
from functools import cache

import pytest

from tests import parse_once
from tests.conftest import FIXTURES
from zeroarchive.core.encoding import detect_encoding
from zeroarchive.parser import Parsed, ParseError, parse_snapshot

TW_NEWS = {"tw-news-2014": gzip.decompress, "tw-news-twnews": lzma.decompress}


def _expected() -> dict[str, tuple[str, dict[str, object]]]:
    found = {}
    for corpus in TW_NEWS:
        facts = json.loads((FIXTURES / corpus / "expected.json").read_text(encoding="utf-8"))
        for name, fact in facts.items():
            found[name] = (corpus, fact)
    return found


EXPECTED = _expected()
PAGES = sorted(EXPECTED)


@cache
def raw_page(name: str) -> bytes:
    corpus, _ = EXPECTED[name]
    folder = FIXTURES / corpus
    path = folder / "html" / name if (folder / "html" / name).exists() else folder / name
    return TW_NEWS[corpus](path.read_bytes())


@pytest.fixture(autouse=True, scope="module")
def _parse_once(tmp_path_factory: pytest.TempPathFactory) -> None:
    parse_once.share_in(tmp_path_factory)


def parsed(name: str) -> Parsed:
    """The page as the parser reads it: parsed once per run for the tests that assert on
    it, whichever test processes run them (tests/parse_once.py)."""
    raw = raw_page(name)
    return parse_once.parsed("Article", raw, detect_encoding(raw), str(EXPECTED[name][1]["url"]))


def fact(name: str, key: str) -> object:
    return EXPECTED[name][1].get(key)


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("name", PAGES)
def test_title(name: str) -> None:
    # Pages differ from the expected titles only in runs of (full-width) spaces.
    assert squeeze(parsed(name).title) == squeeze(str(fact(name, "title")))


@pytest.mark.parametrize("name", PAGES)
def test_text_holds_the_article(name: str) -> None:
    text = parsed(name).text
    for snippet in fact(name, "body_snippets"):  # type: ignore[attr-defined]
        assert snippet in text


@pytest.mark.parametrize("name", [n for n in PAGES if fact(n, "body_excludes")])
def test_text_leaves_out_the_rest_of_the_page(name: str) -> None:
    text = parsed(name).text
    for outside in fact(name, "body_excludes"):  # type: ignore[attr-defined]
        assert outside not in text


@pytest.mark.parametrize("name", PAGES)
def test_published_at(name: str) -> None:
    expected = int(dt.datetime.fromisoformat(str(fact(name, "published_at"))).timestamp())
    got = parsed(name).published_at
    assert got is not None
    if expected % 60:
        assert got == expected
    else:
        # The page shows minutes; a script may still hold the exact second.
        assert got // 60 == expected // 60


def test_big5_page_decodes_cleanly() -> None:
    page = parsed("udn_s1.html.gz")
    assert "國光客運新開北宜高國5三條新路線" in page.text
    assert "\ufffd" not in page.text


def test_language_from_the_page() -> None:
    assert parsed("setn.html.xz").language == "zh-Hant"  # <html lang="zh-Hant">


def test_canonical_url_from_the_page() -> None:
    page = parsed("ettoday.html.xz")
    assert page.canonical_url == "https://www.ettoday.net/news/20171209/1069025.htm"


def test_keywords_and_metadata_from_the_page() -> None:
    page = parsed("ettoday.html.xz")
    assert page.keywords
    assert page.metadata["meta"]["og:title"]
    assert isinstance(page.metadata["jsonld"], list)


def test_modified_at_from_json_ld() -> None:
    page = parsed("appledaily.html.xz")
    assert page.modified_at == page.published_at == 1463802240


def test_links_in_the_body_are_absolute_and_canonical() -> None:
    for name in PAGES:
        for url in parsed(name).urls:
            assert url.startswith(("http://", "https://"))
            assert "utm_" not in url


def test_empty_page_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_snapshot("Article", b"   ", "utf-8", "https://example.com/a")


def test_extraction_benchmark_f1_stays_at_or_above_0_965() -> None:
    """The benchmark's own measure (bench/extraction.py has the full side-by-side run)."""
    from bench.extraction import metrics, tp_fp_fn

    folder = FIXTURES / "extraction-benchmark-dev"
    truth = json.loads(lzma.decompress((folder / "ground-truth_subset.json.xz").read_bytes()))
    scores = []
    for key, entry in truth.items():
        raw = gzip.decompress((folder / "html" / f"{key}.html.gz").read_bytes())
        page = parse_snapshot("Article", raw, detect_encoding(raw), entry["url"])
        scores.append(tp_fp_fn(entry["articleBody"], page.text))
    assert metrics(scores)["f1"] >= 0.965


CJK_NEWS = FIXTURES / "cjk-news"
CJK_GOLD = json.loads((CJK_NEWS / "gold.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(CJK_GOLD))
def test_cjk_body_is_kept_where_trafilatura_finds_it(name: str) -> None:
    """Character bigrams, as bench/extraction.py scores Chinese, Japanese and Korean pages."""
    from bench.extraction import bigram_scores
    from zeroarchive.parser.generic import trafilatura_text

    raw = gzip.decompress((CJK_NEWS / "html" / f"{name}.html.gz").read_bytes())
    gold = CJK_GOLD[name]["body"]
    html = raw.decode(detect_encoding(raw))
    assert bigram_scores(gold, trafilatura_text(html))[2] >= 0.8  # the page is a fair test
    page = parse_snapshot("Article", raw, detect_encoding(raw), "https://example.com/a")
    assert bigram_scores(gold, page.text)[2] >= 0.5


PAYWALL = FIXTURES / "paywall"


def test_metered_paywall_leaves_the_lead_as_the_body() -> None:
    """A real Nikkei page: a lead, then the paywall's sign-up box. The lead is the body."""
    from bench.extraction import bigram_scores

    raw = gzip.decompress((PAYWALL / "nikkei-metered.html.gz").read_bytes())
    gold = json.loads((PAYWALL / "nikkei-metered.gold.json").read_text(encoding="utf-8"))["body"]
    page = parse_snapshot("Article", raw, detect_encoding(raw), "https://www.nikkei.com/article/x")
    assert page.text.startswith("６月12日の歴史的な米朝首脳会談を巡って")
    assert "会員限定" not in page.text
    assert "続きをお読み" not in page.text
    assert bigram_scores(gold, page.text)[2] >= 0.95


def test_subscription_box_inside_the_article_is_left_out() -> None:
    """A real WIRED column with a "Subscribe to WIRED" callout between two paragraphs."""
    key = "2f42ef1d3ea0c96e56355d3db93d0e06b47e760b74f6f4261278b8cd1c246dd6"
    folder = FIXTURES / "extraction-benchmark-dev"
    raw = gzip.decompress((folder / "html" / f"{key}.html.gz").read_bytes())
    page = parse_snapshot("Article", raw, detect_encoding(raw), "https://www.wired.com/story/x")
    assert "Subscribe to WIRED" not in page.text
    assert "SUBSCRIBE" not in page.text.split("\n")
    # The paragraphs on both sides of the box stay.
    assert "That will almost certainly also be the case with these neo-banks" in page.text
