"""The browser that renders pages (the facebook spider; generic sites with ``render``):
Debian's Chromium driven by scrapy-playwright, its settings as a frozen config, the
download handler a spider switches on for its browser requests only, and the pages and
contexts each site uses."""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import subprocess
import weakref
from collections import Counter
from dataclasses import dataclass
from typing import Any

from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request
from scrapy.settings import BaseSettings
from twisted.python.failure import Failure

from zeroarchive.core.request_meta import META_KEY
from zeroarchive.core.stats import count
from zeroarchive.media.screenshot import cap_loads
from zeroarchive.sites.proxies import SessionCookies, browser_proxy, proxies_for, proxy_pool
from zeroarchive.sites.record import Site

HANDLER = "zeroarchive.crawl.browser_handler.SharedBrowserHandler"
MIDDLEWARE = "middlewares.browser_pages.BrowserPagesDownloaderMiddleware"
# Pictures, video and fonts are fetched by the crawl as media items, over HTTP: never
# downloaded by the browser, except pictures and fonts for a page it takes a screenshot of.
BLOCKED_RESOURCE_TYPES = frozenset({"image", "media", "font"})
SHOWN_RESOURCE_TYPES = frozenset({"image", "font"})
#: ``playwright_page_init_callback`` of a request whose page is shot: a path, so that the
#: request still travels through a shared (redis) queue.
SHOW_IMAGES = f"{__name__}.show_images"
#: The request meta key of the size limit of what a shot page loads (its site's
#: ``media_max_bytes``).
SHOT_MAX_BYTES = "zeroarchive_shot_max_bytes"
#: The pages that load their pictures and fonts (a screenshot's), until they are closed.
_showing: weakref.WeakSet[Any] = weakref.WeakSet()
_HOLDS_SLOT = "browser_page_slot"
#: Playwright's own default window: what the pages were rendered in before it was a setting.
DEFAULT_VIEWPORT = (1280, 720)
#: A host name with at least one dot, or a pattern of a domain's hosts (``*.example.com``):
#: never ``*`` alone, which would leave the browser no host at all.
_HOST_NAME = re.compile(r"(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9-]+)+")
_RULES_FLAG = "--host-resolver-rules="
#: fontconfig languages of the archive's sites. Web fonts are never downloaded (above), so
#: Chromium draws their text with the system's fonts: without one per language (Debian's
#: fonts-noto-cjk has them all), rendered pages and screenshots show boxes.
CJK_LANGUAGES = ("zh-tw", "zh-cn", "zh-hk", "ja", "ko")

logger = logging.getLogger(__name__)


def playwright_errors() -> tuple[type[Exception], type[Exception]]:
    """Playwright's (Error, TimeoutError), imported when a page is first handled: Scrapy
    imports every spider when any crawl starts, and Playwright alone took 0.19 s of the
    start of a crawl that renders nothing."""
    from playwright.async_api import Error, TimeoutError

    return Error, TimeoutError


@dataclass(frozen=True)
class BrowserConfig:
    """The ``BROWSER_*`` settings, typed and checked.

    >>> from scrapy.settings import Settings
    >>> settings = Settings()
    >>> settings.setmodule("settings.base")
    >>> BrowserConfig.from_settings(settings).chromium
    '/usr/bin/chromium'
    >>> BrowserConfig.from_settings(settings).viewport_width
    1280
    >>> BrowserConfig.from_settings(settings).launch_options()["args"][-1][:56]
    '--host-resolver-rules=MAP accounts.google.com ~NOTFOUND,'
    >>> settings.set("BROWSER_UNREACHABLE_HOSTS", ["a.example, MAP *"])
    >>> BrowserConfig.from_settings(settings)
    Traceback (most recent call last):
    ...
    ValueError: BROWSER_UNREACHABLE_HOSTS: 'a.example, MAP *' is not a host name
    >>> settings.set("BROWSER_UNREACHABLE_HOSTS", ["*"])
    >>> BrowserConfig.from_settings(settings)
    Traceback (most recent call last):
    ...
    ValueError: BROWSER_UNREACHABLE_HOSTS: '*' is not a host name
    >>> settings.set("BROWSER_UNREACHABLE_HOSTS", ["*.gvt1.com"])
    >>> own_rules = "--host-resolver-rules=MAP a.test 127.0.0.1"
    >>> settings.set("BROWSER_CHROMIUM_ARGS", ["--headless", own_rules])
    >>> BrowserConfig.from_settings(settings).launch_options()["args"]
    ['--headless', '--host-resolver-rules=MAP a.test 127.0.0.1, MAP *.gvt1.com ~NOTFOUND']
    >>> settings.set("BROWSER_UNREACHABLE_HOSTS", [])
    >>> settings.set("BROWSER_CONTEXT_PAGES", 0)
    >>> BrowserConfig.from_settings(settings)
    Traceback (most recent call last):
    ...
    ValueError: BROWSER_CONTEXT_PAGES must be at least 1, got 0
    >>> settings.set("BROWSER_CONTEXT_PAGES", 1)
    >>> settings.set("BROWSER_VIEWPORT_WIDTH", 100)
    >>> BrowserConfig.from_settings(settings)
    Traceback (most recent call last):
    ...
    ValueError: BROWSER_VIEWPORT_WIDTH must be from 320 to 7680 px, got 100
    """

    chromium: str
    chromium_args: tuple[str, ...]
    #: Host names the browser never resolves (its own background services).
    unreachable_hosts: tuple[str, ...]
    #: Pages a browser context serves before it is closed and a fresh one opened.
    context_pages: int
    #: The width of the browser's window, in CSS pixels: rendered pages and screenshots.
    viewport_width: int = DEFAULT_VIEWPORT[0]

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> BrowserConfig:
        config = cls(
            chromium=settings.get("BROWSER_CHROMIUM"),
            chromium_args=tuple(settings.getlist("BROWSER_CHROMIUM_ARGS")),
            unreachable_hosts=tuple(settings.getlist("BROWSER_UNREACHABLE_HOSTS")),
            context_pages=settings.getint("BROWSER_CONTEXT_PAGES"),
            viewport_width=settings.getint("BROWSER_VIEWPORT_WIDTH", DEFAULT_VIEWPORT[0]),
        )
        if not config.chromium:
            raise ValueError("BROWSER_CHROMIUM must name the browser's executable")
        for host in config.unreachable_hosts:
            if not _HOST_NAME.fullmatch(host):
                raise ValueError(f"BROWSER_UNREACHABLE_HOSTS: {host!r} is not a host name")
        if config.context_pages < 1:
            raise ValueError(
                f"BROWSER_CONTEXT_PAGES must be at least 1, got {config.context_pages}"
            )
        if not 320 <= config.viewport_width <= 7680:
            raise ValueError(
                f"BROWSER_VIEWPORT_WIDTH must be from 320 to 7680 px, got {config.viewport_width}"
            )
        return config

    def launch_options(self) -> dict[str, object]:
        """scrapy-playwright's ``PLAYWRIGHT_LAUNCH_OPTIONS`` for this config."""
        args = [arg for arg in self.chromium_args if not arg.startswith(_RULES_FLAG)]
        # Chromium obeys the last of several such flags: the operator's own rules (in
        # BROWSER_CHROMIUM_ARGS) and ours go in one.
        rules = [arg.removeprefix(_RULES_FLAG) for arg in self.chromium_args if arg not in args]
        rules += [f"MAP {host} ~NOTFOUND" for host in self.unreachable_hosts]
        if rules:
            args.append(_RULES_FLAG + ", ".join(rules))
        return {"executable_path": self.chromium, "args": args, "headless": True}


def use_browser(settings: BaseSettings, pages_per_context: int) -> None:
    """Switch a spider's settings to download through the browser (merged into the
    project's, at spider priority): only spiders that call this ever start one."""
    config = BrowserConfig.from_settings(settings)
    handlers = settings.getdict("DOWNLOAD_HANDLERS")
    handlers.update({"http": HANDLER, "https": HANDLER})
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    middlewares.setdefault(MIDDLEWARE, 45)
    settings.set("DOWNLOAD_HANDLERS", handlers, priority="spider")
    settings.set("DOWNLOADER_MIDDLEWARES", middlewares, priority="spider")
    settings.set("PLAYWRIGHT_BROWSER_TYPE", "chromium", priority="spider")
    settings.set("PLAYWRIGHT_LAUNCH_OPTIONS", config.launch_options(), priority="spider")
    settings.set("PLAYWRIGHT_ABORT_REQUEST", f"{__name__}.abort_request", priority="spider")
    settings.set("PLAYWRIGHT_MAX_PAGES_PER_CONTEXT", pages_per_context, priority="spider")


def missing_cjk_fonts() -> list[str]:
    """The CJK languages (CJK_LANGUAGES) fontconfig has no font for: all of them when
    fontconfig's ``fc-list`` is not there to ask."""
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return list(CJK_LANGUAGES)
    missing = []
    for language in CJK_LANGUAGES:
        try:
            found = subprocess.run(
                [fc_list, f":lang={language}", "family"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            found = ""
        if not found.strip():
            missing.append(language)
    return missing


def warn_without_cjk_fonts() -> bool:
    """One warning line when the browser would draw CJK text as boxes; True if it would."""
    missing = missing_cjk_fonts()
    if missing:
        logger.warning(
            "No font for %s on this machine: rendered pages and screenshots will show their "
            "text as boxes (Debian: apt-get install fonts-noto-cjk)",
            ", ".join(missing),
        )
    return bool(missing)


def abort_request(request: Any) -> bool:
    """``PLAYWRIGHT_ABORT_REQUEST``: skip what the crawl fetches itself, unless the page
    is to be shot (``show_images``): then its pictures and fonts load as a reader's do."""
    kind = request.resource_type
    if kind not in BLOCKED_RESOURCE_TYPES:
        return False
    if kind in SHOWN_RESOURCE_TYPES and _showing:
        playwright_error, _ = playwright_errors()
        try:
            return request.frame.page not in _showing
        except playwright_error:
            # A worker's request has no frame: not a picture the screenshot shows.
            return True
    return True


async def show_images(page: Any, request: Request) -> None:
    """scrapy-playwright's page init callback of a page to be shot: it loads its pictures
    and fonts (see ``abort_request``), each up to its site's ``media_max_bytes``
    (media/screenshot.py's ``cap_loads``)."""
    _showing.add(page)
    await cap_loads(page, int(request.meta[SHOT_MAX_BYTES]))


class BrowserPages:
    """The browser pages of one crawl, by site: a site keeps at most ``concurrency`` pages
    open (pages stay open while the spider works on them, after the download slot is
    free) in browser contexts of its own, a fresh one every ``BROWSER_CONTEXT_PAGES``
    pages so memory stays flat; a site stopped by a gate has its remaining requests
    dropped before they reach the network."""

    def __init__(self, name: str, config: BrowserConfig, concurrency: int, crawler: Any) -> None:
        self.name = name
        self.config = config
        self.concurrency = concurrency
        #: ZEROARCHIVE_PROXIES, for sites without proxies of their own.
        self.pool = proxy_pool(crawler.settings)
        # The crawler, not its stats: a spider builds this before the crawl has stats.
        self.crawler = crawler
        #: Sites stopped for this run, and why (a login wall, say).
        self.stopped: dict[int, str] = {}
        self._generation: Counter[int] = Counter()
        self._used: Counter[str] = Counter()
        self._open: Counter[str] = Counter()
        self._retired: set[str] = set()
        self._contexts: dict[str, Any] = {}
        self._slots: dict[int, asyncio.Semaphore] = {}
        self.cookie_files = SessionCookies()
        if warn_without_cjk_fonts() and crawler.stats is not None:
            crawler.stats.set_value("browser/no_cjk_font", 1)

    @staticmethod
    def meta(user_agent: str, shot_max_bytes: int | None = None) -> dict[str, Any]:
        """The request meta that sends a request through the browser, its page kept open
        for the callback (which must hand it back with ``release``); with
        ``shot_max_bytes``, a page that loads its pictures for a screenshot, each up to
        that size."""
        meta: dict[str, Any] = {
            "playwright": True,
            "playwright_include_page": True,
            "playwright_context_kwargs": {"user_agent": user_agent, "java_script_enabled": True},
            # A retry would reuse an open page, which cannot travel through a shared queue;
            # the schedule takes a failed page again later instead.
            "dont_retry": True,
        }
        if shot_max_bytes is not None:
            meta["playwright_page_init_callback"] = SHOW_IMAGES
            meta[SHOT_MAX_BYTES] = shot_max_bytes
        return meta

    async def acquire(self, request: Request, site: Site | None = None) -> None:
        """Wait for one of the site's page slots, then give the request the site's current
        context, with the site's proxy (its proxies in turn, a context each) and the
        session of its ``cookies_file``; IgnoreRequest when the site was stopped meanwhile."""
        site_id = request.meta[META_KEY]["site_id"]
        if request.meta.get(_HOLDS_SLOT):
            return
        if site_id not in self.stopped:
            slots = self._slots.setdefault(site_id, asyncio.Semaphore(self.concurrency))
            await slots.acquire()
            if site_id not in self.stopped:
                generation = self._generation[site_id]
                name = f"{self.name}-{site_id}-{generation}"
                self._used[name] += 1
                self._open[name] += 1
                if self._used[name] >= self.config.context_pages:
                    self._generation[site_id] += 1
                    self._retired.add(name)
                request.meta["playwright_context"] = name
                request.meta[_HOLDS_SLOT] = True
                kwargs = request.meta.setdefault("playwright_context_kwargs", {})
                kwargs["viewport"] = {
                    "width": self.config.viewport_width,
                    "height": DEFAULT_VIEWPORT[1],
                }
                if site is not None:
                    self._session(request, site, generation)
                return
            slots.release()
        count(self.crawler.stats, "browser/skipped_after_gate", site_id)
        raise IgnoreRequest(f"site #{site_id} stopped by a {self.stopped[site_id]}")

    def _session(self, request: Request, site: Site, generation: int) -> None:
        kwargs = request.meta.setdefault("playwright_context_kwargs", {})
        proxies = proxies_for(site.config.proxies, self.pool)
        if proxies:
            kwargs["proxy"] = browser_proxy(proxies[generation % len(proxies)])
        if site.config.cookies_file:
            cookies = self.cookie_files.read(
                self.crawler.stats, site.site_id, site.name, site.config.cookies_file
            )
            if cookies is not None:
                kwargs["storage_state"] = {"cookies": [c.playwright() for c in cookies]}

    async def release(self, request: Request, page: Any | None) -> None:
        """Close the request's page, and its context once retired and without pages."""
        name = request.meta.get("playwright_context")
        playwright_error, _ = playwright_errors()
        if page is not None:
            if name is not None:
                self._contexts.setdefault(name, page.context)
            try:
                await page.close()
            except playwright_error as exc:
                logger.debug("Closing a page failed: %s", exc)
        if name is None or not request.meta.pop(_HOLDS_SLOT, False):
            return
        self._slots[request.meta[META_KEY]["site_id"]].release()
        self._open[name] -= 1
        if name in self._retired and self._open[name] <= 0:
            self._retired.discard(name)
            del self._open[name], self._used[name]
            context = self._contexts.pop(name, None)
            if context is not None:
                try:
                    await context.close()
                except playwright_error as exc:
                    logger.debug("Closing context %s failed: %s", name, exc)
                count(self.crawler.stats, "browser/contexts_recycled")

    async def release_failed(self, failure: Failure) -> bool:
        """Close the page of a failed request; True when the request was dropped because
        its site was stopped (nothing to record: its articles stay due)."""
        request = failure.request  # type: ignore[attr-defined]
        await self.release(request, request.meta.get("playwright_page"))
        return bool(
            failure.check(IgnoreRequest) and request.meta[META_KEY]["site_id"] in self.stopped
        )
