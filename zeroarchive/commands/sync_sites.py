from __future__ import annotations

import argparse
import sys
import time

from scrapy.commands import ScrapyCommand

from zeroarchive.core.progress import Progress
from zeroarchive.core.services import one_line_errors
from zeroarchive.core.shown import shown
from zeroarchive.storage.archive import open_archive

#: Exit codes: 1 = some rows were invalid (the rest synced), 2 = nothing was changed.
EXIT_INVALID_ROWS = 1
EXIT_NOTHING_DONE = 2


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--dry-run]"

    def short_desc(self) -> str:
        return "Add, update and deactivate sites from the Airtable Sites table"

    def long_desc(self) -> str:
        return (
            "Reads every row of AIRTABLE_TABLE (in AIRTABLE_VIEW) of AIRTABLE_BASE_ID with the "
            "key in the AIRTABLE_API_KEY environment variable, and makes the Site table follow "
            "it: approved rows are added or updated (matched by Airtable record id), unapproved "
            "or deleted rows deactivate their site (never delete it). If Airtable cannot be "
            "read in full, or returns no rows, nothing changes."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--dry-run", action="store_true", help="print the changes without writing them"
        )

    def _fail(self, message: str) -> None:
        print(shown(f"error: {message}; nothing changed"), file=sys.stderr)
        self.exitcode = EXIT_NOTHING_DONE

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        # Scrapy imports every command module for every command; pyairtable (with pydantic)
        # would add most of a second to each of them.
        from zeroarchive.sites.airtable import AirtableConfig, AirtableError, fetch_records
        from zeroarchive.sites.sync import plan_sync

        assert self.settings is not None
        try:
            config = AirtableConfig.from_settings(self.settings)
        except ValueError as exc:
            self._fail(str(exc))
            return
        try:
            with Progress("sync_sites: reading Airtable", unit="row") as progress:
                records = fetch_records(config, progress)
        except AirtableError as exc:
            self._fail(str(exc))
            return
        if not records:
            # An emptied view or a wrong filter must not deactivate the whole archive.
            self._fail(f"Airtable returned no rows from table {config.table!r}")
            return
        archive = open_archive(self.settings)
        plan = plan_sync(records, archive.sites.specs(), config.labels)
        for error in plan.errors:
            print(shown(f"error: {error}"), file=sys.stderr)
        for warning in plan.warnings:
            print(shown(f"warning: {warning}"), file=sys.stderr)
        for change in plan.changes:
            print(shown(change.describe()))
        if opts.dry_run:
            print(f"dry run, nothing written: {len(records)} rows; would be {plan.summary()}")
        else:
            writes = [(change.site_id, change.spec) for change in plan.changes]
            archive.sites.apply_specs(writes, int(time.time()))
            print(f"{len(records)} rows: {plan.summary()}")
        if plan.errors:
            self.exitcode = EXIT_INVALID_ROWS
