from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.commands import TIME_METAVAR, site_option, time_option
from zeroarchive.core.atomic import open_text_output
from zeroarchive.core.progress import Progress
from zeroarchive.core.services import one_line_errors
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.snapshots import (
    count_snapshots,
    iter_snapshot_metadata,
    iter_snapshots,
    snapshot_record,
)


def site_names(archive: Archive) -> Callable[[int], str]:
    """Site ids to names, for the datasets' ``site`` column."""
    names = archive.sites.names()
    return lambda site_id: names.get(site_id, str(site_id))


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "--out FILE.jsonl[.gz] | --format parquet --out DIR [--site S] [--since UNIX]"

    def short_desc(self) -> str:
        return "Export snapshots as JSON lines (with the page) or a Parquet dataset (metadata)"

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
            help="jsonl (default): one object per snapshot with its decoded page; parquet: "
            "the snapshots' metadata (no pages) partitioned by site and month",
        )
        parser.add_argument("--site", help="only this site (id or name)")
        parser.add_argument(
            "--since",
            type=time_option(),
            metavar=TIME_METAVAR,
            help="only snapshots at or after this time (unix seconds, YYYY-MM-DD or "
            "YYYY-MM-DDTHH:MM, UTC)",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        archive = open_archive(self.settings)
        site_id = None if opts.site is None else site_option(archive, opts.site).site_id
        out = Path(opts.out)
        total = count_snapshots(archive.engine, site_id, opts.since)
        resume = "an export starts over: run it again"
        progress = Progress("export_snapshots", total, unit="snapshot", resume=resume)
        if opts.format == "parquet":
            from zeroarchive.publish.datasets import DatasetExistsError, write_snapshots

            names = site_names(archive)
            metadata = iter_snapshot_metadata(archive.engine, site_id=site_id, since=opts.since)
            try:
                with progress:
                    writer = write_snapshots(progress.track(metadata), out, names)
            except DatasetExistsError as exc:
                raise UsageError(str(exc)) from None
            print(
                f"{writer.rows} snapshot(s) written to {out} ({writer.files} file(s))",
                file=sys.stderr,
            )
            return
        from zeroarchive.publish.columns import snapshot_export

        names = site_names(archive)
        written = 0
        snapshots = iter_snapshots(archive.engine, site_id=site_id, since=opts.since)
        with open_text_output(out) as handle, progress:
            for exported in progress.track(snapshots):
                record = {
                    **snapshot_record(exported),
                    "final_url": exported.snapshot.final_url,
                    "raw_size": len(exported.snapshot.raw),
                }
                row = snapshot_export(record, names(exported.site_id))
                handle.write(json.dumps(row, ensure_ascii=False))
                handle.write("\n")
                written += 1
        print(f"{written} snapshot(s) written to {out}", file=sys.stderr)
