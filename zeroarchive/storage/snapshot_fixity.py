"""The snapshots as a fixity source: each snapshot's bytes, as ``read_snapshot`` gives them
back, against its ``content_hash`` (the SHA-256 of the page's raw bytes as fetched,
recorded by the crawl, ``import_warc`` and ``import_0archive`` alike).

A snapshot is damaged when its frame does not decompress or decompresses to other bytes,
and also when what it needs is: a ``zstd-ref`` frame needs its reference frame, and an
unchanged snapshot (no bytes of its own) needs a snapshot of its article that stores its
bytes. A reference or repeated frame that is missing makes it ``missing``; one that is
damaged makes it ``depends-on-damaged``, named in the detail (restore that one). Rotated
months are not in the table any more and are not looked for.

Snapshots are walked by article and time, the primary key's order, in batches; the frames
of the article at hand are kept so that its references and repeats are read once.
"""

from __future__ import annotations

import functools
import hashlib
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import zstandard
from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql import ColumnElement

from zeroarchive.storage.compression import decompress
from zeroarchive.storage.fixity import (
    DEPENDS_ON_DAMAGED,
    DIGEST_MISMATCH,
    MISSING,
    UNDECOMPRESSABLE,
    Item,
    Unreadable,
)
from zeroarchive.storage.schema import article, article_snapshot
from zeroarchive.storage.snapshots import snapshot_date

SNAP = article_snapshot.c
_FRAME = (
    SNAP.article_id,
    SNAP.snapshot_at,
    SNAP.content_hash,
    SNAP.raw_data,
    SNAP.codec,
    SNAP.reference_at,
)
# Frames of one article kept for its references and repeats (a month's reference and the
# latest versions cover nearly all of them), within a bound on their bytes: a page may be
# as large as DOWNLOAD_MAXSIZE.
_KEEP_FRAMES = 16
_KEEP_BYTES = 64 * 1024 * 1024


def position(article_id: int, snapshot_at: int) -> str:
    """A snapshot's place in the walk.

    >>> position(12, 1736496000), parse_position("12:1736496000")
    ('12:1736496000', (12, 1736496000))
    """
    return f"{article_id}:{snapshot_at}"


def parse_position(text: str) -> tuple[int, int]:
    article_id, _, at = text.partition(":")
    return int(article_id), int(at)


def _after(key: tuple[int, int]) -> ColumnElement[bool]:
    return (SNAP.article_id > key[0]) | ((SNAP.article_id == key[0]) & (SNAP.snapshot_at > key[1]))


class _Frames:
    """The decompressed frames of the article at hand, each verified once when needed."""

    def __init__(self) -> None:
        self.article_id: int | None = None
        # snapshot_at -> (raw bytes or the problem reading them, recorded digest, verified)
        self._frames: dict[int, tuple[bytes | Unreadable, bytes, bool | None]] = {}

    def reset(self, article_id: int) -> None:
        if article_id != self.article_id:
            self.article_id = article_id
            self._frames.clear()

    def keep(self, at: int, raw: bytes | Unreadable, digest: bytes) -> None:
        self._frames.pop(at, None)
        self._frames[at] = (raw, digest, None)
        held = sum(len(kept) for kept, _, _ in self._frames.values() if isinstance(kept, bytes))
        while len(self._frames) > 1 and (len(self._frames) > _KEEP_FRAMES or held > _KEEP_BYTES):
            oldest, _, _ = self._frames.pop(next(iter(self._frames)))
            held -= len(oldest) if isinstance(oldest, bytes) else 0

    def settle(self, at: int, whole: bool) -> None:
        """What the check of the frame at ``at`` found, so it is not hashed again."""
        kept = self._frames.get(at)
        if kept is not None and kept[2] is None:
            self._frames[at] = (kept[0], kept[1], whole)

    def good(self, at: int) -> bytes | Unreadable | None:
        """The verified bytes of the frame at ``at``, the reason it is bad, or None when
        it is not kept."""
        kept = self._frames.get(at)
        if kept is None:
            return None
        raw, digest, verified = kept
        if isinstance(raw, Unreadable):
            return raw
        if verified is None:
            verified = hashlib.sha256(raw).digest() == digest
            self._frames[at] = (raw, digest, verified)
        if not verified:
            return Unreadable(DIGEST_MISMATCH, "its bytes do not match its SHA-256")
        return raw

    def holding(self, digest: bytes) -> list[int]:
        return [at for at, (_, recorded, _) in self._frames.items() if recorded == digest]


class SnapshotFixity:
    """Every stored snapshot (of one site, taken at or after ``since``)."""

    name = "snapshot"

    def __init__(
        self,
        engine: Engine,
        site_id: int | None = None,
        since: int | None = None,
        batch: int = 200,
    ) -> None:
        self.engine = engine
        self.site_id = site_id
        self.since = since
        self.batch = batch
        self._frames = _Frames()
        self._urls: dict[int, str | None] = {}

    def _scoped(self, query: Any, after: str | None) -> Any:
        if self.site_id is not None:
            in_site = select(article.c.article_id).where(article.c.site_id == self.site_id)
            query = query.where(SNAP.article_id.in_(in_site))
        if self.since is not None:
            # The date too: MariaDB reads only the partitions of the months asked for.
            query = query.where(
                SNAP.snapshot_at >= self.since, SNAP.snapshot_at_date >= snapshot_date(self.since)
            )
        if after:
            query = query.where(_after(parse_position(after)))
        return query

    def count(self, after: str | None) -> int:
        query = self._scoped(select(func.count()).select_from(article_snapshot), after)
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def items(self, after: str | None) -> Iterator[Item]:
        while True:
            query = self._scoped(
                select(*_FRAME, SNAP.raw_size)
                .order_by(SNAP.article_id, SNAP.snapshot_at)
                .limit(self.batch),
                after,
            )
            with self.engine.connect() as conn:
                rows = conn.execute(query).all()
                if not rows:
                    return
                for row in rows:
                    self._frames.reset(row.article_id)
                    raw = self._read(conn, row)
                    yield Item(
                        position=position(row.article_id, row.snapshot_at),
                        ids={"article_id": row.article_id, "snapshot_at": row.snapshot_at},
                        digest=bytes(row.content_hash),
                        read=_reader(raw),
                        size=row.raw_size,
                        # A repeat's bytes come from a frame hashed against the same digest.
                        verified=row.raw_data is None and isinstance(raw, bytes),
                        checked=None
                        if row.raw_data is None
                        else functools.partial(self._frames.settle, row.snapshot_at),
                    )
            after = position(rows[-1].article_id, rows[-1].snapshot_at)

    def url(self, item: Item) -> str | None:
        article_id = int(item.ids["article_id"])
        if article_id not in self._urls:
            with self.engine.connect() as conn:
                found = conn.execute(
                    select(article.c.url).where(article.c.article_id == article_id)
                ).scalar_one_or_none()
            self._urls[article_id] = found
        return self._urls[article_id]

    def _read(self, conn: Connection, row: Any) -> bytes | Unreadable:
        """A snapshot's bytes as read back, or what keeps them from being read."""
        if row.raw_data is None:
            return self._repeated(conn, row.article_id, bytes(row.content_hash))
        raw = self._unpack(conn, row)
        self._frames.keep(row.snapshot_at, raw, bytes(row.content_hash))
        return raw

    def _unpack(self, conn: Connection, row: Any) -> bytes | Unreadable:
        reference = None
        if row.codec == "zstd-ref":
            if row.reference_at is None:
                return Unreadable(MISSING, "a zstd-ref frame that names no reference")
            found = self._frame(conn, row.article_id, row.reference_at)
            if isinstance(found, Unreadable):
                how = "is not in the archive" if found.problem == MISSING else "is damaged"
                problem = MISSING if found.problem == MISSING else DEPENDS_ON_DAMAGED
                return Unreadable(
                    problem, f"its reference, the snapshot at {row.reference_at}, {how}"
                )
            reference = found
        try:
            return decompress(bytes(row.raw_data), row.codec, reference)
        except (zstandard.ZstdError, zlib.error, ValueError) as exc:
            return Unreadable(UNDECOMPRESSABLE, f"{row.codec} frame: {exc}")

    def _frame(self, conn: Connection, article_id: int, at: int) -> bytes | Unreadable:
        """The verified bytes of the article's frame taken at ``at``, read once."""
        kept = self._frames.good(at)
        if kept is not None:
            return kept
        row = conn.execute(
            select(*_FRAME).where(
                SNAP.article_id == article_id,
                SNAP.snapshot_at == at,
                SNAP.raw_data.is_not(None),
            )
        ).first()
        if row is None:
            return Unreadable(MISSING, f"no stored frame at {at}")
        self._frames.keep(at, self._unpack(conn, row), bytes(row.content_hash))
        good = self._frames.good(at)
        assert good is not None
        return good

    def _repeated(self, conn: Connection, article_id: int, digest: bytes) -> bytes | Unreadable:
        """The bytes an unchanged snapshot repeats: any frame of its article with its hash."""
        holders = self._frames.holding(digest)
        for at in holders:
            found = self._frames.good(at)
            if isinstance(found, bytes):
                return found
        stored = conn.execute(
            select(SNAP.snapshot_at).where(
                SNAP.article_id == article_id,
                SNAP.content_hash == digest,
                SNAP.raw_data.is_not(None),
            )
        ).scalars()
        others = [at for at in stored if at not in holders]
        for at in others:
            found = self._frame(conn, article_id, at)
            if isinstance(found, bytes):
                return found
        if not holders and not others:
            return Unreadable(MISSING, "no snapshot of its article stores the bytes it repeats")
        first = min(holders + others)
        return Unreadable(
            DEPENDS_ON_DAMAGED, f"it repeats the snapshot at {first}, which is damaged"
        )


def _reader(raw: bytes | Unreadable) -> Callable[[], Iterable[bytes]]:
    def read() -> Iterable[bytes]:
        if isinstance(raw, Unreadable):
            raise raw
        return (raw,)

    return read
