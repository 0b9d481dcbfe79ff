from __future__ import annotations

import argparse
import gc
import logging
import sys
from typing import Any

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError
from scrapy.settings import BaseSettings

from zeroarchive.core.quiet_log import lowest_shown_level, quiet_start_up
from zeroarchive.core.services import one_line_errors, set_pauses_from, should_wait, wait_for
from zeroarchive.core.stats import PREFIX
from zeroarchive.distributed.redis_client import reachable, redis_url_from
from zeroarchive.storage.archive import open_archive

logger = logging.getLogger(__name__)

#: Spider close reasons that mean the run did nothing because of how it was asked.
REFUSED = frozenset({"ambiguous_site", "bad_arguments", "site_locked", "unknown_site"})
#: Exit statuses: 1 the crawler could not start, 2 refused (REFUSED), 3 a server away
#: (core.services), 4 every request of the run failed.
EXIT_ALL_FAILED = 4


def every_request_failed(stats: dict[str, Any]) -> bool:
    """Whether the run asked for pages and none answered: list pages and snapshots
    failed (DNS, refused, timeouts, HTTP errors, block pages), no list page was read, no
    snapshot kept, and no article answered gone (404, 410) or unchanged (304): a run that
    finds every article taken down is what the events are for, not a failed run. A run
    with nothing due did not fail.

    >>> every_request_failed({"zeroarchive/list_page_failures": 2})
    True
    >>> every_request_failed({"zeroarchive/snapshot_failures": 1, "zeroarchive/list_pages": 1})
    False
    >>> every_request_failed({"zeroarchive/snapshot_failures": 3, "zeroarchive/snapshots_saved": 1})
    False
    >>> every_request_failed({"zeroarchive/snapshot_failures": 2, "zeroarchive/snapshots_gone": 2})
    False
    >>> every_request_failed({})
    False
    """
    failed = stats.get(f"{PREFIX}/list_page_failures", 0) + stats.get(
        f"{PREFIX}/snapshot_failures", 0
    )
    answered = stats.get(f"{PREFIX}/list_pages", 0) + stats.get(f"{PREFIX}/canonical_redirects", 0)
    answered += sum(v for k, v in stats.items() if k.startswith(f"{PREFIX}/snapshots_"))
    return failed > 0 and answered == 0


def freeze_start_up_objects() -> None:
    """Take the objects start-up made (modules, settings, the crawler and its components)
    out of the garbage collector's full passes; log how many there are at DEBUG.

    They live as long as the run, yet every full pass of the collector walks them all
    again (about 40 ms each in bench/crawl_embedded.py's crawl), and so do the passes of Python's
    exit. A run that frees such an object in a reference cycle later keeps it until the
    process ends: start-up makes few that die. Counting them walks every one (12 ms of
    CPU a crawl), so it is done only when the log shows DEBUG lines.
    """
    gc.freeze()
    if lowest_shown_level() <= logging.DEBUG:
        logger.debug(
            "%d start-up objects left out of the garbage collector's passes",
            gc.get_freeze_count(),
        )


def servers_answer(settings: BaseSettings) -> None:
    """Open the archive (its schema up to date) and, in distributed mode, ping Redis.

    Done before the crawler starts: a server that is away inside Scrapy's start-up gives
    tracebacks and an engine that never runs, not a reason.
    """
    open_archive(settings)
    if redis_url_from(settings) is not None:
        reachable(settings).close()


class Command(ScrapyCrawlCommand):
    """Scrapy's crawl, exiting non-zero when the spider refused to run (bad arguments, an
    unknown site, a site another run is crawling: 2) or when every request of the run
    failed (4): cron and scrapyd see the failure.

    A database or Redis that does not answer ends the run with one line and exit status
    3, except under scrapyd (or with ZEROARCHIVE_WAIT_FOR_SERVICES), where nobody would
    start the job again: there the run waits for them, with growing pauses.
    """

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        # Before Scrapy's banner: the crawler process is made after this.
        quiet_start_up(self.settings)

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give exactly one spider name")
        assert self.crawler_process and self.settings is not None
        settings = self.settings
        set_pauses_from(settings)
        if should_wait():
            wait_for(lambda: servers_answer(settings))
        else:
            servers_answer(settings)
        crawler = self._create_crawler(args[0])
        self.crawler_process.crawl(crawler, **opts.spargs)
        freeze_start_up_objects()
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed:
            self.exitcode = 1
        elif crawler.stats and crawler.stats.get_value("finish_reason") in REFUSED:
            self.exitcode = 2
        elif crawler.stats and every_request_failed(crawler.stats.get_stats()):
            print(
                "error: every request of this run failed (the lines above say why)",
                file=sys.stderr,
            )
            self.exitcode = EXIT_ALL_FAILED
