"""Every page of the monitor fits a phone: Chromium at 390 px opens each page the app
serves (found from its routes, so a new page is measured too) over an archive of long
things that do not break by themselves (a 400-character URL, a CJK headline and paragraph
without a space, an event whose evidence is a long URL, an edit of a long CJK line), and
the page is no wider than the window."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import sync_playwright
from sqlalchemy import select

from tests.monitor_archive import LIMITS, NOW, Built, build, serving
from tests.test_copies import text as article_text
from tests.test_media_monitor import add_screenshot
from tests.test_monitor_browser import PHONE, browser_config, chromium, free_port
from zeroarchive.copies.hook import copies_hook
from zeroarchive.core.items import FetchedPage, Parsed
from zeroarchive.events.edits import edit_hook
from zeroarchive.events.store import GoneAnswer, record_gone
from zeroarchive.monitor.app import create_app
from zeroarchive.monitor.config import MonitorConfig
from zeroarchive.parser import PARSER_VERSION
from zeroarchive.search import open_index
from zeroarchive.search.reindex import reindex
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import Archive, close_archives, open_archive
from zeroarchive.storage.publications import ArticleInfo, PublicationStore
from zeroarchive.storage.schema import article, article_event
from zeroarchive.storage.site_stats import SiteStatsConfig

__all__ = ["chromium"]  # the fixture that requires Chromium, used by every test here

HOST = "https://" + "very-long-subdomain-" * 8 + "example.tw"
LONG_URL = HOST + "/news/" + "a1b2c3d4e5" * 30 + ".html"
HEADLINE = "行政院今日召開記者會說明明年度交通預算編列方式並回應外界對票價調整的疑慮" * 3
PARAGRAPH = "發言人表示相關單位已完成評估將在下個月提出完整報告供立法院審議參考" * 12


def long_archive(url: str) -> tuple[Built, dict[str, int]]:
    built = build(url)
    archive = open_archive(url=url)
    spec = parse_spec(
        {"name": "長" * 60, "url": HOST + "/", "type": "news", "config": {"article": "/news/"}}
    )
    site_id, _ = archive.sites.upsert(spec, NOW - 10 * 86400)
    archive.articles.add(site_id, "Article", [LONG_URL], NOW - 2 * 86400)
    with archive.engine.connect() as conn:
        article_id = conn.execute(
            select(article.c.article_id).where(article.c.url == LONG_URL)
        ).scalar_one()
    body = f"<html><head><title>{HEADLINE}</title></head><body><h1>{HEADLINE}</h1>"
    body += f"<p>{PARAGRAPH}</p><p>{LONG_URL}</p></body></html>"
    archive.snapshots.save(
        [
            FetchedPage(
                article_id=article_id,
                site_id=site_id,
                article_type="news",
                fetched_at=NOW - 2 * 86400,
                status=200,
                final_url=LONG_URL,
                headers={"Content-Type": ["text/html; charset=utf-8"]},
                encoding="utf-8",
                body=body.encode(),
            )
        ]
    )
    # A screenshot 1280 px wide on its snapshot page.
    add_screenshot(archive.engine, article_id, NOW - 2 * 86400, LONG_URL)
    store = PublicationStore(archive.engine, PARSER_VERSION)
    info = ArticleInfo(article_id, site_id, "Article", LONG_URL)
    for at, text in ((NOW - 2 * 86400, PARAGRAPH), (NOW - 86400, PARAGRAPH + "調降" + PARAGRAPH)):
        parsed = Parsed(LONG_URL, HEADLINE, text)
        store.add_version(info, at, parsed, parsed.digest(), at, hooks=[edit_hook])
    copy_id = copied_story(archive, store, site_id)
    evidence = "redirect:" + LONG_URL
    record_gone(archive.engine, [GoneAnswer(article_id, site_id, NOW - 3600, evidence)])
    record_gone(archive.engine, [GoneAnswer(article_id, site_id, NOW - 600, evidence)])
    reindex(archive.engine, open_index(archive.engine), PARSER_VERSION)
    with archive.engine.connect() as conn:
        event_ids = dict(conn.execute(select(article_event.c.kind, article_event.c.event_id)).all())
    assert set(event_ids) == {"deleted", "edited"}
    return built, {
        "site": site_id,
        "article": article_id,
        "snapshot": NOW - 2 * 86400,
        "event": event_ids["edited"],
        "deleted": event_ids["deleted"],
        "copy": copy_id,
    }


def copied_story(archive: Archive, store: PublicationStore, site_id: int) -> int:
    """A real story on the long-named site and its copy, under a long URL, on another
    long-named site: the copy's id (its page lists the original, the site page the
    copier)."""
    spec = parse_spec(
        {"name": "抄" * 60, "url": HOST + "/copies/", "type": "news", "config": {"article": "/"}}
    )
    copier, _ = archive.sites.upsert(spec, NOW - 10 * 86400)
    hooks = [copies_hook()]
    story = article_text("cna_s1")
    ids = []
    for site, url, at in (
        (site_id, HOST + "/news/original.html", NOW - 5 * 86400),
        (copier, LONG_URL + "?copy", NOW - 4 * 86400),
    ):
        archive.articles.add(site, "Article", [url], at)
        with archive.engine.connect() as conn:
            article_id = conn.execute(
                select(article.c.article_id).where(article.c.url == url)
            ).scalar_one()
        parsed = Parsed(url, HEADLINE, story)
        info = ArticleInfo(article_id, site, "Article", url)
        store.add_version(info, at, parsed, parsed.digest(), at, hooks=hooks)
        ids.append(article_id)
    return ids[-1]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Built, dict[str, int], list[str]]]:
    url = f"sqlite:///{tmp_path / 'archive.db'}"
    built, ids = long_archive(url)
    config = MonitorConfig("127.0.0.1", free_port(), 60, 28, 100, None, None, None, LIMITS)
    app = create_app(open_archive(url=url).engine, config, SiteStatsConfig(3, 3600), lambda: NOW)
    paths = [getattr(route, "path", "") for route in app.routes]
    try:
        with serving(app, config.port) as base:
            yield base, built, ids, paths
    finally:
        close_archives()


def pages_of(paths: list[str], ids: dict[str, int]) -> list[str]:
    """Each HTML page the app serves, as URLs on the long archive (the GraphQL endpoint,
    the feeds, the static files and the archived page's own bytes are not pages)."""
    concrete = {
        "/": ["/"],
        "/sites": ["/sites"],
        "/sites/{site_id:id}": [f"/sites/{ids['site']}"],
        "/articles/{article_id:id}": [
            f"/articles/{ids['article']}",
            f"/articles/{ids['article']}?a=1&b=2",
            f"/articles/{ids['copy']}",
        ],
        "/articles/{article_id:id}/snapshots/{snapshot_at:id}": [
            f"/articles/{ids['article']}/snapshots/{ids['snapshot']}"
        ],
        "/events": ["/events"],
        "/events/{event_id:id}": [f"/events/{ids['event']}", f"/events/{ids['deleted']}"],
        "/search": [
            "/search?q=" + quote("預算"),
            "/search?q=" + quote(PARAGRAPH[:30]),
            "/search?collapse=1&q=" + quote("中華代表隊"),
        ],
        "/save": ["/save"],
    }
    not_pages = {
        "/graphql",
        "/recheck",  # a form's POST, answered by a redirect to the article page
        "/events.atom",
        "/sites/{site_id:id}/events.atom",
        "/static",
        "/articles/{article_id:id}/snapshots/{snapshot_at:id}/page",
        "/media/{digest}",  # a stored item's bytes
    }
    unknown = [path for path in paths if path not in concrete and path not in not_pages]
    assert not unknown, f"pages this test does not know how to open: {unknown}"
    return [url for path in paths if path in concrete for url in concrete[path]]


def test_every_page_fits_a_phone(served: tuple[str, Built, dict[str, int], list[str]]) -> None:
    base, _, ids, paths = served
    chromium = browser_config()
    too_wide = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium.chromium, args=list(chromium.chromium_args), headless=True
        )
        try:
            page = browser.new_page(viewport=PHONE)  # type: ignore[arg-type]
            for url in pages_of(paths, ids):
                answer = page.goto(base + url)
                assert answer is not None and answer.status == 200, url
                width = page.evaluate("document.documentElement.scrollWidth")
                if width > PHONE["width"]:
                    too_wide[url] = width
        finally:
            browser.close()
    assert not too_wide, too_wide
