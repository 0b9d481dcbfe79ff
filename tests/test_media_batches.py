"""The cheap path of media (zeroarchive/media/fetch.py): the items of one host share one
request, fetched by middlewares/media.py's batch middleware, each item the whole stack
would refuse, redirect or retry left to a request of its own; an item URL this crawl
fetched and kept (``MediaReuse``) is recorded for the next snapshot that shows it without
a second fetch, a stylesheet's own items with it; the writer stores a batch's items with
one index lookup for all of them, and a reused item is ``stored`` once its bytes are held."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from scrapy.http import Request, Response
from sqlalchemy import event, func, select

from tests.replay import ReplayServer, Route
from tests.test_generic import stat
from tests.test_media import (
    CSS,
    HTML,
    PNG,
    PNG2,
    _site,
    _Spider,
    article,
    load_and_crawl,
    media_json,
    sites_of,
)
from zeroarchive.core.items import FetchedPage, MediaAnswer
from zeroarchive.core.request_meta import archive_meta
from zeroarchive.crawl.snapshot_batches import UNSTORED, store_media
from zeroarchive.media.fetch import (
    MediaReuse,
    answered,
    batch_items,
    media_outputs,
    single_request,
)
from zeroarchive.media.store import MediaStore, blobs_for, media_records
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.schema import media_item

BASE = "https://s.example"


class _ReusingSpider(_Spider):
    def __init__(self, reuse: MediaReuse | None) -> None:
        self.media_reuse = reuse


def _page(n: int) -> FetchedPage:
    headers = {"Content-Type": [HTML]}
    return FetchedPage(n, 1, "news", 100 + n, 200, f"{BASE}/a/{n}", headers, "utf-8", article(n))


def _answer(request: Request, body: bytes, content_type: str) -> list[Any]:
    response = Response(
        request.url, body=body, headers={"Content-Type": content_type}, request=request
    )
    return list(answered(response, _site({"article": "/a/"}), _ReusingSpider(_reuse)))


_reuse = MediaReuse(3600)


def _fetch_all(outputs: list[Any]) -> list[Any]:
    """Answer every request of ``outputs`` (and a stylesheet's own ones) as the server of
    tests/test_media.py does; the records, in order."""
    records = []
    pending = list(outputs)
    while pending:
        output = pending.pop(0)
        if not isinstance(output, Request):
            records.append(output)
            continue
        if archive_meta(output).get("batch"):
            pending.extend(single_request(output, item, n) for item, n in batch_items(output))
            continue
        path = output.url.removeprefix(BASE)
        if "missing" in path:
            continue  # a 404: the errback's record, nothing kept
        if "not-an-image" in path:
            pending.extend(_answer(output, b"<!doctype html><html>oops</html>", "image/png"))
        elif path.endswith(".css"):
            pending.extend(_answer(output, CSS, "text/css"))
        else:
            pending.extend(
                _answer(output, PNG if "logo" in path else PNG2 + path.encode(), "image/png")
            )
    return records


def test_an_item_this_crawl_holds_is_recorded_not_fetched_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    global _reuse
    _reuse = MediaReuse(3600)
    monkeypatch.setenv("ZEROARCHIVE_FAKE_NOW", "1000")
    site = _site({"article": "/a/"})
    first = list(media_outputs(_page(1), site, None, _ReusingSpider(_reuse), _reuse))
    assert first and all(isinstance(r, Request) for r in first)
    records = _fetch_all(first)
    fetched = {r.url for r in records}
    assert {f"{BASE}/img/logo.png", f"{BASE}/css/site.css", f"{BASE}/css/img/bg.png"} <= fetched
    kept = [r for r in records if r.reason is None]
    assert kept and all(r.sha256 == hashlib.sha256(r.body or b"").digest() for r in kept)

    # The next article shows the logo, the stylesheet and its image again: none is fetched;
    # its own photo and lazy image are.
    second = list(media_outputs(_page(2), site, None, _ReusingSpider(_reuse), _reuse))
    requested = {
        item.url.removeprefix(BASE)
        for r in second
        if isinstance(r, Request)
        for item, _ in batch_items(r)
    }
    assert requested == {
        "/img/photo-2.png",
        "/img/lazy-2.png",
        "/img/missing.png",
        "/img/not-an-image.png",
        "/fonts/missing.woff2",
    }
    reused = {r.url.removeprefix(BASE): r for r in second if isinstance(r, MediaAnswer)}
    assert set(reused) == {"/img/logo.png", "/css/site.css", "/css/img/bg.png"}
    logo = reused["/img/logo.png"]
    assert logo.body is None and logo.reason is None and logo.article_id == 2
    assert (logo.sha256, logo.size) == (hashlib.sha256(PNG).digest(), len(PNG))
    assert reused["/css/img/bg.png"].kind == "style"

    # Past the reuse window every item is fetched again.
    monkeypatch.setenv("ZEROARCHIVE_FAKE_NOW", str(1000 + 3601))
    third = list(media_outputs(_page(3), site, None, _ReusingSpider(_reuse), _reuse))
    assert all(isinstance(r, Request) for r in third)
    again = {item.url for r in third for item, _ in batch_items(r)}
    assert again >= {f"{BASE}/img/logo.png", f"{BASE}/css/site.css"}


def test_without_reuse_every_snapshot_fetches_its_items() -> None:
    site = _site({"article": "/a/"})
    spider = _ReusingSpider(None)
    for n in (1, 2):
        outputs = list(media_outputs(_page(n), site, None, spider, None))
        assert outputs and all(isinstance(r, Request) for r in outputs)


@pytest.fixture(params=["database", "directory"])
def media(request: pytest.FixtureRequest, db_url: str, tmp_path: Path) -> MediaStore:
    directory = str(tmp_path / "media") if request.param == "directory" else ""
    return MediaStore(open_archive(url=db_url).engine, blobs_for(directory))


def test_a_batch_is_looked_up_once_and_reused_items_are_stored(media: MediaStore) -> None:
    digest = hashlib.sha256(PNG).digest()
    url = f"{BASE}/img/logo.png"
    fetched = MediaAnswer(1, 1, 101, "image", url, 101, body=PNG, content_type="image/png")
    again = MediaAnswer(2, 1, 102, "image", url, 102, body=PNG, content_type="image/png")
    reused = MediaAnswer(
        3, 1, 103, "image", url, 103, content_type="image/png", sha256=digest, size=len(PNG)
    )
    lost = MediaAnswer(3, 1, 103, "image", f"{BASE}/x.png", 103, sha256=b"\x01" * 32, size=9)
    selects: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            selects.append(statement)

    event.listen(media.engine, "before_cursor_execute", seen)
    try:
        with media.engine.begin() as conn:
            counts = store_media(conn, media, [fetched, again, reused, lost])
    finally:
        event.remove(media.engine, "before_cursor_execute", seen)
    assert len(selects) == 1  # one index lookup for the whole batch
    totals: dict[str, int] = {}
    for key, _, n in counts:
        totals[key] = totals.get(key, 0) + n
    assert totals["media/new"] == 1 and totals["media/items"] == 3
    assert totals["media/reused"] == 1 and totals["media/bytes_fetched"] == 2 * len(PNG)
    assert totals["media/refused/failed"] == 1
    rows = list(media_records(media.engine))
    assert [(r.article_id, r.stored, r.sha256, r.bytes, r.reason) for r in rows] == [
        (1, True, digest, len(PNG), None),
        (2, True, digest, len(PNG), None),
        (3, True, digest, len(PNG), None),
        (3, False, None, None, UNSTORED),
    ]
    assert b"".join(media.read(digest)) == PNG
    with media.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(media_item)).scalar() == 1


def test_a_hosts_items_share_a_request_and_the_odd_ones_go_alone(
    db_url: str, tmp_path: Path
) -> None:
    png = (("Content-Type", "image/png"),)
    page = b"""<!doctype html><html><head><title>One</title></head><body><h1>One</h1>
<p>An article long enough to be one, with its pictures.</p>
<img src="/img/a.png"><img src="/img/b.png"><img src="/img/gone.png">
<img src="/img/moved.png"><img src="/private/c.png"></body></html>"""
    routes = {
        "/robots.txt": Route(
            200, (("Content-Type", "text/plain"),), b"User-agent: *\nDisallow: /private/\n"
        ),
        "/s0/": Route(200, (("Content-Type", HTML),), b'<a href="/s0/news/1">1</a>'),
        "/s0/news/1": Route(200, (("Content-Type", HTML),), page),
        "/img/a.png": Route(200, png, PNG),
        "/img/b.png": Route(200, png, PNG2),
        "/img/moved.png": Route(302, (("Location", "/img/b2.png"),), b""),
        "/img/b2.png": Route(200, png, PNG2 + b"2"),
        "/private/c.png": Route(200, png, PNG + b"c"),
    }
    with ReplayServer(routes) as server:
        run = load_and_crawl(db_url, tmp_path, sites_of(server, one={}))
        hits = dict(server.hits)
    rows = {str(r["url"]).split("/", 3)[3]: r for r in media_json(db_url, tmp_path)}
    assert (rows["img/a.png"]["stored"], rows["img/a.png"]["sha256"]) == (
        True,
        hashlib.sha256(PNG).hexdigest(),
    )
    assert rows["img/b.png"]["stored"] is True
    assert rows["img/gone.png"]["reason"] == "failed:404"
    assert rows["private/c.png"]["reason"] == "failed:robots_disallowed"
    moved = [r for url, r in rows.items() if url in ("img/moved.png", "img/b2.png")]
    assert len(moved) == 1 and moved[0]["stored"] is True
    assert moved[0]["sha256"] == hashlib.sha256(PNG2 + b"2").hexdigest()
    # Fetched once each inside the batch; the refused one never.
    assert hits["/img/a.png"] == hits["/img/b.png"] == 1 and "/private/c.png" not in hits
    assert stat(run, "zeroarchive/media/batched") >= 2


def test_media_held_by_a_worker_killed_mid_fetch_are_fetched_by_the_next(
    mariadb_url: str, redis_url: str, tmp_path: Path
) -> None:
    import signal
    from dataclasses import replace

    from tests.test_distributed import (
        counts,
        finish,
        load_sites,
        schedule_once,
        start_worker,
        wait_until,
    )
    from tests.test_media import MEDIA_ON, media_routes
    from tests.test_recovery_e2e import HEARTBEAT, heartbeats

    routes = media_routes(sites=1)
    logo = routes["/img/logo.png"]
    # The logo is in the first batch of each page: the worker is mid-fetch until killed.
    routes["/img/logo.png"] = replace(logo, delay=120)
    with ReplayServer(routes) as server:
        load_sites(mariadb_url, tmp_path, sites_of(server, one={}))
        schedule_once(mariadb_url, redis_url, tmp_path, HEARTBEAT)
        log = tmp_path / "doomed.log"
        doomed = start_worker(mariadb_url, redis_url, tmp_path, log, HEARTBEAT, extra_env=MEDIA_ON)
        wait_until(
            lambda: counts(mariadb_url)[1] == 2 and server.hits["/img/logo.png"] >= 1,
            90,
            "the worker to store both pages and fetch their media",
        )
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
        server.routes["/img/logo.png"] = logo
        wait_until(lambda: not heartbeats(redis_url), 30, "the heartbeat to expire")
        again = schedule_once(mariadb_url, redis_url, tmp_path, HEARTBEAT)
        assert "gone (no heartbeat)" in again, again
        log = tmp_path / "survivor.log"
        survivor = start_worker(
            mariadb_url,
            redis_url,
            tmp_path,
            log,
            HEARTBEAT,
            "ZEROARCHIVE_IDLE_LIMIT=2",
            extra_env=MEDIA_ON,
        )
        finish(survivor, log)
    rows = media_json(mariadb_url, tmp_path)
    logos = [r for r in rows if str(r["url"]).endswith("/img/logo.png")]
    # Each page's logo recorded once, stored: the batch the dead worker held was taken back.
    assert len(logos) == len({r["article_id"] for r in logos}) == 2
    assert all(r["stored"] for r in logos)
    shown = [(r["article_id"], r["snapshot_at"], r["url"]) for r in rows]
    assert len(shown) == len(set(shown))
    assert counts(mariadb_url)[1] == 2


def test_a_batch_past_one_items_limit_of_bytes_leaves_the_rest_to_go_alone() -> None:
    import asyncio
    from types import SimpleNamespace

    from middlewares.media import MediaBatchDownloaderMiddleware
    from zeroarchive.media.fetch import RESULTS

    fetched: list[str] = []

    class Handlers:
        async def download_request_async(self, request: Request) -> Response:
            fetched.append(request.url)
            size = 5000 if request.url.endswith("big.png") else 100
            return Response(request.url, body=PNG[:8] + b"\0" * (size - 8))

    downloader = SimpleNamespace(handlers=Handlers(), middleware=SimpleNamespace(middlewares=()))
    crawler = SimpleNamespace(engine=SimpleNamespace(downloader=downloader), stats=None)
    middleware = MediaBatchDownloaderMiddleware(crawler)  # type: ignore[arg-type]
    page = FetchedPage(
        1,
        1,
        "news",
        5,
        200,
        f"{BASE}/a/1",
        {},
        "utf-8",
        b'<html><body><img src="/a.png"><img src="/big.png"><img src="/c.png"></body></html>',
    )
    site = _site({"article": "/a/", "media_max_bytes": 5000})
    (batch,) = media_outputs(page, site, None, _Spider())
    answer = asyncio.run(middleware.process_request(batch))
    assert answer is not None
    results = batch.meta[RESULTS]
    # a and big fetched in the batch (5,100 bytes held: past 5,000); c goes on its own.
    assert fetched == [f"{BASE}/a.png", f"{BASE}/big.png"]
    assert [type(r).__name__ for r in results] == ["Fetched", "Fetched", "Request"]
    assert results[2].url == f"{BASE}/c.png" and not archive_meta(results[2]).get("batch")


def test_a_video_goes_alone_never_inside_its_hosts_batch() -> None:
    page = FetchedPage(
        1,
        1,
        "news",
        5,
        200,
        f"{BASE}/a/1",
        {},
        "utf-8",
        b'<html><body><img src="/a.png"><video src="/v.mp4"></video><img src="/b.png">'
        b'<img src="https://cdn.example/c.png"></body></html>',
    )
    site = _site({"article": "/a/", "media": ["images", "video"]})
    requests = [r for r in media_outputs(page, site, None, _Spider()) if isinstance(r, Request)]
    batches = {r.url: archive_meta(r).get("batch") for r in requests}
    assert batches == {
        # yt-dlp's (middlewares/video.py), never fetched as bytes inside a batch.
        f"{BASE}/v.mp4": None,
        f"{BASE}/a.png": [["image", f"{BASE}/a.png", 0], ["image", f"{BASE}/b.png", 0]],
        # A host's lone item as a request of its own (not asked for twice when it fails).
        "https://cdn.example/c.png": None,
    }


def test_a_hosts_items_go_sixteen_a_request() -> None:
    images = "".join(f'<img src="/i/{n}.png">' for n in range(20))
    body = f"<html><body>{images}</body></html>".encode()
    page = FetchedPage(1, 1, "news", 5, 200, f"{BASE}/a/1", {}, "utf-8", body)
    requests = list(media_outputs(page, _site({"article": "/a/"}), None, _Spider()))
    assert [len(batch_items(r)) for r in requests] == [16, 4]
    assert [item.url for r in requests for item, _ in batch_items(r)] == [
        f"{BASE}/i/{n}.png" for n in range(20)
    ]
