from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.commands import TIME_METAVAR, site_option, time_option
from zeroarchive.core.progress import Progress
from zeroarchive.core.services import one_line_errors
from zeroarchive.parser import DEFAULT_TIMEZONE, PARSER_VERSION
from zeroarchive.storage.archive import Archive, open_archive

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from zeroarchive.storage.publications import VersionHook


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--site S] [--since UNIX] [--reparse] [--workers N]"

    def short_desc(self) -> str:
        return "Parse stored snapshots into publications (incremental, per parser version)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--site", help="only this site (id or name)")
        parser.add_argument(
            "--since",
            type=time_option(),
            metavar=TIME_METAVAR,
            help="only snapshots at or after this time (unix seconds, YYYY-MM-DD or "
            "YYYY-MM-DDTHH:MM, UTC)",
        )
        parser.add_argument(
            "--reparse",
            action="store_true",
            help=f"discard this parser version's ({PARSER_VERSION}) results and parse again",
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=1,
            metavar="N",
            help="parse in N processes while this one reads snapshots and stores the "
            "publications (default 1: parse in this process)",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        # Imported here: scrapy imports every command module when any command starts.
        from zeroarchive.parser.run import ParseRunConfig, parse_pending

        if opts.reparse and opts.since is not None:
            raise UsageError("--reparse redoes a site's whole history; it takes no --since")
        if opts.workers < 1:
            raise UsageError(f"--workers takes 1 or more processes, not {opts.workers}")
        assert self.settings is not None
        archive = open_archive(self.settings)
        site_id = None if opts.site is None else site_option(archive, opts.site).site_id
        config = ParseRunConfig(
            site_id=site_id,
            since=opts.since,
            reparse=opts.reparse,
            workers=opts.workers,
            timezone=self.settings.get("PARSER_TIMEZONE") or DEFAULT_TIMEZONE,
        )
        hooks = publication_hooks(archive, self.settings)
        resume = "run parse_snapshots again: it goes on where this run stopped"
        with Progress("parse_snapshots", unit="snapshot", resume=resume) as progress:
            stats = parse_pending(archive.engine, config, hooks=hooks, progress=progress)
        seconds = stats.pop("parser/seconds_x1000") / 1000
        for key, value in sorted(stats.items()):
            print(f"{key}: {value}", file=sys.stderr)
        parsed = stats["parser/parsed"] + stats["parser/errors"]
        rate = parsed / seconds if seconds else 0.0
        print(
            f"parser {PARSER_VERSION}: {parsed} snapshot(s) parsed in {seconds:.1f} s "
            f"({rate:.1f}/s), {stats['parser/errors']} error(s)",
            file=sys.stderr,
        )
        if stats["parser/errors"]:
            self.exitcode = 1


def publication_hooks(archive: Archive, settings: BaseSettings) -> list[VersionHook]:
    """What each new publication version is handed to as a parse run adds it: the search
    index (when on and available; a warning on stderr otherwise), the silent-edit check
    (events/) and the copy index (copies/, when on)."""
    from zeroarchive.events.edits import edit_hook

    hooks: list[VersionHook] = []
    if settings.getbool("SEARCH_INDEX_ENABLED"):
        from zeroarchive.search import open_index
        from zeroarchive.search.index import index_hook

        index = open_index(archive.engine)
        missing = index.available()
        if missing:
            print(f"warning: not indexing for search: {missing}", file=sys.stderr)
        else:
            hooks.append(index_hook(index))
    hooks.append(edit_hook)
    if settings.getbool("COPIES_ENABLED"):
        from zeroarchive.copies.hook import copies_hook
        from zeroarchive.copies.index import CopiesConfig

        try:
            copies = CopiesConfig.from_settings(settings)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        hooks.append(copies_hook(copies))
    return hooks
