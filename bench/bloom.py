"""Bloom dupefilter vs scrapy-redis's set dupefilter: memory, false positives, speed.

    python bench/bloom.py [--urls 10000000] [--set-urls 1000000] [--probe 1000000]

Needs a redis (REDIS_URL, default redis://127.0.0.1:6379/0); everything it writes lives
under one random key prefix and is deleted at the end. See bench/README.md.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import secrets
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import redis
from scrapy import Request, Spider
from scrapy.exceptions import ScrapyDeprecationWarning
from scrapy.utils.test import get_crawler
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.scheduler import Scheduler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zeroarchive.distributed.bloom import shape
from zeroarchive.distributed.dupefilter import BloomConfig, BloomDupeFilter
from zeroarchive.distributed.redis_bloom import RedisBloom
from zeroarchive.distributed.scheduler import RedisScheduler


def batches(tag: str, start: int, stop: int, size: int) -> Iterator[list[bytes]]:
    """Request fingerprints (20-byte SHA-1, as Scrapy's) of synthetic article URLs."""
    for first in range(start, stop, size):
        yield [
            hashlib.sha1(b"https://news.example.com/%s/%d.html" % (tag.encode(), i)).digest()
            for i in range(first, min(first + size, stop))
        ]


def set_add(server: redis.Redis, key: str) -> Callable[[list[bytes]], list[bool]]:
    """scrapy-redis's check (SADD of the hex fingerprint), pipelined per batch."""

    def add(batch: list[bytes]) -> list[bool]:
        pipe = server.pipeline(transaction=False)
        for fp in batch:
            pipe.sadd(key, fp.hex())
        return [added == 1 for added in pipe.execute()]

    return add


def timed(add: Callable[[list[bytes]], list[bool]], batch: list[bytes]) -> float:
    t = time.perf_counter()
    add(batch)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--urls", type=int, default=10_000_000)
    parser.add_argument("--set-urls", type=int, default=1_000_000)
    parser.add_argument("--probe", type=int, default=1_000_000)
    parser.add_argument("--error-rate", type=float, default=1e-4)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument(
        "--hashes", type=int, default=BloomConfig.hashes, help="k (0: the optimal k)"
    )
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--links", type=int, default=20, help="requests a page yields")
    args = parser.parse_args()
    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    server = redis.Redis.from_url(url)
    prefix = f"zeroarchive-bench:{secrets.token_hex(4)}"
    try:
        run(server, url, prefix, args)
    finally:
        stale = list(server.scan_iter(match=f"{prefix}*", count=1000))
        if stale:
            server.delete(*stale)


def run(server: redis.Redis, url: str, prefix: str, args: argparse.Namespace) -> None:
    s = shape(args.urls, args.error_rate, hashes=args.hashes or None)
    bloom = RedisBloom(server, f"{prefix}:bloom", s)
    set_key = f"{prefix}:set"
    stock = set_add(server, set_key)
    print(
        f"Bloom filter for {args.urls:,} URLs at {args.error_rate:g}: {s.bits:,} bits "
        f"({s.bits / 8 / 2**20:.1f} MiB), {s.hashes} hashes, {s.keys} key(s); "
        f"batches of {args.batch}"
    )
    used_before = int(server.info("memory")["used_memory"])

    # Side by side on the same URLs, batch by batch, so machine noise hits both alike.
    bloom_s = set_s = 0.0
    side_by_side = min(args.set_urls, args.urls)
    for batch in batches("in", 0, side_by_side, args.batch):
        bloom_s += timed(bloom.add, batch)
        set_s += timed(stock, batch)
    set_memory = int(server.memory_usage(set_key, samples=0) or 0)
    rest_s = 0.0
    for n, batch in enumerate(batches("in", side_by_side, args.urls, args.batch)):
        rest_s += timed(bloom.add, batch)
        if n % 1000 == 999:
            print(f"  ... {side_by_side + (n + 1) * args.batch:,} URLs in the filter", flush=True)
    bloom_rate = side_by_side / bloom_s
    set_rate = side_by_side / set_s
    all_rate = args.urls / (bloom_s + rest_s)

    estimate = bloom.estimate()
    used_after = int(server.info("memory")["used_memory"])
    bloom_per_url = estimate.memory_bytes / args.urls
    set_per_url = set_memory / side_by_side
    print(f"\nMemory (MEMORY USAGE): Bloom {estimate.memory_bytes:,} B for {args.urls:,} URLs")
    print(f"  = {bloom_per_url:.2f} B/URL; set {set_memory:,} B for {side_by_side:,} URLs")
    print(f"  = {set_per_url:.1f} B/URL (a set grows linearly: the same per URL at 10 M)")
    print(f"INFO used_memory grew {used_after - used_before:,} B for both together")
    print(f"Estimated items {estimate.items:,.0f}, ", end="")
    print(f"estimated FP rate {estimate.false_positive_rate:.3g}")

    false_positives = probes = 0
    t = time.perf_counter()
    for batch in batches("out", 0, args.probe, args.batch):
        false_positives += sum(bloom.contains(batch))
        probes += len(batch)
    probe_s = time.perf_counter() - t
    measured = false_positives / probes
    print(
        f"False positives: {false_positives:,} of {probes:,} never-inserted URLs = {measured:.3g}"
        f" ({probes / probe_s:,.0f} read-only checks/s)"
    )

    print(f"\nBatched test-and-set, first {side_by_side:,} URLs side by side:")
    print(f"  Bloom (one BITFIELD per batch)      {bloom_rate:>10,.0f} checks/s")
    print(f"  scrapy-redis set (pipelined SADD)   {set_rate:>10,.0f} checks/s")
    print(f"  Bloom over all {args.urls:,} URLs   {all_rate:>10,.0f} checks/s")

    req_bloom, req_set = per_request(url, prefix, args.requests)
    print(f"\nOne request at a time (request_seen with fingerprinting, {args.requests:,} each):")
    print(f"  BloomDupeFilter                     {req_bloom:>10,.0f} checks/s")
    print(f"  scrapy-redis RFPDupeFilter          {req_set:>10,.0f} checks/s")

    sched_ours, sched_stock = through_scheduler(url, prefix, args.requests, args.links)
    print(
        f"\nThrough the scheduler, as the engine calls it ({args.requests:,} requests, "
        f"{args.links} links a page; check and queue):"
    )
    print(f"  zeroarchive RedisScheduler + Bloom  {sched_ours:>10,.0f} requests/s")
    print(f"  scrapy-redis Scheduler + set        {sched_stock:>10,.0f} requests/s")

    print("\nRatios")
    print(f"  Bloom bytes per URL                 {bloom_per_url:.2f} (aim <= 3)")
    print(f"  set bytes per URL                   {set_per_url:.1f}")
    print(f"  set / Bloom memory                  {set_per_url / bloom_per_url:.1f}x")
    print(f"  measured / configured FP rate       {measured / args.error_rate:.2f} (aim <= 1.2)")
    print(f"  Bloom / set checks/s, batched       {bloom_rate / set_rate:.2f} (aim >= 1)")
    print(f"  Bloom / set, one request_seen call  {req_bloom / req_set:.2f}")
    print(f"  Bloom / set, through the scheduler  {sched_ours / sched_stock:.2f} (aim >= 1)")


class _Spider(Spider):
    name = "bench"


def per_request(url: str, prefix: str, n: int) -> tuple[float, float]:
    """Both dupefilters as a scheduler calls them: request_seen, one round trip each."""
    crawler = get_crawler(
        _Spider,
        {
            "REDIS_URL": url,
            "BLOOMFILTER_KEY": f"{prefix}:%(spider)s:reqbloom",
            "BLOOMFILTER_CAPACITY": 1_000_000,
        },
    )
    crawler.spider = crawler._create_spider()
    bloom = BloomDupeFilter.from_crawler(crawler)
    stock = RFPDupeFilter(redis.Redis.from_url(url), f"{prefix}:reqset")
    requests = [Request(f"https://news.example.com/r/{i}.html?utm_source=x") for i in range(n)]
    bloom_s = set_s = 0.0
    for i in range(0, n, 100):
        chunk = requests[i : i + 100]
        t = time.perf_counter()
        for r in chunk:
            bloom.request_seen(r)
        bloom_s += time.perf_counter() - t
        t = time.perf_counter()
        for r in chunk:
            stock.request_seen(r)
        set_s += time.perf_counter() - t
    return n / bloom_s, n / set_s


def through_scheduler(url: str, prefix: str, n: int, links: int) -> tuple[float, float]:
    """Both schedulers fed as Scrapy's engine feeds them: the links a page yields are
    enqueued one by one, then the reactor turn ends (when ours checks and pushes them
    as one batch; stock scrapy-redis has already made two round trips per request)."""
    from twisted.internet import reactor  # noqa: F401  (ours flushes through it)

    # scrapy-redis 0.9.1 passes spider= to the stats, deprecated in Scrapy 2.19.
    warnings.filterwarnings("ignore", "Passing a 'spider' argument", ScrapyDeprecationWarning)

    # A spider of its own: our queue's key is named after the spider, not the prefix.
    spider_cls = type("_SchedulerBench", (Spider,), {"name": prefix.replace(":", "-")})
    ours = _scheduler(RedisScheduler, spider_cls, url, prefix, "ours")
    stock = _scheduler(Scheduler, spider_cls, url, prefix, "stock")
    pages = [
        [Request(f"https://news.example.com/s/{i}.html?utm_source=x") for i in range(p, p + links)]
        for p in range(0, n, links)
    ]
    copies = [[r.copy() for r in page] for page in pages]
    ours_s = stock_s = 0.0
    try:
        for page, copy in zip(pages, copies, strict=True):
            t = time.perf_counter()
            for r in page:
                ours.enqueue_request(r)
            ours.flush_pending()
            ours_s += time.perf_counter() - t
            t = time.perf_counter()
            for r in copy:
                stock.enqueue_request(r)
            stock_s += time.perf_counter() - t
        assert len(ours.queue) == len(stock.queue) == sum(map(len, pages))
    finally:
        ours.server.delete(ours.queue.key)
    return n / ours_s, n / stock_s


def _scheduler(
    cls: type[Scheduler], spider_cls: type[Spider], url: str, prefix: str, name: str
) -> Scheduler:
    ours = cls is RedisScheduler
    crawler = get_crawler(
        spider_cls,
        {
            "REDIS_URL": url,
            "BLOOMFILTER_KEY": f"{prefix}:{name}:%(spider)s:bloom",
            "BLOOMFILTER_CAPACITY": 1_000_000,
            "DUPEFILTER_CLASS": "zeroarchive.distributed.dupefilter.BloomDupeFilter"
            if ours
            else "scrapy_redis.dupefilter.RFPDupeFilter",
            "ZEROARCHIVE_QUEUE_POLL_SECONDS": 0.25,
            "SCHEDULER_QUEUE_KEY": f"{prefix}:{name}:%(spider)s:requests",
            "SCHEDULER_DUPEFILTER_KEY": f"{prefix}:{name}:%(spider)s:dupefilter",
        },
    )
    crawler.spider = crawler._create_spider()
    crawler.engine = crawler._create_engine()
    scheduler = cls.from_crawler(crawler)
    scheduler.open(crawler.spider)
    return scheduler


if __name__ == "__main__":
    main()
