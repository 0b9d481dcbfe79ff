"""A distributed list walk is done only when its last page was answered
(zeroarchive/distributed/walks.py, the scheduler's held entries, zeroarchive/crawl/recovery.py,
the dispatcher's rounds): a worker killed, or redis flushed, at any step of a walk loses no
page of it.

In process, on both databases and a real redis: `scrapy schedule`'s Dispatcher, workers
made of the real RedisScheduler, GenericSpider (its list callback and the walk-rounds
middleware) and HeldWork, stepped by hand through a three-page chain of list pages over 12
of the saved tw-news articles. Killing a worker is what SIGKILL leaves: its heartbeat stops and
its key goes, nothing of it is closed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from scrapy.core.engine import _Slot
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse, Request
from scrapy.settings import Settings
from scrapy.utils.reactor import CallLaterOnce
from scrapy.utils.test import get_crawler
from sqlalchemy import func, select
from twisted.internet.defer import succeed

from middlewares.walk_rounds import WalkRoundsSpiderMiddleware
from spiders.generic import GenericSpider
from tests.conftest import project_settings
from tests.replay import LIST_PATH, list_page_paths, tw_news_routes
from zeroarchive.core.items import ArticleLinks
from zeroarchive.core.owners import run_owner
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.crawl.dispatch import MARKER_KEY, DispatchConfig, Dispatcher
from zeroarchive.crawl.recovery import HeldWork, give_back_leftovers
from zeroarchive.distributed.heartbeat import heartbeat_key
from zeroarchive.distributed.queue import held_key, push_requests, request_queue
from zeroarchive.distributed.redis_client import connect
from zeroarchive.distributed.scheduler import RedisScheduler
from zeroarchive.distributed.walks import pages_left, walk_of
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.schema import article, site

NOW = 1_800_000_000
HEARTBEAT = 30
HOST = "http://127.0.0.1:8"
# A chain of three list pages: what the walk is about. Over 12 articles, not all 34 (each
# one more was written, found and counted in each of the 56 tests).
ARTICLES = 12
PAGES_PER_LIST = 4
WALK_KEYS = "zeroarchive:walk:*"
STEPS = 12  # four per page of the chain of three


@pytest.fixture(scope="module", autouse=True)
def reactor_installed() -> None:
    """The scheduler schedules its batch flushes on the reactor (never run here: these
    tests flush by hand); importing it installs the default one, as a crawl would."""
    from twisted.internet import reactor  # noqa: F401


@pytest.fixture(autouse=True)
def written_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """HeldWork's database writes run at once, not in the reactor's thread pool."""

    def write(self: HeldWork, what: str, function: Callable[..., Any], *args: Any) -> Any:
        return succeed(self._written(function(*args)))

    monkeypatch.setattr(HeldWork, "_write", write)


@pytest.fixture(scope="module")
def pages() -> dict[str, bytes]:
    routes = tw_news_routes(PAGES_PER_LIST, count=ARTICLES)
    return {HOST + path: route.body for path, route in routes.items()}


@pytest.fixture
def archive(db_url: str) -> Archive:
    return open_archive(url=db_url)


@pytest.fixture
def server(redis_url: str) -> Iterator[redis.Redis]:
    # The project's settings, without a crawler (building one deep-copies them twice).
    client = connect(Settings(project_settings()), redis_url)
    client.set(MARKER_KEY, "1")  # not the first round ever
    yield client
    client.close()


def add_site(archive: Archive) -> int:
    spec = parse_spec(
        {
            "name": "tw-news",
            "url": HOST + LIST_PATH,
            "type": "news",
            "config": {
                "article": r"^http://127\.0\.0\.1:\d+/[\w.-]+\.(com|net|tw)[\w.]*/",
                "following": r"/news/list-\d+\.html$",
                "depth": 5,
                "discover": False,
            },
        }
    )
    site_id, _ = archive.sites.upsert(spec, NOW - 3600)
    return site_id


def dispatcher(archive: Archive, server: redis.Redis) -> Dispatcher:
    settings = project_settings(ZEROARCHIVE_DB_URL=archive.url)
    spider = GenericSpider.from_crawler(get_crawler(GenericSpider, settings))
    return Dispatcher(archive, server, [spider], DispatchConfig(50, 3600, 1000, HEARTBEAT))


@dataclass
class Worker:
    """A distributed worker driven by hand: ``steps()`` takes, answers and lets go of one
    request at a time, naming each step it has done."""

    crawler: Crawler
    scheduler: RedisScheduler
    archive: Archive
    pages: dict[str, bytes]
    #: The walk pages it took and has not let go of yet.
    holding: list[Request] = field(default_factory=list)

    @property
    def owner(self) -> str:
        return self.scheduler.owner

    @property
    def held_key(self) -> str:
        """Its held hash in redis: what `scrapy schedule` puts back if it dies."""
        return held_key(self.scheduler.queue.key, self.owner)

    def steps(self) -> Iterator[str]:
        engine = self.crawler.engine
        assert engine is not None and engine._slot is not None
        spider = self.crawler.spider
        assert isinstance(spider, GenericSpider)
        middleware = WalkRoundsSpiderMiddleware()
        while True:
            # Queues what was found, lets go of what is answered, then takes.
            request = self.scheduler.next_request()
            if request is None:
                return
            engine._slot.add_request(request)
            if walk_of(request) is None:  # a snapshot or a probe: not this test's
                engine._slot.remove_request(request)
                continue
            self.holding.append(request)
            yield f"took {request.url}"
            response = HtmlResponse(
                request.url, body=self.pages[request.url], encoding="utf-8", request=request
            )
            assert request.callback is not None
            for output in middleware.process_spider_output(response, request.callback(response)):
                if isinstance(output, Request):
                    self.scheduler.enqueue_request(output)
                elif isinstance(output, ArticleLinks):
                    # What the ArticlesPipeline does, before the engine is done with the page.
                    self.archive.articles.add(
                        output.site_id, output.article_type, output.urls, NOW, output.published
                    )
            yield f"stored the links of {request.url}"
            self.scheduler.flush_pending()
            yield f"queued what {request.url} found"
            engine._slot.remove_request(request)
            self.scheduler._release_finished()
            self.holding.remove(request)
            yield f"let go of {request.url}"

    def run(self) -> None:
        for _ in self.steps():
            pass

    def kill(self) -> None:
        """SIGKILL: no more heartbeats, its key expires; nothing is closed or put back."""
        heartbeat = self.scheduler.heartbeat
        assert heartbeat is not None
        heartbeat._stop.set()
        if heartbeat._thread is not None:
            heartbeat._thread.join()
        self.scheduler.server.delete(heartbeat_key(self.owner))

    def close(self) -> None:
        self.scheduler.close("finished")


def worker(archive: Archive, redis_url: str, pages: dict[str, bytes]) -> Worker:
    settings = project_settings(
        ZEROARCHIVE_DB_URL=archive.url,
        REDIS_URL=redis_url,
        DUPEFILTER_CLASS="zeroarchive.distributed.dupefilter.BloomDupeFilter",
        BLOOMFILTER_CAPACITY=10_000,
        ZEROARCHIVE_QUEUE_PREFETCH=1,
        ZEROARCHIVE_HEARTBEAT_SECONDS=HEARTBEAT,
    )
    crawler = get_crawler(GenericSpider, settings)
    crawler.spider = crawler._create_spider()
    crawler.engine = crawler._create_engine()
    scheduler = RedisScheduler.from_crawler(crawler)
    crawler.engine._slot = _Slot(True, CallLaterOnce(lambda: None), scheduler)
    scheduler.open(crawler.spider)
    return Worker(crawler, scheduler, archive, pages)


def walk_row(archive: Archive, site_id: int) -> dict[str, Any]:
    with archive.engine.connect() as conn:
        row = conn.execute(select(site).where(site.c.site_id == site_id)).mappings().one()
    return dict(row)


def articles_found(archive: Archive) -> int:
    with archive.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(article)).scalar_one())


def walk_pages_queued(server: redis.Redis, rounds: Dispatcher) -> int:
    queue = request_queue(server, rounds.spiders[0])
    return sum(
        1 for entry in server.zrange(queue.key, 0, -1) if walk_of(queue.decode(entry)) is not None
    )


def test_an_undisturbed_walk_is_done_at_its_last_page_only(
    archive: Archive, server: redis.Redis, redis_url: str, pages: dict[str, bytes]
) -> None:
    site_id = add_site(archive)
    rounds = dispatcher(archive, server)
    assert rounds.run_once(NOW)["generic"].list_requests == 1
    walk = (site_id, NOW)
    assert pages_left(server, walk) == 1
    one = worker(archive, redis_url, pages)
    seen: list[tuple[str, int | None, str | None]] = []
    for step in one.steps():
        seen.append((step, pages_left(server, walk), walk_row(archive, site_id)["walk_owner"]))
    one.close()
    lists = [HOST + path for path in list_page_paths(PAGES_PER_LIST, count=ARTICLES)]
    assert len(lists) == 3
    assert [s for s, _, _ in seen] == [
        step
        for url in lists
        for step in (
            f"took {url}",
            f"stored the links of {url}",
            f"queued what {url} found",
            f"let go of {url}",
        )
    ]
    assert len(seen) == STEPS
    # Counted: the next page queued as soon as it is found (not at the end of the turn),
    # before the one that found it is let go of; the counter goes at the last page.
    assert [left for _, left, _ in seen] == [1, 2, 2, 1] * 2 + [1, 1, 1, None]
    # Held by the worker from its first page to its last: the next page it found is its
    # own (kept in its held hash, not queued for any worker); done at the end.
    owners = [owner and owner[0] for _, _, owner in seen]
    assert owners == ["w"] * 11 + [None]
    assert walk_pages_queued(server, rounds) == 0
    assert walk_row(archive, site_id)["walk_owner"] is None
    assert articles_found(archive) == ARTICLES
    assert not list(server.scan_iter(match=WALK_KEYS))
    # Done: not walked again before its interval.
    assert rounds.run_once(NOW + 60)["generic"].list_sites == 0


@pytest.mark.parametrize("killed_after", range(STEPS))
def test_a_worker_killed_at_any_step_of_a_walk_loses_no_page(
    archive: Archive,
    server: redis.Redis,
    redis_url: str,
    pages: dict[str, bytes],
    killed_after: int,
) -> None:
    site_id = add_site(archive)
    rounds = dispatcher(archive, server)
    rounds.run_once(NOW)
    doomed = worker(archive, redis_url, pages)
    steps = doomed.steps()
    for _ in range(killed_after + 1):
        next(steps)
    # A page it took, or the next one it found and kept (in its held hash).
    held_a_page = bool(doomed.holding) or bool(server.hlen(doomed.held_key))
    doomed.kill()
    report = rounds.run_once(NOW + 60)["generic"]
    if walk_row(archive, site_id)["walk_owner"] is None:
        assert killed_after == STEPS - 1 and report.list_sites == 0
    else:
        # At every step before the last it held a page of the walk: the walk is due again
        # at once, and the page it held is back in the queue.
        assert held_a_page
        assert report.list_sites == 1
        assert walk_row(archive, site_id)["next_crawl_at"] >= NOW + 60
        assert rounds.recovered.walks == 1
    survivor = worker(archive, redis_url, pages)
    survivor.run()
    survivor.close()
    assert articles_found(archive) == ARTICLES
    assert walk_row(archive, site_id)["walk_owner"] is None
    assert walk_pages_queued(server, rounds) == 0
    assert not list(server.scan_iter(match=WALK_KEYS))
    assert rounds.run_once(NOW + 120)["generic"].list_sites == 0


@pytest.mark.parametrize("flushed_after", range(-1, STEPS))
def test_a_redis_flushed_at_any_step_of_a_walk_makes_it_due_again(
    archive: Archive,
    server: redis.Redis,
    redis_url: str,
    pages: dict[str, bytes],
    flushed_after: int,
) -> None:
    site_id = add_site(archive)
    rounds = dispatcher(archive, server)
    rounds.run_once(NOW)
    live = worker(archive, redis_url, pages)
    steps = live.steps()
    for _ in range(flushed_after + 1):
        next(steps)
    done = walk_row(archive, site_id)["walk_owner"] is None
    server.flushdb()
    report = rounds.run_once(NOW + 60)["generic"]
    assert report.list_sites == (0 if done else 1)
    # The live worker answers what it holds (counted nowhere now), then the new walk.
    for _ in steps:
        pass
    live.run()
    live.close()
    assert articles_found(archive) == ARTICLES
    assert walk_row(archive, site_id)["walk_owner"] is None
    assert walk_pages_queued(server, rounds) == 0
    assert rounds.run_once(NOW + 120)["generic"].list_sites == 0


def test_a_worker_brings_back_no_counter_a_flush_took(
    archive: Archive, server: redis.Redis, pages: dict[str, bytes]
) -> None:
    site_id = add_site(archive)
    rounds = dispatcher(archive, server)
    spider = rounds.spiders[0]
    site_record = archive.sites.get(site_id)
    assert site_record is not None
    [first] = list(spider.discovery_requests(site_record))
    first.meta[META_KEY]["round"] = NOW
    push_requests(server, spider, [first], begin_walks=True)
    assert pages_left(server, (site_id, NOW)) == 1
    server.flushdb()
    # A live worker queues the next page of the lost walk: the page goes, uncounted.
    push_requests(server, spider, [first.replace(url=HOST + "/news/list-2.html")])
    assert pages_left(server, (site_id, NOW)) is None
    assert len(request_queue(server, spider)) == 1


def test_an_embedded_run_stopped_before_its_end_leaves_its_walk_due(archive: Archive) -> None:
    site_id = add_site(archive)
    for finished, next_at in ((True, NOW + 600), (False, NOW + 5)):
        owner = run_owner()
        archive.sites.mark_list_crawl(site_id, NOW, NOW + 600, owner)
        give_back_leftovers(archive, [site_id], NOW + 5, finished=finished)
        row = walk_row(archive, site_id)
        assert (row["walk_owner"], row["next_crawl_at"]) == (None, next_at)
        assert row["recoveries"] == 0  # its own leftovers, not a recovery
