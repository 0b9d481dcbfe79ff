"""Proxies and logged-in sessions: a site's `proxy` (one or a list, in turn), the shared
ZEROARCHIVE_PROXIES pool, for plain and browser requests alike, counted by a local forward
proxy; a facebook site's `cookies_file` session past the login wall. Proxy credentials and
cookie values never show in logs or exports."""

from __future__ import annotations

import gzip
import secrets
from pathlib import Path

from tests.conftest import Run, scrapy
from tests.emulator import EmulatorServer
from tests.facebook_server import FacebookServer
from tests.forward_proxy import ForwardProxy
from tests.replay import ReplayServer, tw_news_pages, tw_news_routes
from tests.test_facebook import TAG, chromium, chromium_pids  # noqa: F401 (fixture)
from tests.test_generic import NEWS_ARTICLE, articles_by_url, stat, write_sites
from tests.test_render import NAMES, ScriptedSite

SECRET = "pr0xy-" + secrets.token_hex(4)


def load(db_url: str, tmp_path: Path, sites: list[dict[str, object]]) -> None:
    loaded = scrapy(
        "load_sites", str(write_sites(tmp_path / "s.yaml", sites)), db_url=db_url, cwd=tmp_path
    )
    assert loaded.returncode == 0, loaded.output
    assert SECRET not in loaded.output


def crawl(db_url: str, tmp_path: Path, spider: str, *args: str, **env: str) -> Run:
    run = scrapy("crawl", spider, *args, db_url=db_url, cwd=tmp_path, extra_env=env)
    assert run.returncode == 0 and "Traceback" not in run.output, run.output
    assert SECRET not in run.output
    return run


def news_site(server: ReplayServer, **config: object) -> dict[str, object]:
    return {
        "name": "tw-news",
        "url": server.url("/news/"),
        "type": "news",
        "config": {
            "article": NEWS_ARTICLE,
            "following": r"/news/list-\d+\.html$",
            "depth": 5,
            "delay": 0,
            **config,
        },
    }


def test_a_sites_proxy_carries_every_request(db_url: str, tmp_path: Path) -> None:
    pages = tw_news_pages()
    with (
        ForwardProxy(credentials=f"archiver:{SECRET}") as proxy,
        ReplayServer(tw_news_routes()) as server,
    ):
        load(db_url, tmp_path, [news_site(server, proxy=proxy.url())])
        run = crawl(db_url, tmp_path, "generic")
        # Every request the server saw came through the proxy, with its credentials.
        assert sum(proxy.passed.values()) == sum(server.hits.values()) > len(pages)
        assert proxy.refused == 0
        assert all(
            h.get("Proxy-Authorization", "").startswith("Basic ") for h in proxy.headers_seen
        )
    assert stat(run, "zeroarchive/snapshots_saved") == len(pages)
    assert stat(run, "zeroarchive/proxied") == sum(proxy.passed.values())
    out = tmp_path / "export.jsonl.gz"
    exported = scrapy("export_snapshots", "--out", str(out), db_url=db_url, cwd=tmp_path)
    assert exported.returncode == 0
    assert SECRET.encode() not in gzip.decompress(out.read_bytes())
    assert SECRET not in scrapy("sites", db_url=db_url, cwd=tmp_path).output


def test_the_shared_pool_is_used_in_turn(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    with (
        ForwardProxy() as first,
        ForwardProxy() as second,
        ReplayServer(tw_news_routes()) as server,
    ):
        load(db_url, tmp_path, [news_site(server)])
        pool = f"{first.url()},{second.url()}"
        crawl(db_url, tmp_path, "generic", "-s", f"ZEROARCHIVE_PROXIES={pool}")
        both = sum(first.passed.values()) + sum(second.passed.values())
        assert both == sum(server.hits.values())
        assert abs(sum(first.passed.values()) - sum(second.passed.values())) <= 1


def test_a_rendered_sites_browser_goes_through_its_proxy(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    tag = secrets.token_hex(6)
    with (
        ForwardProxy(credentials=f"archiver:{SECRET}") as proxy,
        EmulatorServer(ScriptedSite()) as server,
    ):
        site = {
            "name": "scripted",
            "url": server.url("/news"),
            "type": "news",
            "config": {"article": r"/news/\d+$", "render": True, "delay": 0, "proxy": proxy.url()},
        }
        load(db_url, tmp_path, [site])
        run = crawl(db_url, tmp_path, "generic", **{TAG: tag})
        pages = [f"{server.base_url}/news/{n}" for n in range(1, len(NAMES) + 1)]
        # The browser's page loads, and the list page's own API call, all through the proxy.
        assert all(proxy.passed[url] == 1 for url in pages)
        assert proxy.passed[f"{server.base_url}/api/latest.json"] == 1
        assert proxy.passed[f"{server.base_url}/news"] == 1
    assert stat(run, "zeroarchive/snapshots_saved") == len(NAMES)
    assert len(articles_by_url(db_url)) == len(NAMES)


def test_a_facebook_session_gets_past_the_login_wall(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    tag = secrets.token_hex(6)
    user = "1000" + secrets.token_hex(4)
    cookies = tmp_path / "cookies.txt"
    # One post: the list page, the post and its comment pages all need the session.
    with FacebookServer(posts=1, session=user) as fb:
        host = "127.0.0.1"
        cookies.write_text(
            "# Netscape HTTP Cookie File\n"
            f"#HttpOnly_{host}\tFALSE\t/\tFALSE\t0\tc_user\t{user}\n"
            f"{host}\tFALSE\t/\tFALSE\t0\txs\t{SECRET}\n",
            encoding="utf-8",
        )
        site = {
            "name": "nintendo",
            "url": fb.url(fb.page_path),
            "type": "facebook",
            "config": {"delay": 0, "cookies_file": str(cookies)},
        }
        load(db_url, tmp_path, [site])
        run = crawl(
            db_url,
            tmp_path,
            "facebook",
            **{TAG: tag},
            FACEBOOK_SCROLL_WAIT="0.5",
            FACEBOOK_EXPAND_WAIT="5",
        )
        assert fb.with_session > 0
        expected = {fb.url(f"/{pid}") for post in fb.posts for pid in post.ids}
    assert stat(run, "zeroarchive/facebook/login_wall") == 0
    assert set(articles_by_url(db_url)) == expected
    assert stat(run, "zeroarchive/snapshots_saved") == len(expected)
    assert chromium_pids(tag) == []


def test_a_bad_cookies_file_is_an_error_of_its_site(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    with ReplayServer(tw_news_routes()) as server:
        load(db_url, tmp_path, [news_site(server, cookies_file=str(tmp_path / "missing.txt"))])
        run = crawl(db_url, tmp_path, "generic")
    assert stat(run, "zeroarchive/errors/cookies_file") >= 1
    assert "cannot read cookies file" in run.output
    assert stat(run, "zeroarchive/snapshots_saved") == len(tw_news_pages())
