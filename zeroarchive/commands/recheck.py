"""`scrapy recheck URL... | --article ID...`: look at archived pages again now and say what
changed (an edit, a deletion, a restoration, or nothing)."""

from __future__ import annotations

import argparse
import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.commands.parse_snapshots import publication_hooks
from zeroarchive.core.clock import now
from zeroarchive.core.services import one_line_errors
from zeroarchive.core.shown import shown
from zeroarchive.core.targets import allow_private_targets
from zeroarchive.crawl.asked import AskedAnswers
from zeroarchive.crawl.snapshot_batches import settle, sort_batch
from zeroarchive.events.recheck import before_recheck, what_changed
from zeroarchive.events.saving import NotSavable, save_targets
from zeroarchive.events.store import confirm_asked
from zeroarchive.parser import DEFAULT_TIMEZONE
from zeroarchive.storage.archive import Archive, open_archive


class Command(ScrapyCommand):
    requires_project = True

    def syntax(self) -> str:
        return "URL... | --article ID..."

    def short_desc(self) -> str:
        return "Look at archived pages again now and say what changed"

    def long_desc(self) -> str:
        return (
            "Fetches each page now (whatever its schedule), stores the snapshot, parses it, "
            "and prints one line per page: 'edited' (its title or text changed: an event with "
            "its diff), 'deleted' (the second sign of a deletion: confirmed at once, the ten "
            "minutes between two signs are the schedule's rule, not a person's), 'suspected' "
            "(a first sign: the scheduled check confirms it, or recheck again), 'restored' "
            "(a deleted page answers again), 'changed' (new bytes, the same text), "
            "'unchanged', or 'failed' with the reason. Exit 1 when a page could not be "
            "fetched. A URL not in the archive yet is saved, as `scrapy save` does."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--article",
            type=int,
            action="append",
            default=[],
            metavar="ID",
            help="an archived article's id (the monitor's /articles/ID); repeatable",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args and not opts.article:
            raise UsageError("give one or more URLs, or --article ID")
        assert self.settings is not None and self.crawler_process is not None
        archive = open_archive(self.settings)
        by_id = archive.articles.urls_of(opts.article)
        unknown = [str(i) for i in opts.article if i not in by_id]
        if unknown:
            raise UsageError(f"no article {', '.join(unknown)} in the archive")
        asked_at = now()
        try:
            targets = save_targets(
                archive, [*args, *by_id.values()], asked_at, allow_private_targets(self.settings)
            )
        except NotSavable as exc:
            raise UsageError(shown(str(exc))) from None
        ids = archive.articles.ids_of([target.url for target in targets])
        before = before_recheck(archive.engine, list(dict.fromkeys(ids.values())))
        asked = AskedAnswers(before)
        sites = {target.site.site_id: target.site for target in targets}
        for site in sites.values():
            crawler = self.crawler_process.create_crawler(site.source.name)
            asked.watch(crawler)
            self.crawler_process.crawl(crawler, site=str(site.site_id), mode="snapshot")
        self.crawler_process.start()

        # A second sign of a deletion is confirmed now (the crawl held it for ten minutes).
        pages = [settle(page, sites.get(page.site_id), []) for page in asked.pages()]
        signs = sort_batch(archive, [*pages, *asked.failures()], sites).gone
        confirm_asked(archive.engine, signs, asked_at)

        self._parse(archive, list(sites), asked_at)
        gone = {answer.article_id for answer in signs}
        for found in what_changed(archive.engine, before, asked_at, gone, asked.why_not):
            print(shown(found.line()))
            if found.outcome == "failed":
                self.exitcode = 1

    def _parse(self, archive: Archive, site_ids: list[int], asked_at: int) -> None:
        """Parse what the recheck stored, so its text and any edit show at once."""
        from zeroarchive.parser.run import ParseRunConfig, parse_pending

        assert self.settings is not None
        hooks = publication_hooks(archive, self.settings)
        timezone = self.settings.get("PARSER_TIMEZONE") or DEFAULT_TIMEZONE
        for site_id in site_ids:
            config = ParseRunConfig(site_id=site_id, since=asked_at, timezone=timezone)
            stats = parse_pending(archive.engine, config, hooks=hooks)
            if stats["parser/errors"]:
                print(
                    f"warning: {stats['parser/errors']} snapshot(s) could not be parsed "
                    "(`scrapy parse_snapshots` logs why)",
                    file=sys.stderr,
                )
