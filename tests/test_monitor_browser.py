"""The monitor in a real browser: Debian's Chromium through Playwright loads the
dashboard, opens a site, an article and a snapshot, and compares two versions, at 1280 px
and at a phone's width. Each step's screenshot is checked (a PNG of the window's size, not
blank) after the page's DOM was checked for what it must show, and kept as the docs'
picture of that page: docs/images/monitor-<page>[-phone].png when
ZEROARCHIVE_WRITE_DOCS_IMAGES=1 (otherwise under the test's temporary directory, so that a
run of the tests leaves the clone as it found it)."""

from __future__ import annotations

import os
import re
import socket
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright
from scrapy.settings import Settings

from tests.conftest import REPO, require_service
from tests.monitor_archive import LIMITS, NOW, PROXY_PASSWORD, Built, build, serving
from zeroarchive.crawl.browser import BrowserConfig
from zeroarchive.monitor.app import create_app
from zeroarchive.monitor.config import MonitorConfig
from zeroarchive.storage.archive import close_archives, open_archive
from zeroarchive.storage.site_stats import SiteStatsConfig

DOCS_IMAGES = REPO / "docs" / "images"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def browser_config() -> BrowserConfig:
    settings = Settings()
    settings.setmodule("settings.base")
    return BrowserConfig.from_settings(settings)


@pytest.fixture(autouse=True)
def chromium() -> None:
    path = Path(browser_config().chromium)
    require_service("Chromium", None if path.exists() else f"{path} is not installed")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Built]]:
    """The monitor on a real uvicorn server, in a thread, over a built SQLite archive (one
    for both windows: the test only reads it)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('monitor') / 'archive.db'}"
    built = build(url)
    config = MonitorConfig("127.0.0.1", free_port(), 60, 28, 100, None, None, None, LIMITS)
    app = create_app(open_archive(url=url).engine, config, SiteStatsConfig(3, 3600), lambda: NOW)
    try:
        with serving(app, config.port) as base:
            yield base, built
    finally:
        close_archives()


def png_size_and_values(data: bytes) -> tuple[int, int, int]:
    """(width, height, distinct byte values of the pixel data) of a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    chunks, offset = [], 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        if kind == b"IDAT":
            chunks.append(data[offset + 8 : offset + 8 + length])
        offset += 12 + length
    return width, height, len(set(zlib.decompress(b"".join(chunks))))


def pictures_folder(tmp_path: Path) -> Path:
    """docs/images with ZEROARCHIVE_WRITE_DOCS_IMAGES=1, else the test's own directory."""
    return DOCS_IMAGES if os.environ.get("ZEROARCHIVE_WRITE_DOCS_IMAGES") == "1" else tmp_path


def shoot(page: Page, name: str, folder: Path) -> None:
    """The window as <folder>/monitor-<name>.png, after checking the page fits it."""
    viewport = page.viewport_size
    assert viewport is not None
    # Readable means no sideways scrolling: the page is as wide as the window.
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"], name
    folder.mkdir(parents=True, exist_ok=True)
    suffix = "-phone" if viewport["width"] < 720 else ""
    path = folder / f"monitor-{name}{suffix}.png"
    page.screenshot(path=str(path))
    width, height, values = png_size_and_values(path.read_bytes())
    assert (width, height) == (viewport["width"], viewport["height"])
    # A blank window's filtered rows are nearly all zero bytes; a page of text is not.
    assert values > 32, f"{path} looks blank"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One Chromium for both windows: a launch costs more than the pages it shows."""
    chromium = browser_config()
    require_service("Chromium", None if Path(chromium.chromium).exists() else "not installed")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium.chromium,
            args=list(chromium.chromium_args),
            headless=True,
        )
        try:
            yield launched
        finally:
            launched.close()


def test_monitor_in_chromium(served: tuple[str, Built], browser: Browser, tmp_path: Path) -> None:
    # Both windows in one test: pytest-xdist hands out tests one at a time, and a test each
    # built the archive and launched the browser on each process that ran one.
    for viewport in (DESKTOP, PHONE):
        walk(served, browser, viewport, pictures_folder(tmp_path))


def walk(
    served: tuple[str, Built], browser: Browser, viewport: dict[str, int], folder: Path
) -> None:
    """The dashboard, a site, an article, a snapshot and a comparison in a window of
    ``viewport``, each checked and shot."""
    base, built = served
    requested: list[str] = []
    page = browser.new_page(viewport=viewport)  # type: ignore[arg-type]
    try:
        page.on("request", lambda request: requested.append(request.url))

        page.goto(f"{base}/")
        nav = page.locator("nav.main a")
        expect(nav).to_have_text(["Sites", "Search", "Events"])
        expect(page.locator("nav.main a[aria-current=page]")).to_have_text("Sites")
        expect(page.locator("#sites tr.site")).to_have_count(4)
        expect(page.locator("#sites tr.flagged")).to_have_count(2)
        farm = page.locator(f'tr[data-site-id="{built.sites["farm"]}"]')
        expect(farm.locator(".flag-quiet")).to_have_text("quiet")
        ltn = page.locator(f'tr[data-site-id="{built.sites["ltn"]}"]')
        expect(ltn.locator(".site-url")).to_have_text("https://news.ltn.com.tw/")
        expect(page.locator("svg.chart").first).to_be_visible()
        # The rest of a row's counts are folded until asked for.
        expect(ltn.locator("dl.more")).to_be_hidden()
        ltn.locator("summary").click()
        expect(ltn.locator("dl.more")).to_be_visible()
        expect(ltn.locator("dl.more")).to_contain_text("overdue")
        shoot(page, "dashboard", folder)

        page.select_option("select[name=type]", "content_farm")
        page.click("form.filters button")
        expect(page).to_have_url(re.compile(r"/sites\?type=content_farm"))
        expect(page.locator("#sites tr.site")).to_have_count(1)
        page.click("nav.main a:text-is('Sites')")

        page.click("#sites a:has(bdi:text-is('ltn'))")  # names are isolated in <bdi>
        expect(page).to_have_url(f"{base}/sites/{built.sites['ltn']}")
        expect(page.locator("h1")).to_contain_text("ltn")
        expect(page.locator("nav.crumbs")).to_have_text("Sites › ltn")
        expect(page.locator("pre.config")).to_contain_text("http://***@proxy.example:3128")
        assert PROXY_PASSWORD not in page.content()
        expect(page.locator("#articles tr.article")).to_have_count(9)
        shoot(page, "site", folder)

        page.click(f"#articles td[data-label=id] a[href='/articles/{built.article_id}']")
        expect(page.locator("h1")).to_contain_text("林義雄宣布結束禁食")
        expect(page.locator("#latest .text")).to_contain_text("結束禁食")
        expect(page.locator("#timeline li")).to_have_count(5)
        expect(page.locator("#timeline li.version")).to_have_count(2)
        expect(page.locator("#versions tr.version")).to_have_count(2)
        shoot(page, "article", folder)

        page.locator("#timeline li.snapshot a").first.click()
        expect(page).to_have_url(re.compile(rf"/snapshots/{built.snapshots[0]}$"))
        archived = page.frame_locator("#archived")
        expect(archived.locator("body")).to_contain_text("林義雄宣布停止禁食")
        expect(archived.locator("script")).to_have_count(0)
        expect(page.locator("nav.crumbs a")).to_have_text(
            ["Sites", "ltn", f"article {built.article_id}"]
        )
        shoot(page, "snapshot", folder)

        page.click(f"nav.crumbs a:has(bdi:text-is('article {built.article_id}'))")
        versions = page.locator("#compare select[name=a] option")
        page.select_option("#compare select[name=a]", versions.nth(0).get_attribute("value"))
        page.select_option("#compare select[name=b]", versions.nth(1).get_attribute("value"))
        page.click("#compare button")
        changed = page.locator("#diff tr.replace")
        expect(changed.first).to_be_visible()
        expect(changed.first.locator("td.old mark").first).to_have_text("停止")
        expect(changed.first.locator("td.new mark").first).to_have_text("結束")
        changed.first.scroll_into_view_if_needed()
        shoot(page, "diff", folder)
    finally:
        page.close()
    # The archived page's pictures, stylesheets and scripts were never fetched.
    assert requested and all(url.startswith(base) for url in requested), [
        url for url in requested if not url.startswith(base)
    ]
