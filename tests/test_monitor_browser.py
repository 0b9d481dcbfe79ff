"""The monitor in a real browser: Debian's Chromium through Playwright loads the
dashboard, opens a site, an article and a snapshot, and compares two versions. Each step's
screenshot is kept in test-artifacts/monitor/ and checked (a PNG of the window's size,
not blank) after the page's DOM was checked for what it must show."""

from __future__ import annotations

import re
import socket
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from playwright.sync_api import Page, expect, sync_playwright
from scrapy.settings import Settings

from tests.conftest import REPO, require_service
from tests.monitor_archive import NOW, PROXY_PASSWORD, Built, build
from zeroarchive.crawl.browser import BrowserConfig
from zeroarchive.monitor.app import create_app
from zeroarchive.monitor.config import MonitorConfig
from zeroarchive.storage.archive import close_archives, open_archive
from zeroarchive.storage.site_stats import SiteStatsConfig

ARTIFACTS = REPO / "test-artifacts" / "monitor"
WIDTH, HEIGHT = 1280, 800


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


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Built]]:
    """The monitor on a real uvicorn server, in a thread, over a built SQLite archive."""
    url = f"sqlite:///{tmp_path / 'archive.db'}"
    built = build(url)
    config = MonitorConfig("127.0.0.1", free_port(), 60, 28, 100, None, None, None)
    app = create_app(open_archive(url=url).engine, config, SiteStatsConfig(3, 3600), lambda: NOW)
    server = uvicorn.Server(
        uvicorn.Config(app, host=config.host, port=config.port, log_config=None, access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the monitor did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{config.port}", built
    finally:
        server.should_exit = True
        thread.join(30)
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


def shoot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    width, height, values = png_size_and_values(path.read_bytes())
    assert (width, height) == (WIDTH, HEIGHT)
    # A blank window's filtered rows are nearly all zero bytes; a page of text is not.
    assert values > 32, f"{path} looks blank"


def test_monitor_in_chromium(served: tuple[str, Built]) -> None:
    base, built = served
    chromium = browser_config()
    requested: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium.chromium,
            args=list(chromium.chromium_args),
            headless=True,
        )
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.on("request", lambda request: requested.append(request.url))

            page.goto(f"{base}/")
            expect(page.locator("#sites tr.site")).to_have_count(4)
            expect(page.locator("#sites tr.flagged")).to_have_count(2)
            farm = page.locator(f'tr[data-site-id="{built.sites["farm"]}"]')
            expect(farm.locator(".flag-quiet")).to_have_text("quiet")
            expect(page.locator("svg.chart").first).to_be_visible()
            shoot(page, "1-dashboard")

            page.select_option("select[name=type]", "content_farm")
            page.click("form.filters button")
            expect(page.locator("#sites tr.site")).to_have_count(1)
            page.goto(f"{base}/")

            page.click("#sites a:text-is('ltn')")
            expect(page).to_have_url(f"{base}/sites/{built.sites['ltn']}")
            expect(page.locator("h1")).to_contain_text("ltn")
            expect(page.locator("pre.config")).to_contain_text("http://***@proxy.example:3128")
            assert PROXY_PASSWORD not in page.content()
            expect(page.locator("#articles tr.article")).to_have_count(9)
            shoot(page, "2-site")

            page.click(f"#articles a[href='/articles/{built.article_id}']")
            expect(page.locator("h1")).to_have_text(f"Article {built.article_id}")
            expect(page.locator("#timeline li")).to_have_count(3)
            expect(page.locator("#versions tr.version")).to_have_count(2)
            shoot(page, "3-article")

            page.locator("#timeline a").first.click()
            expect(page).to_have_url(re.compile(rf"/snapshots/{built.snapshots[0]}$"))
            archived = page.frame_locator("#archived")
            expect(archived.locator("body")).to_contain_text("林義雄宣布停止禁食")
            expect(archived.locator("script")).to_have_count(0)
            shoot(page, "4-snapshot")

            page.go_back()
            versions = page.locator("#compare select[name=a] option")
            page.select_option("#compare select[name=a]", versions.nth(0).get_attribute("value"))
            page.select_option("#compare select[name=b]", versions.nth(1).get_attribute("value"))
            page.click("#compare button")
            changed = page.locator("#diff tr.replace")
            expect(changed.first).to_be_visible()
            expect(changed.first.locator("td.old mark").first).to_have_text("停止")
            expect(changed.first.locator("td.new mark").first).to_have_text("結束")
            shoot(page, "5-diff")
        finally:
            browser.close()
    # The archived page's pictures, stylesheets and scripts were never fetched.
    assert requested and all(url.startswith(base) for url in requested), [
        url for url in requested if not url.startswith(base)
    ]
