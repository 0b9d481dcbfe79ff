"""Monthly snapshot rotation: export a month, prove the export, then drop the month.

Order per month (oldest first), so a failure at any step leaves every row in place:

1. export the month's snapshots, by default to ``snapshots-YYYY-MM.jsonl.gz``
   (export_snapshots' records; ``raw_base64`` added when the decoded ``html`` does not
   re-encode to the original bytes), written to a temporary name and renamed when
   complete; another MonthExporter (zeroarchive.publish.warc.rotation's WARC one) may be given;
2. re-read the export: the same (article, time, content hash) rows as the database, and
   every snapshot's bytes hash to its ``content_hash``;
3. carry bytes forward: an unchanged snapshot stores no bytes, it repeats an earlier
   snapshot of its article. When that earlier one is in the month being dropped, its bytes
   are copied into the oldest kept snapshot with the same hash, so read_snapshot() still
   works after the drop. They are copied as a stand-alone frame: a zstd-ref frame refers
   to a snapshot of its own month, which goes with it (kept frames of later months only
   ever refer within their month, so no other reference crosses the drop);
4. drop the month: MySQL/MariaDB exchange the month's partition with an empty copy table
   and drop that table (DDL, no row-by-row delete); SQLite deletes the rows, and VACUUM
   returns the space once all months are done.

Article rows are never touched.
"""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import hashlib
import json
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sqlalchemy import and_, func, select, text, update
from sqlalchemy.engine import Connection, Engine

from zeroarchive.core.progress import Progress
from zeroarchive.storage.compression import compress
from zeroarchive.storage.schema import article_snapshot
from zeroarchive.storage.snapshots import (
    ExportedSnapshot,
    iter_snapshots,
    snapshot_record,
    unpack_frame,
)

logger = logging.getLogger(__name__)

TABLE = "ArticleSnapshot"


class RotationError(RuntimeError):
    """A month could not be exported or verified; nothing of it was dropped."""


@dataclass(frozen=True)
class Month:
    """A calendar month in UTC, the unit of rotation."""

    first: dt.date

    @classmethod
    def parse(cls, value: str) -> Month:
        """``YYYY-MM`` as a Month.

        >>> Month.parse("2026-02").label, Month.parse("2026-12").next.label
        ('2026-02', '2027-01')
        >>> Month.parse("2026-13")
        Traceback (most recent call last):
        ...
        ValueError: not a month (YYYY-MM): '2026-13'
        """
        try:
            first = dt.datetime.strptime(value, "%Y-%m").date()
        except ValueError:
            raise ValueError(f"not a month (YYYY-MM): {value!r}") from None
        return cls(first)

    @classmethod
    def of(cls, day: dt.date) -> Month:
        return cls(day.replace(day=1))

    @property
    def label(self) -> str:
        return self.first.strftime("%Y-%m")

    @property
    def next(self) -> Month:
        year, month = divmod(self.first.month, 12)
        return Month(dt.date(self.first.year + year, month + 1, 1))

    @property
    def start(self) -> int:
        """Unix seconds at the month's first midnight UTC (snapshot_at_date is UTC)."""
        return int(dt.datetime.combine(self.first, dt.time(), dt.UTC).timestamp())

    @property
    def partition(self) -> str:
        return "p" + self.first.strftime("%Y%m")


@dataclass(frozen=True)
class MonthResult:
    month: str
    snapshots: int
    export: Path
    bytes_carried: int
    dropped: bool


def export_path(directory: Path, month: Month) -> Path:
    return directory / f"snapshots-{month.label}.jsonl.gz"


def months_before(engine: Engine, cutoff: Month) -> list[Month]:
    """The months before ``cutoff`` that hold snapshots, oldest first."""
    with engine.connect() as conn:
        days = conn.execute(
            select(article_snapshot.c.snapshot_at_date)
            .where(article_snapshot.c.snapshot_at_date < cutoff.first)
            .distinct()
        ).scalars()
        return sorted({Month.of(day) for day in days}, key=lambda m: m.first)


def _in_month(month: Month) -> object:
    return and_(
        article_snapshot.c.snapshot_at_date >= month.first,
        article_snapshot.c.snapshot_at_date < month.next.first,
    )


def db_keys(conn: Connection, month: Month) -> list[tuple[int, int, str]]:
    """(article, time, content hash hex) of the month's snapshots, as an export must hold."""
    rows = conn.execute(
        select(
            article_snapshot.c.article_id,
            article_snapshot.c.snapshot_at,
            article_snapshot.c.content_hash,
        )
        .where(_in_month(month))  # type: ignore[arg-type]
        .order_by(article_snapshot.c.article_id, article_snapshot.c.snapshot_at)
    )
    return [(row.article_id, row.snapshot_at, bytes(row.content_hash).hex()) for row in rows]


def rotation_record(exported: ExportedSnapshot) -> dict[str, object]:
    """export_snapshots' record, plus the raw bytes when the text does not give them back."""
    record = snapshot_record(exported)
    if _reencoded(str(record["html"]), exported.snapshot.encoding) != exported.snapshot.raw:
        record["raw_base64"] = base64.b64encode(exported.snapshot.raw).decode("ascii")
    return record


def _reencoded(html: str, encoding: str) -> bytes | None:
    try:
        return html.encode(encoding)
    except (LookupError, UnicodeError):
        return None


def record_bytes(record: dict[str, object]) -> bytes | None:
    """The original bytes of an exported record (None when they cannot be rebuilt).

    >>> record_bytes({"html": "台", "encoding": "utf-8"})
    b'\\xe5\\x8f\\xb0'
    >>> record_bytes({"html": "x", "encoding": "utf-8", "raw_base64": "/w=="})
    b'\\xff'
    """
    if "raw_base64" in record:
        return base64.b64decode(str(record["raw_base64"]))
    return _reencoded(str(record["html"]), str(record["encoding"]))


def _snapshots_of(engine: Engine, month: Month) -> Iterator[ExportedSnapshot]:
    return iter_snapshots(engine, since=month.start, until=month.next.start)


def export_month(engine: Engine, month: Month, directory: Path) -> Path:
    """Write the month's snapshots to ``directory``; raises OSError when it cannot."""
    directory.mkdir(parents=True, exist_ok=True)
    final = export_path(directory, month)
    partial = final.with_name(final.name + ".partial")
    with gzip.open(partial, "wt", encoding="utf-8") as handle:
        for exported in _snapshots_of(engine, month):
            handle.write(json.dumps(rotation_record(exported), ensure_ascii=False))
            handle.write("\n")
    os.replace(partial, final)
    return final


def verify_export(engine: Engine, month: Month, path: Path) -> int:
    """Re-read an export and check it against the database; return the snapshot count.

    Raises RotationError on any difference: a missing or extra snapshot, a line that is
    not JSON, or bytes whose SHA-256 is not the snapshot's content hash.
    """
    keys: list[tuple[int, int, str]] = []
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                record = json.loads(line)
                raw = record_bytes(record)
                if raw is None or hashlib.sha256(raw).hexdigest() != record["content_hash"]:
                    raise RotationError(f"{path}: line {number}: bytes do not match content_hash")
                keys.append((record["article_id"], record["snapshot_at"], record["content_hash"]))
    except (OSError, EOFError, ValueError, KeyError) as exc:
        raise RotationError(f"{path}: unreadable export: {exc}") from exc
    with engine.connect() as conn:
        expected = db_keys(conn, month)
    check_keys(path, keys, expected)
    return len(keys)


def check_keys(
    path: Path, keys: list[tuple[int, int, str]], expected: list[tuple[int, int, str]]
) -> None:
    """Raise RotationError unless an export holds exactly the database's snapshots."""
    if sorted(keys) != expected:
        missing = len(set(expected) - set(keys))
        extra = len(set(keys) - set(expected))
        raise RotationError(
            f"{path}: {len(keys)} snapshot(s) exported, {len(expected)} in the database "
            f"({missing} missing, {extra} unexpected)"
        )


class MonthExporter(Protocol):
    """Writes one month's snapshots somewhere and proves the result against the database."""

    def export(self, engine: Engine, month: Month, directory: Path) -> Path: ...

    def verify(self, engine: Engine, month: Month, path: Path) -> int:
        """The number of snapshots exported; RotationError on any difference."""
        ...


class JsonlMonthExport:
    """The default: ``snapshots-YYYY-MM.jsonl.gz``, export_snapshots' lines."""

    def export(self, engine: Engine, month: Month, directory: Path) -> Path:
        return export_month(engine, month, directory)

    def verify(self, engine: Engine, month: Month, path: Path) -> int:
        return verify_export(engine, month, path)


class MonthCompanion(Protocol):
    """What else goes with a month (zeroarchive.media.rotation's media): exported and
    proved after the snapshots' export is, dropped after the snapshots are."""

    def export(self, engine: Engine, month: Month, directory: Path) -> None:
        """Export and verify; RotationError or OSError stop the rotation before any drop."""
        ...

    def drop(self, engine: Engine, month: Month) -> None: ...


def carry_bytes_forward(engine: Engine, month: Month) -> int:
    """Copy bytes that kept unchanged snapshots repeat out of ``month``; return how many
    snapshots received bytes."""
    kept = article_snapshot.alias("kept")
    gone = article_snapshot.alias("gone")
    stored = article_snapshot.alias("stored")
    same = and_(
        gone.c.article_id == kept.c.article_id,
        gone.c.content_hash == kept.c.content_hash,
    )
    query = (
        select(kept.c.article_id, kept.c.content_hash, func.min(kept.c.snapshot_at).label("at"))
        .where(
            kept.c.snapshot_at_date >= month.next.first,
            kept.c.raw_data.is_(None),
            select(gone.c.article_id)
            .where(
                same,
                gone.c.snapshot_at_date >= month.first,
                gone.c.snapshot_at_date < month.next.first,
                gone.c.raw_data.is_not(None),
            )
            .exists(),
            ~select(stored.c.article_id)
            .where(
                stored.c.article_id == kept.c.article_id,
                stored.c.content_hash == kept.c.content_hash,
                stored.c.snapshot_at_date >= month.next.first,
                stored.c.raw_data.is_not(None),
            )
            .exists(),
        )
        .group_by(kept.c.article_id, kept.c.content_hash)
    )
    carried = 0
    with engine.begin() as conn:
        for row in conn.execute(query).all():
            source = conn.execute(
                select(
                    article_snapshot.c.raw_data,
                    article_snapshot.c.codec,
                    article_snapshot.c.reference_at,
                )
                .where(
                    article_snapshot.c.article_id == row.article_id,
                    article_snapshot.c.content_hash == row.content_hash,
                    _in_month(month),  # type: ignore[arg-type]
                    article_snapshot.c.raw_data.is_not(None),
                )
                .limit(1)
            ).one()
            raw = unpack_frame(
                conn, row.article_id, bytes(source.raw_data), source.codec, source.reference_at
            )
            data, codec = compress(raw)
            conn.execute(
                update(article_snapshot)
                .where(
                    article_snapshot.c.article_id == row.article_id,
                    article_snapshot.c.snapshot_at == row.at,
                )
                .values(raw_data=data, codec=codec, reference_at=None)
            )
            carried += 1
    return carried


# --- dropping a month -------------------------------------------------------------------


@dataclass(frozen=True)
class Partition:
    name: str
    upper: dt.date | None  # None: MAXVALUE


def partitions(conn: Connection) -> list[Partition]:
    """ArticleSnapshot's RANGE COLUMNS partitions in order (empty when not partitioned)."""
    rows = conn.execute(
        text(
            "SELECT PARTITION_NAME, PARTITION_DESCRIPTION FROM information_schema.PARTITIONS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :table "
            "AND PARTITION_NAME IS NOT NULL ORDER BY PARTITION_ORDINAL_POSITION"
        ),
        {"table": TABLE},
    ).all()
    found = []
    for name, description in rows:
        bound = str(description).strip("'")
        upper = None if bound.upper() == "MAXVALUE" else dt.date.fromisoformat(bound)
        found.append(Partition(str(name), upper))
    return found


def isolate_month(conn: Connection, month: Month) -> str | None:
    """Make ``month`` a partition of its own (splitting the one that holds it); return its
    name, or None when the table is not partitioned."""
    layout = partitions(conn)
    if not layout:
        return None
    lower: dt.date | None = None
    for part in layout:
        if part.upper is None or part.upper > month.first:
            break
        lower = part.upper
    else:
        raise RotationError(f"{month.label}: no partition holds this month")
    if lower == month.first and part.upper == month.next.first:
        return part.name
    names = {p.name for p in layout}
    pieces = []
    if lower is None or lower < month.first:
        before = f"p_before_{month.first:%Y%m}"
        while before in names:
            before += "x"
        pieces.append(f"PARTITION {before} VALUES LESS THAN ('{month.first.isoformat()}')")
    own = month.partition if month.partition not in names else f"{month.partition}_{part.name}"
    pieces.append(f"PARTITION {own} VALUES LESS THAN ('{month.next.first.isoformat()}')")
    if part.upper is None or part.upper > month.next.first:
        upper = "MAXVALUE" if part.upper is None else f"'{part.upper.isoformat()}'"
        pieces.append(f"PARTITION {part.name} VALUES LESS THAN ({upper})")
    conn.exec_driver_sql(
        f"ALTER TABLE {TABLE} REORGANIZE PARTITION {part.name} INTO ({', '.join(pieces)})"
    )
    return own


def _drop_partitioned(conn: Connection, month: Month, expected: int) -> bool:
    name = isolate_month(conn, month)
    if name is None:
        return False
    swap = f"{TABLE}_rotated_{month.first:%Y%m}"
    conn.exec_driver_sql(f"DROP TABLE IF EXISTS {swap}")
    conn.exec_driver_sql(f"CREATE TABLE {swap} LIKE {TABLE}")
    conn.exec_driver_sql(f"ALTER TABLE {swap} REMOVE PARTITIONING")
    conn.exec_driver_sql(f"ALTER TABLE {TABLE} EXCHANGE PARTITION {name} WITH TABLE {swap}")
    swapped = conn.exec_driver_sql(f"SELECT COUNT(*) FROM {swap}").scalar_one()
    if swapped != expected:
        # Rows arrived after the export: put them back rather than lose any.
        conn.exec_driver_sql(f"ALTER TABLE {TABLE} EXCHANGE PARTITION {name} WITH TABLE {swap}")
        conn.exec_driver_sql(f"DROP TABLE {swap}")
        raise RotationError(
            f"{month.label}: {swapped} snapshot(s) in the partition, {expected} exported"
        )
    conn.exec_driver_sql(f"DROP TABLE {swap}")
    conn.exec_driver_sql(f"ALTER TABLE {TABLE} DROP PARTITION {name}")
    return True


def drop_month(engine: Engine, month: Month, expected: int) -> None:
    """Remove the month's snapshots (after export, verification and carrying bytes)."""
    if engine.dialect.name in ("mysql", "mariadb"):
        # DDL commits on its own; autocommit says so instead of pretending otherwise.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            if _drop_partitioned(conn, month, expected):
                return
    with engine.begin() as conn:
        deleted = conn.execute(
            article_snapshot.delete().where(_in_month(month))  # type: ignore[arg-type]
        ).rowcount
        if deleted != expected:
            raise RotationError(
                f"{month.label}: {deleted} snapshot(s) to delete, {expected} exported"
            )


def split_ahead(engine: Engine, today: dt.date, months: int = 3) -> list[str]:
    """Give this month and the next ``months`` their own partitions (MySQL/MariaDB).

    Splitting copies the rows of the partition split; done ahead, the MAXVALUE partition
    is empty and splitting it costs nothing. Returns the partitions now covering them.
    """
    if engine.dialect.name not in ("mysql", "mariadb"):
        return []
    names = []
    month = Month.of(today)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for _ in range(months + 1):
            name = isolate_month(conn, month)
            if name is None:
                return []
            names.append(name)
            month = month.next
    return names


def vacuum(engine: Engine) -> None:
    """Give the space of deleted rows back to the file system (SQLite)."""
    if engine.dialect.name == "sqlite":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM")


def rotate(
    engine: Engine,
    cutoff: Month,
    directory: Path,
    today: dt.date | None = None,
    exporter: MonthExporter | None = None,
    progress: Progress | None = None,
    companions: Sequence[MonthCompanion] = (),
) -> list[MonthResult]:
    """Export, verify and drop every month before ``cutoff``, oldest first; then split the
    coming months' partitions ahead (from ``today``, on MySQL/MariaDB). ``progress``, when
    given, counts the months. ``companions`` export (after the snapshots) and drop (after
    them) what else goes with each month.

    Stops at the first month whose export or verification fails (RotationError or OSError
    propagate); months done before it stay done, nothing of it or later is dropped.
    """
    exporter = exporter or JsonlMonthExport()
    results = []
    months = months_before(engine, cutoff)
    if progress is not None:
        progress.set_total(len(months))
    for month in months:
        path = exporter.export(engine, month, directory)
        count = exporter.verify(engine, month, path)
        for companion in companions:
            companion.export(engine, month, directory)
        carried = carry_bytes_forward(engine, month)
        drop_month(engine, month, count)
        for companion in companions:
            companion.drop(engine, month)
        logger.info(
            "Rotated %s: %d snapshot(s) exported to %s and dropped (%d carried forward)",
            month.label,
            count,
            path,
            carried,
        )
        results.append(MonthResult(month.label, count, path, carried, True))
        if progress is not None:
            progress.advance()
    if results:
        vacuum(engine)
    if today is not None:
        split_ahead(engine, today)
    return results
