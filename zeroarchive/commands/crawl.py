from __future__ import annotations

import argparse

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError
from scrapy.settings import BaseSettings

from zeroarchive.core.services import one_line_errors, should_wait, wait_for
from zeroarchive.distributed.redis_client import reachable, redis_url_from
from zeroarchive.storage.archive import open_archive

#: Spider close reasons that mean the run did nothing because of how it was asked.
REFUSED = frozenset({"ambiguous_site", "bad_arguments", "site_locked", "unknown_site"})


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
    unknown site, a site another run is crawling): cron and scrapyd see the failure.

    A database or Redis that does not answer ends the run with one line and exit status
    3, except under scrapyd (or with ZEROARCHIVE_WAIT_FOR_SERVICES), where nobody would
    start the job again: there the run waits for them, with growing pauses.
    """

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give exactly one spider name")
        assert self.crawler_process and self.settings is not None
        settings = self.settings
        if should_wait():
            wait_for(lambda: servers_answer(settings))
        else:
            servers_answer(settings)
        crawler = self._create_crawler(args[0])
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed:
            self.exitcode = 1
        elif crawler.stats and crawler.stats.get_value("finish_reason") in REFUSED:
            self.exitcode = 2
