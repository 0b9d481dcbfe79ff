"""The snapshot pipeline's batching: background writes, order, back-pressure, idle flush.

The store is a stand-in whose ``save`` blocks until the test lets it go, so the tests can
see what the crawl is doing while a batch is being written.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from scrapy import signals
from scrapy.utils.test import get_crawler
from sqlalchemy.exc import IntegrityError

from pipelines.snapshots import (
    MAX_WAITING_BATCHES,
    MEDIA_PER_SNAPSHOT,
    BatchConfig,
    SnapshotsPipeline,
)
from tests.conftest import project_settings
from zeroarchive.core.items import FailedFetch, FetchedPage, MediaAnswer, MediaAnswers
from zeroarchive.crawl import snapshot_batches
from zeroarchive.events.store import CONFIRM_AFTER, GoneAnswer, record_gone
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.articles import insert_new
from zeroarchive.storage.schema import article, article_event
from zeroarchive.storage.snapshots import SaveResult

T0 = 1_700_000_000
# In a thread: the tests stand a gated store in for the archive's, which a writer process
# would not see (tests/test_writer_process.py tests the process).
CONFIG = BatchConfig(
    max_items=2, max_bytes=10**9, flush_seconds=3600, db_retry_seconds=0, writer="thread"
)


class GatedStore:
    """Records every batch; ``save`` waits for ``gate`` and fails on article ids in
    ``fail_on``."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gate.set()
        self.batches: list[list[int]] = []
        self.failures: list[list[int]] = []
        self.fail_on: set[int] = set()

    def save(self, pages: Sequence[FetchedPage], conn: object = None) -> list[SaveResult]:
        assert self.gate.wait(10), "the test never opened the gate"
        ids = [p.article_id for p in pages]
        if self.fail_on & set(ids):
            raise IntegrityError("INSERT", {}, Exception("duplicate key"))
        self.batches.append(ids)
        return [SaveResult(i, "saved", None, 10) for i in ids]

    def record_failures(
        self, failures: Sequence[FailedFetch], conn: object = None
    ) -> list[tuple[int, str | None]]:
        self.failures.append([f.article_id for f in failures])
        return [(f.article_id, None) for f in failures]


class FakeArchive:
    """The gated snapshot store over a real (empty) archive's sites and engine, which the
    pipeline reads for the deletion signs of each batch (zeroarchive/events/answers.py)."""

    def __init__(self, real: Any) -> None:
        self.snapshots = GatedStore()
        self.sites = real.sites
        self.engine = real.engine


def fetched(article_id: int, at: int = 1_700_000_000) -> FetchedPage:
    return FetchedPage(
        article_id=article_id,
        site_id=1,
        article_type="news",
        fetched_at=at,
        status=200,
        final_url=f"https://news.example/{article_id}",
        headers={},
        encoding="utf-8",
        body=b"<p>%d</p>" % article_id,
    )


def make_pipeline(tmp_path: Path) -> tuple[SnapshotsPipeline, GatedStore, Any]:
    crawler = get_crawler(
        settings_dict={
            "ZEROARCHIVE_DB_URL": f"sqlite:///{tmp_path}/a.db",
            "ZEROARCHIVE_SNAPSHOT_BATCH": CONFIG.max_items,
            "ZEROARCHIVE_SNAPSHOT_BATCH_BYTES": CONFIG.max_bytes,
            "ZEROARCHIVE_SNAPSHOT_FLUSH_SECONDS": CONFIG.flush_seconds,
            "ZEROARCHIVE_DB_RETRY_SECONDS": CONFIG.db_retry_seconds,
            "ZEROARCHIVE_SNAPSHOT_WRITER": CONFIG.writer,
        }
    )
    pipeline = SnapshotsPipeline.from_crawler(crawler)
    assert pipeline.config == CONFIG
    archive = FakeArchive(pipeline.archive)
    pipeline.archive = archive  # type: ignore[assignment]
    return pipeline, archive.snapshots, crawler


def test_full_batches_are_written_in_order_without_holding_up_the_crawl(tmp_path: Path) -> None:
    pipeline, store, crawler = make_pipeline(tmp_path)

    async def crawl() -> None:
        await pipeline.open_spider()
        store.gate.clear()
        for article_id in range(1, 6):
            # Returns at once although the first full batch cannot be written yet.
            await asyncio.wait_for(pipeline.process_item(fetched(article_id)), 1)
        assert store.batches == []
        store.gate.set()
        await pipeline.close_spider()

    asyncio.run(crawl())
    assert store.batches == [[1, 2], [3, 4], [5]]
    assert crawler.stats.get_value("zeroarchive/snapshots_saved") == 5


def test_a_slow_database_holds_the_crawl_back_after_two_waiting_batches(tmp_path: Path) -> None:
    pipeline, store, _ = make_pipeline(tmp_path)
    per_batch = CONFIG.max_items

    async def crawl() -> None:
        await pipeline.open_spider()
        store.gate.clear()
        article_ids = iter(range(1, 100))
        for _ in range(MAX_WAITING_BATCHES * per_batch):
            await asyncio.wait_for(pipeline.process_item(fetched(next(article_ids))), 1)
        for _ in range(per_batch - 1):
            await asyncio.wait_for(pipeline.process_item(fetched(next(article_ids))), 1)
        held = asyncio.ensure_future(pipeline.process_item(fetched(next(article_ids))))
        await asyncio.sleep(0.3)
        assert not held.done(), "a third waiting batch must wait for the database"
        store.gate.set()
        await asyncio.wait_for(held, 5)
        await pipeline.close_spider()

    asyncio.run(crawl())
    assert [i for batch in store.batches for i in batch] == list(range(1, 7))


def media_records(article_id: int, n: int) -> MediaAnswers:
    return MediaAnswers(
        tuple(
            MediaAnswer(article_id, 1, T0, "image", f"https://i.example/{n}", T0, reason="too-many")
            for n in range(n)
        )
    )


def test_a_batch_fills_with_snapshots_not_with_their_media_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page's media records ride in its batch without filling it (counted as items, a
    page's 17 records made a batch of 50 hold three pages); only their own cap, a batch
    size times ``MEDIA_PER_SNAPSHOT`` of them, or their bytes write it early."""
    pipeline, store, _ = make_pipeline(tmp_path)
    media_batches: list[int] = []
    monkeypatch.setattr(
        snapshot_batches,
        "store_media",
        lambda conn, media, items: media_batches.append(len(items)) or [],
    )
    cap = CONFIG.max_items * MEDIA_PER_SNAPSHOT

    async def crawl() -> None:
        await pipeline.open_spider()
        await pipeline.process_item(fetched(1))
        await pipeline.process_item(media_records(1, 30))
        assert len(pipeline.pending) == 31, "30 media records must not fill a batch of 2"
        await pipeline.process_item(fetched(2))
        assert pipeline.pending == [], "the second page fills it"
        await pipeline.process_item(media_records(3, cap - 1))
        assert len(pipeline.pending) == cap - 1
        await pipeline.process_item(media_records(3, 1))
        assert pipeline.pending == [], "the media records' own cap fills it"
        await pipeline.close_spider()

    asyncio.run(crawl())
    assert store.batches == [[1, 2], []]
    assert media_batches == [30, cap]


def test_pending_pages_are_written_when_the_spider_goes_idle(tmp_path: Path) -> None:
    pipeline, store, crawler = make_pipeline(tmp_path)

    async def crawl() -> None:
        await pipeline.open_spider()
        await pipeline.process_item(fetched(1))
        assert store.batches == []
        crawler.signals.send_catch_log(signals.spider_idle, spider=None)
        for _ in range(100):
            if store.batches:
                break
            await asyncio.sleep(0.02)
        assert store.batches == [[1]], "idle must write the half-full batch, not the timer"
        await pipeline.close_spider()

    asyncio.run(crawl())


class ReadyWriter:
    """Stands in for a writer process that is ready (tests/test_writer_process.py tests the
    process): writes each batch it is given in the calling thread, into the gated store."""

    def __init__(self, pipeline: SnapshotsPipeline) -> None:
        self.pipeline = pipeline

    def ready(self) -> bool:
        return True

    def write(self, batch: list[Any], sites: dict[int, Any]) -> list[Any]:
        return snapshot_batches.write_batch(self.pipeline.archive, batch, sites, 0, None)


async def written(store: GatedStore, n: int, pipeline: SnapshotsPipeline | None = None) -> None:
    """Until ``n`` batches are in the store (and, given ``pipeline``, its write is over: the
    store has the batch a moment before the pipeline's task ends)."""
    for _ in range(1500):
        if len(store.batches) >= n and not (pipeline and pipeline._writes):
            return
        await asyncio.sleep(0.02)


def test_pending_pages_are_written_when_there_is_nothing_to_download(tmp_path: Path) -> None:
    """The engine has room and its scheduler nothing to hand out (the end of a crawl, a
    list page's snapshots all asked for): what is pending is written then, when the writer
    process has nothing under way; while it writes, pages gather for the next batch."""
    pipeline, store, crawler = make_pipeline(tmp_path)

    def nothing_to_download() -> None:
        crawler.signals.send_catch_log(signals.scheduler_empty)

    async def crawl() -> None:
        await pipeline.open_spider()
        await pipeline.process_item(fetched(1))
        nothing_to_download()
        await asyncio.sleep(0.1)
        assert store.batches == [], "no writer process ready: the batch fills or times out"
        pipeline.writer = ReadyWriter(pipeline)  # type: ignore[assignment]
        store.gate.clear()
        nothing_to_download()
        await pipeline.process_item(fetched(2))
        nothing_to_download()  # a write is under way: 2 waits for the next one
        assert pipeline.pending == [fetched(2)]
        store.gate.set()
        await written(store, 1, pipeline)
        assert store.batches == [[1]]
        nothing_to_download()
        await written(store, 2)
        assert store.batches == [[1], [2]]
        pipeline.writer = None
        await pipeline.close_spider()

    asyncio.run(crawl())


def test_a_batch_that_cannot_be_written_is_counted_and_later_ones_still_land(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pipeline, store, crawler = make_pipeline(tmp_path)
    store.fail_on = {2}

    async def crawl() -> None:
        await pipeline.open_spider()
        for article_id in range(1, 6):
            await pipeline.process_item(fetched(article_id))
        await pipeline.process_item(FailedFetch(9, 1, 1_700_000_000, "http_500", 500))
        await pipeline.close_spider()

    asyncio.run(crawl())
    assert store.batches == [[3, 4], [5]]
    assert store.failures == [[9]]
    assert crawler.stats.get_value("zeroarchive/errors/db_write") == 2
    assert crawler.stats.get_value("zeroarchive/snapshots_saved") == 3
    assert "Could not write 2 snapshot(s)" in caplog.text


def test_a_snapshot_and_the_restoration_it_settles_land_together_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure between writing a batch's snapshots and its events (a kill, a lost
    server) must not keep the snapshot and lose the event: the retaken page would then be
    an unchanged repeat, and the restoration never recorded."""
    url = f"sqlite:///{tmp_path / 'a.db'}"
    archive = open_archive(url=url)
    spec = {
        "name": "farm",
        "url": "https://farm.example/",
        "type": "news",
        "config": {"article": "/a/"},
    }
    site_id, _ = archive.sites.upsert(parse_spec(spec), T0)  # type: ignore[arg-type]
    assert site_id == 1
    with archive.engine.begin() as conn:
        article_id = insert_new(conn, site_id, "news", ["https://farm.example/a/1"], T0)[
            "https://farm.example/a/1"
        ]
    archive.snapshots.save([fetched(article_id, T0)])
    for at in (T0 + 100, T0 + 100 + CONFIRM_AFTER):
        record_gone(archive.engine, [GoneAnswer(article_id, site_id, at, "http_404")])
    back = T0 + 2 * CONFIRM_AFTER

    def crawl() -> Any:
        settings = project_settings(
            ZEROARCHIVE_DB_URL=url,
            ZEROARCHIVE_DB_RETRY_SECONDS=0,
            # In a thread, where the monkeypatch below reaches.
            ZEROARCHIVE_SNAPSHOT_WRITER="thread",
        )
        crawler = get_crawler(settings_dict=settings)
        pipeline = SnapshotsPipeline.from_crawler(crawler)

        async def run() -> None:
            await pipeline.open_spider()
            await pipeline.process_item(fetched(article_id, back))
            await pipeline.close_spider()

        asyncio.run(run())
        return crawler.stats

    def state() -> tuple[int, list[str]]:
        with archive.engine.connect() as conn:
            snapshots = conn.execute(
                article.select().where(article.c.article_id == article_id)
            ).one()
            kinds = conn.execute(
                article_event.select().where(article_event.c.article_id == article_id)
            ).all()
        return snapshots.snapshot_count, sorted(row.kind for row in kinds)

    def lost_server(*_: object) -> None:
        raise RuntimeError("server has gone away")

    monkeypatch.setattr(snapshot_batches, "record_answered", lost_server)
    stats = crawl()
    assert stats.get_value("zeroarchive/errors/db_write") == 1
    assert state() == (1, ["deleted"]), "the snapshot must not outlive its lost event"

    monkeypatch.undo()
    crawl()
    assert state() == (2, ["deleted", "restored"])


def test_close_waits_for_the_timers_flush_under_way(tmp_path: Path) -> None:
    """A crawl closing while the timer's flush writes its batch: close returns only once
    that batch is written and counted (it returned at once, and `scrapy save` said NOT
    saved of a page written a moment later)."""
    pipeline, store, crawler = make_pipeline(tmp_path)
    pipeline.config = BatchConfig(
        max_items=100, max_bytes=10**9, flush_seconds=0.01, db_retry_seconds=0, writer="thread"
    )

    async def crawl() -> None:
        await pipeline.open_spider()
        store.gate.clear()
        await pipeline.process_item(fetched(1))
        # The timer takes the batch and blocks in the store.
        for _ in range(200):
            if not pipeline.pending:
                break
            await asyncio.sleep(0.01)
        assert not pipeline.pending
        closing = asyncio.ensure_future(pipeline.close_spider())
        await asyncio.sleep(0.2)
        assert not closing.done(), "close returned while a batch was being written"
        store.gate.set()
        await asyncio.wait_for(closing, 10)

    asyncio.run(crawl())
    assert store.batches == [[1]]
    assert crawler.stats.get_value("zeroarchive/snapshots_saved") == 1
