"""Stores fetched pages as snapshots (and failed fetches as back-offs), in batches.

Pages are written in one transaction per batch, with what their answers settle (back-offs,
deletions, restorations), flushed when the batch is full, holds too many bytes, or has
waited ``ZEROARCHIVE_SNAPSHOT_FLUSH_SECONDS``. A full batch is written in the background
while the crawl goes on (awaiting it in ``process_item`` held back the whole engine: 40 %
slower on MariaDB); batches are written one at a time, in order, and when two are already
waiting the next full one waits for the oldest. A page still in a batch when the process is
killed is not lost: its article stays leased and is due again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings

from zeroarchive.core.db_retry import write_with_retry
from zeroarchive.core.items import FailedFetch, FetchedPage
from zeroarchive.core.stats import count
from zeroarchive.events.answers import SortedAnswers, last_snapshots, sort_answers
from zeroarchive.events.probe import load_probes
from zeroarchive.events.store import Answered, record_answered, record_gone, record_not_modified
from zeroarchive.sites.record import Site
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.snapshots import SaveResult

logger = logging.getLogger(__name__)


class Written(NamedTuple):
    """What one batch's transaction wrote, for the stats."""

    results: list[SaveResult]
    stopped: list[tuple[int, str | None]]
    gone: list[str]
    cleared: list[tuple[int, str]]


@runtime_checkable
class SiteRecords(Protocol):
    """A spider that keeps the records of its sites (the archive's spiders)."""

    def site(self, site_id: int) -> Site | None: ...


# Full batches waiting for the database before process_item waits too (bounds memory).
MAX_WAITING_BATCHES = 2


@dataclass(frozen=True)
class BatchConfig:
    max_items: int
    max_bytes: int
    flush_seconds: float
    db_retry_seconds: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> BatchConfig:
        config = cls(
            max_items=settings.getint("ZEROARCHIVE_SNAPSHOT_BATCH"),
            max_bytes=settings.getint("ZEROARCHIVE_SNAPSHOT_BATCH_BYTES"),
            flush_seconds=settings.getfloat("ZEROARCHIVE_SNAPSHOT_FLUSH_SECONDS"),
            db_retry_seconds=settings.getfloat("ZEROARCHIVE_DB_RETRY_SECONDS"),
        )
        if config.max_items < 1 or config.max_bytes < 1 or config.flush_seconds <= 0:
            raise ValueError(f"ZEROARCHIVE_SNAPSHOT_BATCH* settings must be positive: {config}")
        return config


class SnapshotsPipeline:
    def __init__(self, crawler: Crawler, archive: Archive, config: BatchConfig) -> None:
        self.crawler = crawler
        self.archive = archive
        self.config = config
        self.pending: list[FetchedPage | FailedFetch] = []
        self.pending_bytes = 0
        self._lock = asyncio.Lock()
        self._timer: asyncio.Task[None] | None = None
        self._writes: list[asyncio.Task[None]] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SnapshotsPipeline:
        pipeline = cls(
            crawler, open_archive(crawler.settings), BatchConfig.from_settings(crawler.settings)
        )
        crawler.signals.connect(pipeline._on_idle, signal=signals.spider_idle)
        return pipeline

    async def open_spider(self) -> None:
        self._timer = asyncio.get_running_loop().create_task(self._flush_periodically())

    async def close_spider(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
        await self.flush()
        if self._writes:
            await asyncio.gather(*self._writes)

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, FetchedPage | FailedFetch):
            return item
        self.pending.append(item)
        if isinstance(item, FetchedPage):
            self.pending_bytes += len(item.body)
        if (
            len(self.pending) >= self.config.max_items
            or self.pending_bytes >= self.config.max_bytes
        ):
            self._start_write()
            if len(self._writes) > MAX_WAITING_BATCHES:
                await asyncio.shield(self._writes[0])
        return item

    def _start_write(self) -> None:
        write = asyncio.get_running_loop().create_task(self._write(self._take_batch()))
        self._writes.append(write)
        write.add_done_callback(self._writes.remove)

    def _on_idle(self) -> None:
        """Nothing is being crawled: write what is pending now, not at the next timer tick
        (a distributed worker may stay idle for hours with pages in its batch)."""
        if self.pending:
            self._start_write()

    async def _flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.config.flush_seconds)
            # Shielded: cancelling this timer at close must not abandon a write half done.
            await asyncio.shield(self.flush())

    def _take_batch(self) -> list[FetchedPage | FailedFetch]:
        batch, self.pending, self.pending_bytes = self.pending, [], 0
        return batch

    async def flush(self) -> None:
        """Write what is pending now, after the batches already started."""
        await self._write(self._take_batch())

    async def _write(self, batch: list[FetchedPage | FailedFetch]) -> None:
        if not batch:
            return
        # asyncio.Lock wakes its waiters in order, so batches are written in order.
        async with self._lock:
            deadline = self.config.db_retry_seconds
            try:
                # Sorting reads the archive (deletion signs): it rides out an outage too.
                answers = await write_with_retry(
                    lambda: self._sort(batch), "answers", deadline, self.crawler.stats
                )
            except Exception:
                logger.exception("Could not sort %d answer(s); they will be retaken", len(batch))
                count(self.crawler.stats, "errors/db_write", n=len(batch))
                return
            pages, failures = answers.pages, answers.failures
            try:
                written = await write_with_retry(
                    lambda: self._store(answers, batch), "snapshots", deadline, self.crawler.stats
                )
            except Exception:
                # The articles stay leased, so they are due again when the lease runs out.
                logger.exception("Could not write %d snapshot(s); they will be retaken", len(batch))
                count(self.crawler.stats, "errors/db_write", n=len(batch))
                return
        results, stopped, gone, cleared = written
        stats = self.crawler.stats
        for page, result in zip(pages, results, strict=True):
            count(stats, f"snapshots_{result.outcome}", page.site_id)
            if result.referenced:
                count(stats, "snapshots_referenced", page.site_id)
            count(stats, "snapshot_bytes_raw", page.site_id, len(page.body))
            count(stats, "snapshot_bytes_stored", page.site_id, result.stored_bytes)
        for failure, (_, stop_reason) in zip(failures, stopped, strict=True):
            if stop_reason:
                count(stats, "articles_stopped", failure.site_id)
        for answer, outcome in zip(answers.gone, gone, strict=True):
            count(stats, f"events/{outcome}", answer.site_id)
            if outcome == "suspected":
                logger.info(
                    "Article %d looks gone (%s); confirming in 10 minutes",
                    answer.article_id,
                    answer.evidence,
                )
        for _, site_id in answers.not_modified:
            count(stats, "watch/not_modified", site_id)
        for _, outcome in cleared:
            count(stats, f"events/{outcome}")

    def _store(self, answers: SortedAnswers, batch: list[FetchedPage | FailedFetch]) -> Written:
        """Write what the batch's answers say in one transaction: a snapshot and the
        events its answer settles (a restoration, a deletion) land together or not at all,
        so a batch retaken after a crash finds nothing half written."""
        store = self.archive.snapshots
        with self.archive.engine.begin() as conn:
            results = store.save(answers.pages, conn)
            stopped = store.record_failures(answers.failures, conn) if answers.failures else []
            gone = record_gone(conn, answers.gone)
            if answers.not_modified:
                at = max(item.failed_at for item in batch if isinstance(item, FailedFetch))
                record_not_modified(conn, answers.not_modified, at)
            answered = [
                Answered(result.article_id, page.site_id, page.fetched_at, page.status)
                for page, result in zip(answers.pages, results, strict=True)
                if result.outcome != "duplicate" and result.moved_from is None
            ]
            cleared = record_answered(conn, answered)
        return Written(results, stopped, gone, cleared)

    def _site(self, site_id: int) -> Site | None:
        """The site's record as the spider holds it (read again when it grows old:
        ``ArchiveSpider.site``); read from the archive for a spider that keeps none."""
        spider = self.crawler.spider
        if isinstance(spider, SiteRecords):
            return spider.site(site_id)
        return self.archive.sites.get(site_id)

    def _sort(self, batch: list[FetchedPage | FailedFetch]) -> SortedAnswers:
        """The batch's answers sorted by what they say (zeroarchive/events/answers.py)."""
        pages = [item for item in batch if isinstance(item, FetchedPage)]
        failures = [item for item in batch if isinstance(item, FailedFetch)]
        found = {site_id: self._site(site_id) for site_id in {item.site_id for item in batch}}
        sites = {k: v for k, v in found.items() if v is not None}
        engine = self.archive.engine
        probes = load_probes(engine, {page.site_id for page in pages})
        last = last_snapshots(engine, [page.article_id for page in pages])
        return sort_answers(pages, failures, sites, probes, last.size, last.at)
