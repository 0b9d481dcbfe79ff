"""The one process that decides when, in distributed mode (`scrapy schedule`).

Each round it selects the due list pages and due articles of all active sites with the
one selection of due work (zeroarchive/crawl/due_work.py, which the embedded mode uses too) and
pushes them to the right spider's shared queue.
Articles are pushed under a lease, so nothing is queued twice while in flight, and work a
dead worker held comes due again when its lease runs out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import redis
from scrapy.settings import BaseSettings

from zeroarchive.core.request_meta import META_KEY
from zeroarchive.crawl.due_work import begin_walk, claim_due, due_sites
from zeroarchive.crawl.spider import ArchiveSpider
from zeroarchive.distributed.queue import push_requests, request_queue
from zeroarchive.storage.archive import Archive

logger = logging.getLogger(__name__)

MARKER_KEY = "zeroarchive:dispatcher:alive"


@dataclass(frozen=True)
class DispatchConfig:
    batch: int
    lease: int
    high_water: int

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DispatchConfig:
        config = cls(
            batch=settings.getint("ZEROARCHIVE_DUE_BATCH"),
            lease=settings.getint("ZEROARCHIVE_LEASE_SECONDS"),
            high_water=settings.getint("ZEROARCHIVE_QUEUE_HIGH_WATER"),
        )
        if min(config.batch, config.lease, config.high_water) < 1:
            raise ValueError(f"dispatch settings must be positive: {config}")
        return config


@dataclass
class RoundReport:
    list_sites: int = 0
    list_requests: int = 0
    snapshots: int = 0
    queued: int = 0
    bad_sites: list[str] = field(default_factory=list)


class Dispatcher:
    def __init__(
        self,
        archive: Archive,
        server: redis.Redis,
        spiders: list[ArchiveSpider],
        config: DispatchConfig,
    ) -> None:
        self.archive = archive
        self.server = server
        self.spiders = spiders
        self.config = config

    def _queues_lost(self) -> bool:
        """True when redis no longer holds what earlier rounds pushed (restarted empty,
        flushed): the marker key set by every round is gone. Also true on the first round
        ever, when there are no leases to release."""
        return bool(self.server.set(MARKER_KEY, "1", nx=True))

    def run_once(self, now: int) -> dict[str, RoundReport]:
        """One round: queue every due list page and due article; a report per spider."""
        if self._queues_lost():
            # The queues went with the old data: hand the leased work out again now
            # instead of waiting for the leases to run out.
            types = tuple(t for spider in self.spiders for t in spider.site_types)
            released = self.archive.articles.release_leases(types, now)
            if released:
                logger.warning("Redis lost its queues: %d leased article(s) queued again", released)
        return {spider.name: self._dispatch(spider, now) for spider in self.spiders}

    def _dispatch(self, spider: ArchiveSpider, now: int) -> RoundReport:
        report = RoundReport()
        queue = request_queue(self.server, spider)
        due = due_sites(self.archive, spider.site_types, now)
        report.bad_sites.extend(due.bad)
        for site_id in sorted(due.walk):
            site = due.sites[site_id]
            requests = list(spider.discovery_requests(site))
            for request in requests:
                # The Bloom filter keeps list pages per round, so each round walks them again.
                request.meta[META_KEY]["round"] = now
            report.list_requests += push_requests(self.server, spider, requests)
            # Only once queued: a redis cut before this leaves the walk due for next round.
            begin_walk(self.archive, site, now)
            report.list_sites += 1
        while due.sites and len(queue) < self.config.high_water:
            claimed = claim_due(
                self.archive, list(due.sites), now, self.config.batch, self.config.lease
            )
            if not claimed:
                break
            sites = {article.site_id: due.sites[article.site_id] for article in claimed}
            push_requests(
                self.server, spider, spider.probe_requests(sites.values(), self.archive.engine)
            )
            report.snapshots += push_requests(
                self.server,
                spider,
                (spider.due_request(due.sites[article.site_id], article) for article in claimed),
            )
        report.queued = len(queue)
        return report
