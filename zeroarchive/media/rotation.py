"""The media of rotated months (``scrapy rotate_snapshots``): exported beside the month's
snapshots, proved, then dropped with them.

For a month ``YYYY-MM`` (whatever the snapshots' format):

- ``media-YYYY-MM.jsonl.gz``: one line per (snapshot, item) record of the month, the
  object of ``scrapy media --json`` plus ``carried_to`` (below; null for the others);
- ``media-YYYY-MM/ab/cd/<sha256 hex>``: the bytes of each item that no record outside the
  dropped ones refers to (the layout of a ``ZEROARCHIVE_MEDIA_DIR``), each re-hashed
  against its name before anything is dropped. An item a kept snapshot still shows stays
  in the store and is not copied out.

An unchanged snapshot has no records of its own: it shows the set of the article's latest
snapshot with bytes. When that snapshot is dropped and the article's first kept snapshot
repeats it, its records move to that kept snapshot (``carried_to`` its time), as the
snapshot's bytes are carried forward, so the kept snapshot still shows what it showed.

Then the month's other records are deleted and the exported items no record refers to any
more leave the store (their chunks, or their file).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import and_, func, select, update
from sqlalchemy.engine import Connection, Engine

from zeroarchive.media.store import CHUNK, DirectoryBlobs, MediaStore, record_of
from zeroarchive.storage.rotation import Month, RotationError
from zeroarchive.storage.schema import article_snapshot, snapshot_media

logger = logging.getLogger(__name__)


@dataclass
class MonthMedia:
    """What one month's media came to."""

    month: str
    records: int = 0
    carried: int = 0
    exported_items: int = 0
    exported_bytes: int = 0
    removed_items: int = 0
    removed_bytes: int = 0


@dataclass
class _Plan:
    records: int
    # (article, from snapshot_at) -> the kept snapshot's time its records move to
    carry: dict[tuple[int, int], int]
    exported: list[bytes] = field(default_factory=list)
    exported_bytes: int = 0


def media_path(directory: Path, month: Month) -> Path:
    return directory / f"media-{month.label}.jsonl.gz"


def items_dir(directory: Path, month: Month) -> Path:
    return directory / f"media-{month.label}"


def _in_month(month: Month) -> object:
    return and_(
        snapshot_media.c.snapshot_at >= month.start, snapshot_media.c.snapshot_at < month.next.start
    )


def _carries(conn: Connection, month: Month) -> dict[tuple[int, int], int]:
    """(article, snapshot time) of the month whose records a kept unchanged snapshot shows
    -> that kept snapshot's time."""
    snap = article_snapshot.c
    articles = (
        conn.execute(
            select(snapshot_media.c.article_id).where(_in_month(month)).distinct()  # type: ignore[arg-type]
        )
        .scalars()
        .all()
    )
    carry = {}
    for article_id in articles:
        mine = snap.article_id == article_id
        last = conn.execute(
            select(snap.snapshot_at, snap.content_hash)
            .where(mine, snap.snapshot_at >= month.start, snap.snapshot_at < month.next.start)
            .order_by(snap.snapshot_at.desc())
            .limit(1)
        ).first()
        first_kept = conn.execute(
            select(snap.snapshot_at, snap.content_hash, snap.raw_data.is_(None).label("repeat"))
            .where(mine, snap.snapshot_at >= month.next.start)
            .order_by(snap.snapshot_at)
            .limit(1)
        ).first()
        if last is None or first_kept is None or not first_kept.repeat:
            continue
        if bytes(first_kept.content_hash) != bytes(last.content_hash):
            continue
        # The set it shows: that of the month's latest snapshot with bytes.
        shown = conn.execute(
            select(func.max(snap.snapshot_at)).where(
                mine,
                snap.snapshot_at >= month.start,
                snap.snapshot_at < month.next.start,
                snap.raw_data.is_not(None),
            )
        ).scalar()
        if shown is not None:
            carry[(article_id, int(shown))] = int(first_kept.snapshot_at)
    return carry


class MediaRotation:
    """The media companion of ``rotate`` (zeroarchive/storage/rotation.py)."""

    def __init__(self, store: MediaStore) -> None:
        self.store = store
        self.plans: dict[str, _Plan] = {}
        self.results: list[MonthMedia] = []

    def export(self, engine: Engine, month: Month, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        final = media_path(directory, month)
        partial = final.with_name(final.name + ".partial")
        order = (
            snapshot_media.c.article_id,
            snapshot_media.c.snapshot_at,
            snapshot_media.c.media_id,
        )
        shown_here: dict[bytes, int] = {}
        records = 0
        with engine.connect() as conn:
            carry = _carries(conn, month)
            rows = conn.execution_options(yield_per=1000).execute(
                select(snapshot_media).where(_in_month(month)).order_by(*order)  # type: ignore[arg-type]
            )
            with gzip.open(partial, "wt", encoding="utf-8") as handle:
                for row in rows:
                    moved = carry.get((int(row.article_id), int(row.snapshot_at)))
                    line = record_of(row).as_json()
                    line["carried_to"] = moved
                    handle.write(json.dumps(line, ensure_ascii=False) + "\n")
                    records += 1
                    # An expired video's record keeps its digest, not its bytes.
                    if row.stored and row.sha256 is not None and moved is None:
                        digest = bytes(row.sha256)
                        shown_here[digest] = shown_here.get(digest, 0) + 1
        os.replace(partial, final)
        # Items only the dropped records show: compared with all the records that show them.
        leaving = []
        with engine.connect() as conn:
            for digest, here in shown_here.items():
                shown = conn.execute(
                    select(func.count()).where(
                        snapshot_media.c.sha256 == digest, snapshot_media.c.stored.is_(True)
                    )
                ).scalar_one()
                if shown == here:
                    leaving.append(digest)
        out = DirectoryBlobs(items_dir(directory, month))
        size = sum(self._copy_out(digest, out) for digest in sorted(leaving))
        plan = _Plan(records, carry, sorted(leaving), size)
        self._verify(engine, month, directory, plan)
        self.plans[month.label] = plan

    def _copy_out(self, digest: bytes, out: DirectoryBlobs) -> int:
        """Copy an item's bytes out, streamed; returns its size."""
        target = out.path(digest)
        if target.is_file() and _digest_of(target) == digest:
            return target.stat().st_size  # a rerun after a crash: already out
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        with partial.open("wb") as handle:
            try:
                for chunk in self.store.read(digest):
                    handle.write(chunk)
            except LookupError as exc:
                raise RotationError(f"media item {digest.hex()}: {exc}") from None
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, target)
        return target.stat().st_size

    def _verify(self, engine: Engine, month: Month, directory: Path, plan: _Plan) -> None:
        path = media_path(directory, month)
        try:
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                lines = sum(1 for line in handle if json.loads(line)["url"])
        except (OSError, EOFError, ValueError, KeyError) as exc:
            raise RotationError(f"{path}: unreadable media export: {exc}") from exc
        with engine.connect() as conn:
            held = conn.execute(
                select(func.count()).select_from(snapshot_media).where(_in_month(month))  # type: ignore[arg-type]
            ).scalar_one()
        if lines != held or lines != plan.records:
            raise RotationError(f"{path}: {lines} media record(s) exported, {held} in the database")
        out = DirectoryBlobs(items_dir(directory, month))
        for digest in plan.exported:
            if _digest_of(out.path(digest)) != digest:
                raise RotationError(f"{out.path(digest)}: bytes do not match its SHA-256")

    def drop(self, engine: Engine, month: Month) -> None:
        plan = self.plans.pop(month.label)
        row = snapshot_media.c
        with engine.begin() as conn:
            carried = 0
            for (article_id, at), to in plan.carry.items():
                carried += conn.execute(
                    update(snapshot_media)
                    .where(row.article_id == article_id, row.snapshot_at == at)
                    .values(snapshot_at=to)
                ).rowcount
            conn.execute(snapshot_media.delete().where(_in_month(month)))  # type: ignore[arg-type]
        removed, size = self.store.forget(plan.exported)
        self.results.append(
            MonthMedia(
                month.label,
                plan.records,
                carried,
                len(plan.exported),
                plan.exported_bytes,
                removed,
                size,
            )
        )
        logger.info(
            "Rotated the media of %s: %d record(s) (%d carried forward), %d item(s) "
            "(%d bytes) removed from the store",
            month.label,
            plan.records,
            carried,
            removed,
            size,
        )


def _digest_of(path: Path) -> bytes | None:
    try:
        with path.open("rb") as handle:
            digest = hashlib.sha256()
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
            return digest.digest()
    except FileNotFoundError:
        return None
