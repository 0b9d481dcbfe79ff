from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from sqlalchemy.engine import Engine

from zeroarchive.commands import site_option
from zeroarchive.core.clock import utc_minute
from zeroarchive.core.services import one_line_errors
from zeroarchive.core.shown import json_line, shown
from zeroarchive.storage.archive import open_archive

KINDS = ("image", "style", "video", "screenshot")


def kinds_option(value: str) -> tuple[str, ...]:
    """``--kind``: a comma-separated list of record kinds.

    >>> kinds_option("image,style")
    ('image', 'style')
    >>> kinds_option("images")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: unknown kind 'images' (known: image, style, video, screenshot)
    """
    kinds = tuple(part.strip() for part in value.split(",") if part.strip())
    for kind in kinds:
        if kind not in KINDS:
            raise argparse.ArgumentTypeError(f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    return kinds


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return (
            "[--article ID] [--site NAME] [--kind image,style,video,screenshot] "
            "[--json | --parquet DIR]"
        )

    def short_desc(self) -> str:
        return "List the media items (images, stylesheets, video, screenshots) of stored snapshots"

    def long_desc(self) -> str:
        return (
            "One line per (snapshot, item): the images, stylesheets (with the fonts and "
            "images they reference) and videos each stored snapshot showed, and the "
            "screenshot of a rendered page (its url the page's), kept once by "
            "the SHA-256 of their bytes, or why an item was not kept (too-large, too-many, "
            "not-media, failed:<HTTP status or error>, expired: a video whose bytes the "
            "rotation removed after its site's video_keep_days). An unchanged re-snapshot has "
            "no rows of its own: it showed the set of the snapshot with its bytes. With "
            "--json, one object per line with the keys article_id, snapshot_at, kind, url, sha256, "
            "bytes, content_type, fetched_at, stored, reason (times in unix seconds; "
            "sha256, bytes and content_type null for an item not stored; an expired video "
            "keeps the ones it had and adds expired_at). With --parquet DIR, "
            "the same columns as a Parquet dataset partitioned by site and month, "
            "expired_at in every row (null but for an expired video) "
            "(docs/reference/datasets.md)."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--article", type=int, metavar="ID", help="only this article's")
        parser.add_argument("--site", metavar="NAME", help="only this site's (name or id)")
        parser.add_argument(
            "--kind",
            type=kinds_option,
            default=(),
            metavar="KINDS",
            help="only these kinds, comma-separated: image, style, video, screenshot",
        )
        parser.add_argument("--json", action="store_true", help="one JSON object per line")
        parser.add_argument(
            "--parquet",
            metavar="DIR",
            help="write the records as a Parquet dataset (the --json columns, partitioned "
            "by site and month) to this new directory",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from zeroarchive.media.store import media_records

        if args:
            raise UsageError(f"media takes no arguments, not {' '.join(args)!r}")
        if opts.json and opts.parquet:
            raise UsageError("give --json or --parquet, not both")
        archive = open_archive(self.settings)
        site_id = None if opts.site is None else site_option(archive, opts.site).site_id
        if opts.parquet:
            self._parquet(archive.engine, Path(opts.parquet), opts.article, site_id, opts.kind)
            return
        records = media_records(archive.engine, opts.article, site_id, opts.kind)
        for record in records:
            if opts.json:
                print(json_line(record.as_json()))
                continue
            what = (
                f"{record.sha256.hex()[:16]} {record.bytes:>10,}"
                if record.sha256 is not None and record.bytes is not None
                else f"{'-':16} {'-':>10}"
            )
            print(
                f"{record.article_id:>8} {utc_minute(record.snapshot_at):16} {record.kind:10} "
                f"{what} {record.reason or 'stored':12} {shown(record.url)}"
            )

    def _parquet(
        self,
        engine: Engine,
        out: Path,
        article_id: int | None,
        site_id: int | None,
        kinds: tuple[str, ...],
    ) -> None:
        from zeroarchive.media.store import media_records_by_site
        from zeroarchive.publish.datasets import DatasetExistsError, write_media

        records = (
            (site, record)
            for site, record in media_records_by_site(engine, site_id, kinds)
            if article_id is None or record.article_id == article_id
        )
        try:
            writer = write_media(records, out)
        except DatasetExistsError as exc:
            raise UsageError(str(exc)) from None
        print(f"{writer.rows} record(s) written to {out} ({writer.files} file(s))", file=sys.stderr)
