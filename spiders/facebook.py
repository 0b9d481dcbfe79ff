"""Public Facebook pages, rendered by Debian's Chromium through scrapy-playwright: every post
of a page, snapshotted with all its comments and replies on the facebook schedule.

    scrapy crawl facebook                    every due facebook site
    scrapy crawl facebook -a site=nintendo   one site, due or not

A site's url is the page's posts list (``https://m.facebook.com/<page>/posts/``).
Discovery opens it and scrolls until ``FACEBOOK_IDLE_SCROLLS`` scrolls in a row bring no new
post or ``FACEBOOK_SCROLL_SECONDS`` pass; every post link (story.php, permalink.php,
/<page>/posts/<id>, group permalinks) becomes one Article of type FBPost at
``/<post id>``. A snapshot opens the post, switches the comments to "All comments",
clicks every "more comments" and "more replies" link until none is left (or
``FACEBOOK_EXPAND_SECONDS`` pass), and stores the page's HTML. A login wall or checkpoint
stops that site for the run (``facebook/login_wall``, ``facebook/checkpoint``); its
remaining requests are dropped before they reach the network.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, fields
from functools import cached_property
from typing import TYPE_CHECKING, Any

from scrapy.crawler import Crawler
from scrapy.http import Request, Response
from scrapy.settings import BaseSettings
from twisted.python.failure import Failure

from middlewares.media import media_enabled
from middlewares.site_policy import default_site_delay
from zeroarchive.core.clock import now
from zeroarchive.core.errors import BLOCKED, BlockedPage
from zeroarchive.core.items import ArticleLinks, FailedFetch, FetchedPage, header_lists
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.core.stats import count
from zeroarchive.core.urls import UrlRejected, is_on_site
from zeroarchive.crawl.browser import BrowserConfig, BrowserPages, playwright_errors, use_browser
from zeroarchive.crawl.spider import ArchiveSpider
from zeroarchive.media.screenshot import (
    ScreenshotConfig,
    Shot,
    new_version,
    shot_taken,
    take_screenshot,
)
from zeroarchive.sites.record import Site
from zeroarchive.sources.facebook import (
    EXPAND_SELECTOR,
    FILTER_ALL_SELECTOR,
    FILTER_OPEN_SELECTOR,
    SOURCE,
    gate_kind,
    is_group,
    is_group_post,
    post_url,
)
from zeroarchive.storage.articles import DueArticle

if TYPE_CHECKING:
    from playwright.async_api import Locator, Page

logger = logging.getLogger(__name__)

LINKS_JS = "() => Array.from(document.querySelectorAll('a[href]'), a => a.href)"
MORE_LINKS_JS = "n => document.querySelectorAll('a[href]').length > n"
DETACHED_JS = "el => !el.isConnected"


async def _click(target: Locator) -> None:
    """Click ``target`` where it is, without Playwright's wait for it to be stable and to
    receive the click: in a page that is not the newest of its browser context that wait
    took up to 1.6 s a click (bench/facebook.py: 17 of 191 pager clicks over 0.5 s, 24 of
    the crawl's 32 s), and under a site's banner it waits until its timeout. What a click
    did is checked after it (the pager detached, the menu opened), so a click that hit a
    layer instead marks the pager stuck."""
    await target.click(force=True)


@dataclass(frozen=True)
class FacebookConfig:
    """The facebook spider's ``FACEBOOK_*`` settings (browser: ``BROWSER_*``), checked."""

    idle_scrolls: int
    scroll_seconds: float
    scroll_wait: float
    expand_seconds: float
    expand_wait: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> FacebookConfig:
        """Every setting must be positive (a whole number of scrolls, seconds otherwise)."""
        names = [f.name for f in fields(cls)]
        values = {name: settings.getfloat(f"FACEBOOK_{name.upper()}") for name in names}
        bad = [f"FACEBOOK_{name.upper()}={value}" for name, value in values.items() if value <= 0]
        if bad:
            raise ValueError(f"must be positive: {', '.join(bad)}")
        return cls(**{**values, "idle_scrolls": int(values["idle_scrolls"])})


class FacebookSpider(ArchiveSpider):
    name = "facebook"
    source = SOURCE

    config: FacebookConfig
    pages: BrowserPages
    screenshots: ScreenshotConfig

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        """The browser download handler for this spider only: generic, ptt and dcard crawls
        never start a browser. Merged into the project's settings, not replacing them."""
        super().update_settings(settings)
        # Contexts are per site: a site keeps as many pages open as it may download at once
        # (pages stay open while their comments are expanded, after the download slot is free).
        use_browser(settings, pages_per_context=settings.getint("SITE_POLICY_CONCURRENCY"))

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> FacebookSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, FacebookSpider)
        spider.config = FacebookConfig.from_settings(crawler.settings)
        spider.pages = BrowserPages(
            spider.name,
            BrowserConfig.from_settings(crawler.settings),
            max(1, crawler.settings.getint("SITE_POLICY_CONCURRENCY")),
            crawler,
        )
        spider.screenshots = ScreenshotConfig.from_settings(crawler.settings)
        return spider

    @cached_property
    def media_on(self) -> bool:
        """ZEROARCHIVE_MEDIA_ENABLED (read when first asked: the scheduler's spiders get
        their settings after they are built)."""
        return media_enabled(self.settings)

    @cached_property
    def default_delay(self) -> float:
        """ZEROARCHIVE_SITE_DELAY: the delay of a site whose config gives none."""
        return default_site_delay(self.settings)

    def shoots(self, site: Site) -> bool:
        """Whether the site's posts get a screenshot (its ``media``: by default they do)."""
        return "screenshot" in site.media and self.media_on

    # --- requests -----------------------------------------------------------------------

    def _browser_meta(
        self, site: Site, kind: str, shot: bool = False, **fields: Any
    ) -> dict[str, Any]:
        user_agent = site.config.ua or self.settings.get("USER_AGENT")
        browser = BrowserPages.meta(user_agent, site.config.media_max_bytes if shot else None)
        return {**self.request_meta(site, kind, **fields), **browser}

    def discovery_requests(self, site: Site) -> Iterator[Request]:
        yield Request(
            site.url,
            callback=self.parse_posts,
            errback=self.list_failed,
            meta=self._browser_meta(site, "list", depth=0, page_kind="page"),
            dont_filter=True,
            priority=self.source.list_priority,
        )

    def snapshot_request(self, site: Site, article: DueArticle) -> Request:
        return Request(
            article.url,
            callback=self.parse_post,
            errback=self.snapshot_failed,
            meta=self._browser_meta(
                site,
                "snapshot",
                self.shoots(site),
                article_id=article.article_id,
                article_url=article.url,
                article_type=article.article_type,
                # An unchanged post fetches no media again, and gets no new screenshot.
                last_hash=article.last_hash,
            ),
            dont_filter=True,
        )

    # --- browser contexts and gates -----------------------------------------------------

    async def before_browser_download(self, request: Request) -> None:
        """A page of the site's browser context for the request (see BrowserPages)."""
        await self.pages.acquire(request, self.site_of(request))

    def _gated(self, site: Site, response: Response, html: str) -> bool:
        kind = gate_kind(response.url, html)
        if kind is None:
            return False
        asked = response.request.url if response.request else response.url
        self._stop(site, kind, asked, response.url)
        return True

    def _stop(self, site: Site, kind: str, asked: str, answered: str) -> None:
        """Stop the site for this run after a gate: its other requests are dropped before
        they reach the network, and its posts stay due."""
        count(self.crawler.stats, f"facebook/{kind}", site.site_id)
        if site.site_id not in self.pages.stopped:
            self.pages.stopped[site.site_id] = kind
            logger.error(
                "Site %s (#%d): Facebook answered %s with a %s (%s); stopping this site for "
                "this run, its posts stay due",
                site.name,
                site.site_id,
                asked,
                kind.replace("_", " "),
                answered,
            )

    def _stop_on_block_page(self, failure: Failure) -> None:
        """A block page the block-pages middleware caught is a gate too."""
        if not failure.check(BlockedPage):
            return
        request = failure.request  # type: ignore[attr-defined]
        site = self.site_of(request)
        if site is not None:
            answered = failure.value.url
            self._stop(site, gate_kind(answered, "") or "block_page", request.url, answered)

    async def _pace(self, site: Site) -> None:
        """The site's delay between the page's own requests (scrolls, clicks), as between
        the crawl's requests."""
        delay = self.default_delay if site.config.delay is None else site.config.delay
        if delay > 0:
            await asyncio.sleep(delay)

    # --- discovery ----------------------------------------------------------------------

    async def parse_posts(self, response: Response) -> AsyncIterator[Any]:
        site = self.response_site(response)
        page: Page = response.meta["playwright_page"]
        playwright_error, _ = playwright_errors()
        urls: list[str] = []
        try:
            if self._gated(site, response, response.text):
                count(self.crawler.stats, f"errors/{BLOCKED}", site.site_id)
                count(self.crawler.stats, "list_page_failures", site.site_id)
                return
            self.list_page_answered(site, response)
            urls = await self._scroll(page, site)
        except playwright_error as exc:
            count(self.crawler.stats, "errors/browser", site.site_id)
            count(self.crawler.stats, "list_page_failures", site.site_id)
            logger.warning("Discovery on %s failed in the browser: %s", response.url, exc)
        finally:
            await self.pages.release(response.request, page)  # type: ignore[arg-type]
        if urls:
            yield ArticleLinks(site.site_id, self.source.article_type, response.url, tuple(urls))

    async def _scroll(self, page: Page, site: Site) -> list[str]:
        _, playwright_timeout = playwright_errors()
        found = self._post_urls(await page.evaluate(LINKS_JS), site)
        deadline = time.monotonic() + self.config.scroll_seconds
        idle = scrolls = 0
        while idle < self.config.idle_scrolls:
            if time.monotonic() >= deadline:
                count(self.crawler.stats, "facebook/scroll_time_limit", site.site_id)
                logger.warning("Stopped scrolling %s at the time limit", page.url)
                break
            await self._pace(site)
            links = await page.evaluate("() => document.querySelectorAll('a[href]').length")
            await page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
            scrolls += 1
            with contextlib.suppress(playwright_timeout):
                await page.wait_for_function(
                    MORE_LINKS_JS, arg=links, timeout=self.config.scroll_wait * 1000, polling=100
                )
            more = self._post_urls(await page.evaluate(LINKS_JS), site)
            new = [url for url in more if url not in found]
            idle = 0 if new else idle + 1
            found.update(dict.fromkeys(new))
        count(self.crawler.stats, "facebook/scrolls", site.site_id, scrolls)
        return list(found)

    def _post_urls(self, hrefs: list[str], site: Site) -> dict[str, None]:
        urls: dict[str, None] = {}
        group = is_group(site.url)
        for href in hrefs:
            if group and not is_group_post(href):
                continue
            try:
                url = post_url(href, site.config.url_rules)
            except UrlRejected as exc:
                count(self.crawler.stats, f"urls_rejected/{exc.reason}", site.site_id)
                continue
            if url is not None and is_on_site(url, site.url):
                urls[url] = None
        return urls

    # --- snapshots ----------------------------------------------------------------------

    async def parse_post(self, response: Response) -> AsyncIterator[Any]:
        site = self.response_site(response)
        meta = response.meta[META_KEY]
        page: Page = response.meta["playwright_page"]
        playwright_error, _ = playwright_errors()
        item: FetchedPage | FailedFetch | None = None
        shot: Shot | None = None
        try:
            if self._gated(site, response, response.text):
                # A block page, not the post: the post backs off and nothing is stored.
                count(self.crawler.stats, f"errors/{BLOCKED}", site.site_id)
                count(self.crawler.stats, "snapshot_failures", site.site_id)
                item = FailedFetch(meta["article_id"], site.site_id, now(), BLOCKED)
            else:
                await self._expand(page, site)
                html = await page.content()
                body = html.encode("utf-8")
                if self.shoots(site) and new_version(body, meta.get("last_hash")):
                    shot = await take_screenshot(page, self.screenshots)
                item = FetchedPage(
                    article_id=meta["article_id"],
                    site_id=site.site_id,
                    article_type=meta["article_type"],
                    fetched_at=now(),
                    status=response.status,
                    final_url=page.url,
                    headers=header_lists(response.headers),
                    encoding="utf-8",
                    body=body,
                    rendered=True,
                )
        except playwright_error as exc:
            kind = "page_crashed" if "crash" in str(exc).lower() else "browser"
            count(self.crawler.stats, f"errors/{kind}", site.site_id)
            count(self.crawler.stats, "snapshot_failures", site.site_id)
            logger.warning("Snapshot of %s failed in the browser: %s", response.url, exc)
            item = FailedFetch(meta["article_id"], site.site_id, now(), kind)
        finally:
            await self.pages.release(response.request, page)  # type: ignore[arg-type]
        if item is not None:
            yield item
        if shot is not None and isinstance(item, FetchedPage):
            shot_taken(self.crawler.stats, shot, site.site_id)
            yield shot.answer(item.article_id, item.site_id, item.fetched_at)

    async def _expand(self, page: Page, site: Site) -> None:
        """All comments, then every pager until none is left; a pager that does not go away
        when clicked is marked and not clicked again."""
        deadline = time.monotonic() + self.config.expand_seconds
        wait_ms = self.config.expand_wait * 1000
        opener = page.locator(FILTER_OPEN_SELECTOR).first
        if await opener.count():
            await self._pace(site)
            await _click(opener)
            choice = page.locator(FILTER_ALL_SELECTOR).first
            await choice.wait_for(timeout=wait_ms)
            handle = await opener.element_handle()
            await _click(choice)
            if not await self._detached(page, handle, wait_ms):
                count(self.crawler.stats, "facebook/filter_not_switched", site.site_id)
            else:
                count(self.crawler.stats, "facebook/filters_switched", site.site_id)
        clicks = 0
        pager = page.locator(EXPAND_SELECTOR).first
        while await pager.count():
            if time.monotonic() >= deadline:
                count(self.crawler.stats, "facebook/expand_time_limit", site.site_id)
                logger.warning("Stopped expanding comments of %s at the time limit", page.url)
                break
            handle = await pager.element_handle()
            await self._pace(site)
            await _click(pager)
            clicks += 1
            if not await self._detached(page, handle, wait_ms):
                await handle.evaluate("el => el.setAttribute('data-zeroarchive-tried', '1')")
                count(self.crawler.stats, "facebook/pagers_stuck", site.site_id)
        count(self.crawler.stats, "facebook/comment_pages", site.site_id, clicks)

    async def _detached(self, page: Page, handle: Any, wait_ms: float) -> bool:
        """Whether ``handle`` left the page within ``wait_ms``. A page whose renderer crashes
        meanwhile raises at once: Playwright's wait would notice only at its timeout."""
        playwright_error, playwright_timeout = playwright_errors()
        crashed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_crash(_page: Page) -> None:
            if not crashed.done():
                crashed.set_result(None)

        page.on("crash", on_crash)
        waiting = asyncio.ensure_future(
            page.wait_for_function(DETACHED_JS, arg=handle, timeout=wait_ms, polling=50)
        )
        try:
            await asyncio.wait({waiting, crashed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            page.remove_listener("crash", on_crash)
        if not waiting.done():
            waiting.cancel()
            raise playwright_error("Target crashed while expanding comments")
        try:
            waiting.result()
        except playwright_timeout:
            return False
        return True

    # --- failures -----------------------------------------------------------------------

    async def snapshot_failed(self, failure: Failure) -> AsyncIterator[FailedFetch]:
        if await self.pages.release_failed(failure):
            return
        self._stop_on_block_page(failure)
        for item in super().snapshot_failed(failure):
            yield item

    async def list_failed(self, failure: Failure) -> None:
        if not await self.pages.release_failed(failure):
            self._stop_on_block_page(failure)
            super().list_failed(failure)
