"""A page that is a listing of short items (a section page, an announcements list) fetched
as an article has no article body: the parser says so instead of running the items'
headlines together, and keeps their links. Articles around as many links stay articles."""

from __future__ import annotations

import gzip
import json

import pytest

from bench.extraction import bigram_scores
from tests.conftest import FIXTURES
from zeroarchive.core.encoding import detect_encoding
from zeroarchive.core.items import Parsed
from zeroarchive.parser import parse_snapshot

PAGES = FIXTURES / "listing"
GOLD = json.loads((PAGES / "gold.json").read_text(encoding="utf-8"))


def parse(name: str, url: str) -> Parsed:
    raw = gzip.decompress((PAGES / f"{name}.html.gz").read_bytes())
    return parse_snapshot("Article", raw, detect_encoding(raw), url)


@pytest.mark.parametrize(
    ("name", "url", "items", "item_link"),
    [
        # The extractors took its 15 announcements, run together, as the article.
        (
            "gerapy-rtfund_xxpl",
            "http://www.rtfund.com/xxpl/",
            15,
            "http://www.rtfund.com/main/a/20200709/12323944.shtml",
        ),
        (
            "gerapy-hrfund_announcement",
            "http://www.hr-fund.com.cn/news",
            10,
            "http://www.hr-fund.com.cn/Upload/File/202004/20200429175329_3226.pdf",
        ),
        (
            "gerapy-netease_international_news",
            "https://news.163.com/world/",
            140,
            "https://news.163.com/20/0704/20/FGNHO51U0001899O.html",
        ),
    ],
)
def test_a_listing_has_no_body_and_keeps_its_items_links(
    name: str, url: str, items: int, item_link: str
) -> None:
    parsed = parse(name, url)
    assert parsed.text == ""
    assert parsed.metadata["listing"] == {"items": items}
    assert len(parsed.urls) == items
    assert item_link in parsed.urls
    assert parsed.title  # the section's own title stays


@pytest.mark.parametrize(
    ("name", "start"),
    [
        ("gerapy-china_news1", "【中国稳健前行】坚定实施扩大内需战略"),
        ("gerapy-ifeng_news1_detail_20220630", "“我的名字叫紫禁城，快要600岁了"),
    ],
)
def test_an_article_without_declarations_stays_an_article(name: str, start: str) -> None:
    """Neither page declares an article (no og:type, no JSON-LD); both have paragraphs."""
    parsed = parse(name, "https://news.example/a")
    assert "listing" not in parsed.metadata
    assert parsed.text.startswith(start)
    assert len(parsed.text) > 2000


def test_a_short_item_under_many_headline_links_is_not_a_listing() -> None:
    """cctv.com: a 173-character answer, 62 headline links around it, no declaration."""
    name = "cwced-a6e8b739"
    parsed = parse(name, "https://news.example/a")
    assert "listing" not in parsed.metadata
    assert bigram_scores(GOLD[name]["body"], parsed.text)[2] >= 0.6


def test_a_brief_of_two_sentences_under_many_headline_links_is_not_a_listing() -> None:
    """NetEase Finance, 2015: a 98-character brief (two sentences ending in 。) beside the
    site's headline lists, no declaration: its sentences are its own, not items' lines."""
    name = "cxnetease-70"
    parsed = parse(name, "https://news.example/a")
    assert "listing" not in parsed.metadata
    assert "保监会也就股市相关问题召开会议" in parsed.text
    assert bigram_scores(GOLD[name]["body"], parsed.text)[2] >= 0.9
