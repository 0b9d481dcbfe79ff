"""End-to-end crawls of the Facebook emulator (tests/facebook_server.py) through the real
`scrapy` command line, with Debian's Chromium. Skipped without Chromium, except under
ZEROARCHIVE_REQUIRE_SERVICES=1 (CI installs it)."""

from __future__ import annotations

import os
import re
import secrets
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from scrapy.settings import Settings
from sqlalchemy import Engine, create_engine, func, select

from spiders.facebook import FacebookSpider
from spiders.generic import GenericSpider
from tests.conftest import REPO, Run, require_service, scrapy, start_scrapy
from tests.facebook_server import FacebookServer
from tests.test_generic import articles_by_url, list_ok_at, stat, write_sites
from zeroarchive.commands.crawl import EXIT_ALL_FAILED
from zeroarchive.crawl.browser import HANDLER
from zeroarchive.storage.schema import article_snapshot
from zeroarchive.storage.schema import site as site_table
from zeroarchive.storage.snapshots import iter_snapshots

CHROMIUM = Path("/usr/bin/chromium")
TAG = "ZEROARCHIVE_TEST_TAG"
FAST = ("-s", "FACEBOOK_SCROLL_WAIT=0.5", "-s", "FACEBOOK_EXPAND_WAIT=5", "-s", "LOG_LEVEL=INFO")


@pytest.fixture(autouse=True)
def chromium() -> None:
    require_service("Chromium", None if CHROMIUM.exists() else f"{CHROMIUM} is not installed")


def chromium_pids(tag: str | None = None) -> list[int]:
    """Live (not zombie) Chromium processes; with ``tag``, only those of the crawl run with
    that tag in its environment (renderers, forked by the zygote, have a clean environment:
    they belong to the crawl through their parents)."""
    procs: dict[int, tuple[int, str]] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            # One read a process (name and parent are both in stat): tests sample this often.
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            procs[int(proc.name)] = (int(fields[1]), name)
    tagged: dict[int, bool] = {}

    def has_tag(pid: int) -> bool:
        if pid not in tagged:
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes()
            except OSError:
                environ = b""
            tagged[pid] = f"{TAG}={tag}".encode() in environ.split(b"\0")
        return tagged[pid]

    def of_crawl(pid: int) -> bool:
        while pid in procs:
            if has_tag(pid):
                return True
            pid = procs[pid][0]
        return False

    return [
        pid
        for pid, (_, name) in procs.items()
        if name.startswith(("chromium", "chrome")) and (tag is None or of_crawl(pid))
    ]


def live_chromium(pids: set[int]) -> set[int]:
    """Those of ``pids`` that are still live (not zombie) Chromium processes: what a test
    that saw a crawl's browser waits on, read from their own /proc entries rather than from
    a walk of every process (``chromium_pids()``), which the waits repeated a few dozen
    times on a busy machine."""
    live = set()
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        if name.startswith(("chromium", "chrome")) and stat.rsplit(")", 1)[1].split()[0] != "Z":
            live.add(pid)
    return live


def load_sites(db_url: str, tmp_path: Path, sites: list[dict[str, object]]) -> None:
    loaded = scrapy(
        "load_sites", str(write_sites(tmp_path / "sites.yaml", sites)), db_url=db_url, cwd=tmp_path
    )
    assert loaded.returncode == 0, loaded.output


def load(db_url: str, tmp_path: Path, fb: FacebookServer, junk: str = "", **config: object) -> None:
    site = {"name": "nintendo", "url": fb.url(fb.page_path + junk), "type": "facebook"}
    site["config"] = {"delay": 0, **config}
    load_sites(db_url, tmp_path, [site])


def crawl(db_url: str, tmp_path: Path, tag: str, *args: str, code: int = 0) -> Run:
    run = scrapy(
        "crawl", "facebook", *FAST, *args, db_url=db_url, cwd=tmp_path, extra_env={TAG: tag}
    )
    assert run.returncode == code, run.output
    assert "Traceback" not in run.output, run.output
    return run


def snapshots(db_url: str) -> dict[str, str]:
    engine = create_engine(db_url)
    try:
        return {s.url: s.snapshot.raw.decode(s.snapshot.encoding) for s in iter_snapshots(engine)}
    finally:
        engine.dispose()


@dataclass
class Crawled:
    """One crawl of two Facebook sites side by side, a page and a public group, and what
    each emulator saw."""

    db_url: str
    run: Run
    tag: str
    site_ids: dict[str, int]
    expected: dict[str, set[str]]
    markers: dict[str, dict[str, set[str]]]
    hits: dict[str, dict[str, int]]
    covered: str


def crawl_page_and_group(db_url: str, tmp_path: Path) -> Crawled:
    """The page and the group in one crawl (one browser, each site in contexts of its own):
    a Chromium crawl costs ~2 CPU s before its first page, and the two scenarios were a
    crawl each per engine. One test asserts on both, so that pytest-xdist, which hands out
    tests one at a time, never runs the crawl twice."""
    tag = secrets.token_hex(6)
    # Post 1's comment pager lies under a layer: clicked, it loads nothing. Four posts a
    # site, the fewest with one that only a scroll brings: a post page with its comments
    # costs Chromium and its driver about 0.8 CPU s.
    with (
        FacebookServer(posts=4) as page,
        FacebookServer(posts=4, group=True, covered_pager_of=1) as group,
    ):
        servers = {"nintendo": page, "group": group}
        sites: list[dict[str, object]] = [
            {"name": "nintendo", "url": page.url(page.page_path)},
            # As a group URL comes from Airtable, with tracking junk (dropped when it loads).
            {
                "name": "group",
                "url": group.url(f"{group.page_path}permalink/1/?ref=share&__tn__=C-R"),
            },
        ]
        for site in sites:
            site.update(type="facebook", config={"delay": 0})
        load_sites(db_url, tmp_path, sites)
        run = crawl(db_url, tmp_path, tag, "-s", "BROWSER_CONTEXT_PAGES=3")
        return Crawled(
            db_url=db_url,
            run=run,
            tag=tag,
            site_ids=site_ids(db_url),
            expected={
                name: {fb.url(f"/{pid}") for post in fb.posts for pid in post.ids}
                for name, fb in servers.items()
            },
            markers={
                name: {fb.url(f"/{post.post_id}"): post.markers() for post in fb.posts}
                for name, fb in servers.items()
            },
            hits={name: dict(fb.hits) for name, fb in servers.items()},
            covered=group.url(f"/{group.posts[1].post_id}"),
        )


def site_ids(db_url: str) -> dict[str, int]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return {
                row.name: row.site_id
                for row in conn.execute(select(site_table.c.name, site_table.c.site_id))
            }
    finally:
        engine.dispose()


def site_stat(crawled: Crawled, name: str, metric: str) -> int:
    return stat(crawled.run, f"zeroarchive/site/{crawled.site_ids[name]}/{metric}")


def test_a_page_and_a_public_group_are_archived_with_every_comment(
    db_url: str, tmp_path: Path
) -> None:
    crawled = crawl_page_and_group(db_url, tmp_path)
    check_page(crawled)
    check_group(crawled)


def check_page(crawled: Crawled) -> None:
    expected = crawled.expected["nintendo"]
    markers = crawled.markers["nintendo"]
    hits = crawled.hits["nintendo"]
    # Every post, linked as story.php or /<page>/posts/<id> (some both), is one Article.
    articles = articles_by_url(crawled.db_url)
    assert {
        url for url, row in articles.items() if row["site_id"] == crawled.site_ids["nintendo"]
    } == expected
    assert set(articles) == expected | crawled.expected["group"]
    stored = snapshots(crawled.db_url)
    assert set(stored) == expected | crawled.expected["group"]
    for url in expected:
        # Every comment (all comments, not just the relevant ones) and every reply.
        assert set(re.findall(r'data-emu="([^"]+)"', stored[url])) == markers[url], url
    assert site_stat(crawled, "nintendo", "snapshots_saved") == len(expected)
    assert list_ok_at(crawled.db_url)["nintendo"] != 0
    assert site_stat(crawled, "nintendo", "facebook/filters_switched") == len(expected)
    assert stat(crawled.run, "zeroarchive/snapshot_failures") == 0
    # Nothing fetched twice: no page, no "more posts" batch, no comment or reply page.
    assert {path: n for path, n in hits.items() if n > 1} == {}
    # Posts 1-3 come with the page, 4 with a scroll.
    assert sum(1 for path in hits if path.startswith("/page_content_list_view/")) == 1
    # Each site's 5 pages (1 list + 4 posts) in contexts of 3 pages: two contexts a site,
    # the first closed as soon as its third page was done (the second with the browser).
    assert stat(crawled.run, "playwright/context_count") == 4
    assert stat(crawled.run, "zeroarchive/browser/contexts_recycled") == 2
    # One Playwright driver for the crawl, whatever the schemes its handler serves.
    assert crawled.run.output.count("Starting download handler") == 1
    assert chromium_pids(crawled.tag) == []


def check_group(crawled: Crawled) -> None:
    """A public group is archived like a page."""
    expected = crawled.expected["group"]
    markers = dict(crawled.markers["group"])
    hits = crawled.hits["group"]
    # The covered pager is marked stuck and the post kept with the comments it shows (the
    # first 5 and their replies), not lost after the click's timeout.
    covered = crawled.covered
    markers[covered] = {m for m in markers[covered] if int(m.split("-")[1][1:]) < 5}
    assert site_stat(crawled, "group", "facebook/pagers_stuck") == 1
    assert stat(crawled.run, "zeroarchive/facebook/pagers_stuck") == 1
    # Every group post, found by scrolling the group, is one Article at its short
    # permalink, snapshotted from its group permalink page with every comment and reply.
    articles = articles_by_url(crawled.db_url)
    assert {
        url for url, row in articles.items() if row["site_id"] == crawled.site_ids["group"]
    } == expected
    stored = snapshots(crawled.db_url)
    assert expected <= set(stored)
    for url in expected:
        if url in markers:
            assert set(re.findall(r'data-emu="([^"]+)"', stored[url])) == markers[url], url
    assert site_stat(crawled, "group", "snapshots_saved") == len(expected)
    assert site_stat(crawled, "group", "snapshot_failures") == 0
    assert {path: n for path, n in hits.items() if n > 1} == {}
    # 3 posts with the group, 1 with the first scroll: one "See more posts" fetch.
    assert sum(1 for path in hits if path.startswith("/groups/117507531664134?bac=")) == 1
    assert chromium_pids(crawled.tag) == []


def load_walled(db_url: str, tmp_path: Path, walled: dict[str, FacebookServer]) -> None:
    sites: list[dict[str, object]] = [
        {"name": name, "url": fb.url(fb.page_path), "type": "facebook", "config": {"delay": 0}}
        for name, fb in walled.items()
    ]
    load_sites(db_url, tmp_path, sites)


def check_wall(run: Run, db_url: str, name: str, fb: FacebookServer) -> None:
    """What a site met by its emulator's gate (``fb.gate`` after ``fb.gate_after`` posts)
    shows after the crawl."""
    site_id = site_ids(db_url)[name]
    at = f"zeroarchive/site/{site_id}"
    kind = "checkpoint" if fb.gate == "checkpoint" else "login_wall"
    assert stat(run, f"{at}/facebook/{kind}") >= 1
    said = rf"Site {name} \(#{site_id}\): Facebook answered .* with a {kind.replace('_', ' ')}"
    assert re.search(said, run.output), run.output
    # Without hammering: only the pages already in flight (SITE_POLICY_CONCURRENCY = 2)
    # met the wall; every other request of the site was dropped before the network.
    assert 1 <= fb.gated_hits <= 2
    assert fb.post_pages_served == fb.gate_after
    assert stat(run, f"{at}/snapshots_saved") == fb.gate_after
    # The gate is a block page: a failure of kind blocked, the post backs off.
    assert stat(run, f"{at}/errors/blocked") == fb.gated_hits
    if fb.gate_after:
        assert stat(run, f"{at}/snapshot_failures") == fb.gated_hits
        assert stat(run, f"{at}/browser/skipped_after_gate") >= 1
        reasons = [
            row["stop_reason"]
            for row in articles_by_url(db_url).values()
            if row["site_id"] == site_id
        ]
        assert reasons.count("last_error:blocked") == fb.gated_hits
    else:
        assert stat(run, f"{at}/list_page_failures") == 1


def test_login_wall_after_two_posts_stops_the_site(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'archive.db'}"
    tag = secrets.token_hex(6)
    with FacebookServer(posts=5, gate="login", gate_after=2) as fb:
        load_walled(db_url, tmp_path, {"nintendo": fb})
        # One crawl finds the posts and meets the wall after two of them (the emulator
        # gates post pages only once two were served, so the list page answers).
        run = crawl(db_url, tmp_path, tag)
    check_wall(run, db_url, "nintendo", fb)
    assert stat(run, "zeroarchive/snapshots_saved") == 2
    assert chromium_pids(tag) == []


def test_a_wall_before_any_post_stops_each_site(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'archive.db'}"
    tag = secrets.token_hex(6)
    # Two sites in one crawl, one gate each: a checkpoint, and a login form in place of the
    # page (one Chromium crawl instead of two).
    with (
        FacebookServer(posts=5, gate="checkpoint") as checkpoint,
        FacebookServer(posts=5, gate="login_form") as login_form,
    ):
        walled = {"checkpoint": checkpoint, "login_form": login_form}
        load_walled(db_url, tmp_path, walled)
        # Every request failed, which crawl says by its exit status (EXIT_ALL_FAILED, 4).
        run = crawl(db_url, tmp_path, tag, code=EXIT_ALL_FAILED)
    for name, fb in walled.items():
        check_wall(run, db_url, name, fb)
    assert stat(run, "zeroarchive/snapshots_saved") == 0
    assert chromium_pids(tag) == []


def snapshots_stored(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(article_snapshot)).scalar_one())


def test_page_crash_leaves_no_chromium(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'archive.db'}"
    tag = secrets.token_hex(6)
    # The held post's page waits for its comments until the renderers are killed: with the
    # usual 5 s it would give up, be stored and close while the test waits for another post.
    patient = (*FAST, "-s", "FACEBOOK_EXPAND_WAIT=30")
    # Two posts: one stored, the other held (a third only cost a page more).
    with FacebookServer(posts=2) as fb:
        fb.hold_comments_of = fb.posts[1].post_id
        load(db_url, tmp_path, fb)
        result: list[Run] = []
        worker = threading.Thread(
            target=lambda: result.append(
                scrapy(
                    "crawl", "facebook", *patient, db_url=db_url, cwd=tmp_path, extra_env={TAG: tag}
                )
            )
        )
        worker.start()
        try:
            assert fb.held.wait(120), "the crawl never asked for the held comments"
            # Another post stored first: a loaded machine may otherwise still be rendering
            # every post when the renderers die, and nothing would show the crawl went on.
            deadline = time.monotonic() + 120
            engine = create_engine(db_url)  # one engine for the polls, not one a poll
            try:
                while snapshots_stored(engine) < 1:
                    assert time.monotonic() < deadline, "no other post was stored"
                    time.sleep(0.3)
            finally:
                engine.dispose()
            seen = set(chromium_pids(tag))
            renderers = [pid for pid in seen if b"--type=renderer" in _cmdline(pid)]
            assert renderers
            for pid in renderers:
                os.kill(pid, signal.SIGKILL)
        finally:
            fb.release.set()
            worker.join(240)
    run = result[0]
    assert run.returncode == 0, run.output
    assert "Traceback" not in run.output, run.output
    assert stat(run, "zeroarchive/errors/page_crashed") + stat(run, "zeroarchive/errors/browser")
    assert stat(run, "zeroarchive/snapshots_saved") >= 1
    assert chromium_pids(tag) == []
    # Not even orphaned (re-parented, so no longer traced to the crawl) ones.
    assert not live_chromium(seen)


def test_killed_crawl_leaves_no_chromium(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'archive.db'}"
    tag = secrets.token_hex(6)
    with FacebookServer(posts=3) as fb:
        fb.hold_comments_of = fb.posts[0].post_id
        load(db_url, tmp_path, fb)
        env = {
            **os.environ,
            "ZEROARCHIVE_DB_URL": db_url,
            "PYTHONPATH": str(REPO),
            "SCRAPY_SETTINGS_MODULE": "settings.base",
            TAG: tag,
        }
        # Forked from the warm background interpreter (a process of its own all the same,
        # killed as one): a new interpreter cost about a second of CPU to import Scrapy.
        crawler = start_scrapy(["crawl", "facebook", *FAST], env, tmp_path)
        try:
            assert fb.held.wait(120), "the crawl never asked for the held comments"
            seen = set(chromium_pids(tag))
            assert seen
            crawler.kill()
            crawler.wait(30)
        finally:
            fb.release.set()
            if crawler.poll() is None:
                crawler.kill()
                crawler.wait(30)
    # Playwright's driver sees its pipe close and kills the browser; give it time to.
    for _ in range(300):
        if not live_chromium(seen):
            break
        time.sleep(0.1)
    assert not live_chromium(seen)


def test_only_the_facebook_spider_uses_the_browser() -> None:
    facebook, generic = Settings(), Settings()
    facebook.setmodule("settings.base")
    generic.setmodule("settings.base")
    FacebookSpider.update_settings(facebook)
    GenericSpider.update_settings(generic)
    assert facebook.getdict("DOWNLOAD_HANDLERS")["https"] == HANDLER
    assert HANDLER not in generic.getdict("DOWNLOAD_HANDLERS").values()
    # The project's middlewares are kept, the browser one added.
    assert set(generic.getdict("DOWNLOADER_MIDDLEWARES")) < set(
        facebook.getdict("DOWNLOADER_MIDDLEWARES")
    )
    assert facebook.getdict("PLAYWRIGHT_LAUNCH_OPTIONS")["executable_path"] == str(CHROMIUM)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
