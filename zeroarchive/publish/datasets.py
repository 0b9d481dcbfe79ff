"""Datasets for researchers: publications, snapshot metadata and media records as Parquet,
in a directory partitioned by site and month (hive style:
``site_id=12/month=2025-01/part-0.parquet``) that ``pandas.read_parquet(DIR)``, polars,
DuckDB and R's arrow read whole. Its columns are the JSON lines exports' (``columns``).

Rows are written as they come, a few thousand per file, so memory stays bounded whatever
the archive's size. The dataset is built in a hidden directory beside ``out`` and renamed
to ``out`` only when complete: a failed export leaves nothing that looks like a dataset.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from zeroarchive.publish.columns import (
    MEDIA_COLUMNS,
    PUBLICATION_COLUMNS,
    SNAPSHOT_COLUMNS,
    publication_export,
    snapshot_export,
)

if TYPE_CHECKING:
    from zeroarchive.media.store import MediaRecord

#: Rows kept per partition before they are written as one file.
ROWS_PER_FILE = 5000

#: Parquet's types of the export columns (``columns``); ``site_id`` is in the path.
_TYPES: dict[str, pa.DataType] = {
    "publication_id": pa.int64(),
    "article_id": pa.int64(),
    "site": pa.string(),
    "url": pa.string(),
    "canonical_url": pa.string(),
    "parser_version": pa.string(),
    "version": pa.int32(),
    "producer_id": pa.int64(),
    "producer": pa.string(),
    "title": pa.string(),
    "publication_text": pa.string(),
    "language": pa.string(),
    "author": pa.string(),
    # Parquet has no seconds: pyarrow writes timestamps in seconds as milliseconds.
    "published_at": pa.timestamp("s", tz="UTC"),
    "first_seen_at": pa.timestamp("s", tz="UTC"),
    "last_seen_at": pa.timestamp("s", tz="UTC"),
    "last_updated_at": pa.timestamp("s", tz="UTC"),
    "hashtags": pa.list_(pa.string()),
    "urls": pa.list_(pa.string()),
    "keywords": pa.list_(pa.string()),
    "tags": pa.list_(pa.string()),
    "metadata": pa.string(),
    "comments": pa.string(),
    "comment_count": pa.int32(),
    "content_hash": pa.string(),
    "parsed_at": pa.timestamp("s", tz="UTC"),
    "snapshot_at": pa.timestamp("s", tz="UTC"),
    "status": pa.int16(),
    "final_url": pa.string(),
    "encoding": pa.string(),
    "raw_size": pa.int64(),
    "rendered": pa.bool_(),
    "kind": pa.string(),
    "sha256": pa.string(),
    "bytes": pa.int64(),
    "content_type": pa.string(),
    "fetched_at": pa.timestamp("s", tz="UTC"),
    "stored": pa.bool_(),
    "reason": pa.string(),
    "expired_at": pa.timestamp("s", tz="UTC"),
}
#: In the partition path, not in the files.
PARTITION_COLUMNS = ("site_id", "month")


def _schema(columns: tuple[str, ...]) -> pa.Schema:
    return pa.schema([(name, _TYPES[name]) for name in columns if name not in PARTITION_COLUMNS])


PUBLICATION_SCHEMA = _schema(PUBLICATION_COLUMNS)
SNAPSHOT_SCHEMA = _schema(SNAPSHOT_COLUMNS)
MEDIA_SCHEMA = _schema(MEDIA_COLUMNS)


def month_of(unix: int) -> str:
    """The UTC calendar month of a time, as the partition names it.

    >>> month_of(1_700_000_000), month_of(0)
    ('2023-11', '1970-01')
    """
    return time.strftime("%Y-%m", time.gmtime(unix))


@dataclass(frozen=True)
class Partition:
    site_id: int
    month: str

    def path(self) -> str:
        return f"site_id={self.site_id}/month={self.month}"


class DatasetExistsError(ValueError):
    """The output directory is there already and is not empty."""


class DatasetWriter:
    """Rows to Parquet files, one directory per partition, renamed into place at the end.

    Use as a context manager: on a clean exit the dataset appears at ``out``; on an
    exception the partial one is removed.
    """

    def __init__(self, out: Path, schema: pa.Schema, rows_per_file: int = ROWS_PER_FILE) -> None:
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise DatasetExistsError(f"{out} exists and is not an empty directory")
        self.out = out
        self.schema = schema
        self.rows_per_file = rows_per_file
        out.parent.mkdir(parents=True, exist_ok=True)
        self._work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        self._pending: dict[Partition, list[Mapping[str, Any]]] = {}
        self._files: dict[Partition, int] = {}
        self.rows = 0

    def add(self, partition: Partition, row: Mapping[str, Any]) -> None:
        rows = self._pending.setdefault(partition, [])
        rows.append(row)
        self.rows += 1
        if len(rows) >= self.rows_per_file:
            self._flush(partition)

    def _flush(self, partition: Partition) -> None:
        rows = self._pending.pop(partition, [])
        if not rows:
            return
        number = self._files.get(partition, 0)
        self._files[partition] = number + 1
        folder = self._work / partition.path()
        folder.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pylist(list(rows), schema=self.schema)
        pq.write_table(table, folder / f"part-{number}.parquet", compression="zstd")

    def close(self) -> None:
        for partition in list(self._pending):
            self._flush(partition)
        if not self._files:
            # Nothing selected: one empty file still tells readers every column and its type.
            columns = self.schema.append(pa.field("site_id", pa.int32()))
            columns = columns.append(pa.field("month", pa.string()))
            empty = pa.Table.from_pylist([], schema=columns)
            pq.write_table(empty, self._work / "part-0.parquet", compression="zstd")
        if self.out.exists():
            self.out.rmdir()  # empty, checked when the writer was made
        os.replace(self._work, self.out)

    def abort(self) -> None:
        shutil.rmtree(self._work, ignore_errors=True)

    @property
    def files(self) -> int:
        return sum(self._files.values())

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def _json_list(value: Any) -> list[str]:
    items = json.loads(value) if isinstance(value, str) else value
    return [str(item) for item in items or ()]


def publication_row(record: Mapping[str, Any], site_name: str) -> dict[str, Any]:
    """A publication record (``storage.publications.publication_record``) as a dataset row."""
    row = publication_export(record, site_name)
    del row["site_id"]
    for key in ("hashtags", "urls", "keywords", "tags"):
        row[key] = _json_list(record.get(key))
    # Nested and free-form: kept as JSON text, which every reader can parse further.
    for key in ("metadata", "comments"):
        row[key] = json.dumps(record.get(key), ensure_ascii=False, sort_keys=True)
    return row


def write_publications(
    records: Iterable[Mapping[str, Any]],
    out: Path,
    site_names: Callable[[int], str],
) -> DatasetWriter:
    """Publication versions into a dataset partitioned by site and month first seen."""
    with DatasetWriter(out, PUBLICATION_SCHEMA) as writer:
        for record in records:
            site_id = int(record["site_id"])
            partition = Partition(site_id, month_of(int(record["first_seen_at"])))
            writer.add(partition, publication_row(record, site_names(site_id)))
    return writer


def write_snapshots(
    records: Iterable[Mapping[str, Any]],
    out: Path,
    site_names: Callable[[int], str],
) -> DatasetWriter:
    """Snapshot metadata (no page bodies) into a dataset partitioned by site and month."""
    with DatasetWriter(out, SNAPSHOT_SCHEMA) as writer:
        for record in records:
            site_id = int(record["site_id"])
            partition = Partition(site_id, month_of(int(record["snapshot_at"])))
            row = snapshot_export(record, site_names(site_id))
            del row["site_id"]
            writer.add(partition, row)
    return writer


def write_media(
    records: Iterable[tuple[int, MediaRecord]],
    out: Path,
) -> DatasetWriter:
    """Media records with their site ids (``media_records_by_site``) into a dataset
    partitioned by site and the month of the snapshot that showed them: ``scrapy media
    --json``'s objects, with ``expired_at`` (null but for an expired video) in every row."""
    with DatasetWriter(out, MEDIA_SCHEMA) as writer:
        for site_id, record in records:
            row = record.as_json()
            partition = Partition(site_id, month_of(record.snapshot_at))
            writer.add(partition, {name: row.get(name) for name in MEDIA_COLUMNS})
    return writer
