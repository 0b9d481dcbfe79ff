"""The shared queue's scheduler against a real Redis: requests the engine schedules are
checked and pushed a batch at a time, duplicates still fire ``request_dropped``, and a
Redis that stops answering is waited for instead of raising into the engine."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.utils.test import get_crawler

from tests.conftest import REPO, project_settings
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.core.signals import work_taken
from zeroarchive.distributed.queue import held_key, push_requests, requeue_held
from zeroarchive.distributed.scheduler import MAX_PENDING, RedisScheduler
from zeroarchive.distributed.walks import pages_left


class _Spider(Spider):
    name = "generic"


def settings_for(redis_url: str) -> dict[str, object]:
    return project_settings(
        REDIS_URL=redis_url,
        DUPEFILTER_CLASS="zeroarchive.distributed.dupefilter.BloomDupeFilter",
        BLOOMFILTER_CAPACITY=10_000,
        ZEROARCHIVE_QUEUE_POLL_SECONDS=0.25,
        ZEROARCHIVE_QUEUE_PREFETCH=8,
    )


@pytest.fixture(scope="module", autouse=True)
def reactor_installed() -> None:
    """A batch is flushed through the reactor (never run here: these tests flush by hand
    or pop); importing it installs the default one, as a crawl would install its own."""
    from twisted.internet import reactor  # noqa: F401


@pytest.fixture
def crawler(redis_url: str) -> Crawler:
    crawler = get_crawler(_Spider, settings_for(redis_url))
    crawler.spider = crawler._create_spider()
    crawler.engine = crawler._create_engine()
    return crawler


@pytest.fixture
def scheduler(crawler: Crawler) -> Iterator[RedisScheduler]:
    scheduler = RedisScheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    yield scheduler
    scheduler.close("finished")


def test_a_batch_is_checked_in_one_round_trip_and_duplicates_are_dropped(
    crawler: Crawler, scheduler: RedisScheduler
) -> None:
    dropped: list[str] = []

    def on_dropped(request: Request, spider: Spider) -> None:
        dropped.append(request.url)

    crawler.signals.connect(on_dropped, signal=signals.request_dropped)
    requests = [Request(f"https://example.com/a/{i}") for i in range(10)]
    requests += [Request("https://example.com/a/3"), Request("https://example.com/a/3")]
    requests.append(Request("https://example.com/a/4", dont_filter=True))
    assert all(scheduler.enqueue_request(r) for r in requests)
    assert scheduler.has_pending_requests()
    assert len(scheduler.queue) == 0, "nothing is pushed before the batch is flushed"

    sent: list[int] = []
    bloom = scheduler.df.bloom
    send = bloom._send
    bloom._send = lambda commands, replies: sent.append(len(commands)) or send(commands, replies)  # type: ignore[method-assign]
    assert scheduler.flush_pending() == 11
    assert sent == [1], "one write of one BITFIELD for the whole batch"
    assert dropped == ["https://example.com/a/3", "https://example.com/a/3"]
    assert len(scheduler.queue) == 11
    stats = crawler.stats
    assert stats is not None
    assert stats.get_value("scheduler/enqueued/redis") == 11
    assert stats.get_value("bloomfilter/new") == 10
    assert stats.get_value("bloomfilter/filtered") == 2
    assert scheduler.flush_pending() == 0

    popped = [scheduler.next_request() for _ in range(11)]
    assert sorted(r.url for r in popped if r is not None) == sorted(
        [f"https://example.com/a/{i}" for i in range(10)] + ["https://example.com/a/4"]
    )
    assert scheduler.next_request() is None
    assert not scheduler.has_pending_requests()


def test_next_request_pushes_the_pending_batch_before_popping(
    scheduler: RedisScheduler,
) -> None:
    scheduler.enqueue_request(Request("https://example.com/b", priority=5))
    popped = scheduler.next_request()
    assert popped is not None and popped.url == "https://example.com/b"
    assert popped.priority == 5


def test_a_full_batch_is_pushed_at_once(scheduler: RedisScheduler) -> None:
    for i in range(MAX_PENDING):
        scheduler.enqueue_request(Request(f"https://example.com/c/{i}"))
    assert len(scheduler.queue) == MAX_PENDING
    assert not scheduler._pending


def test_a_worker_takes_several_requests_per_round_trip_and_puts_back_the_rest(
    crawler: Crawler, scheduler: RedisScheduler
) -> None:
    assert scheduler.prefetch == 8
    for i in range(10):
        scheduler.enqueue_request(Request(f"https://example.com/p/{i}", priority=i))
    scheduler.flush_pending()
    first = scheduler.next_request()
    assert first is not None and first.url == "https://example.com/p/9", "best first"
    assert len(scheduler.queue) == 2, "8 taken in one round trip"
    assert scheduler.has_pending_requests()
    second = scheduler.next_request()
    assert second is not None and second.url == "https://example.com/p/8"

    scheduler.close("shutdown")
    assert len(scheduler.queue) == 8, "the 6 taken and not started are back"
    other = RedisScheduler.from_crawler(crawler)
    other.open(crawler.spider)
    urls = []
    while (request := other.next_request()) is not None:
        urls.append((request.url, request.priority))
    assert urls == [(f"https://example.com/p/{i}", i) for i in range(7, -1, -1)]
    other.close("finished")


def away() -> redis.Redis:
    """A Redis that refuses at once: without redis-py's own retries, each of which paused
    (3.5 s a call) before the failure the scheduler handles."""
    return redis.Redis(
        host="127.0.0.1", port=1, socket_connect_timeout=1, retry=Retry(NoBackoff(), 0)
    )


def test_requests_held_while_redis_is_away_are_pushed_when_it_answers_again(
    crawler: Crawler, scheduler: RedisScheduler, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="zeroarchive.distributed.scheduler")
    server = scheduler.server
    scheduler.server = away()
    for i in range(3):
        scheduler.enqueue_request(Request(f"https://example.com/d/{i}"))
    assert scheduler.flush_pending() == 0
    assert "Redis does not answer at redis://127.0.0.1:1/0" in caplog.text
    assert "holding 3 request(s)" in caplog.text
    assert crawler.stats is not None
    assert crawler.stats.get_value("scheduler/redis/errors") == 1
    assert scheduler.next_request() is None, "no pop before the next try is due"
    assert scheduler.has_pending_requests(), "the worker stays open while Redis is away"
    assert crawler.stats.get_value("scheduler/redis/errors") == 1, "no try before its time"

    # The Bloom filter already marked them seen (it fails open): pushed without a recheck.
    scheduler.server = server
    scheduler._retry_at = 0.0
    urls = {request.url for request in iter(scheduler.next_request, None)}
    assert "Redis answers again" in caplog.text
    assert urls == {f"https://example.com/d/{i}" for i in range(3)}
    assert crawler.stats.get_value("scheduler/enqueued/redis") == 3


def test_a_worker_closing_while_redis_is_away_says_what_it_could_not_queue(
    crawler: Crawler, scheduler: RedisScheduler, caplog: pytest.LogCaptureFixture
) -> None:
    scheduler.server = away()
    scheduler.enqueue_request(Request("https://example.com/e/1"))
    scheduler.flush_pending()
    scheduler.close("shutdown")
    assert "Closing with 1 request(s) not queued" in caplog.text
    assert crawler.stats is not None
    assert crawler.stats.get_value("scheduler/redis/unpushed") == 1
    assert crawler.stats.get_value("scheduler/redis/errors") == 2, "one last try at close"


def test_the_pending_batch_is_pushed_at_the_end_of_the_reactor_turn(redis_url: str) -> None:
    """Without waiting for the engine to ask for the next request (it does not while its
    downloader is busy), so idle workers elsewhere can take the work."""
    script = textwrap.dedent(
        f"""
        from scrapy import Request, Spider
        from scrapy.utils.reactor import install_reactor
        from scrapy.utils.test import get_crawler

        install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
        from twisted.internet import reactor
        from twisted.internet.task import deferLater
        from zeroarchive.distributed.scheduler import RedisScheduler

        class S(Spider):
            name = "generic"

        crawler = get_crawler(S, {settings_for(redis_url)!r})
        crawler.spider = crawler._create_spider()
        crawler.engine = crawler._create_engine()
        scheduler = RedisScheduler.from_crawler(crawler)
        scheduler.open(crawler.spider)
        for i in range(3):
            scheduler.enqueue_request(Request(f"https://example.com/e/{{i}}"))
        seen = []
        seen.append(len(scheduler.queue))
        later = deferLater(reactor, 0.05, lambda: seen.append(len(scheduler.queue)))
        later.addBoth(lambda _: reactor.stop())
        reactor.run()
        print("queued", seen)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "queued [0, 3]" in done.stdout, done.stdout + done.stderr


def test_one_push_interleaves_the_sites_so_a_pop_takes_several_sites_work(
    crawler: Crawler, scheduler: RedisScheduler
) -> None:
    """Three sites' backlogs pushed one after another leave the queue round-robin (within
    a priority; a list page still goes first), not one site's backlog at a time."""
    requests = [
        Request(f"https://s{site}.example/{n}", meta={META_KEY: {"site_id": site}})
        for site in (1, 2, 3)
        for n in range(3)
    ]
    list_page = Request("https://s3.example/list", priority=10, meta={META_KEY: {"site_id": 3}})
    requests.append(list_page)
    assert push_requests(scheduler.server, crawler.spider, requests) == 10
    order = [request.url for request in iter(scheduler.next_request, None)]
    assert order == [
        "https://s3.example/list",
        *(f"https://s{site}.example/{n}" for n in range(3) for site in (1, 2, 3)),
    ]


def test_requests_a_middleware_drops_or_answers_are_held_no_longer(redis_url: str) -> None:
    """Scrapy says ``request_left_downloader`` only for a download: a request a downloader
    middleware drops (IgnoreRequest, robots.txt) or answers (the run's robots.txt copy) is
    released all the same, so a worker that runs for ever holds nothing it is done with."""
    script = textwrap.dedent(
        f"""
        from scrapy import Request, Spider, signals
        from scrapy.crawler import CrawlerProcess
        from scrapy.exceptions import IgnoreRequest
        from scrapy.http import TextResponse
        from zeroarchive.distributed.queue import held_key, request_queue

        class AnswersAndDrops:
            def process_request(self, request):
                if "drop" in request.url:
                    raise IgnoreRequest("dropped by a middleware")
                if "answer" in request.url:
                    return TextResponse(request.url, body=b"answered", request=request)
                return None

        class S(Spider):
            name = "dropped_or_answered"  # its own queue
            seen = []

            async def start(self):
                for n in range(5):
                    yield Request(f"data:,drop{{n}}", errback=self.failed)
                    yield Request(f"data:,answer{{n}}")
                    yield Request(f"data:,fetched{{n}}")

            def parse(self, response):
                self.seen.append(response.text[:6])

            def failed(self, failure):
                self.seen.append("dropped")

        def idle(spider):
            scheduler = spider.crawler.engine._slot.scheduler
            key = held_key(request_queue(scheduler.server, spider).key, scheduler.owner)
            print("held", len(scheduler._downloading), scheduler.server.hlen(key))

        settings = {settings_for(redis_url)!r}
        settings.update(
            SCHEDULER="zeroarchive.distributed.scheduler.RedisScheduler",
            DOWNLOADER_MIDDLEWARES={{"__main__.AnswersAndDrops": 1}},
            ROBOTSTXT_OBEY=False,
            ITEM_PIPELINES={{}},
            EXTENSIONS={{}},
            SPIDER_MIDDLEWARES={{}},
            LOG_LEVEL="WARNING",
        )
        process = CrawlerProcess(settings)
        crawler = process.create_crawler(S)
        crawler.signals.connect(idle, signals.spider_idle)
        process.crawl(crawler)
        process.start()
        print("seen", sorted(S.seen))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = done.stdout + done.stderr
    assert "seen " + str(sorted(["answer"] * 5 + ["dropped"] * 5 + ["fetche"] * 5)) in out, out
    assert "held 0 0" in done.stdout, out


def test_an_answered_media_request_is_held_until_its_items_batch_is_written(
    crawler: Crawler, scheduler: RedisScheduler
) -> None:
    """A worker killed between a media answer and the write of the snapshot batch that
    holds its records would lose them: the request stays in the worker's held hash (put
    back in the queue if it dies) until the pipeline says that batch is written."""
    from types import SimpleNamespace

    from zeroarchive.distributed.queue import held_key

    pipeline = SimpleNamespace(batches_written=0, written_mark=lambda: 1)
    crawler.engine = SimpleNamespace(  # type: ignore[assignment]
        _slot=SimpleNamespace(inprogress=set()),
        scraper=SimpleNamespace(itemproc=SimpleNamespace(middlewares=[pipeline])),
    )
    meta = {"site_id": 1, "article_id": 1, "snapshot_at": 1, "media_kind": "image"}
    scheduler.enqueue_request(
        Request("https://example.com/i.png", meta={META_KEY: {**meta, "kind": "media"}})
    )
    scheduler.enqueue_request(Request("https://example.com/list", priority=5))
    scheduler.flush_pending()
    held = held_key(scheduler.queue.key, scheduler.owner)
    assert scheduler.next_request() is not None  # the list page
    assert scheduler.server.hlen(held) == 2
    # The list page answered: let go of; the media request handed out, then answered.
    assert scheduler.next_request() is not None
    assert scheduler.server.hlen(held) == 1
    scheduler._release_finished()
    assert scheduler.server.hlen(held) == 1
    pipeline.batches_written = 1
    scheduler._release_finished()
    assert scheduler.server.hlen(held) == 0


def walk_page(url: str, priority: int = 10) -> Request:
    """A list page of site 3's walk of round 1800000000, as a worker finds one."""
    meta = {META_KEY: {"site_id": 3, "kind": "list", "round": 1_800_000_000}}
    return Request(url, meta=meta, priority=priority)


def test_a_walk_page_a_worker_finds_is_its_own_next_request_held_in_redis(
    crawler: Crawler, scheduler: RedisScheduler, redis_url: str
) -> None:
    taken: list[list[str]] = []

    def on_taken(requests: list[Request], owner: str, confirm: object) -> None:
        taken.append([r.url for r in requests])

    crawler.signals.connect(on_taken, signal=work_taken)
    server = scheduler.server
    server.set("zeroarchive:walk:3:1800000000", 1)  # the walk `scrapy schedule` began
    push_requests(server, crawler.spider, [Request(f"https://example.com/s/{i}") for i in range(3)])
    first = scheduler.next_request()  # takes all three (prefetch 8), hands out one
    assert first is not None and first.url.startswith("https://example.com/s/")
    # Found while answering: queued at once, not at the end of the reactor's turn, and kept.
    scheduler.enqueue_request(walk_page("https://example.com/list/2"))
    assert not scheduler._pending
    assert taken == [["https://example.com/list/2"]]
    held = held_key(scheduler.queue.key, scheduler.owner)
    held_urls = {scheduler.queue.decode(e).url for e in server.hkeys(held)}
    assert held_urls == {"https://example.com/list/2"} | {
        f"https://example.com/s/{i}" for i in range(3)
    }
    assert len(scheduler.queue) == 0, "not in the shared queue: no other worker takes it"
    assert pages_left(server, (3, 1_800_000_000)) == 2
    # Handed out before what the worker had taken from the queue.
    following = scheduler.next_request()
    assert following is not None and following.url == "https://example.com/list/2"
    # A worker killed now: what it held (the kept page, the two not handed out yet; the
    # first is answered, the engine holding it no more) goes back to the queue.
    assert requeue_held(server, held) == 3
    urls = {scheduler.queue.decode(e).url for e in server.zrange(scheduler.queue.key, 0, -1)}
    assert urls == {
        "https://example.com/list/2",
        "https://example.com/s/1",
        "https://example.com/s/2",
    }


def test_walk_pages_beyond_the_prefetch_go_to_the_shared_queue(
    crawler: Crawler, scheduler: RedisScheduler
) -> None:
    pages = [walk_page(f"https://example.com/list/{i}") for i in range(12)]
    for page in pages:
        scheduler._pending.append(page)  # found in one turn, as a page linking to twelve
    assert scheduler.flush_pending() == 12
    stats = crawler.stats
    assert stats is not None
    assert stats.get_value("scheduler/kept/redis") == 8
    assert len(scheduler.queue) == 4
    handed = [scheduler.next_request() for _ in range(12)]
    assert [r.url for r in handed if r is not None] == [p.url for p in pages]
