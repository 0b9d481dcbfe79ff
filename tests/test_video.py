"""Videos (zeroarchive/media/video.py, middlewares/video.py, zeroarchive/media/expiry.py):
local article pages with HTML5 videos crawled end to end, their videos downloaded by the
real yt-dlp (its generic extractor: a direct file, and its HTML5 extractor behind an
og:video player page) and stored by content; every refusal recorded; the same through the
redis queue; a YouTube watch page's item handed to yt-dlp's YouTube extractor; videos
expired by `scrapy rotate_snapshots` under a fake clock, their records kept.

yt-dlp's YouTube extractor is not run here: it needs youtube.com itself (its player code
and API), which no test reaches. The videos are tiny files made with ffmpeg
(tests/fixtures/video/SOURCE.txt)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sqlalchemy import func, select

from tests.conftest import scrapy
from tests.forward_proxy import ForwardProxy
from tests.replay import ReplayServer, Route
from tests.test_generic import write_sites
from zeroarchive.core.items import FetchedPage
from zeroarchive.media.expiry import expire_videos
from zeroarchive.media.fetch import page_media
from zeroarchive.media.store import (
    MediaRecord,
    MediaStore,
    blobs_for,
    media_records,
    media_records_by_site,
)
from zeroarchive.publish.datasets import write_media
from zeroarchive.sites.record import Site, SiteConfigError, parse_config, parse_spec
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.schema import article as article_table
from zeroarchive.storage.schema import media_chunk, media_item

FIXTURES = Path(__file__).parent / "fixtures"
MP4 = (FIXTURES / "video" / "tiny.mp4").read_bytes()
WEBM = (FIXTURES / "video" / "tiny.webm").read_bytes()
#: Bigger than the site's media_max_bytes below: an MP4 of its own, padded.
BIG = MP4 + b"\x00" * 65536
HTML = "text/html; charset=utf-8"
MEDIA_ON = {"ZEROARCHIVE_MEDIA_ENABLED": "1"}
DAY = 86400


class _Videos(BaseHTTPRequestHandler):
    """The video host: its files, a slow one, and who asked for what (Referer, agent)."""

    server: _VideoServer

    def do_GET(self) -> None:
        self.server.asked.append(
            (self.path, self.headers.get("Referer"), self.headers.get("User-Agent"))
        )
        if self.path == "/slow.mp4":
            self.server.release.wait(30)
            return
        found = self.server.files.get(self.path)
        if found is None:
            self.send_error(404)
            return
        content_type, body = found
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(ConnectionError):
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _VideoServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Videos)
        self.asked: list[tuple[str, str | None, str | None]] = []
        self.release = threading.Event()
        player = b"""<!doctype html><html><head><title>Player</title></head><body>
<video controls width="640"><source src="/player-clip.mp4" type="video/mp4"></video>
</body></html>"""
        self.files = {
            "/clip.mp4": ("video/mp4", MP4),
            "/clip.webm": ("video/webm", WEBM),
            # The same bytes as /clip.mp4, behind a player page: stored once.
            "/player-clip.mp4": ("video/mp4", MP4),
            "/player.html": (HTML, player),
            "/big.mp4": ("video/mp4", BIG),
            "/fake.mp4": ("video/mp4", b"<!doctype html><html><body>Not found</body></html>"),
            "/private/clip.mp4": ("video/mp4", MP4),
            "/robots.txt": ("text/plain", b"User-agent: *\nDisallow: /private/\n"),
        }

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_port}{path}"


@pytest.fixture
def videos() -> Iterator[_VideoServer]:
    server = _VideoServer()
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()


def article(n: int, body: str) -> bytes:
    return f"""<!doctype html><html><head><title>Article {n}</title>{body}</head><body>
<h1>Article {n}</h1><p>Text of article {n}, long enough to be an article of its own.</p>
</body></html>""".encode()


def routes_for(pages: dict[str, str]) -> dict[str, Route]:
    links = "".join(f'<a href="/news/{name}">{name}</a>' for name in pages)
    routes = {"/": Route(200, (("Content-Type", HTML),), links.encode())}
    for n, (name, body) in enumerate(pages.items()):
        routes[f"/news/{name}"] = Route(200, (("Content-Type", HTML),), article(n, body))
    return routes


def site(server: ReplayServer, **config: object) -> dict[str, object]:
    return {
        "name": "videos",
        "url": server.url("/"),
        "config": {"article": "/news/", "delay": 0, "media": ["video"], **config},
    }


def media_json(db_url: str, tmp_path: Path, *args: str) -> list[dict[str, object]]:
    run = scrapy("media", "--json", *args, db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    return [json.loads(line) for line in run.stdout.splitlines()]


def crawl(db_url: str, tmp_path: Path, sites: list[dict[str, object]], *settings: str) -> str:
    loaded = scrapy(
        "load_sites", str(write_sites(tmp_path / "sites.yaml", sites)), db_url=db_url, cwd=tmp_path
    )
    assert loaded.returncode == 0, loaded.output
    args = [arg for setting in settings for arg in ("-s", setting)]
    run = scrapy("crawl", "generic", *args, db_url=db_url, cwd=tmp_path, extra_env=MEDIA_ON)
    assert run.returncode == 0 and "Traceback" not in run.output, run.output
    return run.output


def test_html5_videos_are_downloaded_by_ytdlp_stored_once_and_refusals_recorded(
    tmp_path: Path, videos: _VideoServer
) -> None:
    # SQLite here; MariaDB crawls videos in test_videos_ride_the_redis_queue.
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    pages = {
        "src": f'</head><body><video src="{videos.url("/clip.mp4")}"></video>',
        "source": f'</head><body><video><source src="{videos.url("/clip.webm")}"></video>',
        "og": f'<meta property="og:video" content="{videos.url("/player.html")}">',
        "refused": f"""</head><body><video src="{videos.url("/missing.mp4")}"></video>
            <video src="{videos.url("/big.mp4")}"></video>
            <video src="{videos.url("/fake.mp4")}"></video>
            <video src="{videos.url("/slow.mp4")}"></video>
            <video src="http://video.invalid/clip.mp4"></video>""",
    }
    with ReplayServer(routes_for(pages)) as server:
        output = crawl(
            db_url,
            tmp_path,
            [site(server, media_max_bytes=len(MP4) + 4096, robots=False)],
            "DOWNLOAD_TIMEOUT=2",
            "RETRY_TIMES=0",
        )
        base = server.base_url
    videos.release.set()
    rows = media_json(db_url, tmp_path)
    assert {row["kind"] for row in rows} == {"video"}
    by_url = {str(row["url"]): row for row in rows}
    mp4 = hashlib.sha256(MP4).hexdigest()
    src, source, player = (
        by_url[videos.url(path)] for path in ("/clip.mp4", "/clip.webm", "/player.html")
    )
    assert (src["stored"], src["sha256"], src["bytes"]) == (True, mp4, len(MP4))
    assert (source["stored"], source["sha256"], source["bytes"]) == (
        True,
        hashlib.sha256(WEBM).hexdigest(),
        len(WEBM),
    )
    assert (src["content_type"], source["content_type"]) == ("video/mp4", "video/webm")
    # og:video named a player page: yt-dlp found its <video> and downloaded that.
    assert (player["stored"], player["sha256"]) == (True, mp4)
    assert {
        str(row["url"]).rsplit("/", 1)[-1]: row["reason"] for row in rows if not row["stored"]
    } == {
        "missing.mp4": "failed:404",
        "big.mp4": "too-large",
        "fake.mp4": "not-media",
        "slow.mp4": "failed:timeout",
        "clip.mp4": "failed:dns",
    }
    assert all(row["sha256"] is None and row["bytes"] is None for row in rows if not row["stored"])
    # The same bytes under two URLs: one item, read back whole.
    archive = open_archive(url=db_url)
    with archive.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(media_item)).scalar() == 2
    store = MediaStore(archive.engine, blobs_for(""))
    assert b"".join(store.read(bytes.fromhex(mp4))) == MP4
    # Each video was asked for as a browser would: the page (or the player) as Referer,
    # the crawl's user agent.
    asked = {path: (referer, agent) for path, referer, agent in videos.asked}
    assert asked["/clip.mp4"][0] == base + "/news/src"
    assert asked["/clip.webm"][0] == base + "/news/source"
    assert asked["/player-clip.mp4"][0] == videos.url("/player.html")
    assert all(agent and agent.startswith("zeroarchive/") for _, agent in asked.values())
    assert "'zeroarchive/media/video/downloaded': 3" in output
    assert "'zeroarchive/media/refused/failed': 3" in output


def test_a_video_goes_through_the_sites_proxy_into_the_directory_backend(
    tmp_path: Path, videos: _VideoServer
) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    media_dir = tmp_path / "media"
    pages = {"one": f'</head><body><video src="{videos.url("/clip.mp4")}"></video>'}
    with (
        ForwardProxy(credentials="archiver:s3cret") as proxy,
        ReplayServer(routes_for(pages)) as server,
    ):
        crawl(
            db_url,
            tmp_path,
            [site(server, proxy=proxy.url())],
            f"ZEROARCHIVE_MEDIA_DIR={media_dir}",
        )
    # yt-dlp went out through the site's proxy, with its credentials.
    assert proxy.passed[videos.url("/clip.mp4")] >= 1 and proxy.refused == 0
    (row,) = media_json(db_url, tmp_path)
    digest = hashlib.sha256(MP4).hexdigest()
    assert row["stored"] and row["sha256"] == digest
    assert (media_dir / digest[:2] / digest[2:4] / digest).read_bytes() == MP4
    # yt-dlp's directory and the writer's spool file are both gone.
    assert list((media_dir / "tmp").iterdir()) == []


def test_videos_ride_the_redis_queue(
    mariadb_url: str, redis_url: str, tmp_path: Path, videos: _VideoServer
) -> None:
    from tests.test_distributed import finish, load_sites, schedule_once, start_worker

    pages = {
        "a": f'</head><body><video src="{videos.url("/clip.mp4")}"></video>',
        "b": f'</head><body><video><source src="{videos.url("/missing.webm")}"></video>',
        "c": f'</head><body><video src="{videos.url("/private/clip.mp4")}"></video>',
    }
    with ReplayServer(routes_for(pages)) as server:
        load_sites(mariadb_url, tmp_path, [site(server)])
        schedule_once(mariadb_url, redis_url, tmp_path)
        log = tmp_path / "worker.log"
        worker = start_worker(
            mariadb_url, redis_url, tmp_path, log, "ZEROARCHIVE_IDLE_LIMIT=2", extra_env=MEDIA_ON
        )
        finish(worker, log)
    rows = {
        str(row["url"]).removeprefix(videos.url("")): row
        for row in media_json(mariadb_url, tmp_path)
    }
    assert rows["/clip.mp4"]["stored"] and rows["/clip.mp4"]["sha256"] == (
        hashlib.sha256(MP4).hexdigest()
    )
    assert rows["/missing.webm"]["reason"] == "failed:404"
    # The video host's robots.txt is obeyed as for any item: yt-dlp never asked for it.
    assert (rows["/private/clip.mp4"]["stored"], rows["/private/clip.mp4"]["reason"]) == (
        False,
        "failed:robots_disallowed",
    )
    assert "/private/clip.mp4" not in {path for path, _, _ in videos.asked}


def test_a_watch_page_is_its_video_for_ytdlps_youtube_extractor() -> None:
    import gzip

    import yt_dlp.extractor

    page = gzip.decompress((FIXTURES / "youtube" / "watch-2lAe1cqCOXo.html.gz").read_bytes())
    url = "https://www.youtube.com/watch?v=2lAe1cqCOXo"
    fetched = FetchedPage(1, 1, "YTVideo", 5, 200, url, {"Content-Type": [HTML]}, "utf-8", page)
    youtube = Site(1, "yt", "https://www.youtube.com/@google", "youtube", parse_config({}, "yt"))
    found = page_media(fetched, youtube, None)
    assert found[0] == ("video", url)
    assert [item for item in found if item.kind == "video"] == [("video", url)]
    assert {item.kind for item in found} == {"video", "image", "style"}
    # The extractor yt-dlp picks for it is its YouTube one (the generic one takes any URL).
    chosen = next(
        ie for ie in yt_dlp.extractor.gen_extractor_classes() if ie.suitable(url)
    ).ie_key()
    assert chosen == "Youtube"
    # A news site asks for video only when its `media` says so.
    news = Site(2, "n", "https://n.example/", "news", parse_config({}, "n"))
    assert not [item for item in page_media(fetched, news, None) if item.kind == "video"]


def test_video_keep_days_is_a_whole_number_of_days() -> None:
    assert parse_config({}, "s").video_keep_days == 30
    assert parse_config({"video_keep_days": "7"}, "s").video_keep_days == 7
    for bad in (0, 1.5, "month", -3):
        with pytest.raises(SiteConfigError, match="video_keep_days"):
            parse_config({"video_keep_days": bad}, "s")


# --- expiry ---------------------------------------------------------------------------------

T0 = 1_750_000_000


def _archive_with_videos(db_url: str, media_dir: str) -> tuple[MediaStore, dict[str, bytes]]:
    """Site one keeps videos 10 days, site two the default 30. Video x: shown on one at T0
    and on two at T0+15d; y: on one at T0; z: on two at T0; w: a video on one at T0 whose
    bytes are also an image there."""
    archive = open_archive(url=db_url)
    config = {"one": {"article": "/a/", "video_keep_days": 10}, "two": {"article": "/a/"}}
    article_of = {}
    for name, site_config in config.items():
        spec = parse_spec({"name": name, "url": f"https://{name}.example/", "config": site_config})
        site_id = archive.sites.upsert(spec, 1)[0]
        archive.articles.add(site_id, "Article", [f"https://{name}.example/a/1"], 1)
        with archive.engine.connect() as conn:
            article_of[name] = conn.execute(
                select(article_table.c.article_id).where(article_table.c.site_id == site_id)
            ).scalar_one()
    store = MediaStore(archive.engine, blobs_for(media_dir))
    contents = {name: MP4 + name.encode() for name in "xyzw"}
    shown = [
        ("x", "one", T0, "video"),
        ("x", "two", T0 + 15 * DAY, "video"),
        ("y", "one", T0, "video"),
        ("z", "two", T0, "video"),
        ("w", "one", T0, "video"),
        ("w", "one", T0, "image"),
    ]
    digests = {}
    with archive.engine.begin() as conn:
        records = []
        for name, on, at, kind in shown:
            put = store.put(conn, [contents[name]], "video/mp4", at)
            digests[name] = put.sha256
            records.append(
                MediaRecord(
                    article_of[on],
                    at,
                    kind,
                    f"https://{on}.example/{name}.mp4",
                    put.sha256,
                    put.size,
                    "video/mp4",
                    at + 60,
                    True,
                    None,
                )
            )
        store.record(conn, records)
    return store, digests


def _rotate(db_url: str, tmp_path: Path, at: int, *args: str) -> str:
    run = scrapy(
        "rotate_snapshots",
        "--before",
        "2020-01",
        *args,
        db_url=db_url,
        cwd=tmp_path,
        extra_env={"ZEROARCHIVE_FAKE_NOW": str(at)},
    )
    assert run.returncode == 0, run.output
    return run.stdout


def test_rotation_expires_a_video_once_every_record_of_its_bytes_is_old(
    db_url: str, tmp_path: Path
) -> None:
    store, digests = _archive_with_videos(db_url, "")
    export = ("--export", str(tmp_path / "export"))
    at = T0 + 20 * DAY
    assert "Videos: 1 would expire" in _rotate(db_url, tmp_path, at)
    assert b"".join(store.read(digests["y"])) == MP4 + b"y"
    assert "Videos: 1 expired" in _rotate(db_url, tmp_path, at, *export)
    rows = media_json(db_url, tmp_path)
    expired = [row for row in rows if row["reason"] == "expired"]
    y = digests["y"].hex()
    assert [(r["url"], r["sha256"], r["bytes"], r["stored"]) for r in expired] == [
        ("https://one.example/y.mp4", y, len(MP4) + 1, False)
    ]
    assert expired[0]["expired_at"] == at and expired[0]["content_type"] == "video/mp4"
    assert all("expired_at" not in row for row in rows if row["reason"] is None)
    with pytest.raises(LookupError):
        list(store.read(digests["y"]))
    # x: its record on two is 5 days old (two keeps 30); z: 20 days on two; w: an image too.
    for name in "xzw":
        assert b"".join(store.read(digests[name])) == MP4 + name.encode()

    later = T0 + 46 * DAY
    assert "Videos: 2 expired" in _rotate(db_url, tmp_path, later, *export)
    expired_now = {
        str(row["url"]).rsplit("/", 1)[-1]
        for row in media_json(db_url, tmp_path)
        if row["reason"] == "expired"
    }
    assert expired_now == {"x.mp4", "y.mp4", "z.mp4"}
    with store.engine.connect() as conn:
        held = set(conn.execute(select(media_item.c.sha256)).scalars())
        chunks = set(conn.execute(select(media_chunk.c.sha256).distinct()).scalars())
    assert {bytes(d) for d in held} == {bytes(d) for d in chunks} == {digests["w"]}
    # Fetched again later, the same video is stored anew.
    with store.engine.begin() as conn:
        assert store.put(conn, [MP4 + b"x"], "video/mp4", later).new


def test_expiry_removes_the_files_of_the_directory_backend(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    media_dir = tmp_path / "media"
    store, digests = _archive_with_videos(db_url, str(media_dir))
    done = expire_videos(store, T0 + 100 * DAY)
    assert (done.videos, done.records) == (3, 4)
    files = {p.name for p in media_dir.rglob("*") if p.is_file()}
    assert files == {digests["w"].hex()}
    records = list(media_records(store.engine))
    assert sum(1 for r in records if r.reason == "expired" and r.sha256 is not None) == 4


def test_an_expired_videos_row_in_the_media_dataset_says_when_it_expired(tmp_path: Path) -> None:
    """`scrapy media --parquet`'s writer: expired_at in every row, null but for the expired
    video's (JSON lines: the key of its line alone)."""
    import pandas as pd

    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    store, digests = _archive_with_videos(db_url, "")
    at = T0 + 20 * DAY
    assert expire_videos(store, at).videos == 1
    out = tmp_path / "media"
    assert write_media(media_records_by_site(store.engine), out).rows == 6
    frame = pd.read_parquet(out)
    expired = frame[frame["reason"] == "expired"]
    assert list(expired["url"]) == ["https://one.example/y.mp4"]
    assert list(expired["sha256"]) == [digests["y"].hex()]
    assert expired["expired_at"].iloc[0] == pd.Timestamp(at, unit="s", tz="UTC")
    assert frame[frame["reason"].isna()]["expired_at"].isna().all()
    lines = [r.as_json() for r in media_records(store.engine)]
    assert [r["expired_at"] for r in lines if "expired_at" in r] == [at]
