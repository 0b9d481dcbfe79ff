from __future__ import annotations

import argparse
import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.commands import site_option
from zeroarchive.core.services import one_line_errors
from zeroarchive.parser import PARSER_VERSION
from zeroarchive.storage.archive import open_archive


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--site S] [--parser-version V]"

    def short_desc(self) -> str:
        return "Rebuild the search index from the publications (resumable)"

    def long_desc(self) -> str:
        return (
            "Rebuild the full-text search index (SQLite FTS5, or Mroonga on MariaDB) from "
            "the stored publications, every version, of the whole archive or one site. "
            "parse_snapshots keeps the index up to date by itself; reindex is for an "
            "archive that had publications before the index existed, after installing "
            "Mroonga, or after a change to how text is indexed. Stopped (Ctrl-C), the same "
            "command goes on where it stopped. On MariaDB it ends by rebuilding Mroonga's "
            "index in one pass (half the size; searches wait meanwhile)."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--site", help="only this site's publications (id or name)")
        parser.add_argument(
            "--parser-version",
            default=PARSER_VERSION,
            help=f"the publications of this parser version (by default {PARSER_VERSION})",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from zeroarchive.search import open_index
        from zeroarchive.search.reindex import reindex

        if args:
            raise UsageError(f"reindex takes no arguments, not {' '.join(args)!r}")
        archive = open_archive(self.settings)
        site_id = None if opts.site is None else site_option(archive, opts.site).site_id
        index = open_index(archive.engine)
        missing = index.available()
        if missing:
            print(f"error: {missing}", file=sys.stderr)
            self.exitcode = 1
            return
        assert self.settings is not None
        batch = self.settings.getint("SEARCH_REINDEX_BATCH")
        if batch < 1:
            raise UsageError(f"SEARCH_REINDEX_BATCH must be at least 1, not {batch}")
        done, resumed = reindex(archive.engine, index, opts.parser_version, site_id, batch=batch)
        how = "resumed: " if resumed else ""
        print(f"{how}{done} publication(s) indexed with {index.name}", file=sys.stderr)
