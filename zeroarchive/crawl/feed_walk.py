"""Feeds and sitemaps as list pages of a site: the ones its config lists (``feeds``,
``sitemaps``) and, unless it says ``discover: false``, the feeds its front page links to
and the sitemaps its robots.txt names.

They are list requests like any other (the site's slot and delay, its proxy, the URL
guard, block pages, the list round), always fetched without a browser, and read by
zeroarchive/crawl/feeds.py. Entries on the site that are articles (by ``article``, or by the
site's learnt patterns when it gives none: zeroarchive/crawl/link_sorting.py) become Articles
with the publication time the document gives; a sitemap index is followed to its
``FEEDS_SITEMAPS_PER_INDEX`` newest children, through at most ``INDEX_NESTING`` indexes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urljoin

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import Request, Response, TextResponse
from twisted.python.failure import Failure

from zeroarchive.core.clock import now
from zeroarchive.core.errors import error_kind
from zeroarchive.core.items import ArticleLinks
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.core.stats import count
from zeroarchive.core.urls import UrlRejected, canonicalize_url, is_on_site
from zeroarchive.crawl import feeds
from zeroarchive.crawl.feeds import BadListDocument, FeedsConfig, ListedLink
from zeroarchive.crawl.link_sorting import LinkSorter
from zeroarchive.crawl.spider import ArchiveSpider
from zeroarchive.sites.record import Site
from zeroarchive.storage.patterns import PatternStore

logger = logging.getLogger(__name__)
# The protocol has no index inside an index, but large sites nest them (an index of
# yearly indexes); deeper than this is a loop or a mistake.
INDEX_NESTING = 2


class FeedWalkSpider(ArchiveSpider):
    """An ArchiveSpider whose sites may also list their articles in feeds and sitemaps."""

    #: From the settings; None in a spider built without a crawler (`scrapy schedule`
    #: only makes its requests, the workers that read the answers have it).
    feeds_config: FeedsConfig | None = None
    #: Which links are articles (the site's regex or its learnt patterns); None in a spider
    #: built without a crawler, like feeds_config.
    link_sorter: LinkSorter | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> FeedWalkSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, FeedWalkSpider)
        spider.feeds_config = FeedsConfig.from_settings(crawler.settings)
        spider.link_sorter = LinkSorter(
            PatternStore(spider.archive.engine),
            lambda: crawler.stats,
            crawler.settings.getfloat("ZEROARCHIVE_SITE_REFRESH_SECONDS"),
        )
        crawler.signals.connect(spider._save_link_patterns, signals.spider_closed)
        return spider

    def _save_link_patterns(self) -> None:
        if self.link_sorter is not None:
            self.link_sorter.maybe_save(force=True)

    def sorter(self) -> LinkSorter:
        assert self.link_sorter is not None, "a spider built without a crawler reads no pages"
        return self.link_sorter

    # --- requests -------------------------------------------------------------------------

    def feed_and_sitemap_requests(self, site: Site) -> Iterator[Request]:
        """The feeds and sitemaps of a walk that are known before any page is read."""
        for url in site.config.feeds:
            yield self._document_request(site, url, "feed", depth=0)
        for url in site.config.sitemaps:
            yield self._document_request(site, url, "sitemap", depth=0)
        if site.config.discover:
            yield self._document_request(site, urljoin(site.url, "/robots.txt"), "robots", depth=0)

    def list_page_request(self, site: Site, url: str, kind: str, depth: int) -> Request | None:
        if kind in ("feed", "sitemap", "robots"):
            return self._document_request(site, url, kind, depth)
        return None

    def linked_feed_requests(self, site: Site, page: TextResponse) -> Iterator[Request]:
        """Requests for the feeds the site's front page links to (on the site only)."""
        if not site.config.discover or page.meta[META_KEY].get("depth", 0) != 0:
            return
        for url in feeds.feed_links(page):
            try:
                url = canonicalize_url(url, site.config.url_rules)
            except UrlRejected as exc:
                count(self.crawler.stats, f"urls_rejected/{exc.reason}", site.site_id)
                continue
            if is_on_site(url, site.url) and url not in site.config.feeds:
                count(self.crawler.stats, "feeds/discovered", site.site_id)
                if self.unknown_list_page(site, url):
                    yield self._document_request(site, url, "feed", depth=0)

    def _document_request(self, site: Site, url: str, kind: str, depth: int) -> Request:
        """The request of a feed, a sitemap or robots.txt (``kind``)."""
        callback = {"feed": self.parse_feed, "sitemap": self.parse_sitemap}.get(
            kind, self.parse_robots
        )
        errback = self.robots_failed if kind == "robots" else self.list_failed
        # Feeds and sitemaps never need a browser, whatever the site's `render`.
        meta = self.request_meta(site, "list", depth=depth, page_kind=kind)
        if self.feeds_config is not None:
            # Cut the download early; the callback refuses a bigger body in any case.
            meta["download_maxsize"] = self.feeds_config.max_bytes
        return Request(
            url,
            callback=callback,
            errback=errback,
            meta=meta,
            priority=self.source.list_priority,
        )

    def _config(self) -> FeedsConfig:
        # Not a property: scrapy-redis looks at every attribute of a bare spider.
        assert self.feeds_config is not None, "a spider that reads pages has a crawler"
        return self.feeds_config

    # --- callbacks ------------------------------------------------------------------------

    def parse_feed(self, response: Response) -> Iterator[ArticleLinks]:
        site = self.response_site(response)
        content_type = response.headers.get("Content-Type")
        try:
            links = feeds.parse_feed(
                feeds.gunzipped(response.body, self._config().max_bytes),
                response.url,
                content_type.decode("latin-1") if content_type else None,
            )
        except BadListDocument as exc:
            self._bad_document(site, response, "feed", exc)
            return
        self.list_page_answered(site, response)
        yield from self._article_links(site, response.url, links, "feeds")

    def parse_sitemap(self, response: Response) -> Iterator[Any]:
        site = self.response_site(response)
        try:
            sitemap = feeds.parse_sitemap(feeds.gunzipped(response.body, self._config().max_bytes))
        except BadListDocument as exc:
            self._bad_document(site, response, "sitemap", exc)
            return
        if sitemap.recovered:
            count(self.crawler.stats, "errors/sitemap_recovered", site.site_id)
            logger.warning(
                "Sitemap %s is not well-formed XML: kept its %d entries before the break",
                response.url,
                len(sitemap.links),
            )
        self.list_page_answered(site, response)
        if not sitemap.is_index:
            yield from self._article_links(site, response.url, sitemap.links, "sitemaps")
            return
        yield from self._children(site, response, sitemap.links)

    def _children(
        self, site: Site, response: Response, links: tuple[ListedLink, ...]
    ) -> Iterator[Request]:
        depth = response.meta[META_KEY].get("depth", 0)
        if depth >= INDEX_NESTING:
            count(self.crawler.stats, "sitemaps/too_deep", site.site_id, len(links))
            logger.warning(
                "Sitemap index %s is inside %d other indexes: not following its %d sitemaps",
                response.url,
                depth,
                len(links),
            )
            return
        kept, left_out = feeds.newest(links, self._config().sitemaps_per_index)
        if left_out:
            count(self.crawler.stats, "sitemaps/children_skipped", site.site_id, left_out)
            logger.info(
                "Sitemap index %s lists %d sitemaps: following the newest %d",
                response.url,
                len(links),
                len(kept),
            )
        for link in kept:
            url = self._on_site(site, link.url, "sitemaps")
            if url is not None and self.unknown_list_page(site, url):
                yield self._document_request(site, url, "sitemap", depth + 1)

    def parse_robots(self, response: Response) -> Iterator[Request]:
        site = self.response_site(response)
        self.list_pages.answered(
            site.site_id,
            response.url,
            response.url,
            response.meta[META_KEY],
            response.headers,
            now(),
        )
        for found in feeds.sitemaps_in_robots(response.body, response.url):
            url = self._on_site(site, found, "sitemaps")
            if url is not None and url not in site.config.sitemaps:
                count(self.crawler.stats, "sitemaps/discovered", site.site_id)
                if self.unknown_list_page(site, url):
                    yield self._document_request(site, url, "sitemap", depth=0)

    def robots_failed(self, failure: Failure) -> None:
        """Most sites have no robots.txt: not having one is no failure of the site."""
        if self.list_not_modified(failure):
            return
        request = failure.request  # type: ignore[attr-defined]
        kind, _ = error_kind(failure)
        count(self.crawler.stats, f"sitemaps/robots_txt_{kind}", request.meta[META_KEY]["site_id"])
        logger.debug("No sitemaps from %s: %s", request.url, kind)

    # --- entries --------------------------------------------------------------------------

    def _on_site(self, site: Site, link: str, what: str) -> str | None:
        """The canonical URL of a link a document lists, None when it is off the site."""
        try:
            url = canonicalize_url(link, site.config.url_rules)
        except UrlRejected as exc:
            count(self.crawler.stats, f"urls_rejected/{exc.reason}", site.site_id)
            logger.warning("Ignoring a %s entry: %s", what, exc)
            return None
        if not is_on_site(url, site.url):
            count(self.crawler.stats, f"{what}/off_site", site.site_id)
            return None
        return url

    def _article_links(
        self, site: Site, source_url: str, links: Iterable[ListedLink], what: str
    ) -> Iterator[ArticleLinks]:
        """The entries that are articles of the site, with their publication times."""
        urls: list[str] = []
        published: dict[str, int] = {}
        entries = 0
        for link in links:
            entries += 1
            url = self._on_site(site, link.url, what)
            if url is None:
                continue
            if not self.sorter().is_article(site, url, link.url, in_feed=what == "feeds"):
                count(self.crawler.stats, f"{what}/not_article", site.site_id)
                logger.debug("Not an article of the site: %s (%s)", url, link.title)
                continue
            urls.append(url)
            if link.published is not None:
                published.setdefault(url, link.published)
        count(self.crawler.stats, f"{what}/entries", site.site_id, entries)
        if urls:
            yield ArticleLinks(
                site.site_id,
                self.source.article_type,
                source_url,
                tuple(dict.fromkeys(urls)),
                published,
            )

    def _bad_document(
        self, site: Site, response: Response, what: str, exc: BadListDocument
    ) -> None:
        kind = "too_large" if exc.kind == "too_large" else f"bad_{what}"
        count(self.crawler.stats, f"errors/{kind}", site.site_id)
        count(self.crawler.stats, "list_page_failures", site.site_id)
        logger.error(
            "Site %s (#%d): cannot read the %s %s (%d bytes): %s",
            site.name,
            site.site_id,
            what,
            response.url,
            len(response.body),
            exc,
        )
