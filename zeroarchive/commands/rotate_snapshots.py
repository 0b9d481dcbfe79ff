from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.core.progress import Progress
from zeroarchive.core.services import one_line_errors
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.rotation import (
    JsonlMonthExport,
    Month,
    MonthExporter,
    RotationError,
    months_before,
    rotate,
)

logger = logging.getLogger(__name__)


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "--before YYYY-MM [--export DIR] [--format jsonl|warc]"

    def short_desc(self) -> str:
        return "Export old months of snapshots, verify the export, then drop them"

    def long_desc(self) -> str:
        return (
            "Every month before --before is exported to DIR/snapshots-YYYY-MM.jsonl.gz "
            "(--format warc: the directory DIR/snapshots-YYYY-MM/ of WARC files and "
            "index.cdxj), re-read and checked against the database (count and content "
            "hashes, and WARC digests), then dropped. The month's media records go to "
            "DIR/media-YYYY-MM.jsonl.gz and the bytes of items no kept snapshot shows to "
            "DIR/media-YYYY-MM/ (re-hashed) before they leave the store (ZEROARCHIVE_MEDIA_DIR). "
            "Without --export nothing is dropped: the months are only listed. Every run also "
            "removes the bytes of the videos kept longer than their site's video_keep_days, "
            "keeping their records as expired (without --export: only counted)."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--before", required=True, help="first month to keep (YYYY-MM)")
        parser.add_argument("--export", metavar="DIR", help="where the monthly exports go")
        parser.add_argument(
            "--format",
            choices=("jsonl", "warc"),
            default="jsonl",
            help="JSON lines (default) or WARC files with a CDXJ index",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        # Imported here: scrapy imports every command module when any command starts.
        from zeroarchive.media.expiry import rotate_videos
        from zeroarchive.media.rotation import MediaRotation
        from zeroarchive.media.store import media_store
        from zeroarchive.publish.warc.export import WarcExportConfig
        from zeroarchive.publish.warc.rotation import WarcMonthExport

        try:
            cutoff = Month.parse(opts.before)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        today = dt.datetime.now(dt.UTC).date()
        if cutoff.first > Month.of(today).first:
            raise UsageError(f"--before {cutoff.label} is in the future: the current month is kept")
        exporter: MonthExporter = JsonlMonthExport()
        if opts.format == "warc":
            assert self.settings is not None
            try:
                config = WarcExportConfig.from_settings(self.settings)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            exporter = WarcMonthExport(config.roll_bytes)
        archive = open_archive(self.settings)
        # Videos past their site's video_keep_days lose their bytes, not their records.
        media_dir = (self.settings.get("ZEROARCHIVE_MEDIA_DIR") if self.settings else "") or ""
        print(rotate_videos(archive.engine, media_dir, dry_run=opts.export is None))
        if opts.export is None:
            months = months_before(archive.engine, cutoff)
            print(
                "Would rotate: "
                + (", ".join(m.label for m in months) or "nothing")
                + " (give --export DIR to export and drop)"
            )
            return
        assert self.settings is not None
        media = MediaRotation(
            media_store(archive.engine, self.settings.get("ZEROARCHIVE_MEDIA_DIR") or "")
        )
        try:
            resume = "run it again: the months already rotated are gone from the database"
            with Progress("rotate_snapshots", unit="month", resume=resume) as progress:
                results = rotate(
                    archive.engine, cutoff, Path(opts.export), today, exporter, progress, [media]
                )
        except (RotationError, OSError) as exc:
            logger.error("Rotation stopped, nothing of this month was dropped: %s", exc)
            self.exitcode = 1
            return
        for result in results:
            print(
                f"{result.month}: {result.snapshots} snapshot(s) exported to {result.export} "
                f"and dropped; {result.bytes_carried} kept snapshot(s) took over their bytes"
            )
        for done in (m for m in media.results if m.records):
            print(
                f"{done.month}: {done.records} media record(s) exported and dropped "
                f"({done.carried} carried forward to kept snapshots); {done.exported_items} "
                f"item(s) ({done.exported_bytes:,} bytes) exported, {done.removed_items} "
                f"({done.removed_bytes:,} bytes) removed from the store"
            )
        print(f"{len(results)} month(s) rotated", file=sys.stderr)
