"""`scrapy save URL... [--watch]`: archive these pages now, whatever their site."""

from __future__ import annotations

import argparse
import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.core.clock import now
from zeroarchive.core.services import one_line_errors
from zeroarchive.core.shown import shown
from zeroarchive.core.targets import allow_private_targets
from zeroarchive.crawl.asked import AskedAnswers
from zeroarchive.events.saving import NotSavable, save_targets
from zeroarchive.storage.archive import open_archive


class Command(ScrapyCommand):
    requires_project = True

    def syntax(self) -> str:
        return "URL... [--watch]"

    def short_desc(self) -> str:
        return "Archive these pages now (save page now), optionally under the long-tail watch"

    def long_desc(self) -> str:
        return (
            "Snapshots each URL at once. A page of a site in the table is filed under it (and "
            "watched as that site's config says); a page of any other host under an ad-hoc, "
            "inactive site 'saved:<host>' that is never walked. With --watch such a page stays "
            "under the long-tail watch (about 7, 30, 90, 180 and 365 days after its "
            "snapshot, run by the regular `scrapy crawl`), so a later deletion or edit "
            "becomes an event (`scrapy events`); without it, it is snapshotted once. A PTT "
            "post, Dcard post, Facebook post or YouTube video is saved by its "
            "source's spider (a post under its board's, forum's, page's or group's site, "
            "'saved:<source>:<its URL>' when that is not in the table); a page of a site "
            "whose config says 'render' is rendered by the browser. A URL whose host is or "
            "resolves to a loopback, private, link-local, multicast or reserved address is "
            "refused, unless ZEROARCHIVE_ALLOW_PRIVATE_TARGETS or the site's "
            "allow_private_targets allows it."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--watch",
            action="store_true",
            help="keep the pages under the long-tail watch after their snapshot",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args:
            raise UsageError("give one or more URLs to save")
        archive = open_archive(self.settings)
        asked_at = now()
        try:
            targets = save_targets(archive, args, asked_at, allow_private_targets(self.settings))
        except NotSavable as exc:
            raise UsageError(shown(str(exc))) from None
        sites = {target.site.site_id: target.site for target in targets}
        ids = archive.articles.ids_of([target.url for target in targets])
        asked = AskedAnswers(ids.values())
        assert self.crawler_process is not None
        for site in sites.values():
            crawler = self.crawler_process.create_crawler(site.source.name)
            asked.watch(crawler)
            self.crawler_process.crawl(crawler, site=str(site.site_id), mode="snapshot")
        self.crawler_process.start()
        if not opts.watch:
            # Pages of ad-hoc sites are watched after their snapshot unless saved without
            # --watch; a site in the table keeps its own watch config for its pages.
            archive.articles.stop_watch([t.url for t in targets if t.site.adhoc])
        # One line per URL, and exit 1 when one was not saved, with the reason.
        taken = archive.articles.last_snapshot_times([t.url for t in targets])
        for target in targets:
            if taken[target.url] >= asked_at:
                print(shown(f"saved {target.url} ({target.site.name})"))
            else:
                why = asked.why_not(ids.get(target.url, 0))
                print(shown(f"NOT saved {target.url} ({target.site.name}): {why}"))
                self.exitcode = 1
        if self.exitcode == 0:
            print(
                "Its text shows in the monitor and exports once `scrapy parse_snapshots` has "
                "run (`scrapy recheck URL` fetches, parses and says what changed).",
                file=sys.stderr,
            )
