from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.commands import TIME_METAVAR, site_option, time_option
from zeroarchive.core.progress import Progress
from zeroarchive.core.services import one_line_errors
from zeroarchive.storage.archive import open_archive

logger = logging.getLogger(__name__)

RESUME = "an export starts over: run it again with a new --out"


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "--out DIR [--site S] [--since UNIX] [--until UNIX] [--wacz]"

    def short_desc(self) -> str:
        return "Export snapshots as WARC/1.1 files with a CDXJ index (and a WACZ)"

    def long_desc(self) -> str:
        return (
            "Writes DIR/zeroarchive-<time>-NNNNN.warc.gz (rolled at WARC_EXPORT_ROLL_BYTES) "
            "and DIR/index.cdxj for pywb; with --wacz also DIR/zeroarchive-<time>.wacz for "
            "ReplayWeb.page. Each snapshot is followed by its stored media items: images, "
            "stylesheets and videos as response records under their own URLs (each payload "
            "once, revisit records for repeats), screenshots as resource records under "
            "urn:view:<page URL>. DIR must not hold an export already."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--out", required=True, metavar="DIR", help="output directory")
        parser.add_argument("--site", help="only this site (id or name)")
        parser.add_argument(
            "--since",
            type=time_option(),
            metavar=TIME_METAVAR,
            help="only snapshots at or after this time (unix seconds, YYYY-MM-DD or "
            "YYYY-MM-DDTHH:MM, UTC)",
        )
        parser.add_argument(
            "--until",
            type=time_option(until=True),
            metavar=TIME_METAVAR,
            help="only snapshots before this time (a day: up to its end)",
        )
        parser.add_argument("--wacz", action="store_true", help="also package a WACZ")

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        # Imported here: scrapy imports every command module when any command starts.
        from zeroarchive.media.store import media_store
        from zeroarchive.publish.warc.export import (
            INDEX_NAME,
            WarcExportConfig,
            export_warc,
            write_wacz,
        )

        if args:
            raise UsageError(f"unexpected argument(s): {' '.join(args)}")
        if opts.since is not None and opts.until is not None and opts.since >= opts.until:
            raise UsageError(f"--since {opts.since} is not before --until {opts.until}")
        out = Path(opts.out)
        if out.exists() and not out.is_dir():
            raise UsageError(f"--out {out} is not a directory")
        if (out / INDEX_NAME).exists() or any(out.glob("*.warc.gz")):
            raise UsageError(f"--out {out} already holds an export; give a new directory")
        try:
            assert self.settings is not None
            config = WarcExportConfig.from_settings(self.settings)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        archive = open_archive(self.settings)
        media = media_store(archive.engine, self.settings.get("ZEROARCHIVE_MEDIA_DIR") or "")
        site_id = None if opts.site is None else site_option(archive, opts.site).site_id
        prefix = "zeroarchive-" + dt.datetime.now(dt.UTC).strftime("%Y%m%d%H%M%S")
        progress = Progress("export_warc", unit="snapshot", resume=RESUME)
        try:
            with progress:
                export = export_warc(
                    archive.engine,
                    out,
                    config,
                    prefix,
                    site_id,
                    opts.since,
                    opts.until,
                    progress,
                    media=media,
                )
            wacz = None
            if opts.wacz and export.files:
                wacz = write_wacz(export, out / f"{prefix}.wacz", f"zeroarchive {prefix}")
        except OSError as exc:
            logger.error("Export to %s failed: %s", out, exc)
            self.exitcode = 1
            return
        counts = export.counts
        items = export.media
        media_line = ""
        if items is not None and (items.records or items.missing):
            media_line = (
                f"; media: {items.responses} response, {items.revisits} revisit, "
                f"{items.resources} screenshot record(s)"
                + (f", {items.missing} item(s) missing from the store" if items.missing else "")
            )
        print(
            f"{counts.snapshots} snapshot(s) exported: {counts.responses} response, "
            f"{counts.revisits} revisit, {counts.resources} resource record(s){media_line} in "
            f"{len(export.files)} WARC file(s) ({export.warc_bytes / 1e6:.1f} MB), "
            f"index {export.index}" + (f", WACZ {wacz}" if wacz else ""),
            file=sys.stderr,
        )
        if opts.wacz and wacz is None:
            print("No WACZ written: no snapshot was selected", file=sys.stderr)
        if items is not None and items.missing:
            # The export is complete but for them: said in the exit status too.
            self.exitcode = 1
