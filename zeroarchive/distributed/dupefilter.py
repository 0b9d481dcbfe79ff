"""The Bloom-filter request dupefilter of distributed mode, shared by every worker of a spider.

``BloomDupeFilter`` is the ``DUPEFILTER_CLASS``: built by Scrapy's scheduler
(``from_crawler``) or by scrapy-redis's (``from_spider``); fingerprints come from
``crawler.request_fingerprinter``; the bits are kept by ``RedisBloom``
(zeroarchive/distributed/redis_bloom.py). List pages are de-duplicated per round only (keys
``<key>:list:<round>`` that expire), snapshot requests bypass it: the Article table, not
the filter, decides whether an article exists.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import redis
from scrapy.dupefilters import BaseDupeFilter
from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings
from scrapy.utils.request import RequestFingerprinterProtocol

from zeroarchive.core.request_meta import META_KEY
from zeroarchive.distributed.bloom import (
    BloomShape,
    list_round,
    shape,
)
from zeroarchive.distributed.redis_bloom import (
    BloomEstimate,
    RedisBloom,
    list_key_of,
    shape_json,
    shape_key_of,
)
from zeroarchive.distributed.redis_client import connect, redis_url_from

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

STATS_PREFIX = "bloomfilter"


@dataclass(frozen=True)
class BloomConfig:
    """The ``BLOOMFILTER_*`` settings, typed and checked."""

    redis_url: str
    capacity: int
    error_rate: float
    hashes: int | None
    key: str
    key_bits: int
    list_capacity: int
    list_ttl: int
    check_seconds: float
    debug: bool = False

    def __post_init__(self) -> None:
        shape(self.capacity, self.error_rate, key_bits=self.key_bits, hashes=self.hashes)
        shape(self.list_capacity, self.error_rate, key_bits=self.key_bits, hashes=self.hashes)
        if self.list_ttl < 1:
            raise ValueError(f"BLOOMFILTER_LIST_TTL must be at least 1 s, not {self.list_ttl}")
        if "%(spider)s" not in self.key:
            raise ValueError(f"BLOOMFILTER_KEY must contain %(spider)s, not {self.key!r}")

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> BloomConfig:
        url = redis_url_from(settings)
        if not url:
            raise NotConfigured("the Bloom dupefilter needs REDIS_URL")
        hashes = settings.get("BLOOMFILTER_HASHES")
        return cls(
            redis_url=url,
            capacity=settings.getint("BLOOMFILTER_CAPACITY"),
            error_rate=settings.getfloat("BLOOMFILTER_ERROR_RATE"),
            hashes=int(hashes) if hashes else None,
            key=settings.get("BLOOMFILTER_KEY"),
            key_bits=settings.getint("BLOOMFILTER_KEY_BITS"),
            list_capacity=settings.getint("BLOOMFILTER_LIST_CAPACITY"),
            list_ttl=settings.getint("BLOOMFILTER_LIST_TTL"),
            check_seconds=settings.getfloat("BLOOMFILTER_CHECK_SECONDS"),
            debug=settings.getbool("DUPEFILTER_DEBUG"),
        )

    def base_key(self, spider: str) -> str:
        return self.key % {"spider": spider}

    def shape(self) -> BloomShape:
        return shape(self.capacity, self.error_rate, key_bits=self.key_bits, hashes=self.hashes)

    def list_shape(self) -> BloomShape:
        return shape(
            self.list_capacity, self.error_rate, key_bits=self.key_bits, hashes=self.hashes
        )


class BloomDupeFilter(BaseDupeFilter):
    """``DUPEFILTER_CLASS`` for distributed crawls: a Bloom filter in redis per spider."""

    def __init__(
        self,
        server: redis.Redis,
        config: BloomConfig,
        spider_name: str,
        fingerprinter: RequestFingerprinterProtocol,
        stats: StatsCollector | None = None,
    ) -> None:
        self.server = server
        self.config = config
        self.base = config.base_key(spider_name)
        self.fingerprinter = fingerprinter
        self.stats = stats
        self.bloom = RedisBloom.open(server, self.base, config.shape())
        self._list_shape = config.list_shape()
        self._lists: dict[str, RedisBloom] = {}
        self._next_check = time.monotonic() + config.check_seconds
        self._warned = False
        self._logdupes = True
        logger.info(
            "Bloom dupefilter %s: capacity %d at error rate %g, %d bits in %d key(s), %d hashes",
            self.base,
            self.bloom.shape.capacity,
            self.bloom.shape.error_rate,
            self.bloom.shape.bits,
            self.bloom.shape.keys,
            self.bloom.shape.hashes,
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config = BloomConfig.from_settings(crawler.settings)
        if crawler.spider is None:
            raise RuntimeError("BloomDupeFilter is built by the scheduler, once a spider exists")
        server = connect(crawler.settings, config.redis_url)
        return cls(
            server, config, crawler.spider.name, crawler.request_fingerprinter, crawler.stats
        )

    @classmethod
    def from_spider(cls, spider: Spider) -> Self:
        """How scrapy-redis's Scheduler builds its dupefilter (in ``open``)."""
        return cls.from_crawler(spider.crawler)

    def request_seen(self, request: Request) -> bool:
        return self.requests_seen([request])[0]

    def requests_seen(self, requests: Sequence[Request]) -> list[bool]:
        """``request_seen`` for a batch, one atomic round trip per filter touched."""
        seen = [False] * len(requests)
        groups: dict[str | None, list[int]] = {}
        for i, request in enumerate(requests):
            if request.dont_filter:
                continue
            meta = request.meta.get(META_KEY)
            if not isinstance(meta, dict):
                meta = {}
            kind = meta.get("kind")
            if kind == "snapshot":
                self._inc("bypassed")
                continue
            round_id = list_round(meta.get("round"), time.time()) if kind == "list" else None
            groups.setdefault(round_id, []).append(i)
        for round_id, indexes in groups.items():
            bloom = self.bloom if round_id is None else self._list_bloom(round_id)
            fingerprints = [self.fingerprinter.fingerprint(requests[i]) for i in indexes]
            try:
                new = bloom.add(fingerprints)
            except redis.RedisError as exc:
                # Failing open costs a redundant fetch at worst; the Article table still
                # decides whether an article exists.
                logger.error(
                    "Bloom dupefilter %s: redis failed, not filtering: %s", bloom.base, exc
                )
                self._inc("errors", len(indexes))
                continue
            for i, is_new in zip(indexes, new, strict=True):
                seen[i] = not is_new
            filtered = new.count(False)
            self._inc("new", len(new) - filtered)
            self._inc("filtered", filtered)
        if time.monotonic() >= self._next_check:
            self.check()
        return seen

    def _list_bloom(self, round_id: str) -> RedisBloom:
        bloom = self._lists.get(round_id)
        if bloom is None:
            for old in self._lists.values():
                old.close()
            key = list_key_of(self.base, round_id)
            bloom = RedisBloom(self.server, key, self._list_shape, self.config.list_ttl)
            self._lists = {round_id: bloom}
        return bloom

    def check(self) -> BloomEstimate | None:
        """Estimate fill and false-positive rate; warn when past twice the configured rate."""
        self._next_check = time.monotonic() + self.config.check_seconds
        try:
            self._check_not_lost()
            estimate = self.bloom.estimate()
        except redis.RedisError as exc:
            logger.error("Bloom dupefilter %s: cannot read its size: %s", self.base, exc)
            self._inc("errors")
            return None
        if self.stats is not None:
            self.stats.set_value(f"{STATS_PREFIX}/estimated_items", round(estimate.items))
            self.stats.set_value(f"{STATS_PREFIX}/bits_set", estimate.bits_set)
        if estimate.overfull and not self._warned:
            self._warned = True
            self._inc("overfull_warnings")
            logger.warning(
                "Bloom filter %s is fuller than planned: about %d items for a capacity of %d, "
                "estimated false-positive rate %.3g > twice the configured %g; raise "
                "BLOOMFILTER_CAPACITY (under a new BLOOMFILTER_KEY)",
                self.base,
                estimate.items,
                estimate.shape.capacity,
                estimate.false_positive_rate,
                estimate.shape.error_rate,
            )
        elif not estimate.overfull:
            self._warned = False
        return estimate

    def _check_not_lost(self) -> None:
        """Redis restarted empty or was flushed: the filter's shape went with its bits.
        Record the shape again (the bits fill again as requests come), once per loss."""
        if self.server.set(shape_key_of(self.base), shape_json(self.bloom.shape), nx=True):
            self._inc("lost")
            logger.warning(
                "Bloom filter %s was lost (redis restarted empty or was flushed): it starts "
                "again empty; list pages are walked again, and the Article table keeps each "
                "article once",
                self.base,
            )

    def _inc(self, metric: str, n: int = 1) -> None:
        if self.stats is not None and n:
            self.stats.inc_value(f"{STATS_PREFIX}/{metric}", n)

    def open(self) -> None:
        self.check()

    def close(self, reason: str) -> None:
        self.check()
        for bloom in [self.bloom, *self._lists.values()]:
            bloom.close()

    def clear(self) -> None:
        """Delete the filter, its shape and every list round (scrapy-redis's flush)."""
        self.bloom.delete()
        self.server.delete(shape_key_of(self.base))
        stale = list(self.server.scan_iter(match=list_key_of(self.base, "*"), count=1000))
        if stale:
            self.server.delete(*stale)

    def log(self, request: Request, spider: Spider) -> None:
        if self.config.debug:
            logger.debug("Filtered duplicate request: %s", request, extra={"spider": spider})
        elif self._logdupes:
            logger.debug(
                "Filtered duplicate request: %s - no more duplicates will be shown"
                " (see DUPEFILTER_DEBUG to show all duplicates)",
                request,
                extra={"spider": spider},
            )
            self._logdupes = False
