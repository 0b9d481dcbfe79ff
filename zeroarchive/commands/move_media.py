from __future__ import annotations

import argparse
import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.core.progress import Progress
from zeroarchive.core.services import one_line_errors
from zeroarchive.core.shown import shown
from zeroarchive.storage.archive import open_archive


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "--to directory|database [--dir PATH]"

    def short_desc(self) -> str:
        return "Move the media items' bytes between the database and a media directory"

    def long_desc(self) -> str:
        return (
            "Moves every media item's bytes to the backend --to names: --to directory "
            "--dir PATH from the archive's database into the content-addressed directory "
            "PATH; --to database from the directory (--dir, else ZEROARCHIVE_MEDIA_DIR) into "
            "the database. Each item is streamed, read back from its new place and checked "
            "against its SHA-256 before its old copy is removed, so a move stopped at any "
            "point loses nothing and running it again finishes it. Set ZEROARCHIVE_MEDIA_DIR "
            "for the new backend (empty for the database) in every process that reads or "
            "writes media."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--to",
            required=True,
            choices=("directory", "database"),
            help="the backend to move the items to",
        )
        parser.add_argument(
            "--dir",
            metavar="PATH",
            help="the media directory (the target with --to directory, the source with --to "
            "database; default ZEROARCHIVE_MEDIA_DIR)",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from zeroarchive.media.move import count_items, move_items
        from zeroarchive.media.store import Blobs, DatabaseBlobs, DirectoryBlobs

        assert self.settings is not None
        if args:
            raise UsageError(f"move_media takes no arguments, not {' '.join(args)!r}")
        directory = opts.dir or self.settings.get("ZEROARCHIVE_MEDIA_DIR") or ""
        if not directory:
            raise UsageError("give the media directory: --dir PATH (or ZEROARCHIVE_MEDIA_DIR)")
        archive = open_archive(self.settings)
        database: Blobs = DatabaseBlobs()
        folder: Blobs = DirectoryBlobs(directory)
        source, target = (database, folder) if opts.to == "directory" else (folder, database)
        total = count_items(archive.engine)
        resume = "run it again: what was moved stays moved, the rest is moved"
        with Progress("move_media", total=total, unit="item", resume=resume) as progress:
            moved = move_items(archive.engine, source, target, progress)
        print(
            f"{moved.moved} item(s) ({moved.moved_bytes:,} bytes) moved from the {source.name} "
            f"to the {target.name} ({shown(directory)}), {moved.already} already there, "
            f"{len(moved.missing)} missing in both, {len(moved.damaged)} damaged in the "
            f"{source.name} (left there)"
        )
        if not moved.ok:
            for name in moved.missing:
                print(f"missing: {name}", file=sys.stderr)
            for name in moved.damaged:
                print(f"damaged: {name}", file=sys.stderr)
            self.exitcode = 1
