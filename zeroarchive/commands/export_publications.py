from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.commands import site_option
from zeroarchive.commands.export_snapshots import site_names
from zeroarchive.core.atomic import open_text_output
from zeroarchive.core.progress import Progress
from zeroarchive.core.services import one_line_errors
from zeroarchive.parser import PARSER_VERSION
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.publications import PublicationStore

RESUME = "an export starts over: run it again"


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "--out FILE.jsonl[.gz] | --format parquet --out DIR [--site S] [--parser-version V]"

    def short_desc(self) -> str:
        return "Export publications (every version) as JSON lines or a Parquet dataset"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--out",
            required=True,
            help="output file (.jsonl or .jsonl.gz), or with --format parquet a new directory",
        )
        parser.add_argument(
            "--format",
            choices=("jsonl", "parquet"),
            default="jsonl",
            help="jsonl (default) or parquet: a dataset partitioned by site and month",
        )
        parser.add_argument("--site", help="only this site (id or name)")
        parser.add_argument(
            "--parser-version", default=PARSER_VERSION, help="by default the current one"
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        archive = open_archive(self.settings)
        site_id = None if opts.site is None else site_option(archive, opts.site).site_id
        store = PublicationStore(archive.engine, opts.parser_version)
        out = Path(opts.out)
        total = store.count_publications(site_id)
        progress = Progress("export_publications", total, unit="publication", resume=RESUME)
        if opts.format == "parquet":
            from zeroarchive.publish.datasets import DatasetExistsError, write_publications

            records = progress.track(store.iter_publications(site_id=site_id))
            try:
                with progress:
                    writer = write_publications(records, out, site_names(archive))
            except DatasetExistsError as exc:
                raise UsageError(str(exc)) from None
            print(
                f"{writer.rows} publication(s) written to {out} ({writer.files} file(s))",
                file=sys.stderr,
            )
            return
        from zeroarchive.publish.columns import publication_export

        names = site_names(archive)
        written = 0
        with open_text_output(out) as handle, progress:
            for record in progress.track(store.iter_publications(site_id=site_id)):
                row = publication_export(record, names(int(record["site_id"])))
                handle.write(json.dumps(row, ensure_ascii=False))
                handle.write("\n")
                written += 1
        print(f"{written} publication(s) written to {out}", file=sys.stderr)
