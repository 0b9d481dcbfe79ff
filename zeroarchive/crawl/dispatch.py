"""The one process that decides when, in distributed mode (`scrapy schedule`).

Each round it selects the due list pages and due articles of all active sites with the
one selection of due work (zeroarchive/crawl/due_work.py, which the embedded mode uses too) and
pushes them to the right spider's shared queue.
Articles and walks are pushed under a lease, so nothing is queued twice while in flight.
Before each round it takes back lost work (zeroarchive/storage/leases.py): everything
queued when redis lost its queues (restarted empty, flushed), every walk not done then
(its pages' counter went too), and at once what a worker whose heartbeat is gone held
(zeroarchive/distributed/heartbeat.py), its walks due again and its held entries back in
the queue; a live worker's leases are never taken back. Each recovery is logged once
with its counts and counted per site.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import redis
from scrapy.settings import BaseSettings

from zeroarchive.core.owners import WORKER, queued_owner
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.crawl.due_work import (
    DueSites,
    begin_walk,
    claim_due,
    due_sites,
    plan_walk_of,
    skip_walk,
    walk_round,
)
from zeroarchive.crawl.list_pages import ListPages
from zeroarchive.crawl.spider import ArchiveSpider
from zeroarchive.distributed.heartbeat import alive
from zeroarchive.distributed.queue import held_keys, push_requests, request_queue, requeue_held
from zeroarchive.storage.archive import Archive
from zeroarchive.storage.leases import Released, holders, release_in_flight, release_owners
from zeroarchive.storage.list_pages import ListPageStore

logger = logging.getLogger(__name__)

MARKER_KEY = "zeroarchive:dispatcher:alive"


@dataclass(frozen=True)
class DispatchConfig:
    batch: int
    lease: int
    high_water: int
    heartbeat: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DispatchConfig:
        config = cls(
            batch=settings.getint("ZEROARCHIVE_DUE_BATCH"),
            lease=settings.getint("ZEROARCHIVE_LEASE_SECONDS"),
            high_water=settings.getint("ZEROARCHIVE_QUEUE_HIGH_WATER"),
            heartbeat=settings.getfloat("ZEROARCHIVE_HEARTBEAT_SECONDS"),
        )
        if min(config.batch, config.lease, config.high_water, config.heartbeat) < 1:
            raise ValueError(f"dispatch settings must be positive: {config}")
        return config


@dataclass
class RoundReport:
    list_sites: int = 0
    list_requests: int = 0
    snapshots: int = 0
    probes: int = 0  # soft-404 probes (zeroarchive/events/probe.py)
    postponed: int = 0  # list pages put off by their sites' budgets
    retired: int = 0  # list pages no longer tracked (list_intervals.retiring)
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
        for spider in spiders:
            if getattr(spider, "list_pages", None) is None:
                # Built without a crawler (`scrapy schedule`): which list pages are known, for
                # the walks it plans, comes from the dispatcher's archive, fresh each round.
                spider.list_pages = ListPages(
                    ListPageStore(archive.engine), lambda: None, archive.sites.get, 1.0
                )
        self.config = config
        # After redis lost its queues (and heartbeats), live workers get one heartbeat
        # period to beat again before any of them is taken for dead.
        self._grace_until = 0.0
        #: Everything taken back since this dispatcher started.
        self.recovered = Released()

    def _queues_lost(self) -> bool:
        """True when redis no longer holds what earlier rounds pushed (restarted empty,
        flushed): the marker key is gone. Also true on the first round ever, when there
        are no leases to release. The marker is set again only once the lost work was
        released, so a round that fails on the database in between tries again."""
        return not self.server.exists(MARKER_KEY)

    def run_once(self, now: int) -> dict[str, RoundReport]:
        """One round: take back lost work, then queue every due list page and due article;
        a report per spider."""
        self.recover(now)
        # One selection for every spider's types, split by spider: its reads (the due
        # articles' sites, the watched sites) were the most of a round's CPU, five times.
        types = tuple(dict.fromkeys(t for spider in self.spiders for t in spider.site_types))
        due = due_sites(self.archive, types, now)
        return {
            spider.name: self._dispatch(spider, due.of_types(spider.site_types), now)
            for spider in self.spiders
        }

    def recover(self, now: int) -> Released:
        """Make due again, now, what was queued in lost queues or held by dead workers."""
        engine = self.archive.engine
        # Owners holding leases or walks, and workers that took entries the database may
        # not know of yet (held hashes, zeroarchive/distributed/queue.py).
        held = held_keys(self.server)
        workers = holders(engine, WORKER, now) | set(held)
        if self._queues_lost():
            # The queues went with the old data: hand the work out again now instead of
            # waiting for the leases (and the next list interval) to run out. Workers'
            # heartbeats went too; what they hold is theirs until they fail to beat again.
            types = tuple(t for spider in self.spiders for t in spider.site_types)
            released = release_in_flight(engine, types, now, keep=workers)
            self.server.set(MARKER_KEY, "1")
            self._grace_until = now + self.config.heartbeat
            if released:
                logger.warning(
                    "Redis lost its queues (restarted empty or flushed): %d leased article(s) "
                    "and %d list walk(s) of %d site(s) queued again; the Bloom filter starts "
                    "again empty (list pages are walked again, the Article table keeps each "
                    "article once); %d worker(s) holding work get %g s to beat again",
                    released.articles,
                    released.walks,
                    len(released.by_site),
                    len(workers),
                    self.config.heartbeat,
                )
        elif now >= self._grace_until and workers:
            dead = workers - alive(self.server, workers)
            requeued = sum(requeue_held(self.server, key) for o in dead for key in held.get(o, []))
            released = release_owners(engine, dead, now)
            if released or requeued:
                logger.warning(
                    "Worker(s) %s gone (no heartbeat): %d leased article(s) and %d list "
                    "walk(s) of %d site(s) they held queued again, %d request(s) they had "
                    "taken put back in the queue",
                    ", ".join(sorted(dead)),
                    released.articles,
                    released.walks,
                    len(released.by_site),
                    requeued,
                )
        else:
            released = Released()
        self.recovered += released
        return released

    def _dispatch(self, spider: ArchiveSpider, due: DueSites, now: int) -> RoundReport:
        report = RoundReport()
        queue = request_queue(self.server, spider)
        report.bad_sites.extend(due.bad)
        for site_id in sorted(due.walk):
            site = due.sites[site_id]
            plan = plan_walk_of(self.archive, site, now)
            requests = spider.walk_requests(site, plan)
            report.postponed += len(plan.postponed)
            report.retired += len(plan.retired)
            if not requests:
                skip_walk(self.archive, site, now, plan)
                continue
            # The walk's name: every page of it carries it (middlewares/walk_rounds.py), the
            # Bloom filter keeps list pages per round (each walk walks them again), redis
            # counts the walk's pages under it, and the database knows it as last_crawl_at.
            round_id = walk_round(now, due.last_walk.get(site_id, 0))
            for request in requests:
                request.meta[META_KEY]["round"] = round_id
            report.list_requests += push_requests(self.server, spider, requests, begin_walks=True)
            # Only once queued: a redis cut before this leaves the walk due for next round.
            begin_walk(self.archive, site, round_id, queued_owner(), plan)
            report.list_sites += 1
        # The pages the walks' configs named, marked linked (for retiring).
        spider.list_pages.maybe_write(force=True)
        while due.sites and len(queue) < self.config.high_water:
            claimed = claim_due(
                self.archive, list(due.sites), now, self.config.batch, self.config.lease
            )
            if not claimed:
                break
            sites = {article.site_id: due.sites[article.site_id] for article in claimed}
            report.probes += push_requests(
                self.server, spider, spider.probe_requests(sites.values(), self.archive.engine)
            )
            report.snapshots += push_requests(
                self.server,
                spider,
                (spider.due_request(due.sites[article.site_id], article) for article in claimed),
            )
        report.queued = len(queue)
        return report
