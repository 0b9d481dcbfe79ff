"""What the snapshot writer settles for a spider (zeroarchive/crawl/snapshot_batches.py): a
page's encoding and canonical claims, worked out off the crawl's thread."""

from __future__ import annotations

import pytest

from zeroarchive.core.items import FetchedPage
from zeroarchive.crawl import snapshot_batches
from zeroarchive.crawl.snapshot_batches import Count, settle
from zeroarchive.sites.record import Site, parse_config

ARTICLE = "https://farm.example/a/1"


def site() -> Site:
    config = parse_config({"article": "/a/"}, "farm")
    return Site(site_id=1, name="farm", url="https://farm.example/", type="news", config=config)


def unsettled(body: bytes, headers: dict[str, list[str]], final_url: str = ARTICLE) -> FetchedPage:
    return FetchedPage(
        article_id=1,
        site_id=1,
        article_type="news",
        fetched_at=1_700_000_000,
        status=200,
        final_url=final_url,
        headers=headers,
        encoding="",
        body=body,
        unsettled_for=ARTICLE,
    )


def test_big5_without_a_charset_is_settled_as_big5() -> None:
    body = ("<html><body>" + "<p>台灣的新聞報導今天</p>" * 40 + "</body></html>").encode("big5")
    counts: list[Count] = []
    page = settle(unsettled(body, {"Content-Type": ["text/html"]}), site(), counts)
    assert page.encoding == "cp950"
    assert page.moved_to is None and page.unsettled_for is None
    assert counts == []


def test_a_declared_charset_in_the_headers_is_read_whatever_the_names_case() -> None:
    body = "<p>台灣</p>".encode("big5")
    page = settle(unsettled(body, {"content-type": ["text/html; charset=big5"]}), site(), [])
    assert page.encoding == "cp950"


def test_a_canonical_claim_on_the_site_moves_the_page_and_is_counted() -> None:
    body = b'<html><head><link rel="canonical" href="/a/1/amp"></head><p>x</p></html>'
    counts: list[Count] = []
    page = settle(unsettled(body, {}), site(), counts)
    assert page.moved_to == "https://farm.example/a/1/amp"
    assert page.encoding == "utf-8"
    assert counts == [("canonical_redirects", 1, 1)]


def test_a_server_redirect_moves_the_page() -> None:
    page = settle(unsettled(b"<p>x</p>", {}, "https://farm.example/a/3"), site(), [])
    assert page.moved_to == "https://farm.example/a/3"


def test_without_the_sites_record_the_encoding_is_still_settled() -> None:
    body = b'<link rel="canonical" href="/a/1/amp"><p>x</p>'
    page = settle(unsettled(body, {}), None, [])
    assert (page.encoding, page.moved_to, page.unsettled_for) == ("utf-8", None, None)


def test_a_page_settled_by_its_spider_is_left_as_it_is() -> None:
    page = unsettled(b"<p>x</p>", {})
    settled = FetchedPage(**{**page.__dict__, "encoding": "cp950", "unsettled_for": None})
    assert settle(settled, site(), []) is settled


def test_claims_that_cannot_be_read_keep_the_page_as_fetched(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(body: bytes, encoding: str) -> list[str]:
        raise ValueError("a head no parser takes")

    monkeypatch.setattr(snapshot_batches, "declared_urls", broken)
    counts: list[Count] = []
    page = settle(unsettled(b"<p>x</p>", {}), site(), counts)
    assert (page.encoding, page.moved_to, page.unsettled_for) == ("utf-8", None, None)
    assert counts == [("errors/settle", 1, 1)]
    assert "Could not read the claims of https://farm.example/a/1" in caplog.text
