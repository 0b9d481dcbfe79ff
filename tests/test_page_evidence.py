"""What a fetched page says of itself: saved real article pages against saved real home
pages."""

from __future__ import annotations

import gzip
import lzma
from pathlib import Path

import pytest

from zeroarchive.crawl.page_evidence import ARTICLE, page_evidence

FIXTURES = Path(__file__).parent / "fixtures"
TWNEWS = sorted((FIXTURES / "tw-news-twnews").glob("*.html.xz"))


@pytest.mark.parametrize("path", TWNEWS, ids=lambda p: p.name.split(".")[0])
def test_saved_article_pages_say_article(path: Path) -> None:
    page = lzma.decompress(path.read_bytes()).decode("utf-8")
    evidence = page_evidence(page)
    assert evidence.verdict == ARTICLE, evidence


@pytest.mark.parametrize("name", ["DaringFireball.html.gz", "cnn_main_site.html.gz"])
def test_saved_home_pages_do_not(name: str) -> None:
    raw = gzip.decompress((FIXTURES / "link_sorting" / name).read_bytes())
    evidence = page_evidence(raw.decode("utf-8", "replace"))
    assert evidence.verdict != ARTICLE, evidence


def test_a_page_of_many_article_blocks_and_links_is_a_list() -> None:
    block = '<article><h2><a href="/n/{0}">Headline number {0} of the day</a></h2></article>'
    page = (
        '<html><head><meta property="og:type" content="website"></head><body>'
        + "".join(block.format(n) for n in range(40))
        + "</body></html>"
    )
    assert page_evidence(page).verdict == "list"
