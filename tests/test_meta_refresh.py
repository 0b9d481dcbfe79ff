"""The meta refresh middleware: what Scrapy's own redirects it redirects alike, in the
crawl's middleware chain in Scrapy's place; a page without a refresh passes untouched."""

from __future__ import annotations

import doctest

import pytest
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler

import middlewares.meta_refresh
from middlewares.meta_refresh import SCAN_BYTES, MetaRefreshDownloaderMiddleware
from tests.conftest import project_settings

URL = "https://news.example/a/1"
REFRESH = '<meta http-equiv="Refresh" content="0; url=/a/2">'
FILLER = "<p>" + "報導內容" * 300 + "</p>"  # 3,600 bytes in UTF-8, 2,400 in Big5
TITLED = "<html><head><title>報導</title>"


def test_doctests() -> None:
    results = doctest.testmod(middlewares.meta_refresh)
    assert results.attempted > 0
    assert results.failed == 0


def both() -> tuple[MetaRefreshDownloaderMiddleware, MetaRefreshMiddleware]:
    crawler = get_crawler(settings_dict=project_settings())
    return (
        MetaRefreshDownloaderMiddleware.from_crawler(crawler),
        MetaRefreshMiddleware.from_crawler(crawler),
    )


def test_it_takes_scrapys_place_in_the_chain() -> None:
    crawler = get_crawler(settings_dict=project_settings())
    chain = crawler.settings.getwithbase("DOWNLOADER_MIDDLEWARES")
    assert chain["scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware"] is None
    assert chain["middlewares.meta_refresh.MetaRefreshDownloaderMiddleware"] == 580


NEXT = "https://news.example/a/2"


@pytest.mark.parametrize(
    ("html", "encoding", "redirected"),
    [
        (f"<html><head>{REFRESH}</head><body>{FILLER}</body></html>", "utf-8", True),
        (f"<html><head><title>t</title></head><body>{FILLER}</body></html>", "utf-8", False),
        # Big5 and UTF-16: w3lib reads the one's bytes, decodes the other's.
        (
            f"<html><head>{REFRESH}<title>報導</title></head><body>{FILLER}</body></html>",
            "big5",
            True,
        ),
        (f"<html><head>{REFRESH}</head><body>{FILLER}</body></html>", "utf-16", True),
        (f"<html><head><title>t</title></head><body>{FILLER}</body></html>", "utf-16", False),
        # Inside <noscript>, which Scrapy's default leaves out; "refresh" in the text only.
        (f"<html><head><noscript>{REFRESH}</noscript></head><body>x</body></html>", "utf-8", False),
        (
            "<html><head><title>Refresh your feed</title></head><body>refresh</body></html>",
            "utf-8",
            False,
        ),
        # Within the first 4096 characters, in the body; then past them, where Scrapy does
        # not look (but within the bytes read first here, so Scrapy's reading decides).
        (f"<html><head></head><body>{FILLER * 2}{REFRESH}</body></html>", "utf-8", True),
        (f"<html><head></head><body>{FILLER * 4}{REFRESH}</body></html>", "utf-8", False),
    ],
    ids=["utf-8", "none", "big5", "utf-16", "utf-16-none", "noscript", "text-only", "body", "past"],
)
def test_it_redirects_what_scrapys_redirects(html: str, encoding: str, redirected: bool) -> None:
    ours, scrapys = both()
    body = html.encode(encoding)
    answers = []
    for middleware in (ours, scrapys):
        response = HtmlResponse(
            URL, body=body, headers={"Content-Type": f"text/html; charset={encoding}"}
        )
        answer = middleware.process_response(Request(URL), response)
        assert isinstance(answer, Request) or answer is response
        answers.append(answer.url if isinstance(answer, Request) else None)
    assert answers[0] == answers[1] == (NEXT if redirected else None)
    assert len(body) < SCAN_BYTES, "every case is within the bytes read first"
