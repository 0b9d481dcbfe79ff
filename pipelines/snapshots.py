"""Stores fetched pages as snapshots (and failed fetches as back-offs), in batches.

Pages are written in one transaction per batch, with what their answers settle (back-offs,
deletions, restorations), flushed when the batch is full, holds too many bytes, or has
waited ``ZEROARCHIVE_SNAPSHOT_FLUSH_SECONDS``. A full batch is written in the background
while the crawl goes on (awaiting it in ``process_item`` held back the whole engine: 40 %
slower on MariaDB); batches are written one at a time, in order, and when two are already
waiting the next full one waits for the oldest. A page still in a batch when the process is
killed is not lost: its article stays leased and is due again.

``ZEROARCHIVE_SNAPSHOT_WRITER`` says where a batch is written: ``process`` (the default), in
the crawl's writer process (zeroarchive/crawl/writer_process.py), or ``thread``, in a thread
of the crawl's own process (an in-memory SQLite archive is always written so: a second
process would not see it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings
from sqlalchemy.engine import make_url

from zeroarchive.core.db_retry import call_with_retry
from zeroarchive.core.items import FailedFetch, FetchedPage, MediaAnswer, MediaAnswers
from zeroarchive.core.stats import count
from zeroarchive.crawl.snapshot_batches import Count, write_batch
from zeroarchive.crawl.writer_process import WriterProcess
from zeroarchive.sites.record import Site
from zeroarchive.storage.archive import Archive, open_archive

logger = logging.getLogger(__name__)


@runtime_checkable
class SiteRecords(Protocol):
    """A spider that keeps the records of its sites (the archive's spiders)."""

    def site(self, site_id: int) -> Site | None: ...


WRITERS = ("process", "thread")

# The writer process is started at the crawl's tenth answer: a crawl of a few pages (a
# `scrapy save`, a site with little due) does not pay for one (0.4 CPU seconds to load its
# modules), and a large one has it ready by its first full batch. Until it is ready, the
# crawl's thread writes. A distributed worker without an idle limit (a service) starts it
# when it opens.
PROCESS_AFTER = 10

# Full batches waiting for the database before process_item waits too (bounds memory).
MAX_WAITING_BATCHES = 2

# A batch is full at ``ZEROARCHIVE_SNAPSHOT_BATCH`` snapshots (pages and failed fetches);
# the media records that come with them ride along, up to this many per snapshot of the
# batch size (the default ``media_max_items``), and their bytes count towards
# ``ZEROARCHIVE_SNAPSHOT_BATCH_BYTES``. Counted as items, a page's 17 records made a batch
# of 50 hold three pages: 16 times the transactions, each with its per-batch queries and
# commit, on bench/media.py (bench/README.md, issue 42).
MEDIA_PER_SNAPSHOT = 40

# How long a service worker waits, when it opens, for its writer process to be ready
# before it takes work all the same (a child waiting for the database is not waited for).
WRITER_START_WAIT = 60.0
# How often that wait looks at the child.
WRITER_POLL_SECONDS = 0.02


@dataclass(frozen=True)
class BatchConfig:
    max_items: int
    max_bytes: int
    flush_seconds: float
    db_retry_seconds: float
    #: Where batches are written: "process" (the writer process) or "thread".
    writer: str = "process"
    #: Where media bytes go (ZEROARCHIVE_MEDIA_DIR; empty: the database).
    media_dir: str = ""

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> BatchConfig:
        config = cls(
            max_items=settings.getint("ZEROARCHIVE_SNAPSHOT_BATCH"),
            max_bytes=settings.getint("ZEROARCHIVE_SNAPSHOT_BATCH_BYTES"),
            flush_seconds=settings.getfloat("ZEROARCHIVE_SNAPSHOT_FLUSH_SECONDS"),
            db_retry_seconds=settings.getfloat("ZEROARCHIVE_DB_RETRY_SECONDS"),
            writer=settings.get("ZEROARCHIVE_SNAPSHOT_WRITER"),
            media_dir=settings.get("ZEROARCHIVE_MEDIA_DIR") or "",
        )
        if config.writer not in WRITERS:
            raise ValueError(
                f"ZEROARCHIVE_SNAPSHOT_WRITER must be one of {', '.join(WRITERS)}: "
                f"{config.writer!r}"
            )
        if config.max_items < 1 or config.max_bytes < 1 or config.flush_seconds <= 0:
            raise ValueError(f"ZEROARCHIVE_SNAPSHOT_BATCH* settings must be positive: {config}")
        return config


class SnapshotsPipeline:
    def __init__(self, crawler: Crawler, archive: Archive, config: BatchConfig) -> None:
        self.crawler = crawler
        self.archive = archive
        self.config = config
        self.pending: list[FetchedPage | FailedFetch | MediaAnswer] = []
        self.pending_bytes = 0
        #: Of ``pending``: the pages and failed fetches (what fills a batch), the media.
        self.pending_snapshots = 0
        self.pending_media = 0
        self._lock = asyncio.Lock()
        self._timer: asyncio.Task[None] | None = None
        self._writes: list[asyncio.Task[None]] = []
        self.writer: WriterProcess | None = None
        self._answers_seen = 0
        #: Batches taken from ``pending`` and written (or given up), in order.
        self.batches_taken = 0
        self.batches_written = 0
        self._wants_process = config.writer == "process" and not _in_memory(archive.url)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SnapshotsPipeline:
        pipeline = cls(
            crawler, open_archive(crawler.settings), BatchConfig.from_settings(crawler.settings)
        )
        crawler.signals.connect(pipeline._on_idle, signal=signals.spider_idle)
        crawler.signals.connect(pipeline._on_scheduler_empty, signal=signals.scheduler_empty)
        return pipeline

    async def open_spider(self) -> None:
        self._timer = asyncio.get_running_loop().create_task(self._flush_periodically())
        spider = self.crawler.spider
        if (
            self._wants_process
            and getattr(spider, "distributed", False)
            and not getattr(spider, "idle_limit", 0)
        ):
            # A worker that waits for work for ever pays for its writer once: at its start,
            # not in the middle of its first batches (where a tenth of a worker's time went
            # on the distributed bench to the child's start and the thread's writes meanwhile).
            self._start_writer()
            # And it takes work once the child can write it: the engine starts only when
            # this returns. Before, a worker took work at once, and its first pages paid
            # for the child's start-up (0.5-1 CPU s of imports on the other core) and for
            # their batches written on the crawl's own threads (a quarter of the samples
            # of both workers on the distributed bench, 2026-11-29).
            await self._writer_started(WRITER_START_WAIT)

    async def close_spider(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
        await self.flush()
        if self._writes:
            await asyncio.gather(*self._writes)
        if self.writer is not None:
            await asyncio.to_thread(self.writer.close)

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, MediaAnswers):
            answers: tuple[FetchedPage | FailedFetch | MediaAnswer, ...] = item.answers
        elif isinstance(item, FetchedPage | FailedFetch | MediaAnswer):
            answers = (item,)
        else:
            return item
        for answer in answers:
            self.pending.append(answer)
            self._answers_seen += 1
            if isinstance(answer, MediaAnswer):
                self.pending_media += 1
            else:
                self.pending_snapshots += 1
            body = answer.body if isinstance(answer, FetchedPage | MediaAnswer) else None
            if body is not None:
                self.pending_bytes += len(body)
        if self.writer is None and self._wants_process and self._answers_seen >= PROCESS_AFTER:
            self._start_writer()
        if (
            self.pending_snapshots >= self.config.max_items
            or self.pending_media >= self.config.max_items * MEDIA_PER_SNAPSHOT
            or self.pending_bytes >= self.config.max_bytes
        ):
            self._start_write()
            if len(self._writes) > MAX_WAITING_BATCHES:
                await asyncio.shield(self._writes[0])
        return item

    def _start_writer(self) -> None:
        self.writer = WriterProcess(
            self.archive.url, self.config.db_retry_seconds, self.config.media_dir
        )

    async def _writer_started(self, wait: float) -> bool:
        """Wait up to ``wait`` seconds for the writer process to be ready; whether it is.
        Until then (a child still waiting for the database, say) the crawl's thread
        writes, as before a child is ready."""
        assert self.writer is not None
        deadline = asyncio.get_running_loop().time() + wait
        while not self.writer.ready():
            if asyncio.get_running_loop().time() >= deadline:
                logger.warning(
                    "The snapshot writer process is not ready after %g s: this worker takes "
                    "work and writes in its own threads until it is",
                    wait,
                )
                return False
            await asyncio.sleep(WRITER_POLL_SECONDS)
        return True

    def _start_write(self) -> None:
        write = asyncio.get_running_loop().create_task(self._write(self._take_batch()))
        self._writes.append(write)
        write.add_done_callback(self._writes.remove)

    def _on_idle(self) -> None:
        """Nothing is being crawled: write what is pending now, not at the next timer tick
        (a distributed worker may stay idle for hours with pages in its batch)."""
        if self.pending:
            self._start_write()

    def _on_scheduler_empty(self) -> None:
        """The engine has room and nothing to download: what is pending is written now
        when the writer process has nothing to do, not once the batch fills or the last
        downloads are answered. The last pages of a crawl or of a list page's snapshots
        were stored a batch's write after the rest (0.3-0.8 s of a 4-7 s crawl at load 10,
        bench/README.md); while a write is under way pages gather for the next one, so
        batches stay large when the writer is the slower."""
        if self.pending and not self._writes and self.writer is not None and self.writer.ready():
            self._start_write()

    async def _flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.config.flush_seconds)
            # Shielded: cancelling this timer at close must not abandon a write half done;
            # and kept with the other writes, so that close waits for it (a crawl closing
            # during a timed flush reported and counted nothing of that batch).
            write = asyncio.ensure_future(self.flush())
            self._writes.append(write)
            write.add_done_callback(self._writes.remove)
            await asyncio.shield(write)

    def _take_batch(self) -> list[FetchedPage | FailedFetch | MediaAnswer]:
        batch, self.pending, self.pending_bytes = self.pending, [], 0
        self.pending_snapshots = self.pending_media = 0
        if batch:
            self.batches_taken += 1
        return batch

    def written_mark(self) -> int:
        """The number of batches written (``batches_written``) from which what this
        pipeline has been given so far is in the archive: a distributed worker keeps a
        media request it answered held in redis until then (zeroarchive/distributed/
        scheduler.py), so that a kill before the write takes it back."""
        return self.batches_taken + (1 if self.pending else 0)

    async def flush(self) -> None:
        """Write what is pending now, after the batches already started."""
        await self._write(self._take_batch())

    async def _write(self, batch: list[FetchedPage | FailedFetch | MediaAnswer]) -> None:
        if not batch:
            return
        # asyncio.Lock wakes its waiters in order, so batches are written in order.
        async with self._lock:
            try:
                counts = await asyncio.to_thread(self._write_batch, batch)
            except Exception:
                # The articles stay leased, so they are due again when the lease runs out.
                logger.exception("Could not write %d snapshot(s); they will be retaken", len(batch))
                counts = [("errors/db_write", None, len(batch))]
        # In order (the lock): every batch taken before this one is written too. A batch
        # that could not be written counts as well: its snapshots stay leased and come
        # due again, with their media.
        self.batches_written += 1
        for metric, site_id, n in counts:
            count(self.crawler.stats, metric, site_id, n)

    def _write_batch(self, batch: list[FetchedPage | FailedFetch | MediaAnswer]) -> list[Count]:
        """Write ``batch`` in the writer process or in this thread; the counts."""
        retry_seconds = self.config.db_retry_seconds
        counts: list[Count] = []
        # The spider's records, read once per batch (the writer process has no spider).
        sites = call_with_retry(
            lambda: {site_id: self._site(site_id) for site_id in {i.site_id for i in batch}},
            "answers",
            retry_seconds,
            lambda: counts.append(("db_retries", None, 1)),
        )
        if self.writer is None or not self.writer.ready():
            # Until the process has loaded its modules, this thread writes.
            return counts + write_batch(
                self.archive, batch, sites, retry_seconds, self.config.media_dir
            )
        return counts + self.writer.write(batch, sites)

    def _site(self, site_id: int) -> Site | None:
        """The site's record as the spider holds it (read again when it grows old:
        ``ArchiveSpider.site``); read from the archive for a spider that keeps none."""
        spider = self.crawler.spider
        if isinstance(spider, SiteRecords):
            return spider.site(site_id)
        return self.archive.sites.get(site_id)


def _in_memory(url: str) -> bool:
    parsed = make_url(url)
    return parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")
