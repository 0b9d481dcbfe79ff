from __future__ import annotations

import argparse
import logging
import signal
import threading
import time
from types import FrameType
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.spiderloader import get_spider_loader
from scrapy.utils.log import configure_logging

from zeroarchive.core.clock import now as clock_now
from zeroarchive.core.services import (
    first_pause,
    is_unreachable,
    next_pause,
    one_line_errors,
    reason,
    set_pauses_from,
    wait_for,
)
from zeroarchive.core.shown import mask_logs
from zeroarchive.crawl.spider import ArchiveSpider
from zeroarchive.distributed.redis_client import reachable, redis_url_from
from zeroarchive.sources import SOURCES
from zeroarchive.storage.archive import open_archive

if TYPE_CHECKING:
    from zeroarchive.crawl.dispatch import Dispatcher

logger = logging.getLogger(__name__)


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--once] [--interval SECONDS]"

    def short_desc(self) -> str:
        return "Distributed mode: push due list pages and articles into the workers' queues"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--once", action="store_true", help="run one round and exit")
        parser.add_argument(
            "--interval", type=float, default=30.0, help="seconds between rounds (default 30)"
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        configure_logging(self.settings)
        mask_logs()  # a site's bad config is logged with its URLs
        url = redis_url_from(self.settings)
        if url is None:
            raise UsageError("scrapy schedule needs REDIS_URL (environment or setting)")
        if opts.interval <= 0:
            raise UsageError("--interval must be positive")
        loader = get_spider_loader(self.settings)
        spiders: list[ArchiveSpider] = []
        for source in SOURCES:
            spider = loader.load(source.name)()
            if not isinstance(spider, ArchiveSpider):
                raise UsageError(f"spider {source.name!r} of the registry is no ArchiveSpider")
            # Only its request builders run here, with no crawler; they read settings (the
            # browser's user agent of a rendered site, say) as in a crawl.
            spider.settings = self.settings
            spiders.append(spider)
        stop = threading.Event()

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            logger.info("Got signal %d: stopping after this round", signum)
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        settings = self.settings

        def open_dispatcher() -> Dispatcher:
            # Imported here: scrapy imports every command module when any command starts,
            # and the dispatcher brings the redis client with it.
            from zeroarchive.crawl.dispatch import DispatchConfig, Dispatcher

            return Dispatcher(
                open_archive(settings),
                reachable(settings, url),
                spiders,
                DispatchConfig.from_settings(settings),
            )

        # One round (cron) reports a server that is away and exits; the long-running
        # scheduler is the one process that decides when, so it waits for them.
        set_pauses_from(settings)
        dispatcher = open_dispatcher() if opts.once else wait_for(open_dispatcher, stop)
        pause = first_pause()
        while True:
            started = time.time()
            try:
                # The archive's clock (ZEROARCHIVE_FAKE_NOW in tests), as the crawl's.
                reports = dispatcher.run_once(clock_now())
            except Exception as exc:
                if opts.once or not is_unreachable(exc):
                    raise
                # Leased work comes due again when its lease runs out; nothing else of a
                # round is written before it is queued, so the next round queues it.
                logger.warning("Round failed (%s); next round in %g s", reason(exc), pause)
                if stop.wait(pause):
                    return
                pause = next_pause(pause)
                continue
            if pause > first_pause():
                logger.info("Round succeeded again: the database and redis answer")
                pause = first_pause()
            for name, report in reports.items():
                logger.info(
                    "%s: %d list request(s) for %d site(s), %d snapshot(s) queued; %d waiting; "
                    "%d soft-404 probe(s); %d list page(s) postponed by budgets, %d retired",
                    name,
                    report.list_requests,
                    report.list_sites,
                    report.snapshots,
                    report.queued,
                    report.probes,
                    report.postponed,
                    report.retired,
                )
            if opts.once or stop.wait(max(0.0, opts.interval - (time.time() - started))):
                return
