"""End-to-end crawls of the YouTube emulator (tests/youtube_server.py, real saved pages)
through the real `scrapy` command line, on SQLite and MariaDB."""

from __future__ import annotations

import calendar
import time
from pathlib import Path

import pytest

from tests.conftest import Run, scrapy
from tests.emulator import EmulatorServer
from tests.test_generic import articles_by_url, list_ok_at, stat, write_sites
from tests.youtube_server import GOOGLE, PROGRAMMING, VOLVO, YoutubeApp, feed_video_ids, watch_page
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.snapshots import iter_snapshots


def crawl_youtube(
    db_url: str, tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> Run:
    run = scrapy("crawl", "youtube", *args, db_url=db_url, cwd=tmp_path, extra_env=env)
    assert run.returncode == 0, run.output
    assert "Traceback" not in run.output, run.output
    assert stat(run, "zeroarchive/list_page_failures") == 0, run.output
    return run


def load(db_url: str, tmp_path: Path, sites: list[dict[str, object]]) -> None:
    # No pause between one site's requests (a second by default): 17 requests a channel.
    sites = [{**site, "config": {"delay": 0}} for site in sites]
    loaded = scrapy(
        "load_sites", str(write_sites(tmp_path / "sites.yaml", sites)), db_url=db_url, cwd=tmp_path
    )
    assert loaded.returncode == 0, loaded.output


def test_a_channel_is_archived_through_its_feed(db_url: str, tmp_path: Path) -> None:
    app = YoutubeApp()
    videos = feed_video_ids()
    with EmulatorServer(app) as server:
        url = server.url(f"/channel/{GOOGLE}/videos")
        load(db_url, tmp_path, [{"name": "google", "url": url, "type": "youtube"}])
        first = crawl_youtube(db_url, tmp_path)
        assert server.hits[f"GET /feeds/videos.xml?channel_id={GOOGLE}"] == 1
        # Each video page once, and no other request but robots.txt.
        assert dict(app.watched) == dict.fromkeys(videos, 1)
        assert {k for k in server.hits if not k.startswith(("GET /watch", "GET /feeds"))} == {
            "GET /robots.txt"
        }
        # 0archive's plan: each video once. A day later the feed is read again, and
        # nothing is snapshotted again.
        later = str(int(time.time()) + 86400 + 60)
        second = crawl_youtube(db_url, tmp_path, env={"ZEROARCHIVE_FAKE_NOW": later})
        assert server.hits[f"GET /feeds/videos.xml?channel_id={GOOGLE}"] == 2
        assert dict(app.watched) == dict.fromkeys(videos, 1)
        base = server.base_url
    assert stat(first, "zeroarchive/snapshots_saved") == len(videos) == 15
    assert stat(second, "zeroarchive/snapshots_saved") == 0
    stored = articles_by_url(db_url)
    assert set(stored) == {f"{base}/watch?v={v}" for v in videos}
    assert {row["article_type"] for row in stored.values()} == {"YTVideo"}
    assert all(row["next_snapshot_at"] == 0 for row in stored.values())
    # The feed's publication times, e.g. its first entry's 2015-05-04T00:01:27+00:00.
    first_video = stored[f"{base}/watch?v={videos[0]}"]
    assert first_video["published_at"] == calendar.timegm((2015, 5, 4, 0, 1, 27, 0, 0, 0))
    assert all(row["published_at"] for row in stored.values())
    # Each snapshot is the watch page as served.
    for exported in iter_snapshots(open_archive(url=db_url).engine):
        video = exported.url.rsplit("=", 1)[1]
        assert exported.snapshot.raw == watch_page(app.pages[video])
    assert list(list_ok_at(db_url).values()) != [0]


@pytest.mark.parametrize(
    ("path", "channel"),
    [("/user/TheVolvorocks", VOLVO), ("/@volvo", VOLVO), ("/c/ProgrammingKnowledge", PROGRAMMING)],
)
def test_a_channel_url_without_its_id_is_read_for_it(
    path: str, channel: str, tmp_path: Path
) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    app = YoutubeApp()
    with EmulatorServer(app) as server:
        load(db_url, tmp_path, [{"name": "c", "url": server.url(path), "type": "youtube"}])
        run = crawl_youtube(db_url, tmp_path, "-a", "mode=discover")
        assert server.hits[f"GET {path}"] == 1
        assert server.hits[f"GET /feeds/videos.xml?channel_id={channel}"] == 1
    assert stat(run, "zeroarchive/articles_new") == 15


def test_a_channel_page_without_an_id_is_an_error_of_that_site(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    with EmulatorServer(YoutubeApp()) as server:
        sites = [{"name": "gone", "url": server.url("/user/NoSuchChannel"), "type": "youtube"}]
        load(db_url, tmp_path, sites)
        run = scrapy("crawl", "youtube", db_url=db_url, cwd=tmp_path)
    # The run's one request failed: exit status 4 (zeroarchive/commands/crawl.py).
    assert run.returncode == 4 and "Traceback" not in run.output
    assert stat(run, "zeroarchive/errors/http_404") == 1
    assert stat(run, "zeroarchive/list_page_failures") == 1
