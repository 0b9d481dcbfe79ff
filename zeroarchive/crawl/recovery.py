"""What a spider records so lost work can be taken back, and taking it back when it starts.

Distributed worker (``HeldWork``): the scheduler says what the worker took from the queue
(``work_taken``) and put back (``work_returned``); the worker records in the database that
it holds those snapshots and walks (owner: its heartbeat's name), and that a walk is done
once its first page was answered. `scrapy schedule` takes back what a worker whose
heartbeat is gone held (zeroarchive/crawl/dispatch.py).

Embedded run (``take_up_dead_runs``): a run that starts takes the run lock of every site on
which a run of this host holds leases or a walk; a lock it gets means that run is dead, so
what it held is due again at once, before the due work is selected.
"""

from __future__ import annotations

import logging
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


def walk_start_of(request: Request) -> tuple[int, str] | None:
    """(site id, first URL) of a walk's first request: the dispatcher names its URL in
    ``walk_start``, which a redirect keeps."""
    meta = request.meta.get(META_KEY)
    if not isinstance(meta, dict) or not isinstance(meta.get("site_id"), int):
        return None
    start = meta.get("walk_start")
    return (int(meta["site_id"]), str(start)) if start else None


def held_work(requests: Iterable[Request]) -> tuple[set[int], list[tuple[int, str]]]:
    """(article ids of snapshot requests, (site id, url) of walk starts)."""
    articles: set[int] = set()
    starts: list[tuple[int, str]] = []
    for request in requests:
        meta = request.meta.get(META_KEY)
        if not isinstance(meta, dict):
            continue
        if meta.get("kind") == "snapshot" and isinstance(meta.get("article_id"), int):
            articles.add(meta["article_id"])
        elif (start := walk_start_of(request)) is not None:
            starts.append(start)
    return articles, starts


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
        #: Per site whose walk this worker may hold, the URLs of its first requests not
        #: answered yet (a URL, not a count: a 404 is both a response and a failure).
        self.starts: dict[int, set[str]] = {}
        # Sites whose list page was handled while another first request of the walk (its
        # robots.txt sitemap lookup, say) still waited: that one's answer ends the walk.
        self._handled: set[int] = set()
        self._failing = False

    def taken(self, requests: list[Request], owner: str, confirm: Callable[[], None]) -> None:
        """Record that ``owner`` holds these snapshots and walks, then ``confirm``."""
        self.owner = owner
        articles, starts = held_work(requests)
        if not (articles or starts):
            confirm()
            return
        for site_id, url in starts:
            self.starts.setdefault(site_id, set()).add(url)
        self._write(
            "record the work it took",
            take,
            self.archive.engine,
            owner,
            self.clock(),
            self.lease,
            articles,
            {site_id for site_id, _ in starts},
        ).addCallback(lambda ok: confirm() if ok else None)

    def returned(self, requests: list[Request], owner: str) -> None:
        """At close, on the way out: written at once."""
        articles, starts = held_work(requests)
        if not (articles or starts):
            return
        for site_id, url in starts:
            self.starts.get(site_id, set()).discard(url)
        try:
            give_back(self.archive.engine, owner, articles, {site_id for site_id, _ in starts})
        except SQLAlchemyError as exc:
            logger.warning(
                "Could not record %d request(s) as queued again (their leases are taken "
                "back when this worker's heartbeat is gone): %s",
                len(requests),
                exc,
            )

    def responded(self, request: Request) -> None:
        """A response (or a failure) came for ``request``; if it starts a walk, one fewer
        of the walk's first requests waits (signal ``response_received``)."""
        start = walk_start_of(request)
        if start is not None:
            self.starts.get(start[0], set()).discard(start[1])
            if start[0] in self._handled:
                self.walk_answered(start[0])

    def walk_answered(self, site_id: int) -> Any:
        """A list page of the site was handled: once every first request of a walk this
        worker holds was answered, the walk is done (its further pages are in the shared
        queue, for any worker)."""
        if self.starts.get(site_id) and self.owner is not None:
            self._handled.add(site_id)
        if self.starts.get(site_id) != set() or self.owner is None:
            return None
        del self.starts[site_id]
        self._handled.discard(site_id)
        return self._write("end its walk", end_walks, self.archive.engine, [site_id], self.owner)

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


def give_back_leftovers(archive: Archive, site_ids: list[int], now: int) -> Released:
    """A closing embedded run makes what it claimed and did not snapshot due again now,
    and ends its walks (it holds these sites' locks, so every lease of its host on them is
    its own)."""
    return release_runs(archive.engine, site_ids, host_prefix(), now, recovery=False)
