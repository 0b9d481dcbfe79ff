"""`scrapy save URL... [--watch]`: a page archived at once under an ad-hoc inactive site,
watched afterwards only when asked to; PTT and Dcard posts and YouTube videos saved by their
sources' spiders (the emulators of tests/ptt_server.py, dcard_server.py, youtube_server.py,
built from the recorded answers in tests/fixtures)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

from sqlalchemy import create_engine, select

from tests.conftest import require_service, scrapy
from tests.dcard_server import DcardApp
from tests.emulator import EmulatorServer
from tests.facebook_server import FacebookServer
from tests.ptt_server import ptt_app
from tests.replay import ReplayServer
from tests.test_events import T0, article_page
from tests.test_facebook import CHROMIUM, FAST
from tests.test_facebook import load as load_facebook
from tests.test_facebook import snapshots as facebook_snapshots
from tests.test_generic import write_sites
from tests.test_render import EXPECTED, NAMES, ScriptedSite
from tests.youtube_server import GOOGLE, YoutubeApp, feed_video_ids
from zeroarchive.core.schedule import DAY
from zeroarchive.storage.schema import article, site
from zeroarchive.storage.snapshots import iter_snapshots


def test_save_archives_a_page_now_and_watches_it_only_when_asked(
    db_url: str, tmp_path: Path
) -> None:
    routes = {"/story/1": article_page("s1"), "/story/2": article_page("s2")}
    with ReplayServer(routes) as server:
        env = {"ZEROARCHIVE_FAKE_NOW": str(T0)}
        saved = scrapy(
            "save",
            server.url("/story/1"),
            "--watch",
            "-s",
            "ROBOTSTXT_OBEY=False",
            db_url=db_url,
            cwd=tmp_path,
            extra_env=env,
        )
        assert saved.returncode == 0, saved.output
        assert "Traceback" not in saved.output
        assert server.hits["/story/1"] == 1
        assert re.search(r"^saved http://127\.0\.0\.1:\d+/story/1 \(saved:127", saved.stdout, re.M)
        engine = create_engine(db_url)
        with engine.connect() as conn:
            (row,) = conn.execute(select(site)).all()
            (saved_article,) = conn.execute(select(article)).all()
        assert row.name.startswith("saved:127.0.0.1") and not row.is_active
        assert "watch" not in json.loads(row.config)  # the default watch
        assert saved_article.snapshot_count == 1 and saved_article.first_snapshot_at == T0
        unwatched = scrapy(
            "save",
            server.url("/story/2"),
            "-s",
            "ROBOTSTXT_OBEY=False",
            db_url=db_url,
            cwd=tmp_path,
            extra_env=env,
        )
        assert unwatched.returncode == 0, unwatched.output
        with engine.connect() as conn:
            config = json.loads(conn.execute(select(site.c.config)).scalar_one())
            watch_at = dict(conn.execute(select(article.c.url, article.c.watch_at)).all())
        # Snapshotted once, then the watch is each page's: the first page's first check a
        # week after its snapshot, none for the page saved without --watch.
        assert config["schedule"] == {"steps": []} and "watch" not in config
        assert watch_at == {server.url("/story/1"): T0 + 7 * DAY, server.url("/story/2"): 0}
        # The regular crawl takes the watch check of the inactive ad-hoc site, and walks
        # nothing of it.
        later = scrapy(
            "crawl",
            "generic",
            "-s",
            "ROBOTSTXT_OBEY=False",
            db_url=db_url,
            cwd=tmp_path,
            extra_env={"ZEROARCHIVE_FAKE_NOW": str(T0 + 8 * DAY)},
        )
        assert later.returncode == 0, later.output
        assert server.hits["/story/1"] == 2 and server.hits["/story/2"] == 1
        assert "/" not in server.hits
        # A page that cannot be fetched is said, and the run fails (exit 1).
        closed = scrapy(
            "save",
            "http://127.0.0.1:9/gone",
            "-s",
            "RETRY_TIMES=0",
            db_url=db_url,
            cwd=tmp_path,
            extra_env=env,
        )
        assert closed.returncode == 1, closed.output
        why = "the fetch failed: connection_refused"
        assert f"NOT saved http://127.0.0.1:9/gone (saved:127.0.0.1:9): {why}" in closed.stdout
        assert "Traceback" not in closed.output
        # A platform URL that is no post is refused in one line, before anything is fetched.
        refused = scrapy(
            "save", "https://www.ptt.cc/bbs/Gossiping/index.html", db_url=db_url, cwd=tmp_path
        )
        assert refused.returncode != 0 and "not a PTT post" in refused.output
        assert "Traceback" not in refused.output
        engine.dispose()


def test_posts_and_videos_are_saved_by_their_sources_spiders(db_url: str, tmp_path: Path) -> None:
    ptt, dcard, youtube = ptt_app(), DcardApp(), YoutubeApp()
    with (
        EmulatorServer(ptt) as ptt_server,
        EmulatorServer(dcard) as dcard_server,
        EmulatorServer(youtube) as youtube_server,
    ):
        sites = [
            {"name": "lol", "url": ptt_server.url("/bbs/LoL/index.html"), "type": "ptt"},
            {"name": "funny", "url": dcard_server.url("/f/funny"), "type": "dcard"},
            {"name": "google", "url": youtube_server.url(f"/channel/{GOOGLE}"), "type": "youtube"},
        ]
        loaded = scrapy(
            "load_sites", str(write_sites(tmp_path / "s.yaml", sites)), db_url=db_url, cwd=tmp_path
        )
        assert loaded.returncode == 0, loaded.output
        lol_post = sorted(ptt.boards["LoL"].posts)[0]
        gossiping_post = sorted(ptt.boards["Gossiping"].posts)[0]
        dcard_post = dcard.forum_posts("funny")[0]
        video = feed_video_ids()[0]
        urls = {
            ptt_server.url(lol_post): ("PTT", "lol"),
            # A board not in the table: an ad-hoc, inactive site of the PTT source.
            ptt_server.url(gossiping_post): (
                "PTT",
                f"saved:ptt:{ptt_server.url('/bbs/Gossiping/index.html')}",
            ),
            dcard_server.url(f"/f/funny/p/{dcard_post}"): ("Dcard", "funny"),
            # A watch URL names no channel: filed under the host's ad-hoc YouTube site.
            youtube_server.url(f"/watch?v={video}"): (
                "YTVideo",
                f"saved:youtube:{urlsplit(youtube_server.base_url).netloc}",
            ),
        }
        saved = scrapy(
            "save",
            *urls,
            "--watch",
            "-s",
            "THROTTLE_BASE=0.2",
            db_url=db_url,
            cwd=tmp_path,
        )
        assert saved.returncode == 0, saved.output
        assert "Traceback" not in saved.output
        assert youtube.watched == {video: 1}
        assert ptt_server.hits[f"GET {lol_post}"] >= 1
    engine = create_engine(db_url)
    with engine.connect() as conn:
        rows = conn.execute(
            select(
                article.c.url, article.c.article_type, article.c.snapshot_count, site.c.name
            ).join(site, site.c.site_id == article.c.site_id)
        ).all()
        inactive = set(
            conn.execute(select(site.c.name).where(site.c.is_active.is_(False))).scalars()
        )
    engine.dispose()
    assert {row.url: (row.article_type, row.name) for row in rows} == urls
    assert all(row.snapshot_count == 1 for row in rows)
    assert inactive == {name for _, name in urls.values() if name.startswith("saved:")}


def test_a_facebook_post_is_saved_rendered_by_the_facebook_spider(
    db_url: str, tmp_path: Path
) -> None:
    require_service("Chromium", None if CHROMIUM.exists() else f"{CHROMIUM} is not installed")
    with FacebookServer(posts=3) as fb:
        load_facebook(db_url, tmp_path, fb)
        post = fb.posts[1]
        # Linked as the page's post: filed under the page's site in the table.
        given = fb.url(f"{fb.page_path}{post.post_id}/?refsrc=timeline")
        saved = scrapy("save", given, *FAST, db_url=db_url, cwd=tmp_path)
        assert saved.returncode == 0, saved.output
        assert "Traceback" not in saved.output
        expected = fb.url(f"/{post.post_id}")
        markers = post.markers()
    stored = facebook_snapshots(db_url)
    assert set(stored) == {expected}
    assert set(re.findall(r'data-emu="([^"]+)"', stored[expected])) == markers
    engine = create_engine(db_url)
    with engine.connect() as conn:
        row = conn.execute(
            select(article.c.article_type, site.c.name).join(
                site, site.c.site_id == article.c.site_id
            )
        ).one()
    engine.dispose()
    assert tuple(row) == ("FBPost", "nintendo")


def test_a_page_of_a_site_that_renders_is_saved_as_the_browser_built_it(
    db_url: str, tmp_path: Path
) -> None:
    require_service("Chromium", None if CHROMIUM.exists() else f"{CHROMIUM} is not installed")
    with EmulatorServer(ScriptedSite()) as server:
        config = {"article": r"/news/\d+$", "render": True, "delay": 0}
        sites = [{"name": "scripted", "url": server.url("/news"), "type": "news", "config": config}]
        loaded = scrapy(
            "load_sites", str(write_sites(tmp_path / "s.yaml", sites)), db_url=db_url, cwd=tmp_path
        )
        assert loaded.returncode == 0, loaded.output
        saved = scrapy("save", server.url("/news/2"), db_url=db_url, cwd=tmp_path)
        assert saved.returncode == 0, saved.output
        assert "Traceback" not in saved.output
    engine = create_engine(db_url)
    try:
        (stored,) = list(iter_snapshots(engine))
    finally:
        engine.dispose()
    assert stored.snapshot.rendered
    # The script wrote the real article in: its title is in the DOM, not in the bytes served.
    title = EXPECTED[f"{NAMES[1]}.html.gz"]["title"]
    assert title in stored.snapshot.raw.decode(stored.snapshot.encoding)
