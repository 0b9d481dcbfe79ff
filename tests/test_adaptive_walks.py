"""Adaptive list walks (zeroarchive/crawl/list_pages.py): each tracked list page walked by
its own interval, asked for conditionally (a server that answers 304 when the validators
match), and within the site's daily budget; on SQLite and MariaDB, in an embedded crawl
(the `scrapy crawl` a user runs, on the fake clock) and in distributed mode (the
`scrapy schedule` Dispatcher deciding what is due, a worker's callbacks answering).

The site is the chain of three list pages over the 34 saved tw-news articles
(tests/replay.py); its front page shows one article more from the second walk on."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapy.http import HtmlResponse, Request, Response
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.test import get_crawler
from sqlalchemy import create_engine, select
from twisted.python.failure import Failure

from spiders.generic import GenericSpider
from tests.conftest import Run, project_settings, scrapy
from tests.replay import LIST_PATH, ReplayServer, Route, list_page_paths, tw_news_routes
from tests.test_generic import stat, write_sites
from zeroarchive.core.clock import FAKE_NOW_ENV
from zeroarchive.core.items import ArticleLinks
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.core.schedule import DAY
from zeroarchive.core.signals import articles_stored
from zeroarchive.crawl.dispatch import MARKER_KEY, DispatchConfig, Dispatcher
from zeroarchive.crawl.list_intervals import RETIRE_AFTER, ListPage, growth
from zeroarchive.crawl.list_pages import ListPages, begin_pages, row_of, walk_plan
from zeroarchive.distributed.queue import request_queue
from zeroarchive.distributed.redis_client import connect
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.list_pages import ListPageStore
from zeroarchive.storage.schema import site as site_table
from zeroarchive.storage.site_stats import SiteStatsConfig, site_stats

T0 = 1_800_000_000 - 1_800_000_000 % DAY + 3600
PER_LIST = 12  # three list pages
ARTICLE = r"^http://127\.0\.0\.1:\d+/[\w.-]+\.(com|net|tw)[\w.]*/"
FOLLOWING = r"/news/list-\d+\.html$"
_ITEM = re.compile(rb"<li><a [^>]*>[^<]*</a></li>\n")


def with_etag(route: Route, etag: str) -> Route:
    return Route(route.status, (*route.headers, ("ETag", etag)), route.body)


def list_routes(front_version: int, front_etag: str = "") -> dict[str, Route]:
    """The site, its list pages with ETags; the first version of the front page lacks one
    of its articles (its second item), the second shows it."""
    routes = tw_news_routes(PER_LIST)
    for n, path in enumerate(list_page_paths(PER_LIST)[1:], start=2):
        routes[path] = with_etag(routes[path], f'"list-{n}"')
    front = routes[LIST_PATH]
    body = front.body
    if front_version == 1:
        items = _ITEM.findall(body)
        body = body.replace(items[1], b"", 1)
    routes[LIST_PATH] = with_etag(
        Route(front.status, front.headers, body), front_etag or f'"front-{front_version}"'
    )
    return routes


def site_config(**extra: Any) -> dict[str, Any]:
    return {
        "article": ARTICLE,
        "following": FOLLOWING,
        "depth": 5,
        "discover": False,
        "delay": 0,
        **extra,
    }


def pages_of(db_url: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Each site's tracked pages by path, by site name."""
    engine = create_engine(db_url)
    with engine.connect() as conn:
        names = dict(conn.execute(select(site_table.c.site_id, site_table.c.name)).all())
    by_site = ListPageStore(engine).by_site()
    engine.dispose()
    return {
        names[site_id]: {re.sub(r"^http://[^/]+", "", row["url"]): row for row in rows}
        for site_id, rows in by_site.items()
    }


def test_an_embedded_crawl_walks_each_list_page_by_its_own_interval(
    db_url: str, tmp_path: Path
) -> None:
    front, second, third = list_page_paths(PER_LIST)
    with ReplayServer(list_routes(1)) as news, ReplayServer(list_routes(1)) as thrifty:
        sites = [
            {"name": "news", "url": news.url(LIST_PATH), "config": site_config()},
            {
                "name": "thrifty",
                "url": thrifty.url(LIST_PATH),
                "config": site_config(daily_requests=3),
            },
        ]

        loaded = scrapy(
            "load_sites",
            str(write_sites(tmp_path / "sites.yaml", sites)),
            db_url=db_url,
            cwd=tmp_path,
        )
        assert loaded.returncode == 0, loaded.output
        first = run(db_url, tmp_path, T0)
        assert stat(first, "zeroarchive/list_pages/found") == 6
        pages = pages_of(db_url)
        assert set(pages["news"]) == {front, second, third}
        assert {p["walks"] for p in pages["news"].values()} == {1}
        assert pages["news"][second]["etag"] == '"list-2"'
        # Found in one walk, spread over the plan's interval (the front page first).
        assert {p["next_walk_at"] for p in pages["news"].values()} == {
            T0 + 150,
            T0 + 300,
            T0 + 600,
        }

        # Ten minutes on: every page is due. The front page shows one article more; the
        # others answer 304 to their validators. The thrifty site spent its 3 requests.
        news.routes.update(list_routes(2))
        news.reset_hits()
        thrifty.reset_hits()
        later = run(db_url, tmp_path, T0 + 600)
        assert news.hits[front] == news.hits[second] == news.hits[third] == 1
        assert stat(later, "zeroarchive/list_pages/not_modified") == 2
        assert sum(v for k, v in thrifty.hits.items() if k != "/robots.txt") == 0
        assert stat(later, "zeroarchive/list_pages/postponed") == 3
        pages = pages_of(db_url)
        busy, quiet = pages["news"][front], pages["news"][second]
        assert (busy["walks"], busy["not_modified"], busy["etag"]) == (2, 0, '"front-2"')
        # One new link in ten minutes: half a link a walk is every five minutes.
        assert busy["interval"] == 300 and busy["next_walk_at"] == T0 + 900
        # Nothing new: the interval stays at the plan's, its upper bound.
        assert (quiet["walks"], quiet["not_modified"], quiet["interval"]) == (2, 1, 600)
        assert quiet["etag"] == '"list-2"'  # a 304 keeps the validators it answered
        # The front page's full answer with a new ETag is a change; a 304 is none (what
        # the budget quiet pages leave is shared by: list_intervals.shares).
        assert (busy["changes"], busy["changed_at"]) == (1.0, T0 + 600)
        assert (quiet["changes"], quiet["changed_at"]) == (0.0, 0)
        assert {p["postponed"] for p in pages["thrifty"].values()} == {1}
        # Put off to the next day, each on its own phase (spread, they stay spread).
        day_end = T0 - 3600 + DAY
        put_off = [p["next_walk_at"] for p in pages["thrifty"].values()]
        assert len(set(put_off)) == 3 and all(day_end <= t < day_end + 600 for t in put_off)

        # Five minutes later only the front page is due (its new ETag names the same links):
        # the page it links to is walked by its own interval, not because it is linked.
        news.routes.update(list_routes(2, '"front-2b"'))
        news.reset_hits()
        third_run = run(db_url, tmp_path, T0 + 900)
        # (robots.txt is the robots middleware's, once per crawl: no list page.)
        assert {k: v for k, v in news.hits.items() if k != "/robots.txt"} == {front: 1}
        assert stat(third_run, "zeroarchive/list_pages/not_due") == 1
        # Nothing new: longer, as its rate says (one link in fifteen minutes: about 450 s).
        assert 440 <= pages_of(db_url)["news"][front]["interval"] <= 460
        assert not thrifty.hits


def run(db_url: str, tmp_path: Path, at: int) -> Run:
    """`scrapy crawl generic -a mode=discover` at ``at`` on the fake clock."""
    done = scrapy(
        "crawl",
        "generic",
        "-a",
        "mode=discover",
        db_url=db_url,
        cwd=tmp_path,
        extra_env={"ZEROARCHIVE_FAKE_NOW": str(at)},
    )
    assert done.returncode == 0, done.output
    assert "Traceback" not in done.output, done.output
    return done


# --- distributed: the scheduler decides, workers answer ------------------------------------


@pytest.fixture
def server(redis_url: str) -> Iterator[redis.Redis]:
    client = connect(get_crawler(settings_dict=project_settings()).settings, redis_url)
    client.set(MARKER_KEY, "1")  # not the first round ever
    yield client
    client.close()


def answer(
    spider: GenericSpider, archive: Archive, request: Request, route: Route
) -> list[Request]:
    """What a worker does with one list request: a 304 when the validators match (as the
    replay server does), else the page; its links stored (the ArticlesPipeline's part);
    the list requests it yields."""
    etag = route.header("ETag")
    sent = request.headers.get("If-None-Match")
    if etag is not None and sent is not None and sent.decode() == etag:
        failure = Failure(HttpError(Response(request.url, status=304, request=request)))
        failure.request = request  # type: ignore[attr-defined]  # as Scrapy sets it
        spider.list_failed(failure)
        return []
    response = HtmlResponse(
        request.url, body=route.body, headers=dict(route.headers), request=request
    )
    assert request.callback is not None
    found = []
    for output in request.callback(response):
        if isinstance(output, Request):
            found.append(output)
        elif isinstance(output, ArticleLinks):
            new = archive.articles.add(output.site_id, output.article_type, output.urls, 0)
            spider.crawler.signals.send_catch_log(articles_stored, item=output, new=new)
    return found


def queued(server: redis.Redis, spider: GenericSpider) -> list[Request]:
    queue = request_queue(server, spider)
    out = []
    while (request := queue.pop()) is not None:
        if request.meta[META_KEY]["kind"] == "list":
            out.append(request)
    return out


def test_the_scheduler_asks_for_due_pages_only_and_conditionally(
    db_url: str, server: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = "http://127.0.0.1:8"
    front, second, third = list_page_paths(PER_LIST)
    archive = open_archive(url=db_url)
    spec = parse_spec({"name": "news", "url": host + front, "config": site_config()})
    site_id, _ = archive.sites.upsert(spec, T0 - 3600)
    crawler = get_crawler(GenericSpider, project_settings(ZEROARCHIVE_DB_URL=db_url))
    spider = GenericSpider.from_crawler(crawler)
    rounds = Dispatcher(archive, server, [spider], DispatchConfig(50, 3600, 1000, 30))

    def walk(at: int, routes: dict[str, Route]) -> dict[str, Request]:
        """One round of the scheduler, its list requests answered (and the pages they
        find, as workers would); the requests the scheduler queued, by path."""
        monkeypatch.setenv(FAKE_NOW_ENV, str(at))  # the workers answer at once
        rounds.run_once(at)
        first = {r.url.removeprefix(host): r for r in queued(server, spider)}
        todo = list(first.values())
        seen = set(first)  # the round's dupefilter
        while todo:
            request = todo.pop(0)
            for found in answer(spider, archive, request, routes[request.url.removeprefix(host)]):
                if found.url.removeprefix(host) not in seen:
                    seen.add(found.url.removeprefix(host))
                    todo.append(found)
        spider.list_pages.maybe_write(force=True)
        server.delete(*server.keys("zeroarchive:walk:*") or ["-"])
        return first

    assert list(walk(T0, list_routes(1))) == [front]  # the others found on the way
    pages = ListPageStore(archive.engine).by_site()[site_id]
    assert {p["url"].removeprefix(host) for p in pages} == {front, second, third}
    assert {p["walks"] for p in pages} == {1}

    # All due ten minutes on, each asked for by the scheduler with its validators.
    asked = walk(T0 + 600, list_routes(2))
    assert set(asked) == {front, second, third}
    assert asked[second].headers.get("If-None-Match") == b'"list-2"'
    assert asked[front].headers.get("If-None-Match") == b'"front-1"'
    rows = {
        p["url"].removeprefix(host): p for p in ListPageStore(archive.engine).by_site()[site_id]
    }
    assert (rows[front]["interval"], rows[front]["not_modified"]) == (300, 0)
    assert (rows[second]["interval"], rows[second]["not_modified"]) == (600, 1)
    assert archive.sites.get(site_id) is not None

    # Five minutes later the scheduler asks for the front page alone, which answers 304.
    assert list(walk(T0 + 900, list_routes(2))) == [front]
    rows = {
        p["url"].removeprefix(host): p for p in ListPageStore(archive.engine).by_site()[site_id]
    }
    assert (rows[front]["walks"], rows[front]["not_modified"]) == (3, 1)
    assert rounds.run_once(T0 + 1000)["generic"].list_sites == 0

    # What site_stats says of them.
    [stats] = site_stats(archive.engine, T0 + 1000, SiteStatsConfig(7, 3600))
    assert stats.list_pages[0].url == host + front
    assert {p.url.removeprefix(host) for p in stats.list_pages} == {front, second, third}
    first = stats.list_pages[0]
    assert (first.walks, first.not_modified, first.new_links) == (3, 1, 12)
    assert 440 <= first.interval <= 460
    assert first.new_per_day is not None and 90 < first.new_per_day < 100  # 1 in 15 min
    quiet = stats.list_pages[1]
    assert quiet.interval == 600 and quiet.new_per_day == 0
    # Three walks of three, one of one: seven requests of the fixed walk's 3 x 144.
    assert (stats.list_requests_today, stats.list_budget) == (7, 432)
    assert stats.as_json()["list_pages"][0]["not_modified"] == 1
    # The front page changed once (its second walk), faded over the 5 minutes since; the
    # quiet page never.
    assert (first.changes, first.changed_at) == (1.0, T0 + 600)
    assert (quiet.changes, quiet.changed_at) == (0.0, 0)
    assert stats.as_json()["list_pages"][0]["changed_at"] == T0 + 600


def test_the_scheduler_keeps_a_site_within_its_daily_budget(
    db_url: str, server: redis.Redis
) -> None:
    host = "http://127.0.0.1:8"
    archive = open_archive(url=db_url)
    spec = parse_spec(
        {"name": "thrifty", "url": host + "/", "config": site_config(daily_requests=20)}
    )
    site_id, _ = archive.sites.upsert(spec, T0 - 3600)
    store = ListPageStore(archive.engine)
    # Three due pages: one busy (a link a minute), two quiet; none of the 20 requests spent.
    due = {"walks": 50, "last_walk_at": T0 - 60, "next_walk_at": T0 - 1, "day": T0 // DAY}
    busy = ListPage(host + "/", interval=60, rate_links=60, rate_seconds=3600, **due)
    quiet = [
        ListPage(host + path, interval=7200, rate_links=0, rate_seconds=36000, **due)
        for path in ("/news/list-2.html", "/news/list-3.html")
    ]
    store.save(site_id, [row_of(page) for page in (busy, *quiet)])
    crawler = get_crawler(GenericSpider, project_settings(ZEROARCHIVE_DB_URL=db_url))
    rounds = Dispatcher(
        archive, server, [GenericSpider.from_crawler(crawler)], DispatchConfig(50, 3600, 1000, 30)
    )
    report = rounds.run_once(T0)["generic"]
    # The busy page would spend more than the day's budget alone: walked on an even pace;
    # the quiet ones wait for their bound (on their own phase: due at T0 - 1).
    assert [r.url for r in queued(server, rounds.spiders[0])] == [host + "/"]
    assert report.postponed == 2
    after = {p["url"]: p for p in store.by_site()[site_id]}
    assert after[host + "/"]["walks_today"] == 1
    assert {
        after[host + path]["next_walk_at"] for path in ("/news/list-2.html", "/news/list-3.html")
    } == {T0 + 599}
    assert {
        after[host + path]["postponed"] for path in ("/news/list-2.html", "/news/list-3.html")
    } == {1}
    # The site comes due again with its earliest page.
    assert archive.sites.get(site_id) is not None
    assert rounds.run_once(T0 + 30)["generic"].list_sites == 0
    # A minute on, the busy page is due but one request of 20 is ahead of the pace (one
    # per 72 minutes): it waits, by an upper bound at most.
    assert rounds.run_once(T0 + 60)["generic"].list_sites == 0
    after = {p["url"]: p for p in store.by_site()[site_id]}
    assert after[host + "/"]["next_walk_at"] == T0 + 60 + 600


def test_a_failing_list_page_backs_off_like_a_quiet_one(db_url: str) -> None:
    archive = open_archive(url=db_url)
    spec = parse_spec({"name": "news", "url": "https://s.example/", "config": site_config()})
    site_id, _ = archive.sites.upsert(spec, T0 - 3600)
    store = ListPageStore(archive.engine)
    page = ListPage(
        "https://s.example/", walks=5, interval=120, last_walk_at=T0 - 120, etag='"e"', day=0
    )
    store.save(site_id, [row_of(page)])
    pages = ListPages(store, lambda: None, archive.sites.get, 300.0)
    meta = {"site_id": site_id, "kind": "list", "page_kind": "page", "depth": 0}
    pages.failed(site_id, page.url, meta, T0)
    # A page never seen that fails is not tracked.
    pages.failed(site_id, "https://s.example/gone", meta, T0)
    pages.maybe_write(force=True)
    [row] = store.load(site_id)
    assert (row["walks"], row["etag"], row["last_walk_at"]) == (6, '"e"', T0)
    assert row["interval"] == int(120 * growth(page.url))


def test_found_pages_are_spread_and_forgotten_pages_retired(db_url: str) -> None:
    archive = open_archive(url=db_url)
    spec = parse_spec({"name": "news", "url": "https://s.example/", "config": site_config()})
    site_id, _ = archive.sites.upsert(spec, T0 - 3600)
    site = archive.sites.get(site_id)
    assert site is not None
    store = ListPageStore(archive.engine)
    long_ago = T0 - RETIRE_AFTER - DAY
    history = {"walks": 9, "interval": 600, "first_walk_at": long_ago, "new_at": long_ago}
    gone = ListPage("https://s.example/old-section", linked_at=long_ago, **history)
    linked = ListPage("https://s.example/section", linked_at=long_ago, **history)
    store.save(site_id, [row_of(gone), row_of(linked)])
    pages = ListPages(store, lambda: None, archive.sites.get, 300.0)
    # A walk links the section again (the old one no longer); two pages are found.
    pages.linked(site_id, linked.url, T0)
    meta = {"site_id": site_id, "kind": "list", "page_kind": "page", "depth": 1}
    for url in ("https://s.example/", "https://s.example/feed"):
        pages.answered(site_id, url, url, meta, {}, T0)
    pages.maybe_write(force=True)
    rows = {row["url"]: row for row in store.load(site_id)}
    assert rows[linked.url]["linked_at"] == T0 and rows[gone.url]["linked_at"] == long_ago
    found = [rows["https://s.example" + path] for path in ("/", "/feed")]
    assert all(row["linked_at"] == T0 for row in found)
    # Found in one walk, due apart: not all together at the plan's interval.
    assert len({row["next_walk_at"] for row in found}) == 2
    assert all(T0 < row["next_walk_at"] <= T0 + 600 for row in found)
    plan = walk_plan(store, site, T0 + 600)
    assert plan.retired == (gone.url,) and gone.url not in plan.walk
    begin_pages(store, site, plan, T0 + 600)
    assert gone.url not in {row["url"] for row in store.load(site_id)}
