"""Scrapy's cookie handling with a Public Suffix List that never comes from the internet.

Scrapy's CookiesMiddleware asks tldextract whether a cookie's domain is a public suffix
(``co.uk``, ``blogspot.com``), and tldextract downloads the list from publicsuffix.org
into ``~/.cache`` on first use: a fresh worker with no way out but to the archived sites
printed three tracebacks on its first page that set a cookie. Here the list is the
snapshot bundled with tldextract, or the file ``COOKIES_PUBLIC_SUFFIX_LIST`` names; no
cache is written and nothing is fetched. The cookie rules are Scrapy's own.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from http.cookiejar import Cookie
from pathlib import Path

from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.cookies import CookiesMiddleware
from scrapy.exceptions import NotConfigured
from scrapy.http import Request
from scrapy.http.cookies import CookieJar
from scrapy.utils.httpobj import urlparse_cached
from tldextract import TLDExtract

logger = logging.getLogger(__name__)


def public_suffix_list(path: str | None) -> tuple[TLDExtract, str]:
    """A tldextract that reads ``path`` (a Public Suffix List file) or, with None or a file
    it cannot use, the snapshot bundled with tldextract; and where its list came from.

    It never fetches (no URL but the file's) and never writes a cache.

    >>> extract, source = public_suffix_list(None)
    >>> source
    'bundled'
    >>> extract("www.bbc.co.uk").suffix, extract("x.blogspot.com").domain
    ('co.uk', 'x')
    """
    urls: tuple[str, ...] = ()
    source = "bundled"
    if path:
        file = Path(path).expanduser()
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            logger.error(
                "COOKIES_PUBLIC_SUFFIX_LIST %s cannot be read (%s); using the list bundled "
                "with tldextract",
                path,
                error.strerror if isinstance(error, OSError) else "not UTF-8",
            )
        else:
            if any(line.strip() and not line.startswith("//") for line in text.splitlines()):
                urls = (file.resolve().as_uri(),)
                source = str(file)
            else:
                logger.error(
                    "COOKIES_PUBLIC_SUFFIX_LIST %s holds no rules; using the list bundled "
                    "with tldextract",
                    path,
                )
    extract = TLDExtract(
        cache_dir=None,
        suffix_list_urls=urls,
        fallback_to_snapshot=True,
        include_psl_private_domains=True,
    )
    return extract, source


class CookiesDownloaderMiddleware(CookiesMiddleware):
    """Scrapy's CookiesMiddleware (replaced in DOWNLOADER_MIDDLEWARES) deciding public
    suffixes with :func:`public_suffix_list`."""

    def __init__(self, debug: bool = False, extract: TLDExtract | None = None) -> None:
        super().__init__(debug)
        self.extract = extract or public_suffix_list(None)[0]

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CookiesDownloaderMiddleware:
        settings = crawler.settings
        if not settings.getbool("COOKIES_ENABLED"):
            raise NotConfigured("COOKIES_ENABLED is off")
        extract, source = public_suffix_list(settings.get("COOKIES_PUBLIC_SUFFIX_LIST"))
        if source != "bundled":
            # Read now, not on the first cookie: a file that will not parse shows at start-up.
            extract("example.com")
            if crawler.stats:
                crawler.stats.set_value("cookies/public_suffix_list", source)
        middleware = cls(settings.getbool("COOKIES_DEBUG"), extract)
        middleware.crawler = crawler
        return middleware

    def _process_cookies(
        self, cookies: Iterable[Cookie], *, jar: CookieJar, request: Request
    ) -> None:
        hostname = urlparse_cached(request).hostname
        if hostname is None:
            return
        request_host = hostname.lower()
        for cookie in cookies:
            domain = cookie.domain.removeprefix(".")
            # A cookie for a public suffix (".co.uk") is kept only by that very host.
            if domain and not self.extract(domain).domain:
                if domain != request_host:
                    continue
                cookie.domain = request_host
            jar.set_cookie_if_ok(cookie, request)
