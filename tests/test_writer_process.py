"""The snapshot pipeline's writer process (zeroarchive/crawl/writer_process.py): batches
written beside the crawl, its counts and log records back in the crawl, a child that dies
replaced with its batch written, a child that outlives no crawl."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy.utils.test import get_crawler
from sqlalchemy import func, select

from pipelines.snapshots import PROCESS_AFTER, SnapshotsPipeline
from tests.conftest import REPO, project_settings
from zeroarchive.core.items import FetchedPage
from zeroarchive.crawl import writer_process
from zeroarchive.crawl.writer_process import WriterProcess
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.articles import insert_new
from zeroarchive.storage.schema import article_snapshot

T0 = 1_700_000_000
SPEC = {
    "name": "farm",
    "url": "https://farm.example/",
    "type": "news",
    "config": {"article": "/a/"},
}


def make_archive(tmp_path: Path, articles: int) -> tuple[Archive, list[int]]:
    archive = open_archive(url=f"sqlite:///{tmp_path / 'archive.db'}")
    site_id, _ = archive.sites.upsert(parse_spec(SPEC), T0)  # type: ignore[arg-type]
    urls = [f"https://farm.example/a/{n}" for n in range(articles)]
    with archive.engine.begin() as conn:
        ids = insert_new(conn, site_id, "news", urls, T0)
    return archive, [ids[url] for url in urls]


def page(article_id: int, body: bytes | None = None) -> FetchedPage:
    return FetchedPage(
        article_id=article_id,
        site_id=1,
        article_type="news",
        fetched_at=T0 + 60,
        status=200,
        final_url=f"https://farm.example/a/{article_id}",
        headers={"Content-Type": ["text/html; charset=utf-8"]},
        encoding="utf-8",
        body=body or b"<html><body><p>article %d</p></body></html>" % article_id,
    )


def make_pipeline(archive: Archive, **settings: Any) -> tuple[SnapshotsPipeline, Any]:
    crawler = get_crawler(
        settings_dict=project_settings(
            ZEROARCHIVE_DB_URL=archive.url, ZEROARCHIVE_SNAPSHOT_BATCH=2, **settings
        )
    )
    crawler.stats.open_spider()
    return SnapshotsPipeline.from_crawler(crawler), crawler.stats


async def open_with_writer(pipeline: SnapshotsPipeline, first: list[int]) -> WriterProcess:
    """Open the pipeline and give it its first ``PROCESS_AFTER`` pages, which start the
    writer process; wait until the child is ready, so that the next batches go to it."""
    assert len(first) == PROCESS_AFTER
    await pipeline.open_spider()
    for article_id in first:
        assert pipeline.writer is None, "no process before the crawl's tenth answer"
        await pipeline.process_item(page(article_id))
    writer = pipeline.writer
    assert writer is not None
    deadline = time.monotonic() + 30
    while not writer.ready():
        assert time.monotonic() < deadline, "the writer process never became ready"
        await asyncio.sleep(0.02)
    return writer


def snapshots(archive: Archive) -> int:
    with archive.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(article_snapshot)).scalar_one())


def test_a_distributed_worker_without_an_idle_limit_starts_its_writer_when_it_opens(
    tmp_path: Path,
) -> None:
    """A service pays for its writer once, at its start, and opens (takes work) once the
    writer is ready; a worker that closes when idle (and an embedded crawl) waits for its
    tenth answer, as before."""
    archive, _ = make_archive(tmp_path, 0)

    async def opened(idle_limit: int) -> WriterProcess | None:
        pipeline, _ = make_pipeline(archive)
        pipeline.crawler.spider = SimpleNamespace(distributed=True, idle_limit=idle_limit)
        await pipeline.open_spider()
        writer = pipeline.writer
        assert writer is None or writer.ready(), "opened before its writer could write"
        await pipeline.close_spider()
        return writer

    assert asyncio.run(opened(idle_limit=8)) is None
    writer = asyncio.run(opened(idle_limit=0))
    assert writer is not None
    assert writer.process.poll() == 0, "closing the crawl ends its writer"


def test_a_writer_not_ready_in_time_is_not_waited_for_longer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A child that is not ready within the wait (one waiting for the database, say)
    does not keep the worker from its work: the crawl's thread writes meanwhile."""
    archive, _ = make_archive(tmp_path, 0)

    async def started() -> bool:
        pipeline, _ = make_pipeline(archive)
        pipeline._start_writer()
        try:
            # A child that has just been started has not loaded its modules yet.
            return await pipeline._writer_started(0.0)
        finally:
            await pipeline.close_spider()

    with caplog.at_level(logging.WARNING):
        assert asyncio.run(started()) is False
    assert "is not ready after 0 s" in caplog.text


def test_batches_are_written_by_the_writer_process_and_counted_in_the_crawl(
    tmp_path: Path,
) -> None:
    archive, ids = make_archive(tmp_path, PROCESS_AFTER + 5)
    pipeline, stats = make_pipeline(archive)
    assert pipeline.config.writer == "process"

    async def crawl() -> None:
        await open_with_writer(pipeline, ids[:PROCESS_AFTER])
        for article_id in ids[PROCESS_AFTER:]:
            await pipeline.process_item(page(article_id))
        await pipeline.close_spider()

    asyncio.run(crawl())
    assert pipeline.writer is not None
    assert pipeline.writer.process.poll() == 0, "closing the crawl ends its writer"
    assert snapshots(archive) == len(ids)
    assert stats.get_value("zeroarchive/snapshots_saved") == len(ids)
    assert stats.get_value("zeroarchive/site/1/snapshots_saved") == len(ids)
    assert stats.get_value("zeroarchive/snapshot_bytes_raw") == sum(len(page(i).body) for i in ids)


def test_a_failed_write_in_the_process_is_logged_in_the_crawl_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    archive, ids = make_archive(tmp_path, PROCESS_AFTER + 1)
    pipeline, stats = make_pipeline(archive, ZEROARCHIVE_DB_RETRY_SECONDS=0)
    unknown_article = ids[-1] + 1000

    async def crawl() -> None:
        await open_with_writer(pipeline, ids[:PROCESS_AFTER])
        await pipeline.process_item(page(ids[PROCESS_AFTER]))
        await pipeline.process_item(page(unknown_article))
        await pipeline.close_spider()

    with caplog.at_level(logging.INFO):
        asyncio.run(crawl())
    [failed] = [r for r in caplog.records if "they will be retaken" in r.getMessage()]
    assert failed.name == "zeroarchive.crawl.snapshot_batches"
    assert failed.process != os.getpid(), "logged in the writer process, shown by the crawl"
    assert "Traceback" in failed.getMessage()
    assert stats.get_value("zeroarchive/errors/db_write") == 2
    assert snapshots(archive) == PROCESS_AFTER, "the failed batch is one transaction"


def test_a_writer_process_that_dies_is_replaced_and_its_batch_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    archive, ids = make_archive(tmp_path, PROCESS_AFTER + 2)
    pipeline, stats = make_pipeline(archive)

    async def crawl() -> int:
        first = (await open_with_writer(pipeline, ids[:PROCESS_AFTER])).process
        first.send_signal(signal.SIGKILL)
        first.wait()
        await pipeline.process_item(page(ids[-2]))
        await pipeline.process_item(page(ids[-1]))
        await pipeline.close_spider()
        return first.pid

    killed = asyncio.run(crawl())
    assert pipeline.writer is not None and pipeline.writer.process.pid != killed
    assert f"writer process (pid {killed}) stopped (killed by signal 9)" in caplog.text
    assert snapshots(archive) == len(ids)
    assert stats.get_value("zeroarchive/snapshots_saved") == len(ids)
    assert stats.get_value("zeroarchive/errors/db_write") is None


def test_ctrl_c_reaches_the_crawl_not_its_writer(tmp_path: Path) -> None:
    """A terminal sends Ctrl-C to the whole process group: the crawl closes gracefully and
    still needs its writer for the last batches."""
    archive, ids = make_archive(tmp_path, PROCESS_AFTER + 1)
    pipeline, _ = make_pipeline(archive)

    async def crawl() -> subprocess.Popen[bytes]:
        # Ready, the child has set its signals.
        child = (await open_with_writer(pipeline, ids[:PROCESS_AFTER])).process
        child.send_signal(signal.SIGINT)
        child.send_signal(signal.SIGTERM)
        await pipeline.process_item(page(ids[-1]))
        await pipeline.close_spider()
        return child

    child = asyncio.run(crawl())
    assert pipeline.writer is not None and pipeline.writer.process is child
    assert child.returncode == 0
    assert snapshots(archive) == len(ids)


def test_a_crawl_of_a_few_pages_starts_no_process(tmp_path: Path) -> None:
    archive, ids = make_archive(tmp_path, PROCESS_AFTER - 1)
    pipeline, stats = make_pipeline(archive)

    async def crawl() -> None:
        await pipeline.open_spider()
        for article_id in ids:
            await pipeline.process_item(page(article_id))
        await pipeline.close_spider()

    asyncio.run(crawl())
    assert pipeline.writer is None
    assert stats.get_value("zeroarchive/snapshots_saved") == len(ids)


def test_the_writer_process_leaves_with_a_crawl_that_is_killed(tmp_path: Path) -> None:
    archive, _ = make_archive(tmp_path, 0)
    crawl = textwrap.dedent(
        f"""
        import os, signal, sys
        from zeroarchive.crawl.writer_process import WriterProcess
        writer = WriterProcess({archive.url!r}, 0)
        print(writer.process.pid, flush=True)
        sys.stdin.readline()
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    with subprocess.Popen(
        [sys.executable, "-c", crawl],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as parent:
        assert parent.stdout is not None and parent.stdin is not None
        child = int(parent.stdout.readline())
        assert running(child)
        parent.stdin.write("\n")
        parent.stdin.flush()
        assert parent.wait(10) == -signal.SIGKILL
    deadline = time.monotonic() + 20
    while running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(child), "an orphaned writer must leave on its own"


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's parent here may never reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_an_in_memory_archive_is_written_in_a_thread() -> None:
    crawler = get_crawler(
        settings_dict=project_settings(
            ZEROARCHIVE_DB_URL="sqlite://", ZEROARCHIVE_DB_RETRY_SECONDS=0
        )
    )
    crawler.stats.open_spider()
    pipeline = SnapshotsPipeline.from_crawler(crawler)

    async def crawl() -> None:
        await pipeline.open_spider()
        for article_id in range(1, PROCESS_AFTER + 3):
            await pipeline.process_item(page(article_id))
        await pipeline.close_spider()

    asyncio.run(crawl())
    assert pipeline.config.writer == "process" and pipeline.writer is None


def test_an_unknown_writer_is_refused(tmp_path: Path) -> None:
    crawler = get_crawler(
        settings_dict=project_settings(
            ZEROARCHIVE_DB_URL=f"sqlite:///{tmp_path / 'a.db'}", ZEROARCHIVE_SNAPSHOT_WRITER="fork"
        )
    )
    with pytest.raises(ValueError, match="ZEROARCHIVE_SNAPSHOT_WRITER must be one of"):
        SnapshotsPipeline.from_crawler(crawler)


def test_the_writer_process_loads_no_scrapy() -> None:
    """Its start-up is spent at each crawl: Scrapy and Twisted would more than double it."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, zeroarchive.crawl.writer_process, zeroarchive.storage.archive; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'scrapy', 'twisted'}))",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]"


def test_a_writer_started_while_the_database_is_away_waits_for_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Until it has opened the archive it is not ready, and the crawl's thread writes;
    closing the crawl ends it."""
    writer = WriterProcess("mysql+pymysql://root@127.0.0.1:9/nowhere", retry_seconds=0)
    with caplog.at_level(logging.WARNING):
        # Until it has said why it waits (a child starts slowly on a loaded machine).
        deadline = time.monotonic() + 120
        while "Waiting: cannot reach" not in caplog.text and time.monotonic() < deadline:
            assert not writer.ready()
            time.sleep(0.05)
        assert not writer.ready()
        writer.close()
    # The writer's log is masked as the crawl's is: a URL's user too (tokens are users).
    assert "Waiting: cannot reach the database at mysql+pymysql://***@127.0.0.1:9" in caplog.text
    assert writer.process.returncode == -signal.SIGKILL


@pytest.mark.parametrize("shown", [logging.DEBUG, logging.INFO])
def test_the_writer_process_sends_only_records_the_crawl_shows(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, shown: int
) -> None:
    """Pages whose canonical claim names another site: the first such claim of a site is
    logged at INFO, the rest at DEBUG, which a crawl that shows INFO and up is not sent."""
    archive, ids = make_archive(tmp_path, 3)
    monkeypatch.setattr(writer_process, "lowest_shown_level", lambda: shown)
    claim = b'<html><head><link rel="canonical" href="https://elsewhere.example/a/%d"></head>'
    batch = [
        replace(page(i, claim % i + b"<body><p>article</p></body></html>"), unsettled_for=url)
        for i, url in zip(ids, (f"https://farm.example/a/{i}" for i in ids), strict=True)
    ]
    site = archive.sites.get(1)
    assert site is not None
    writer = WriterProcess(archive.url, 0)
    try:
        while not writer.ready():
            time.sleep(0.02)
        with caplog.at_level(logging.DEBUG):
            writer.write(batch, {1: site})
    finally:
        writer.close()
    ignored = [r for r in caplog.records if "ignoring its canonical claim" in r.getMessage()]
    assert all(r.process != os.getpid() for r in ignored), "logged in the writer process"
    assert [r.levelno for r in ignored] == [logging.INFO] + [logging.DEBUG] * (
        len(ids) - 1 if shown == logging.DEBUG else 0
    )
    assert snapshots(archive) == len(ids)


def test_the_lowest_level_shown_is_the_lowest_of_the_handlers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = logging.getLogger()
    monkeypatch.setattr(logging.Logger.manager, "loggerDict", {})
    monkeypatch.setattr(root, "handlers", [logging.Handler(logging.WARNING)])
    assert writer_process.lowest_shown_level() == logging.WARNING
    named = logging.Logger("zeroarchive.example")
    named.handlers = [logging.Handler(logging.INFO)]
    monkeypatch.setitem(logging.Logger.manager.loggerDict, "zeroarchive.example", named)
    assert writer_process.lowest_shown_level() == logging.INFO
    monkeypatch.setattr(root, "handlers", [logging.Handler()])  # no level: every record
    assert writer_process.lowest_shown_level() == logging.DEBUG
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(logging.Logger.manager, "loggerDict", {})
    assert writer_process.lowest_shown_level() == logging.WARNING  # logging's last resort
