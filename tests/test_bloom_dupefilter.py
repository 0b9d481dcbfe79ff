"""The Bloom dupefilter against a real redis: no false negatives, bounded false
positives, one winner per URL when workers race, split keys, rounds, bypasses, stats."""

from __future__ import annotations

import hashlib
import os
import random
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.utils.test import get_crawler
from scrapy_redis.scheduler import Scheduler

from tests.conftest import project_settings, require_service, scrapy
from zeroarchive.distributed.bloom import positions, shape
from zeroarchive.distributed.dupefilter import BloomDupeFilter
from zeroarchive.distributed.redis_bloom import RedisBloom

REDIS_URL = os.environ.get("ZEROARCHIVE_TEST_REDIS", "redis://127.0.0.1:6379/0")


def _redis_answers() -> str | None:
    try:
        redis.Redis.from_url(REDIS_URL).ping()
    except redis.RedisError as exc:
        return str(exc)
    return None


@pytest.fixture
def server() -> Iterator[redis.Redis]:
    require_service("Redis", _redis_answers())
    client = redis.Redis.from_url(REDIS_URL)
    yield client
    client.close()


@pytest.fixture
def prefix(server: redis.Redis) -> Iterator[str]:
    """A key prefix no other test uses; every key under it is deleted afterwards."""
    name = f"zeroarchive-test:{secrets.token_hex(6)}"
    yield name
    stale = list(server.scan_iter(match=f"{name}*", count=1000))
    if stale:
        server.delete(*stale)


class _Spider(Spider):
    name = "generic"


def make_crawler(prefix: str, **settings: Any) -> Crawler:
    crawler = get_crawler(
        _Spider,
        project_settings(
            REDIS_URL=REDIS_URL,
            BLOOMFILTER_KEY=f"{prefix}:%(spider)s:bloom",
            DUPEFILTER_CLASS="zeroarchive.distributed.dupefilter.BloomDupeFilter",
            **settings,
        ),
    )
    crawler.spider = crawler._create_spider()
    return crawler


def fingerprints(n: int, tag: str = "in") -> list[bytes]:
    return [
        hashlib.sha1(b"https://example.com/%s/%d" % (tag.encode(), i)).digest() for i in range(n)
    ]


def add_all(bloom: RedisBloom, items: list[bytes], batch: int = 1000) -> list[bool]:
    out: list[bool] = []
    for start in range(0, len(items), batch):
        out += bloom.add(items[start : start + batch])
    return out


def test_no_false_negatives_and_bounded_false_positives(server: redis.Redis, prefix: str) -> None:
    bloom = RedisBloom(server, f"{prefix}:bloom", shape(100_000, 0.01))
    inserted = fingerprints(100_000)
    first = add_all(bloom, inserted)
    # A new URL can look seen only by a false positive: about 1% at most near capacity.
    assert first.count(False) < 0.01 * len(inserted)
    assert add_all(bloom, inserted).count(True) == 0
    assert all(bloom.contains(inserted[:5000]))
    others = fingerprints(20_000, tag="out")
    rate = sum(bloom.contains(others)) / len(others)
    # 1% configured: ~200 of 20,000 expected; the bounds are > 6 standard deviations away.
    assert 0.005 < rate < 0.015
    estimate = bloom.estimate()
    assert abs(estimate.items - 100_000) < 2000
    assert 0.005 < estimate.false_positive_rate < 0.015


def test_a_duplicate_in_the_same_batch_is_not_new(server: redis.Redis, prefix: str) -> None:
    bloom = RedisBloom(server, f"{prefix}:bloom", shape(1000, 1e-6))
    a, b = fingerprints(2)
    assert bloom.add([a, b, a, b, a]) == [True, True, False, False, False]


@pytest.mark.parametrize("batch", [1, 64])
def test_racing_workers_see_each_url_new_exactly_once(
    server: redis.Redis, prefix: str, batch: int
) -> None:
    items = fingerprints(4000)
    wins: list[list[bool]] = [[], []]

    def worker(n: int) -> None:
        client = redis.Redis.from_url(REDIS_URL)
        bloom = RedisBloom(client, f"{prefix}:bloom", shape(100_000, 1e-7, key_bits=2**20))
        order = list(range(len(items)))
        random.Random(n).shuffle(order) if n else None
        new = [False] * len(items)
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            for i, is_new in zip(chunk, bloom.add([items[i] for i in chunk]), strict=True):
                new[i] = is_new
        wins[n] = new
        client.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [a + b for a, b in zip(wins[0], wins[1], strict=True)] == [1] * len(items)
    assert 0 < sum(wins[0]) < len(items)


@pytest.mark.parametrize("batch", [5, 300])
@pytest.mark.parametrize("key_bits", [2**32, 4096, 1000])
def test_redis_sets_exactly_the_bits_python_computes(
    server: redis.Redis, prefix: str, key_bits: int, batch: int
) -> None:
    """Both ways of adding (one by one, numpy for batches) must set exactly the bits of
    ``zeroarchive.distributed.bloom.positions``, or ``contains``, ``bloom_stats`` and workers adding
    in other batch sizes would see different filters."""
    s = shape(300, 0.01, key_bits=key_bits)
    bloom = RedisBloom(server, f"{prefix}:bloom", s)
    items = fingerprints(300)
    assert add_all(bloom, items, batch=batch).count(True) > 290
    expected = sorted({p for item in items for p in positions(item, s.bits, s.hashes)})
    actual = []
    for index, key in enumerate(bloom.keys()):
        raw = server.get(key) or b""
        for byte_at, byte in enumerate(raw):
            for bit in range(8):
                if byte & (0x80 >> bit):
                    actual.append(index * key_bits + byte_at * 8 + bit)
    assert actual == expected
    assert all(bloom.contains(items))


def test_filter_split_over_tiny_keys(server: redis.Redis, prefix: str) -> None:
    s = shape(5000, 0.01, key_bits=4096)
    assert s.keys == 12
    bloom = RedisBloom(server, f"{prefix}:bloom", s)
    items = fingerprints(5000)
    assert add_all(bloom, items, batch=100).count(False) < 50
    assert add_all(bloom, items, batch=100).count(True) == 0
    for i, key in enumerate(bloom.keys()):
        assert server.strlen(key) <= 4096 // 8
        assert server.exists(key), i
    assert abs(bloom.estimate().items - 5000) < 250


def test_settings_shape_the_filter_and_it_keeps_its_shape(server: redis.Redis, prefix: str) -> None:
    crawler = make_crawler(prefix, BLOOMFILTER_CAPACITY=1000, BLOOMFILTER_ERROR_RATE=0.001)
    df = BloomDupeFilter.from_crawler(crawler)
    assert df.base == f"{prefix}:generic:bloom"
    assert (df.bloom.shape.capacity, df.bloom.shape.hashes) == (1000, 7)
    assert df.bloom.shape == shape(1000, 0.001, hashes=7)
    optimal = make_crawler(f"{prefix}:o", BLOOMFILTER_CAPACITY=1000, BLOOMFILTER_HASHES=0)
    assert BloomDupeFilter.from_crawler(optimal).bloom.shape.hashes == 13
    # A worker configured differently uses the shape the filter was created with.
    other = BloomDupeFilter.from_crawler(make_crawler(prefix, BLOOMFILTER_CAPACITY=5000))
    assert other.bloom.shape == df.bloom.shape


def test_request_seen_uses_the_crawlers_fingerprints_and_counts(
    server: redis.Redis, prefix: str
) -> None:
    crawler = make_crawler(prefix, BLOOMFILTER_CAPACITY=1000)
    df = BloomDupeFilter.from_crawler(crawler)
    assert df.request_seen(Request("https://example.com/a?x=1&y=2")) is False
    # Scrapy's fingerprinter canonicalises the query, so this is the same request.
    assert df.request_seen(Request("https://example.com/a?y=2&x=1")) is True
    assert df.request_seen(Request("https://example.com/a", method="POST")) is False
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert stats["bloomfilter/new"] == 2
    assert stats["bloomfilter/filtered"] == 1


def test_list_pages_are_walked_again_each_round(server: redis.Redis, prefix: str) -> None:
    crawler = make_crawler(prefix, BLOOMFILTER_LIST_TTL=600)
    df = BloomDupeFilter.from_crawler(crawler)

    def page(round_id: str | None) -> Request:
        meta: dict[str, Any] = {"kind": "list", "site_id": 1}
        if round_id is not None:
            meta["round"] = round_id
        return Request("https://example.com/list", meta={"zeroarchive": meta})

    assert df.request_seen(page("r1")) is False
    assert df.request_seen(page("r1")) is True
    assert df.request_seen(page("r2")) is False
    assert df.request_seen(page(None)) is False  # the current hour is a round of its own
    assert df.request_seen(page(None)) is True
    assert 0 < server.ttl(f"{df.base}:list:r1") <= 600
    # List rounds never enter the long-lived filter.
    assert not server.exists(df.base)


def test_snapshots_and_dont_filter_bypass(server: redis.Redis, prefix: str) -> None:
    crawler = make_crawler(prefix)
    df = BloomDupeFilter.from_crawler(crawler)
    snap = Request("https://example.com/n/1", meta={"zeroarchive": {"kind": "snapshot"}})
    assert [df.request_seen(snap) for _ in range(3)] == [False] * 3
    forced = Request("https://example.com/n/2", dont_filter=True)
    assert [df.request_seen(forced) for _ in range(2)] == [False] * 2
    assert not server.exists(df.base)
    assert crawler.stats.get_value("bloomfilter/bypassed") == 3  # type: ignore[union-attr]


def test_batch_api_matches_one_by_one(server: redis.Redis, prefix: str) -> None:
    df = BloomDupeFilter.from_crawler(make_crawler(prefix))
    urls = [f"https://example.com/{i % 7}" for i in range(20)]
    seen = df.requests_seen([Request(u) for u in urls])
    assert seen == [i >= 7 for i in range(20)]


def test_warns_when_the_estimated_rate_passes_twice_the_configured(
    server: redis.Redis, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    crawler = make_crawler(prefix, BLOOMFILTER_CAPACITY=100, BLOOMFILTER_ERROR_RATE=0.01)
    df = BloomDupeFilter.from_crawler(crawler)
    df.requests_seen([Request(f"https://example.com/{i}") for i in range(100)])
    assert df.check() is not None and not df.check().overfull  # type: ignore[union-attr]
    assert "fuller than planned" not in caplog.text
    df.requests_seen([Request(f"https://example.com/more/{i}") for i in range(300)])
    df.close("finished")
    assert "fuller than planned" in caplog.text
    assert crawler.stats.get_value("bloomfilter/overfull_warnings") == 1  # type: ignore[union-attr]


def test_redis_down_fails_open_with_an_error_and_a_stat(
    server: redis.Redis, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    crawler = make_crawler(prefix)
    df = BloomDupeFilter.from_crawler(crawler)
    df.server.connection_pool.reset()
    df.server.connection_pool.connection_kwargs["port"] = 1  # nothing listens there
    assert df.request_seen(Request("https://example.com/x")) is False
    assert "redis failed, not filtering" in caplog.text
    assert crawler.stats.get_value("bloomfilter/errors") == 1  # type: ignore[union-attr]


# scrapy-redis 0.9.1's Scheduler passes spider= to the stats (deprecated in Scrapy 2.19).
@pytest.mark.filterwarnings(
    "ignore:Passing a 'spider' argument:scrapy.exceptions.ScrapyDeprecationWarning"
)
def test_scrapy_redis_scheduler_builds_and_uses_it(server: redis.Redis, prefix: str) -> None:
    crawler = make_crawler(prefix, SCHEDULER_QUEUE_KEY=f"{prefix}:%(spider)s:requests")
    scheduler = Scheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    assert isinstance(scheduler.df, BloomDupeFilter)
    assert scheduler.enqueue_request(Request("https://example.com/q")) is True
    assert scheduler.enqueue_request(Request("https://example.com/q")) is False
    scheduler.flush()
    assert not server.exists(f"{prefix}:generic:bloom:shape")


def test_bloom_stats_command(server: redis.Redis, prefix: str, tmp_path: Path) -> None:
    key = f"{prefix}:%(spider)s:bloom"
    settings = ["-s", f"BLOOMFILTER_KEY={key}", "-s", "BLOOMFILTER_CAPACITY=10000"]
    env = {"REDIS_URL": REDIS_URL}
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    empty = scrapy("bloom_stats", *settings, db_url=db_url, cwd=tmp_path, extra_env=env)
    assert empty.returncode == 0, empty.output
    assert "not created yet" in empty.stdout
    crawler = make_crawler(prefix, BLOOMFILTER_CAPACITY=10_000)
    df = BloomDupeFilter.from_crawler(crawler)
    df.requests_seen([Request(f"https://example.com/{i}") for i in range(1000)])
    df.request_seen(
        Request("https://example.com/l", meta={"zeroarchive": {"kind": "list", "round": "r9"}})
    )
    run = scrapy(
        "bloom_stats", "--spider", "generic", *settings, db_url=db_url, cwd=tmp_path, extra_env=env
    )
    assert run.returncode == 0, run.output
    out = run.stdout
    assert f"Bloom filter {prefix}:generic:bloom" in out
    assert "capacity             10000" in out
    bits_set = server.bitcount(f"{prefix}:generic:bloom")
    assert f"bits set             {bits_set} " in out
    items = int(out.split("estimated items")[1].split()[0])
    assert 980 <= items <= 1020
    assert "estimated FP rate" in out
    assert f"List round {prefix}:generic:bloom:list:r9" in out
    missing = scrapy("bloom_stats", db_url=db_url, cwd=tmp_path, extra_env={"REDIS_URL": ""})
    assert missing.returncode == 1
    assert "needs REDIS_URL" in missing.stdout
