"""News sites, content farms, government and organisation pages: any site described by
an ``article`` regex (what to archive; without one, its article links are learnt:
zeroarchive/crawl/article_patterns.py) and a ``following`` regex (which list pages to walk),
its feeds and sitemaps read as list pages too (zeroarchive/crawl/feed_walk.py), logged in first
when it has a ``login_url`` (zeroarchive/crawl/login.py).

    scrapy crawl generic                          every due generic site
    scrapy crawl generic -a site=3                one site, due or not
    scrapy crawl generic -a url=https://news.example/list [-a article='/story/\\d+']
                         [-a following='/list\\?page=\\d+'] [-a depth=2] [-a type=news]
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from functools import cached_property
from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider, IgnoreRequest
from scrapy.http import HtmlResponse, Request, Response, TextResponse
from scrapy.linkextractors import LinkExtractor
from twisted.python.failure import Failure

from middlewares.media import media_enabled
from zeroarchive.core.clock import now
from zeroarchive.core.encoding import detect_encoding
from zeroarchive.core.items import ArticleLinks, FailedFetch, FetchedPage, header_lists
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.core.stats import count
from zeroarchive.core.urls import UrlRejected, canonicalize_url, is_on_site
from zeroarchive.crawl.browser import BrowserConfig, BrowserPages, playwright_errors, use_browser
from zeroarchive.crawl.feed_walk import FeedWalkSpider
from zeroarchive.crawl.login import LoginError, asks_for_password, credentials, login_request
from zeroarchive.media.screenshot import (
    ScreenshotConfig,
    Shot,
    new_version,
    shot_taken,
    take_screenshot,
)
from zeroarchive.sites.patterns import MIN_PAGES
from zeroarchive.sites.record import Site, SiteConfigError, parse_spec
from zeroarchive.sources.generic import SOURCE
from zeroarchive.storage.articles import DueArticle

logger = logging.getLogger(__name__)


def decoded(response: Response) -> TextResponse:
    """The response as text in the encoding detected from its bytes (Big5 without a
    charset header included), whatever content type the server claimed."""
    encoding = detect_encoding(response.body, _content_type(response))
    return HtmlResponse(
        response.url,
        status=response.status,
        body=response.body,
        encoding=encoding,
        request=response.request,
    )


def _content_type(response: Response) -> str | None:
    value = response.headers.get("Content-Type")
    return value.decode("latin-1") if value else None


class GenericSpider(FeedWalkSpider):
    name = "generic"
    source = SOURCE

    def __init__(
        self,
        *args: Any,
        url: str | None = None,
        article: str | None = None,
        following: str | None = None,
        depth: str | None = None,
        type: str = "news",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.adhoc = {"url": url, "article": article, "following": following, "depth": depth}
        self.adhoc_type = type
        self.links = LinkExtractor(tags=("a", "area"), attrs=("href",), canonicalize=False)
        #: Pages of the browser, when an active site renders (None: no browser this crawl).
        self.pages: BrowserPages | None = None
        self.render_wait = 0.0
        #: How screenshots are taken, when a browser was started.
        self.screenshots: ScreenshotConfig | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> GenericSpider:
        """Sites without ``render`` never start a browser: the browser's download handler
        is only switched on for a crawl when an active site renders (the settings are
        still open here: Scrapy builds the spider before it freezes them)."""
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, GenericSpider)
        if spider.archive.sites.renders(spider.site_types, spider.media_on):
            concurrency = max(1, crawler.settings.getint("SITE_POLICY_CONCURRENCY"))
            use_browser(crawler.settings, pages_per_context=concurrency)
            browser = BrowserConfig.from_settings(crawler.settings)
            spider.pages = BrowserPages(spider.name, browser, concurrency, crawler)
            spider.render_wait = crawler.settings.getfloat("BROWSER_RENDER_WAIT")
            spider.screenshots = ScreenshotConfig.from_settings(crawler.settings)
        return spider

    @cached_property
    def media_on(self) -> bool:
        """ZEROARCHIVE_MEDIA_ENABLED (read when first asked: the scheduler's spiders get
        their settings after they are built)."""
        return media_enabled(self.settings)

    def shoots(self, site: Site) -> bool:
        """Whether the site's snapshots get a screenshot: its ``media`` says so (rendered
        in the browser for it, whatever its ``render``)."""
        return "screenshot" in site.media and self.media_on

    def adhoc_site(self) -> Site | None:
        url = self.adhoc["url"]
        if url is None:
            if self.adhoc["article"] is not None:
                logger.error("-a article=... needs -a url=... (or use -a site=...)")
                raise CloseSpider("bad_arguments")
            return None
        config: dict[str, Any] = {}
        if self.adhoc["article"]:
            # Without one, the site's article links are learnt (zeroarchive/crawl/link_sorting.py).
            config["article"] = self.adhoc["article"]
        if self.adhoc["following"]:
            config["following"] = self.adhoc["following"]
        if self.adhoc["depth"] is not None:
            try:
                config["depth"] = int(self.adhoc["depth"])
            except ValueError:
                logger.error("-a depth must be a whole number, got %r", self.adhoc["depth"])
                raise CloseSpider("bad_arguments") from None
        try:
            spec = parse_spec({"name": url, "url": url, "type": self.adhoc_type, "config": config})
        except SiteConfigError as exc:
            logger.error("Bad ad-hoc site: %s", exc)
            raise CloseSpider("bad_arguments") from None
        site_id, action = self.archive.sites.upsert(spec, now())
        logger.info("Ad-hoc site %s (#%d) %s", spec.name, site_id, action)
        site = self.archive.sites.get(site_id)
        assert site is not None
        return site

    def discovery_requests(self, site: Site) -> Iterator[Request]:
        if site.config.login_url:
            yield Request(
                site.config.login_url,
                callback=self.log_in,
                errback=self.list_failed,
                meta=self.request_meta(site, "login"),
                # Logging in comes before the walk it opens, and again every round.
                priority=self.source.list_priority + 1,
                dont_filter=True,
            )
            return
        yield from self._walk_requests(site)

    def _walk_requests(self, site: Site) -> Iterator[Request]:
        """The first requests of a walk: the site's url, its feeds and sitemaps."""
        yield self._list_request(site, site.url, depth=0)
        yield from self.feed_and_sitemap_requests(site)

    def log_in(self, response: Response) -> Iterator[Request]:
        """Submit the login form, then walk; a site that cannot log in is walked anyway
        (what it shows to everyone is still worth keeping), with the error logged."""
        site = self.response_site(response)
        try:
            user, password = credentials(response.url)
            yield login_request(
                response,
                user,
                password,
                callback=self.logged_in,
                errback=self.list_failed,
                meta={**self.request_meta(site, "login"), **self._carried_plan(response)},
                priority=self.source.list_priority + 1,
                dont_filter=True,
            )
        except LoginError as exc:
            count(self.crawler.stats, f"errors/{exc.kind}", site.site_id)
            logger.error("Site %s (#%d): cannot log in: %s", site.name, site.site_id, exc)
            yield from self._walk_after_login(site, response)

    def logged_in(self, response: Response) -> Iterator[Request]:
        site = self.response_site(response)
        if asks_for_password(response):
            count(self.crawler.stats, "errors/login_failed", site.site_id)
            logger.error(
                "Site %s (#%d): still asked to log in after submitting the form at %s",
                site.name,
                site.site_id,
                response.url,
            )
        else:
            count(self.crawler.stats, "logins", site.site_id)
        yield from self._walk_after_login(site, response)

    @staticmethod
    def _carried_plan(response: Response) -> dict[str, Any]:
        plan = response.meta.get("walk_plan")
        return {} if plan is None else {"walk_plan": plan}

    def _walk_after_login(self, site: Site, response: Response) -> Iterator[Request]:
        """The walk a login opened, as its plan (carried by the login's requests) has it."""
        plan = response.meta.get("walk_plan")
        if plan is None:
            yield from self._walk_requests(site)
            return
        yield from self.planned_walk(site, self._walk_requests(site), plan)

    def list_page_request(self, site: Site, url: str, kind: str, depth: int) -> Request | None:
        if kind == "page":
            return self._list_request(site, url, depth)
        return super().list_page_request(site, url, kind, depth)

    def _list_request(self, site: Site, url: str, depth: int) -> Request:
        meta = self.request_meta(site, "list", depth=depth, page_kind="page")
        if site.config.render:
            return Request(
                url,
                callback=self.parse_rendered_list,
                errback=self.rendered_list_failed,
                meta={**meta, **self._browser_meta(site)},
                priority=self.source.list_priority,
            )
        return Request(
            url,
            callback=self.parse_list,
            errback=self.list_failed,
            meta=meta,
            priority=self.source.list_priority,
        )

    def parse_list(self, response: Response) -> Iterator[Any]:
        site = self.response_site(response)
        stats = self.crawler.stats
        self.list_page_answered(site, response)
        depth = response.meta[META_KEY]["depth"]
        page = decoded(response)
        links: list[tuple[str, str]] = []
        for link in self.links.extract_links(page):
            try:
                url = canonicalize_url(link.url, site.config.url_rules)
            except UrlRejected as exc:
                count(stats, f"urls_rejected/{exc.reason}", site.site_id)
                logger.warning("Ignoring a link on %s: %s", response.url, exc)
                continue
            if is_on_site(url, site.url):
                links.append((url, link.url))
        sorted_links = self.sorter().sort(site, links, may_follow=depth < site.config.depth)
        if sorted_links.articles:
            yield ArticleLinks(
                site.site_id,
                self.source.article_type,
                response.url,
                tuple(dict.fromkeys(sorted_links.articles)),
            )
        for url in dict.fromkeys(sorted_links.follow):
            if self.unknown_list_page(site, url):
                yield self._list_request(site, url, depth + 1)
        samples = self.sorter().samples(site, (url for url, _ in links), sorted_links.articles)
        for shape, urls in samples.items():
            for url in urls[:MIN_PAGES]:
                yield self._sample_request(site, url, shape, urls, response.url)
        yield from self.linked_feed_requests(site, page)

    def _sample_request(
        self, site: Site, url: str, shape: str, links: list[str], source_url: str
    ) -> Request:
        """A page of an undecided shape of a site without a regex, fetched to decide it."""
        count(self.crawler.stats, "article_samples/requests", site.site_id)
        return Request(
            url,
            callback=self.parse_sample,
            errback=self.sample_failed,
            meta=self.request_meta(site, "sample", shape=shape, links=links, source=source_url),
            priority=self.source.list_priority,
        )

    def parse_sample(self, response: Response) -> Iterator[ArticleLinks]:
        """What a sample page says decides its shape once enough pages agree; then the
        links of that shape on the list page it came from are articles at once."""
        site = self.response_site(response)
        meta = response.meta[META_KEY]
        # The link's own URL, whatever it redirected to: its shape is the one to decide.
        url = (response.meta.get("redirect_urls") or [response.url])[0]
        pattern = self.sorter().page_fetched(site, url, decoded(response).text)
        if pattern is not None and pattern.shape == meta["shape"] and pattern.verdict == "article":
            yield ArticleLinks(
                site.site_id, self.source.article_type, meta["source"], tuple(meta["links"])
            )

    def sample_failed(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]
        count(self.crawler.stats, "article_samples/failed", request.meta[META_KEY]["site_id"])

    def snapshot_request(self, site: Site, article: DueArticle) -> Request:
        meta = self.snapshot_meta(site, article)
        shot = self.shoots(site)
        if site.config.render or shot:
            return Request(
                article.url,
                callback=self.parse_rendered_snapshot,
                errback=self.rendered_snapshot_failed,
                meta={**meta, **self._browser_meta(site, shot)},
                dont_filter=True,
            )
        return Request(
            article.url,
            callback=self.parse_snapshot,
            errback=self.snapshot_failed,
            meta=meta,
            # Snapshots are taken again on schedule: never drop one as a duplicate.
            dont_filter=True,
        )

    def parse_snapshot(self, response: Response) -> Iterator[FetchedPage]:
        site = self.response_site(response)
        if not site.config.article and response.status == 200:
            self.sorter().page_fetched(
                site, response.meta[META_KEY]["article_url"], decoded(response).text
            )
        yield self._snapshot(response, "", rendered=False)

    def _snapshot(self, response: Response, encoding: str, rendered: bool) -> FetchedPage:
        """The page as fetched; its encoding (when not known) and its canonical claims are
        settled by the snapshot writer, which has the bytes, the headers and the site's
        URL rules too: on the crawl's thread they cost 0.3 ms a page."""
        site = self.response_site(response)
        meta = response.meta[META_KEY]
        return FetchedPage(
            article_id=meta["article_id"],
            site_id=site.site_id,
            article_type=meta["article_type"],
            fetched_at=now(),
            status=response.status,
            final_url=response.url,
            headers=header_lists(response.headers),
            encoding=encoding,
            body=response.body,
            rendered=rendered,
            unsettled_for=meta["article_url"],
        )

    # --- sites with `render: true` ------------------------------------------------------

    def _browser_meta(self, site: Site, shot: bool = False) -> dict[str, Any]:
        return BrowserPages.meta(
            site.config.ua or self.settings.get("USER_AGENT"),
            site.config.media_max_bytes if shot else None,
        )

    async def before_browser_download(self, request: Request) -> None:
        """A page of the site's browser context for the request (see BrowserPages)."""
        if self.pages is None:
            site_id = request.meta[META_KEY]["site_id"]
            count(self.crawler.stats, "errors/no_browser", site_id)
            raise IgnoreRequest(
                f"site #{site_id} renders, but this crawl started without a browser (no site "
                "rendered when it started): run it again"
            )
        await self.pages.acquire(request, self.site_of(request))

    async def _rendered(
        self, response: Response, shoot: bool = False
    ) -> tuple[HtmlResponse | None, Shot | None]:
        """The page as the browser built it once its scripts settled (the network idle for
        half a second, or BROWSER_RENDER_WAIT seconds at most), as a UTF-8 response; with
        ``shoot``, its screenshot too when it is a new version (media/screenshot.py)."""
        assert self.pages is not None
        page = response.meta["playwright_page"]
        playwright_error, playwright_timeout = playwright_errors()
        shot = None
        try:
            try:
                await page.wait_for_load_state("networkidle", timeout=self.render_wait * 1000)
            except playwright_timeout:
                count(self.crawler.stats, "browser/render_wait_timeouts")
            html = await page.content()
            url = page.url
            body = html.encode("utf-8")
            last_hash = response.meta[META_KEY].get("last_hash")
            if shoot and self.screenshots is not None and new_version(body, last_hash):
                shot = await take_screenshot(page, self.screenshots)
        except playwright_error as exc:
            site_id = response.meta[META_KEY]["site_id"]
            count(self.crawler.stats, "errors/browser", site_id)
            logger.warning("Rendering %s failed in the browser: %s", response.url, exc)
            return None, None
        finally:
            await self.pages.release(response.request, page)  # type: ignore[arg-type]
        rendered = HtmlResponse(
            url,
            status=response.status,
            headers=response.headers,
            body=body,
            encoding="utf-8",
            request=response.request,
        )
        return rendered, shot

    async def parse_rendered_list(self, response: Response) -> AsyncIterator[Any]:
        rendered, _ = await self._rendered(response)
        if rendered is None:
            count(self.crawler.stats, "list_page_failures", response.meta[META_KEY]["site_id"])
            return
        for item in self.parse_list(rendered):
            yield item

    async def parse_rendered_snapshot(self, response: Response) -> AsyncIterator[Any]:
        site = self.response_site(response)
        rendered, shot = await self._rendered(response, self.shoots(site))
        if rendered is None:
            meta = response.meta[META_KEY]
            count(self.crawler.stats, "snapshot_failures", meta["site_id"])
            yield FailedFetch(meta["article_id"], meta["site_id"], now(), "browser")
            return
        if not site.config.article and rendered.status == 200:
            self.sorter().page_fetched(site, response.meta[META_KEY]["article_url"], rendered.text)
        page = self._snapshot(rendered, "utf-8", rendered=True)
        yield page
        if shot is not None:
            # With its page: the snapshot writer stores both in one batch.
            shot_taken(self.crawler.stats, shot, site.site_id)
            yield shot.answer(page.article_id, page.site_id, page.fetched_at)

    async def rendered_list_failed(self, failure: Failure) -> None:
        if self.pages is None or not await self.pages.release_failed(failure):
            self.list_failed(failure)

    async def rendered_snapshot_failed(self, failure: Failure) -> AsyncIterator[FailedFetch]:
        if self.pages is not None and await self.pages.release_failed(failure):
            return
        for item in self.snapshot_failed(failure):
            yield item
