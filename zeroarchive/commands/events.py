"""`scrapy events`: what was deleted, restored or silently edited, oldest first."""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.commands import TIME_METAVAR, site_option, time_option
from zeroarchive.core.clock import utc_minute
from zeroarchive.core.services import one_line_errors
from zeroarchive.core.shown import json_line, shown
from zeroarchive.storage.archive import open_archive


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return (
            "[--site NAME | --article ID] [--since TIME] [--until TIME] "
            "[--kind deleted,edited,restored] [--diff] [--json]"
        )

    def short_desc(self) -> str:
        return "Takedowns, restorations and silent edits of archived articles, oldest first"

    def long_desc(self) -> str:
        return (
            "Lists the events the crawl and the parser found: 'deleted' (a 404/410, a "
            "redirect to the front page or a list page, a soft 404, a removal notice or a "
            "platform's sign, confirmed by a second fetch at least 10 minutes later), "
            "'restored' (a deleted article answered again) and 'edited' (the title or body "
            "of the publication changed between two versions; run `scrapy parse_snapshots` "
            "first). Reading only: running it twice adds nothing."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--site", help="only this site (id or name)")
        parser.add_argument("--article", type=int, metavar="ID", help="only this article's events")
        parser.add_argument(
            "--since",
            type=time_option(),
            metavar=TIME_METAVAR,
            help="only events detected at or after this time (YYYY-MM-DD, "
            "YYYY-MM-DDTHH:MM or unix seconds, UTC)",
        )
        parser.add_argument(
            "--until",
            type=time_option(until=True),
            metavar=TIME_METAVAR,
            help="only events detected before this time (a day: up to its end)",
        )
        parser.add_argument(
            "--diff",
            action="store_true",
            help="print each edit's diff under it: removed text as [-...-], added as {+...+}",
        )
        parser.add_argument(
            "--kind",
            default="deleted,edited,restored",
            help="comma-separated kinds to list (by default all three)",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="one JSON object per event: kind, article_id, site, url, detected_at, "
            "evidence, before_snapshot_at, after_snapshot_at (and diff, with --diff)",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from zeroarchive.events.diff import inline
        from zeroarchive.events.store import KINDS, iter_events

        kinds = [kind.strip() for kind in opts.kind.split(",") if kind.strip()]
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown or not kinds:
            raise UsageError(f"--kind takes {', '.join(KINDS)}, not {', '.join(unknown) or '-'}")
        archive = open_archive(self.settings)
        site_id = None if opts.site is None else site_option(archive, opts.site).site_id
        if opts.since is not None and opts.until is not None and opts.since >= opts.until:
            raise UsageError("--since must be before --until")
        events = iter_events(
            archive.engine,
            site_id,
            kinds,
            opts.since,
            until=opts.until,
            article_id=opts.article,
        )
        listed = 0
        for event in events:
            listed += 1
            if opts.json:
                record = event.as_json()
                if opts.diff:
                    record["diff"] = event.diff
                print(json_line(record))
                continue
            when = utc_minute(event.detected_at, "-")
            # The evidence last and whole: a URL or a notice's words are what it says.
            site, url, evidence = shown(event.site), shown(event.url), shown(event.evidence)
            print(f"{when:16}  {event.kind:8}  {site[:20]:20}  {url}  {evidence}")
            if opts.diff and event.diff:
                for field in ("title", "text"):
                    if field in event.diff.get("fields", [field]) and event.diff.get(field):
                        print(f"    {field}: {shown(inline(event.diff[field]))}")
        if not opts.json:
            print(f"{listed} event(s)")
