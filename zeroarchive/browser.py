"""The browser that renders pages (the facebook spider; generic sites with ``render``):
Debian's Chromium driven by scrapy-playwright, its settings as a frozen config, and the
download handler a spider switches on for its browser requests only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scrapy.settings import BaseSettings

HANDLER = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
MIDDLEWARE = "middlewares.browser_pages.BrowserPagesDownloaderMiddleware"
# Pictures, video and fonts are not archived: never downloaded by the browser.
BLOCKED_RESOURCE_TYPES = frozenset({"image", "media", "font"})


@dataclass(frozen=True)
class BrowserConfig:
    """The ``BROWSER_*`` settings, typed and checked.

    >>> from scrapy.settings import Settings
    >>> settings = Settings()
    >>> settings.setmodule("settings.base")
    >>> BrowserConfig.from_settings(settings).chromium
    '/usr/bin/chromium'
    >>> settings.set("BROWSER_CONTEXT_PAGES", 0)
    >>> BrowserConfig.from_settings(settings)
    Traceback (most recent call last):
    ...
    ValueError: BROWSER_CONTEXT_PAGES must be at least 1, got 0
    """

    chromium: str
    chromium_args: tuple[str, ...]
    #: Pages a browser context serves before it is closed and a fresh one opened.
    context_pages: int

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> BrowserConfig:
        config = cls(
            chromium=settings.get("BROWSER_CHROMIUM"),
            chromium_args=tuple(settings.getlist("BROWSER_CHROMIUM_ARGS")),
            context_pages=settings.getint("BROWSER_CONTEXT_PAGES"),
        )
        if not config.chromium:
            raise ValueError("BROWSER_CHROMIUM must name the browser's executable")
        if config.context_pages < 1:
            raise ValueError(
                f"BROWSER_CONTEXT_PAGES must be at least 1, got {config.context_pages}"
            )
        return config

    def launch_options(self) -> dict[str, object]:
        """scrapy-playwright's ``PLAYWRIGHT_LAUNCH_OPTIONS`` for this config."""
        return {
            "executable_path": self.chromium,
            "args": list(self.chromium_args),
            "headless": True,
        }


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


def abort_request(request: Any) -> bool:
    """``PLAYWRIGHT_ABORT_REQUEST``: skip what the archive does not keep."""
    return bool(request.resource_type in BLOCKED_RESOURCE_TYPES)
