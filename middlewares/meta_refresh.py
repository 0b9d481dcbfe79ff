"""Scrapy's meta refresh redirects (``<meta http-equiv="refresh" content="0; url=...">``),
without decoding every page to find out that it has none.

Scrapy's own middleware reads the first 4096 characters of ``response.text``: the whole
body decoded for every HTML answer (0.16 ms of CPU a page of 114 KB, on the reactor's
thread of every crawl), then its base URL made safe, whether or not the page refreshes.
This one first looks for a refresh tag in the first bytes, as w3lib reads them without
decoding; only a page that has one goes on to Scrapy's middleware, which decides as it
always did. 4096 characters are at most 4 × 4096 bytes in any encoding, so every page
Scrapy would redirect is passed on; a refresh tag beyond its 4096 characters but within
these bytes is passed on too, and Scrapy's reading then decides (it does not see it).
"""

from __future__ import annotations

from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware
from scrapy.http import HtmlResponse, Request, Response
from w3lib import html as w3lib_html
from w3lib.html import get_meta_refresh

#: Scrapy reads the first 4096 characters of a page for its refresh: at most 4 bytes each.
SCAN_BYTES = 4 * 4096

#: Whether an encoding writes markup as its own ASCII bytes (w3lib's test, which its own
#: reading of bytes relies on); without it, every page is read by w3lib.
_scannable = getattr(w3lib_html, "_scannable", lambda encoding: False)


class MetaRefreshDownloaderMiddleware(MetaRefreshMiddleware):
    # Without Scrapy's deprecated ``spider`` argument, as the crawl's other middlewares.
    def process_response(  # type: ignore[override]
        self, request: Request, response: Response
    ) -> Request | Response:
        if isinstance(response, HtmlResponse) and not may_refresh(response, self._ignore_tags):
            return response
        return super().process_response(request, response)


def may_refresh(response: HtmlResponse, ignore_tags: list[str]) -> bool:
    """Whether the start of the page holds a meta refresh (by w3lib's reading of its
    first ``SCAN_BYTES`` bytes, ``ignore_tags``' contents left out; most pages do not
    even spell "refresh" there).

    >>> page = lambda body: HtmlResponse("https://a.example/", body=body, encoding="utf-8")
    >>> may_refresh(page(b'<head><meta http-equiv="refresh" content="0; url=/b">'), [])
    True
    >>> may_refresh(page(b"<head><meta charset=utf-8><title>refresh</title>"), [])
    False
    >>> may_refresh(page(b'<noscript><meta http-equiv="refresh" content="0; url=/b">'
    ...                  b"</noscript>"), ["noscript"])
    False
    """
    encoding = response.encoding
    if _scannable(encoding) and b"refresh" not in response.body[:SCAN_BYTES].lower():
        # What w3lib's reading of the bytes asks first of a tag: "refresh" among its
        # attributes, spelt in these bytes in such an encoding.
        return False
    _, url = get_meta_refresh(
        response.body, response.url, response.encoding, ignore_tags, max_scan=SCAN_BYTES
    )
    return url is not None
