"""The monitor shows what a stored page showed from the archive alone (zeroarchive/monitor/
media.py): the stored-page view of a real LTN page points its pictures and stylesheets at
``/media/<sha256>`` (the stored bytes, safe headers), marks what was not kept as missing,
never names the live site in a resource's URL, and the snapshot page shows its screenshot."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from playwright.sync_api import sync_playwright
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from tests.monitor_archive import LIMITS, NOW, PAGE, URL, Built, build, serving
from tests.test_media import PNG, PNG2
from tests.test_monitor import graphql, make_client
from tests.test_monitor_browser import PHONE, browser_config, chromium, free_port
from zeroarchive.media.find import find_media
from zeroarchive.media.store import MediaRecord, media_store
from zeroarchive.monitor.app import create_app
from zeroarchive.monitor.archived import page_headers, safe_page
from zeroarchive.monitor.config import MonitorConfig
from zeroarchive.monitor.media import ShownItems
from zeroarchive.storage.archive import close_archives, open_archive
from zeroarchive.storage.site_stats import SiteStatsConfig

__all__ = ["chromium"]  # the fixture that requires Chromium

SCREENSHOT = (Path(__file__).parent / "fixtures" / "media_replay" / "screenshot.png").read_bytes()
#: The LTN page's stylesheet as the archive keeps it: its background is the site's logo
#: (relative to the stylesheet), its font was not kept.
CSS = (
    b".logo{background:url(../../images/news/logo.jpg) no-repeat}"
    b"@font-face{font-family:x;src:url('/fonts/gone.woff2')}"
)
PHOTO = "http://www.ltn.com.tw/2014/new/apr/30/images/bigPic/300_300/php2OVO8J.jpeg"
LOGO = "https://news.ltn.com.tw/images/news/logo.jpg"
STYLE = "https://news.ltn.com.tw/css/news/style.css?7"
GONE = "https://news.ltn.com.tw/images/news/wb.gif"
HTML_ITEM = "https://news.ltn.com.tw/images/news/print.gif"
#: Served as a picture although it is a page: it must not come back as HTML.
NOT_AN_IMAGE = b"<!doctype html><html><body><script>alert(1)</script></body></html>"


def add_media(db_url: str, built: Built) -> dict[str, bytes]:
    """The first LTN snapshot's media as the crawl records it (its photo, logo and
    stylesheet kept; a 404; one answered with HTML; the rest over media_max_items) and a
    screenshot of the first and the edited snapshot; returns {url: stored bytes}."""
    archive = open_archive(url=db_url)
    store = media_store(archive.engine, "")
    first, _, edited = built.snapshots
    kept = {PHOTO: (PNG, "image/png"), LOGO: (PNG2, "image/jpeg"), STYLE: (CSS, "text/css")}
    kept[HTML_ITEM] = (NOT_AN_IMAGE, "text/html")
    rows = []
    with archive.engine.begin() as conn:
        for found in find_media(PAGE, URL, ["image", "style"]):
            if found.url in kept:
                body, kind = kept[found.url]
                put = store.put(conn, [body], kind, first)
                row: tuple[bytes | None, int | None, str | None, bool, str | None] = (
                    put.sha256,
                    put.size,
                    kind,
                    True,
                    None,
                )
            else:
                reason = "failed:404" if found.url == GONE else "too-many"
                row = (None, None, None, False, reason)
            sha256, size, kind, stored, reason = row
            rows.append(
                MediaRecord(
                    built.article_id,
                    first,
                    found.kind,
                    found.url,
                    sha256,
                    size,
                    kind,
                    first,
                    stored,
                    reason,
                )
            )
        for at in (first, edited):
            put = store.put(conn, [SCREENSHOT], "image/png", at)
            rows.append(
                MediaRecord(
                    built.article_id,
                    at,
                    "screenshot",
                    URL,
                    put.sha256,
                    put.size,
                    "image/png",
                    at,
                    True,
                    None,
                )
            )
        store.record(conn, rows)
    return {url: body for url, (body, _) in kept.items()}


def add_screenshot(engine: Engine, article_id: int, at: int, url: str) -> None:
    """A screenshot of a snapshot, stored as the screenshot taker stores one."""
    store = media_store(engine, "")
    with engine.begin() as conn:
        put = store.put(conn, [SCREENSHOT], "image/png", at)
        store.record(
            conn,
            [
                MediaRecord(
                    article_id,
                    at,
                    "screenshot",
                    url,
                    put.sha256,
                    put.size,
                    "image/png",
                    at,
                    True,
                    None,
                )
            ],
        )


def digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


@pytest.fixture
def client(db_url: str) -> Iterator[tuple[TestClient, Built]]:
    built = build(db_url)
    add_media(db_url, built)
    with make_client(db_url) as test_client:
        yield test_client, built


RESOURCE = re.compile(r"<(img|link|source|video|audio|input|embed|object)\b[^>]*>", re.I)
FETCHING = re.compile(r'\s(src|srcset|href|poster|data|background)\s*=\s*"([^"]*)"', re.I)


def resource_urls(html: str) -> list[str]:
    """The URLs a browser would fetch for the page's resources."""
    return [m.group(2) for tag in RESOURCE.finditer(html) for m in FETCHING.finditer(tag.group(0))]


def test_the_stored_page_loads_its_pictures_and_stylesheets_from_the_archive_only(
    client: tuple[TestClient, Built],
) -> None:
    test_client, built = client
    # The unchanged re-snapshot shows its version's set.
    for at in built.snapshots[:2]:
        page = test_client.get(f"/articles/{built.article_id}/snapshots/{at}/page")
        assert page.status_code == 200
        urls = resource_urls(page.text)
        assert urls and all(url.startswith("/media/") for url in urls), urls
        # Not a live URL anywhere a resource could be fetched from, inline CSS included.
        assert not re.search(r"url\(\s*['\"]?(https?:)?//", page.text)
        assert f'src="/media/{digest(PNG)}"' in page.text
        assert f'href="/media/{digest(CSS)}?page={built.article_id}.{at}"' in page.text
        document = lxml.html.fromstring(page.text)
        missing = {img.get("data-archived-missing") for img in document.iter("img")}
        assert {"failed:404", "too-many"} <= missing
        policy = page.headers["content-security-policy"]
        # Only the monitor's media route, nothing of another origin or path.
        origin = str(test_client.base_url).rstrip("/")
        assert f"img-src {origin}/media/ data:;" in policy
        assert f"style-src {origin}/media/ 'unsafe-inline';" in policy
        assert f"font-src {origin}/media/ data:;" in policy
        assert f"media-src {origin}/media/;" in policy
        assert "script-src" not in policy and "allow-scripts" not in policy
        assert policy.endswith("sandbox allow-same-origin")
        assert "<script" not in page.text.lower()


#: Players of each kind: a video and its poster kept; one whose first <source> was not kept
#: and second was; an expired video (its poster never fetched); one never recorded; audio.
PLAYERS = b"""<!doctype html><html><body>
<video id="kept" src="/v/clip.mp4" poster="/v/still.jpg" controls></video>
<video id="sources" controls><source src="/v/other.webm" type="video/webm">
<source src="/v/clip.mp4" type="video/mp4"></video>
<video id="expired" src="https://cdn.example/old.mp4" poster="https://cdn.example/gone.jpg">
</video><p>after</p>
<video id="never"><source src="https://cdn.example/never.mp4"></video>
<audio id="sound" src="/a/talk.mp3" controls></audio>
</body></html>"""
MP4 = b"\x00\x00\x00\x18ftypmp42" + bytes(16)


def test_videos_and_audio_play_from_the_archive_or_show_as_missing() -> None:
    page_url = "https://news.example/p/1"
    clip, still = "https://news.example/v/clip.mp4", "https://news.example/v/still.jpg"
    stored = {clip: (MP4, "video", "video/mp4"), still: (PNG, "image", "image/png")}
    records = [
        MediaRecord(1, 2, kind, url, hashlib.sha256(body).digest(), len(body), ctype, 2, True, None)
        for url, (body, kind, ctype) in stored.items()
    ]
    records.append(
        MediaRecord(
            1,
            2,
            "video",
            "https://cdn.example/old.mp4",
            bytes(32),
            9,
            "video/mp4",
            2,
            False,
            "expired",
            5,
        )
    )
    html, media_type = safe_page(PLAYERS, "utf-8", page_url, ShownItems(records, "1.2"))
    assert media_type == "text/html"
    urls = resource_urls(html)
    assert urls and all(url.startswith("/media/") for url in urls), urls
    assert "cdn.example" not in "".join(urls) and "news.example" not in "".join(urls)
    players = {p.get("id"): p for p in lxml.html.fromstring(html).iter("video", "audio")}
    kept = players["kept"]
    assert kept.get("src") == f"/media/{digest(MP4)}"
    assert kept.get("poster") == f"/media/{digest(PNG)}"
    assert kept.get("data-archived-missing") is None
    # The held <source> plays; the other is set aside for the reader.
    sources = list(players["sources"].iter("source"))
    assert [s.get("src") for s in sources] == [None, f"/media/{digest(MP4)}"]
    assert sources[0].get("data-archived-src") == "/v/other.webm"
    assert players["sources"].get("data-archived-missing") is None
    # Not kept: in its place, why (an expired video says so), nothing fetched.
    for name, kind, why in (
        ("expired", "video", "expired"),
        ("never", "video", "not archived"),
        ("sound", "audio", "not archived"),
    ):
        player = players[name]
        assert player.get("data-archived-missing") == why, name
        assert player.get("src") is None and player.get("poster") is None
        assert player.get("title") == f"[{kind} {why}]"
        note = player.getnext()
        assert note is not None and note.text == f"[{kind} {why}]"
    assert players["expired"].get("data-archived-poster") == "https://cdn.example/gone.jpg"
    policy = page_headers("http://127.0.0.1:8000")["Content-Security-Policy"]
    assert "media-src http://127.0.0.1:8000/media/;" in policy


def test_media_route_serves_the_stored_bytes_with_safe_headers(
    client: tuple[TestClient, Built],
) -> None:
    test_client, built = client
    photo = test_client.get(f"/media/{digest(PNG)}")
    assert photo.status_code == 200 and photo.content == PNG
    assert photo.headers["content-type"] == "image/png"
    assert photo.headers["x-content-type-options"] == "nosniff"
    assert photo.headers["cross-origin-resource-policy"] == "same-origin"
    assert "sandbox" in photo.headers["content-security-policy"]
    assert photo.headers["content-length"] == str(len(PNG))
    shot = test_client.get(f"/media/{digest(SCREENSHOT)}")
    assert shot.content == SCREENSHOT
    # HTML stored under an image's URL comes back as a download, not a page.
    html = test_client.get(f"/media/{digest(NOT_AN_IMAGE)}")
    assert html.content == NOT_AN_IMAGE
    assert html.headers["content-type"] == "application/octet-stream"
    assert html.headers["content-disposition"].startswith("attachment")
    # A stylesheet of a page: its url()s point at the archive or at nothing.
    css = test_client.get(f"/media/{digest(CSS)}?page={built.article_id}.{built.snapshots[0]}")
    assert css.headers["content-type"].startswith("text/css")
    assert f'url("/media/{digest(PNG2)}")' in css.text
    assert 'url("data:,")' in css.text and "gone.woff2" not in css.text
    assert test_client.get(f"/media/{digest(CSS)}").content == CSS
    for path in (f"/media/{'0' * 64}", "/media/nothex", f"/media/{digest(PNG).upper()}"):
        assert test_client.get(path).status_code == 404
    # Another site's page cannot load the archive's pictures; the archived page (same
    # origin in its frame) can.
    cross = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": "image"}
    assert test_client.get(f"/media/{digest(PNG)}", headers=cross).status_code == 403
    same = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Dest": "image"}
    assert test_client.get(f"/media/{digest(PNG)}", headers=same).content == PNG


def test_the_snapshot_page_shows_its_screenshot(client: tuple[TestClient, Built]) -> None:
    test_client, built = client
    first, unchanged, edited = built.snapshots
    for at in (first, unchanged, edited):
        page = test_client.get(f"/articles/{built.article_id}/snapshots/{at}")
        assert f'<img id="screenshot" src="/media/{digest(SCREENSHOT)}"' in page.text
        assert '<iframe id="archived" class="archived" sandbox="allow-same-origin"' in page.text


def test_a_page_without_media_shows_none_and_loads_nothing(db_url: str) -> None:
    built = build(db_url)
    with make_client(db_url) as test_client:
        at = built.snapshots[0]
        page = test_client.get(f"/articles/{built.article_id}/snapshots/{at}/page")
        assert resource_urls(page.text) == []
        assert "<link" not in page.text
        snapshot = test_client.get(f"/articles/{built.article_id}/snapshots/{at}")
        assert 'id="screenshot"' not in snapshot.text


MEDIA_QUERY = """query($id: ID!) { snapshots(articleId: $id) { snapshotAt media {
    kind url sha256 bytes contentType fetchedAt stored reason snapshotAt } } }"""


def asked_until(page: Any, expression: str, least: float) -> Any:
    """``expression``'s value in the page once it reaches ``least`` (or after 30 s), asked
    from the test every 100 ms: an archived item's sandbox runs no script in the page, so
    no event handler or in-page polling would see a player's state change."""
    for _ in range(300):
        value = page.evaluate(expression)
        if value >= least:
            return value
        page.wait_for_timeout(100)
    return page.evaluate(expression)


def test_graphql_gives_each_snapshots_media(client: tuple[TestClient, Built]) -> None:
    test_client, built = client
    data = graphql(test_client, MEDIA_QUERY, id=str(built.article_id))
    first, unchanged, edited = data["snapshots"]
    media = first["media"]
    by_url = {m["url"]: m for m in media if m["kind"] != "screenshot"}
    assert by_url[PHOTO] == {
        "kind": "image",
        "url": PHOTO,
        "sha256": digest(PNG),
        "bytes": len(PNG),
        "contentType": "image/png",
        "fetchedAt": built.snapshots[0],
        "stored": True,
        "reason": None,
        "snapshotAt": built.snapshots[0],
    }
    assert by_url[STYLE]["kind"] == "style" and by_url[STYLE]["sha256"] == digest(CSS)
    gone = by_url[GONE]
    assert (gone["stored"], gone["reason"], gone["sha256"], gone["bytes"]) == (
        False,
        "failed:404",
        None,
        None,
    )
    assert len(by_url) == len(find_media(PAGE, URL, ["image", "style"]))
    shots = [m for m in media if m["kind"] == "screenshot"]
    assert [s["sha256"] for s in shots] == [digest(SCREENSHOT)]
    # The unchanged re-snapshot gives its version's set; the edited one its own screenshot.
    assert unchanged["media"] == media
    assert [m["snapshotAt"] for m in edited["media"] if m["kind"] == "screenshot"] == [
        built.snapshots[2]
    ]


def test_chromium_shows_the_archived_pictures_and_asks_no_other_host(
    chromium: None, tmp_path: Path
) -> None:
    """In a real browser the sandboxed frame loads the archive's copies (the CSP, the
    sandbox and the guard let them through) and nothing from anywhere else; a stored video
    opened on its own plays and seeks (its player asks for byte ranges)."""
    url = f"sqlite:///{tmp_path / 'archive.db'}"
    built = build(url)
    add_media(url, built)
    videos = []
    store = media_store(open_archive(url=url).engine, "")
    with store.engine.begin() as conn:
        for name, content_type in (("tiny.webm", "video/webm"), ("tiny.mp4", "video/mp4")):
            body = (Path(__file__).parent / "fixtures" / "video" / name).read_bytes()
            videos.append(store.put(conn, [body], content_type, 1).sha256.hex())
    ranges: dict[str, str] = {}
    config = MonitorConfig("127.0.0.1", free_port(), 60, 28, 100, None, None, None, LIMITS)
    app = create_app(open_archive(url=url).engine, config, SiteStatsConfig(3, 3600), lambda: NOW)
    requested: list[str] = []
    answered: dict[str, int] = {}
    try:
        with serving(app, config.port) as base, sync_playwright() as playwright:
            settings = browser_config()
            browser = playwright.chromium.launch(
                executable_path=settings.chromium, args=list(settings.chromium_args)
            )
            try:
                page = browser.new_page(viewport=PHONE)  # type: ignore[arg-type]
                page.on("request", lambda request: requested.append(request.url))
                page.on(
                    "response", lambda response: answered.update({response.url: response.status})
                )
                at = built.snapshots[0]
                page.goto(f"{base}/articles/{built.article_id}/snapshots/{at}")
                page.wait_for_load_state("networkidle")
                shot = page.locator("#screenshot")
                assert shot.evaluate("img => img.naturalWidth") == 1280
                frame = page.frame_locator("#archived")
                photo = frame.locator(f'img[src="/media/{digest(PNG)}"]')
                assert photo.evaluate("img => img.complete && img.naturalWidth") > 0
                missing = frame.locator('img[data-archived-missing="failed:404"]').first
                assert missing.get_attribute("src") is None
                assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
                # A stored video opened on its own plays from the archive and seeks.
                page.on(
                    "request",
                    lambda request: ranges.update({request.url: request.headers.get("range")}),
                )
                for name in videos:
                    page.goto(f"{base}/media/{name}")
                    video = "document.querySelector('video')"
                    assert asked_until(page, f"{video}.readyState", 1) >= 1
                    assert page.evaluate(f"{video}.duration") == 1
                    page.evaluate(f"{video}.currentTime = 0.5")
                    at = f"(v => v.seeking ? -1 : v.currentTime)({video})"
                    assert asked_until(page, at, 0) >= 0.5
            finally:
                browser.close()
    finally:
        close_archives()
    assert requested and all(r.startswith(base + "/") for r in requested), requested
    media = [r for r in requested if "/media/" in r]
    assert f"{base}/media/{digest(PNG)}" in media
    assert any(r.startswith(f"{base}/media/{digest(CSS)}?page=") for r in media)
    # The logo (an <img>, and the stylesheet's background) from the archive too.
    assert f"{base}/media/{digest(PNG2)}" in media
    played = {f"{base}/media/{name}" for name in videos}
    assert all(answered.get(r) == 200 for r in media if r not in played), answered
    # The player asked for the item by ranges, as it does to seek, and had parts.
    for video in played:
        assert (ranges.get(video) or "").startswith("bytes="), ranges
        assert answered[video] == 206


def test_items_in_a_media_directory_are_served_from_it(db_url: str, tmp_path: Path) -> None:
    directory = tmp_path / "media"
    store = media_store(open_archive(url=db_url).engine, str(directory))
    with store.engine.begin() as conn:
        put = store.put(conn, [PNG2], "image/png", 1)
    with make_client(db_url, media_dir=str(directory)) as test_client:
        answer = test_client.get(f"/media/{put.sha256.hex()}")
        assert answer.status_code == 200 and answer.content == PNG2
    # The database holds the item's index, not its bytes: a monitor reading it finds none.
    with make_client(db_url) as test_client:
        assert test_client.get(f"/media/{put.sha256.hex()}").status_code == 404


@pytest.mark.parametrize("backend", ["database", "directory"])
def test_a_player_seeks_through_an_item_by_byte_ranges(
    db_url: str, tmp_path: Path, backend: str
) -> None:
    """Chromium's <video> asks for ranges to seek; each range is the stored bytes, across
    the store's 1 MiB chunks too."""
    media_dir = str(tmp_path / "media") if backend == "directory" else ""
    video = bytes(range(256)) * 9000  # 2,304,000 bytes: three database chunks
    store = media_store(open_archive(url=db_url).engine, media_dir)
    with store.engine.begin() as conn:
        name = store.put(conn, [video], "video/mp4", 1).sha256.hex()
    size, chunk = len(video), 1 << 20
    with make_client(db_url, media_dir=media_dir) as test_client:
        whole = test_client.get(f"/media/{name}")
        assert whole.status_code == 200 and whole.content == video
        assert whole.headers["accept-ranges"] == "bytes"
        assert whole.headers["etag"] == f'"{name}"'
        asked = {
            "bytes=0-9": (0, 9),
            f"bytes={chunk - 5}-{chunk + 5}": (chunk - 5, chunk + 5),
            f"bytes={2 * chunk}-": (2 * chunk, size - 1),
            "bytes=-100": (size - 100, size - 1),
            f"bytes={size - 3}-{size + 50}": (size - 3, size - 1),
        }
        for header, (first, last) in asked.items():
            part = test_client.get(f"/media/{name}", headers={"Range": header})
            assert part.status_code == 206, header
            assert part.content == video[first : last + 1], header
            assert part.headers["content-range"] == f"bytes {first}-{last}/{size}"
            assert part.headers["content-length"] == str(last - first + 1)
            assert part.headers["content-type"] == "video/mp4"
        past = test_client.get(f"/media/{name}", headers={"Range": f"bytes={size}-"})
        assert past.status_code == 416 and past.headers["content-range"] == f"bytes */{size}"
        # Several ranges, or an If-Range naming another version: the whole item.
        for headers in (
            {"Range": "bytes=0-1,5-6"},
            {"Range": "bytes=0-9", "If-Range": '"0000"'},
        ):
            again = test_client.get(f"/media/{name}", headers=headers)
            assert again.status_code == 200 and again.content == video
        same = {"Range": "bytes=0-9", "If-Range": f'"{name}"'}
        assert test_client.get(f"/media/{name}", headers=same).content == video[:10]
