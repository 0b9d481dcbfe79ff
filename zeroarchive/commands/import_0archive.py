from __future__ import annotations

import argparse
import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.core.services import one_line_errors, safe_url
from zeroarchive.core.shown import shown


def site_ids(value: str) -> tuple[int, ...]:
    """``--sites 3,7,12`` as ids.

    >>> site_ids("3, 7,12")
    (3, 7, 12)
    """
    try:
        ids = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of site ids: {value!r}") from None
    if not ids:
        raise argparse.ArgumentTypeError("no site id given")
    return ids


def positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1: {value!r}")
    return number


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "DB_URL [--sites ID,...] [--batch N] [--dry-run]"

    def short_desc(self) -> str:
        return "Import a 0archive (ZeroScraper) MySQL database: sites, articles, snapshots"

    def long_desc(self) -> str:
        return (
            "Reads the 0archive database at DB_URL (mysql+pymysql://user:password@host/db; "
            "only read) and writes its sites, articles and every snapshot, from the live "
            "ArticleSnapshot table and the rotated ArticleSnapshot<YYYYMM> tables, into the "
            "archive ZEROARCHIVE_DB_URL names. Sites are mapped as sync_sites maps them; a "
            "site no spider can crawl is kept inactive. Articles keep their snapshot times, "
            "counts and schedule (0 = stopped stays stopped); duplicates of one URL are "
            "merged; redirect_to becomes a move. Snapshot bytes are stored byte for byte, "
            "compressed, a repeat once. Safe to run again or after a kill: what is imported "
            "already is skipped. Every skipped row is named with its reason; the last line "
            "says 'imported S sites, A articles, N snapshots (K skipped)'."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--sites",
            type=site_ids,
            metavar="ID,...",
            help="only these 0archive site ids (their articles and snapshots)",
        )
        parser.add_argument(
            "--batch",
            type=positive,
            metavar="N",
            help="rows per batch, one transaction each (else the IMPORT_0ARCHIVE_BATCH setting)",
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="write nothing: count what would come over and list the problems",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        # Imported here: scrapy imports every command module when any command starts.
        import pymysql

        from zeroarchive.sites.airtable import type_map
        from zeroarchive.sources import label_types
        from zeroarchive.storage.archive import open_archive
        from zeroarchive.storage.from_0archive import (
            ImportOptions,
            ZeroArchiveDb,
            ZeroArchiveImport,
        )

        if len(args) != 1:
            raise UsageError("give the 0archive database URL (mysql+pymysql://user@host/db)")
        assert self.settings is not None
        try:
            options = ImportOptions(
                site_ids=opts.sites,
                batch=opts.batch or self.settings.getint("IMPORT_0ARCHIVE_BATCH"),
                batch_bytes=self.settings.getint("IMPORT_0ARCHIVE_BATCH_BYTES"),
                dry_run=opts.dry_run,
                labels=label_types(type_map(self.settings.get("AIRTABLE_TYPE_MAP"))),
            )
            source = ZeroArchiveDb(args[0])
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        except pymysql.MySQLError as exc:
            where = safe_url(args[0])
            raise UsageError(f"cannot read the 0archive database {where}: {exc}") from None

        def say(line: str) -> None:
            print(shown(line), file=sys.stderr, flush=True)

        say(f"reading 0archive database {safe_url(args[0])}" + (" (dry run)" * opts.dry_run))
        try:
            engine = None if opts.dry_run else open_archive(self.settings).engine
            importer = ZeroArchiveImport(source, engine, options, say)
            try:
                report = importer.run()
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        finally:
            source.close()
        articles, snapshots = report.articles, report.snapshots
        say(
            f"already imported before: {report.sites_already} sites, {articles.already} "
            f"articles, {snapshots.already} snapshots; {articles.merged} duplicate articles "
            f"merged, {report.moves} redirects made moves, {report.sites_inactive} sites kept "
            f"inactive, {snapshots.not_utf8} snapshots not valid UTF-8 (kept as they were), "
            f"{len(report.problems)} problems"
        )
        print(report.summary(), flush=True)
