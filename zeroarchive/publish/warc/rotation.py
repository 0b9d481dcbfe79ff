"""`rotate_snapshots --format warc`: a month exported as WARC, proved before it is dropped.

The month goes to ``DIR/snapshots-YYYY-MM/`` (WARC files ``snapshots-YYYY-MM-NNNNN.warc.gz``
and ``index.cdxj``, as export_warc writes them), built under a temporary name and renamed
when complete. Verification re-reads every record with warcio checking its block and
payload digests, hashes each payload (a revisit: the one it refers to) with SHA-256, and
requires exactly the database's (article, time, content hash) rows and one index line each.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from sqlalchemy.engine import Engine
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from zeroarchive.publish.warc.export import INDEX_NAME, write_index, write_warcs
from zeroarchive.publish.warc.records import ARTICLE_ID, parse_warc_date
from zeroarchive.storage.rotation import Month, RotationError, check_keys, db_keys
from zeroarchive.storage.snapshots import iter_snapshots

SNAPSHOT_RECORDS = ("response", "resource", "revisit")


def month_name(month: Month) -> str:
    return f"snapshots-{month.label}"


class WarcMonthExport:
    def __init__(self, roll_bytes: int) -> None:
        self.roll_bytes = roll_bytes

    def export(self, engine: Engine, month: Month, directory: Path) -> Path:
        final = directory / month_name(month)
        partial = directory / (month_name(month) + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        files, _ = write_warcs(
            iter_snapshots(engine, since=month.start, until=month.next.start),
            partial,
            month_name(month),
            self.roll_bytes,
            description=f"zeroarchive snapshots of {month.label} (rotation)",
        )
        write_index(files, partial / INDEX_NAME)
        # A month whose earlier rotation stopped after its export is exported anew.
        shutil.rmtree(final, ignore_errors=True)
        os.replace(partial, final)
        return final

    def verify(self, engine: Engine, month: Month, path: Path) -> int:
        try:
            keys = read_keys(path)
            with (path / INDEX_NAME).open("rb") as index:
                lines = sum(1 for _ in index)
        except (ArchiveLoadFailed, OSError, ValueError, KeyError) as exc:
            raise RotationError(f"{path}: unreadable export: {exc}") from exc
        if lines != len(keys):
            raise RotationError(f"{path}: {len(keys)} record(s) but {lines} index line(s)")
        with engine.connect() as conn:
            check_keys(path, keys, db_keys(conn, month))
        return len(keys)


def read_keys(directory: Path) -> list[tuple[int, int, str]]:
    """(article, time, SHA-256 hex of the bytes) of every snapshot record in the WARC files
    of ``directory``; warcio raises ArchiveLoadFailed on a digest that does not match."""
    keys = []
    # (article, WARC-Target-URI, WARC-Date) -> (SHA-256 hex, WARC-Payload-Digest) of the
    # records with bytes: our revisits refer to one of their own article.
    written: dict[tuple[str, str, str], tuple[str, str]] = {}
    for path in sorted(directory.glob("*.warc.gz")):
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle, check_digests="raise"):
                if record.rec_type not in SNAPSHOT_RECORDS:
                    continue
                fields = record.rec_headers
                article_id = fields.get_header(ARTICLE_ID)
                if article_id is None:
                    raise ValueError(f"{path}: a {record.rec_type} record without {ARTICLE_ID}")
                digest = fields.get_header("WARC-Payload-Digest")
                if record.rec_type == "revisit":
                    refers_to = (
                        article_id,
                        fields.get_header("WARC-Refers-To-Target-URI"),
                        fields.get_header("WARC-Refers-To-Date"),
                    )
                    sha256, original_digest = written[refers_to]
                    if original_digest != digest:
                        raise ValueError(f"revisit of {refers_to} names another payload")
                else:
                    sha256 = hashlib.sha256(record.raw_stream.read()).hexdigest()
                    key = (
                        article_id,
                        fields.get_header("WARC-Target-URI"),
                        fields.get_header("WARC-Date"),
                    )
                    written[key] = (sha256, digest)
                keys.append(
                    (
                        int(article_id),
                        parse_warc_date(fields.get_header("WARC-Date")),
                        sha256,
                    )
                )
    return keys
