from __future__ import annotations

import argparse

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError

#: Spider close reasons that mean the run did nothing because of how it was asked.
REFUSED = frozenset({"ambiguous_site", "bad_arguments", "site_locked", "unknown_site"})


class Command(ScrapyCrawlCommand):
    """Scrapy's crawl, exiting non-zero when the spider refused to run (bad arguments, an
    unknown site, a site another run is crawling): cron and scrapyd see the failure."""

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give exactly one spider name")
        assert self.crawler_process
        crawler = self._create_crawler(args[0])
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed:
            self.exitcode = 1
        elif crawler.stats and crawler.stats.get_value("finish_reason") in REFUSED:
            self.exitcode = 2
