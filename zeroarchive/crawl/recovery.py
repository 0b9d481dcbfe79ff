"""What a spider records so lost work can be taken back, and taking it back when it starts.

Distributed worker (``HeldWork``): the scheduler says what the worker took from the queue
(``work_taken``), put back (``work_returned``) and answered to the end
(``walk_pages_done``); the worker records in the database that it holds those snapshots
and walks (owner: its heartbeat's name), that a walk is queued again once the pages of it
that it held were answered (the next ones are in the shared queue, for any worker), and
that a walk is done once its last page was answered (redis counts its pages:
zeroarchive/distributed/walks.py). `scrapy schedule` takes back what a worker whose
heartbeat is gone held (zeroarchive/crawl/dispatch.py).

Embedded run (``take_up_dead_runs``): a run that starts takes the run lock of every site on
which a run of this host holds leases or a walk; a lock it gets means that run is dead, so
what it held is due again at once, before the due work is selected. A run that stops
before its end (not ``finished``) leaves its walks due again too.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from scrapy.crawler import Crawler
from scrapy.http import Request
from scrapy.statscollectors import StatsCollector
from sqlalchemy.exc import SQLAlchemyError
from twisted.internet import threads

from zeroarchive.core.owners import host_prefix
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.core.stats import count
from zeroarchive.crawl.runlock import SiteRunLocks
from zeroarchive.distributed.walks import walk_pages
from zeroarchive.storage.archive import Archive
from zeroarchive.storage.leases import (
    Released,
    end_walks,
    give_back,
    release_runs,
    sites_held,
    take,
)

logger = logging.getLogger(__name__)

Walk = tuple[int, int]


def held_work(requests: Iterable[Request]) -> tuple[set[int], Counter[Walk]]:
    """(article ids of snapshot requests, pages of each walk (site id, round))."""
    articles: set[int] = set()
    for request in requests:
        meta = request.meta.get(META_KEY)
        if not isinstance(meta, dict):
            continue
        if meta.get("kind") == "snapshot" and isinstance(meta.get("article_id"), int):
            articles.add(meta["article_id"])
    return articles, walk_pages(requests)


class HeldWork:
    """A distributed worker's record of the work it holds (writes off the reactor)."""

    def __init__(
        self, archive: Archive, crawler: Crawler, lease: int, clock: Callable[[], int]
    ) -> None:
        self.archive = archive
        self.crawler = crawler
        self.lease = lease
        self.clock = clock
        self.owner: str | None = None
        #: Pages of each walk this worker took and has not answered to the end yet.
        self.pages: Counter[Walk] = Counter()
        self._failing = False

    def taken(self, requests: list[Request], owner: str, confirm: Callable[[], None]) -> None:
        """Record that ``owner`` holds these snapshots and walks, then ``confirm``."""
        self.owner = owner
        articles, pages = held_work(requests)
        if not (articles or pages):
            confirm()
            return
        self.pages.update(pages)
        self._write(
            "record the work it took",
            take,
            self.archive.engine,
            owner,
            self.clock(),
            self.lease,
            articles,
            set(pages),
        ).addCallback(lambda ok: confirm() if ok else None)

    def returned(self, requests: list[Request], owner: str) -> None:
        """At close, on the way out: written at once."""
        articles, pages = held_work(requests)
        self.pages.subtract(pages)
        walks = self._let_go(pages)
        if not (articles or walks):
            return
        try:
            give_back(self.archive.engine, owner, articles, walks)
        except SQLAlchemyError as exc:
            logger.warning(
                "Could not record %d request(s) as queued again (their leases are taken "
                "back when this worker's heartbeat is gone): %s",
                len(requests),
                exc,
            )

    def walk_pages_done(self, pages: Counter[Walk], ended: list[Walk], owner: str) -> Any:
        """Pages of walks were answered to the end, what they found queued: a walk whose
        last page this was is done; one whose other pages are all in the queue is queued
        again, no longer this worker's (signal ``walk_pages_done``)."""
        self.pages.subtract(pages)
        done = set(ended)
        for walk in done:
            self.pages.pop(walk, None)
        queued = self._let_go(pages) - done
        if done:
            count(self.crawler.stats, "walks/done", n=len(done))
            self._write("end its walks", end_walks, self.archive.engine, done)
        if queued:
            self._write("queue its walks again", give_back, self.archive.engine, owner, (), queued)

    def _let_go(self, pages: Counter[Walk]) -> set[Walk]:
        """The walks among ``pages`` of which this worker holds no page any more."""
        gone = {walk for walk in pages if self.pages[walk] <= 0}
        for walk in gone:
            del self.pages[walk]
        return gone

    def _write(self, what: str, function: Callable[..., Any], *args: Any) -> Any:
        deferred = threads.deferToThread(function, *args)
        deferred.addCallbacks(self._written, self._failed, errbackArgs=(what,))
        return deferred

    def _written(self, _result: object) -> bool:
        if self._failing:
            logger.info("Recording held work works again")
        self._failing = False
        return True

    def _failed(self, failure: Any, what: str) -> bool:
        # The work is done all the same; only its recovery after a kill may wait for the
        # lease (or the next walk) instead.
        count(self.crawler.stats, "errors/held_work")
        if not self._failing:
            logger.warning(
                "Could not %s in the database (%s); crawling on", what, failure.getErrorMessage()
            )
        self._failing = True
        return False


def take_up_dead_runs(
    archive: Archive, locks: SiteRunLocks, now: int, stats: StatsCollector | None
) -> Released:
    """Make due again at once what killed runs of this host held; return what was."""
    prefix = host_prefix()
    freed = [
        site_id
        for site_id in sorted(sites_held(archive.engine, prefix, now))
        if locks.acquire(site_id)
    ]
    released = release_runs(archive.engine, freed, prefix, now)
    # Held only while their dead runs' work is given back: the sites may be of any
    # source, and another run must not find them locked while this one chooses its own.
    for site_id in freed:
        locks.release(site_id)
    if released:
        logger.warning(
            "Taking up what a killed run left: %d list walk(s) and %d leased article(s) "
            "on %d site(s), due again now",
            released.walks,
            released.articles,
            len(released.by_site),
        )
        count(stats, "recovery/walks", n=released.walks)
        count(stats, "recovery/leases", n=released.articles)
        for site_id, n in released.by_site.items():
            count(stats, "recovered", site_id, n)
    return released


def give_back_leftovers(
    archive: Archive, site_ids: list[int], now: int, *, finished: bool = True
) -> Released:
    """A closing embedded run makes what it claimed and did not snapshot due again now,
    and ends its walks if it ``finished`` (its engine ran out of pages), else makes them
    due again now: one stopped before its end (a signal, a close condition) left pages
    unwalked. It holds these sites' locks, so every lease of its host on them is its own."""
    return release_runs(
        archive.engine, site_ids, host_prefix(), now, recovery=False, walks_done=finished
    )
