from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.commands import site_option
from zeroarchive.core.progress import Progress
from zeroarchive.core.services import one_line_errors
from zeroarchive.storage.archive import open_archive


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "FILE... --site S"

    def short_desc(self) -> str:
        return "Import WARC files as snapshots of a site's articles"

    def long_desc(self) -> str:
        return (
            "2xx HTML response records (and revisits of them) on the site's hosts become "
            "snapshots of its articles; captures already stored are not added again. "
            "Media items of our own exports (images, stylesheets, videos, screenshots, and "
            "the records of items not kept) and browsertrix-crawler's urn:view: screenshots "
            "go back into the media store, each to its page's snapshot, once. "
            "Exits 1 when a record or file could not be read (the rest is imported)."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--site", required=True, help="the site (id or name)")

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        # Imported here: scrapy imports every command module when any command starts.
        from zeroarchive.media.store import media_store
        from zeroarchive.publish.warc.importer import PREFIX, WarcImportConfig, WarcImporter

        if not args:
            raise UsageError("give one or more WARC files")
        paths = [Path(arg) for arg in args]
        for path in paths:
            if not path.is_file():
                raise UsageError(f"no such file: {path}")
        try:
            assert self.settings is not None
            config = WarcImportConfig.from_settings(self.settings)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        archive = open_archive(self.settings)
        site = site_option(archive, opts.site)
        resume = "run it again: records already stored are not stored twice"
        with Progress("import_warc", unit="byte", resume=resume) as progress:
            media = media_store(archive.engine, self.settings.get("ZEROARCHIVE_MEDIA_DIR") or "")
            importer = WarcImporter(archive.engine, site, config, progress, media)
            stats = importer.import_files(paths)
        for key, value in sorted(stats.items()):
            print(f"{key}: {value}", file=sys.stderr)

        def get(key: str) -> int:
            return stats.get(f"{PREFIX}/{key}", 0)

        skipped = sum(v for k, v in stats.items() if k.startswith(f"{PREFIX}/skipped/"))
        broken = get("malformed") + get("files_unreadable")
        print(
            f"{get('records')} record(s) in {get('files')} file(s) into site {site.name} "
            f"(#{site.site_id}): {get('snapshots_added')} snapshot(s) added, "
            f"{get('snapshots_unchanged')} unchanged (bytes stored once), "
            f"{get('duplicates')} already stored, {get('media_added')} media item(s) added "
            f"({get('media_duplicates')} already there), {skipped} skipped "
            f"({get('skipped/other_host')} of other hosts), {broken} malformed",
            file=sys.stderr,
        )
        if broken:
            self.exitcode = 1
