"""Media items stored once by content, and the records of what each snapshot showed.

An item is named by the SHA-256 of its bytes. ``MediaStore.put`` spools the bytes to a
temporary file while hashing them, looks the digest up in ``MediaItem`` (one index lookup),
and only when it is new hands the file to the backend (``Blobs``): ``DatabaseBlobs`` inserts
it into ``MediaChunk`` 1 MiB at a time, ``DirectoryBlobs`` moves it under
``<dir>/ab/cd/<hex>``. No item is ever held whole in memory by the store.
``ZEROARCHIVE_MEDIA_DIR`` chooses the backend: empty for the database, else the directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from sqlalchemy import func, insert, select
from sqlalchemy.engine import Connection, Engine

from zeroarchive.storage.dialect import PlainInsert
from zeroarchive.storage.schema import article, media_chunk, media_item, snapshot_media

CHUNK = 1 << 20
#: Digests looked up per query of ``MediaStore.held``.
LOOKUP = 500
# Two workers storing one new item at once: the second finds it held, not a key error that
# would cost it its whole batch.
_INSERT_NEW = (
    insert(media_item)
    .prefix_with("OR IGNORE", dialect="sqlite")
    .prefix_with("IGNORE", dialect="mysql")
    .prefix_with("IGNORE", dialect="mariadb")
)
# The same, for the rows a crawl's batches write (many a batch): compiled once, their
# values as plain tuples (zeroarchive/storage/dialect.py).
_PLAIN_NEW = PlainInsert(_INSERT_NEW, ("sha256", "size", "content_type", "stored_at"))
_PLAIN_CHUNK = PlainInsert(media_chunk, ("sha256", "seq", "data"))
_RECORD_COLUMNS = (
    "article_id",
    "snapshot_at",
    "kind",
    "url",
    "sha256",
    "bytes",
    "content_type",
    "fetched_at",
    "stored",
    "reason",
)
_PLAIN_RECORD = PlainInsert(snapshot_media, _RECORD_COLUMNS)
KINDS = ("image", "style", "video", "screenshot")


class Blobs(Protocol):
    """Where the bytes of new items go; the index (``MediaItem``) is the store's."""

    #: Its name in logs and docs: "database" or "directory".
    name: str

    def spool_dir(self) -> str | None:
        """Where to write an item's temporary file (on the same filesystem as its end)."""

    def keep(self, conn: Connection, digest: bytes, spooled: IO[bytes]) -> None:
        """Keep the bytes of the new item ``digest`` read from ``spooled`` (at its start)."""

    def read(self, engine: Engine, digest: bytes, start: int = 0) -> Iterator[bytes]:
        """The item's bytes from offset ``start`` in chunks; raises ``LookupError`` when
        they are not there."""

    def holds(self, engine: Engine, digest: bytes) -> bool:
        """Whether the backend has bytes for ``digest`` (whole: a file is linked whole, the
        chunks are written in one transaction)."""

    def remove(self, conn: Connection | None, digest: bytes) -> None:
        """Remove the item's bytes. The database's go with ``conn``'s transaction; a file
        goes at once (``conn`` may be None), so call it once the index no longer names
        the item."""


class DatabaseBlobs:
    """Items in the archive's own database (one place to back up): ``MediaChunk`` rows."""

    name = "database"

    def spool_dir(self) -> str | None:
        return None

    def keep(self, conn: Connection, digest: bytes, spooled: IO[bytes]) -> None:
        seq = 0
        while chunk := spooled.read(CHUNK):
            _PLAIN_CHUNK.one(conn, (digest, seq, chunk))
            seq += 1

    def read(self, engine: Engine, digest: bytes, start: int = 0) -> Iterator[bytes]:
        # Every chunk but the last holds CHUNK bytes (keep), so an offset names its chunk.
        seq, skip = divmod(start, CHUNK)
        query = select(media_chunk.c.data).where(media_chunk.c.sha256 == digest)
        while True:
            # One chunk a query: a 500 MB item is never one result set in memory.
            with engine.connect() as conn:
                data = conn.execute(query.where(media_chunk.c.seq == seq)).scalar()
            if data is None:
                if seq == start // CHUNK:
                    raise LookupError(f"no chunks of {digest.hex()} at {start}")
                return
            yield bytes(data[skip:]) if skip else bytes(data)
            seq, skip = seq + 1, 0

    def holds(self, engine: Engine, digest: bytes) -> bool:
        with engine.connect() as conn:
            first = media_chunk.c.sha256 == digest
            return conn.execute(select(media_chunk.c.seq).where(first).limit(1)).first() is not None

    def remove(self, conn: Connection | None, digest: bytes) -> None:
        assert conn is not None, "the database's chunks go with a transaction"
        conn.execute(media_chunk.delete().where(media_chunk.c.sha256 == digest))


class DirectoryBlobs:
    """Items as files named by their digest under ``root`` (a local path or a shared mount
    several workers write to: a file is moved into place whole, so none sees half of one)."""

    name = "directory"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        (self.root / "tmp").mkdir(parents=True, exist_ok=True)

    def path(self, digest: bytes) -> Path:
        """Where an item's bytes are.

        >>> blobs = object.__new__(DirectoryBlobs); blobs.root = Path("/m")
        >>> str(blobs.path(bytes.fromhex("ab" * 32)))  # doctest: +ELLIPSIS
        '/m/ab/ab/abab...abab'
        """
        name = digest.hex()
        return self.root / name[:2] / name[2:4] / name

    def spool_dir(self) -> str | None:
        return str(self.root / "tmp")

    def keep(self, conn: Connection, digest: bytes, spooled: IO[bytes]) -> None:
        target = self.path(digest)
        target.parent.mkdir(parents=True, exist_ok=True)
        spooled.flush()
        os.fsync(spooled.fileno())
        # A hard link, not a move: the spooled file is removed by its owner either way,
        # and an item another writer put there first is the same bytes.
        with contextlib.suppress(FileExistsError):
            os.link(spooled.name, target)

    def read(self, engine: Engine, digest: bytes, start: int = 0) -> Iterator[bytes]:
        try:
            handle = self.path(digest).open("rb")
        except FileNotFoundError:
            raise LookupError(f"no file for {digest.hex()}") from None
        with handle:
            handle.seek(start)
            while chunk := handle.read(CHUNK):
                yield chunk

    def holds(self, engine: Engine, digest: bytes) -> bool:
        return self.path(digest).is_file()

    def remove(self, conn: Connection | None, digest: bytes) -> None:
        self.path(digest).unlink(missing_ok=True)


def blobs_for(directory: str) -> Blobs:
    """The backend ``ZEROARCHIVE_MEDIA_DIR`` names: the database when empty.

    >>> blobs_for("").name
    'database'
    """
    return DirectoryBlobs(directory) if directory else DatabaseBlobs()


@dataclass(frozen=True)
class Put:
    """An item stored: its digest, its size, and whether its bytes were written now."""

    sha256: bytes
    size: int
    new: bool


@dataclass(frozen=True)
class MediaRecord:
    """One (snapshot, item) row: what ``scrapy media`` shows."""

    article_id: int
    snapshot_at: int
    kind: str
    url: str
    sha256: bytes | None
    bytes: int | None
    content_type: str | None
    fetched_at: int
    stored: bool
    reason: str | None
    #: When the item's bytes were removed (reason "expired": media/expiry.py).
    expired_at: int | None = None

    def as_json(self) -> dict[str, Any]:
        """The object of ``scrapy media --json``. An expired item (its bytes removed by the
        rotation) keeps the digest, size and type it had, and says when it was removed.

        >>> MediaRecord(1, 2, "image", "u", None, None, None, 3, False, "failed:404").as_json()
        ... # doctest: +NORMALIZE_WHITESPACE
        {'article_id': 1, 'snapshot_at': 2, 'kind': 'image', 'url': 'u', 'sha256': None,
         'bytes': None, 'content_type': None, 'fetched_at': 3, 'stored': False,
         'reason': 'failed:404'}
        >>> MediaRecord(1, 2, "video", "u", bytes([171]), 9, "video/mp4", 3, False, "expired",
        ...             4).as_json()  # doctest: +NORMALIZE_WHITESPACE
        {'article_id': 1, 'snapshot_at': 2, 'kind': 'video', 'url': 'u', 'sha256': 'ab',
         'bytes': 9, 'content_type': 'video/mp4', 'fetched_at': 3, 'stored': False,
         'reason': 'expired', 'expired_at': 4}
        """
        shown = {
            "article_id": self.article_id,
            "snapshot_at": self.snapshot_at,
            "kind": self.kind,
            "url": self.url,
            "sha256": None if self.sha256 is None else self.sha256.hex(),
            "bytes": self.bytes,
            "content_type": self.content_type,
            "fetched_at": self.fetched_at,
            "stored": self.stored,
            "reason": self.reason,
        }
        if self.expired_at is not None:
            shown["expired_at"] = self.expired_at
        return shown


class MediaStore:
    """The archive's media: items once by content (``put``), records per snapshot."""

    def __init__(self, engine: Engine, blobs: Blobs) -> None:
        self.engine = engine
        self.blobs = blobs

    def put(
        self,
        conn: Connection,
        chunks: Iterable[bytes | memoryview],
        content_type: str | None,
        at: int,
    ) -> Put:
        """Store the item whose bytes ``chunks`` gives, in ``conn``'s transaction. An item
        already held costs one index lookup, and its bytes are not written again."""
        digest = hashlib.sha256()
        size = 0
        with tempfile.NamedTemporaryFile(dir=self.blobs.spool_dir(), prefix="media-") as spool:
            for chunk in chunks:
                digest.update(chunk)
                spool.write(chunk)
                size += len(chunk)
            sha256 = digest.digest()
            held = conn.execute(
                select(media_item.c.size).where(media_item.c.sha256 == sha256)
            ).first()
            if held is not None:
                return Put(sha256, size, new=False)
            added = conn.execute(
                _INSERT_NEW.values(
                    sha256=sha256, size=size, content_type=_short(content_type), stored_at=at
                )
            ).rowcount
            if not added:
                # Another writer stored it between the lookup and now.
                return Put(sha256, size, new=False)
            spool.flush()
            spool.seek(0)
            self.blobs.keep(conn, sha256, spool)
        return Put(sha256, size, new=True)

    def held(self, conn: Connection, digests: Iterable[bytes]) -> set[bytes]:
        """Which of ``digests`` the archive holds: one index lookup for a whole batch's
        items (per ``LOOKUP`` of them), not one per item."""
        wanted = sorted(set(digests))
        found: set[bytes] = set()
        for start in range(0, len(wanted), LOOKUP):
            part = wanted[start : start + LOOKUP]
            rows = conn.execute(select(media_item.c.sha256).where(media_item.c.sha256.in_(part)))
            found.update(bytes(row.sha256) for row in rows)
        return found

    def put_body(
        self, conn: Connection, sha256: bytes, body: bytes, content_type: str | None, at: int
    ) -> bool:
        """Store an item the crawl holds in memory whole (Scrapy's answer), whose digest is
        ``sha256`` and which ``held`` did not find; True when its bytes were written now
        (False: another writer stored it since). No temporary file for the database
        backend: its bytes go straight into chunks."""
        # The statement compiled once, its values a plain tuple: a ``.values()`` statement
        # per item cost SQLAlchemy 0.7 ms of CPU to build and key (most of storing it).
        added = _PLAIN_NEW.one(conn, (sha256, len(body), _short(content_type), at))
        if not added:
            return False
        spool_dir = self.blobs.spool_dir()
        if spool_dir is None:
            self.blobs.keep(conn, sha256, io.BytesIO(body))
            return True
        with tempfile.NamedTemporaryFile(dir=spool_dir, prefix="media-") as spool:
            spool.write(body)
            spool.seek(0)
            self.blobs.keep(conn, sha256, spool)
        return True

    def read(self, digest: bytes, start: int = 0) -> Iterator[bytes]:
        """An item's bytes from offset ``start``, in chunks."""
        return self.blobs.read(self.engine, digest, start)

    def forget(self, digests: Iterable[bytes]) -> tuple[int, int]:
        """Remove the items among ``digests`` that no record refers to any more: their
        index row and their bytes (a file once the index row is gone for good). Returns
        (items, bytes) removed; an item a record still shows stays."""
        removed: list[tuple[bytes, int]] = []
        in_database = isinstance(self.blobs, DatabaseBlobs)
        with self.engine.begin() as conn:
            for digest in digests:
                shown = select(snapshot_media.c.media_id).where(snapshot_media.c.sha256 == digest)
                if conn.execute(shown.limit(1)).first() is not None:
                    continue
                size = conn.execute(
                    select(media_item.c.size).where(media_item.c.sha256 == digest)
                ).scalar()
                if size is None:
                    continue
                conn.execute(media_item.delete().where(media_item.c.sha256 == digest))
                if in_database:
                    self.blobs.remove(conn, digest)
                removed.append((digest, int(size)))
        if not in_database:
            # After the commit: a crash before leaves a file no index row names (harmless:
            # the same bytes stored again find it there), never a row without its bytes.
            for digest, _ in removed:
                self.blobs.remove(None, digest)
        return len(removed), sum(size for _, size in removed)

    def record(self, conn: Connection, records: Sequence[MediaRecord]) -> None:
        """Write the (snapshot, item) rows."""
        # One executemany of plain tuples: SQLAlchemy's parameters for a batch's ~1,000
        # records cost about as much CPU as the database's inserts.
        _PLAIN_RECORD.many(
            conn,
            [
                (
                    r.article_id,
                    r.snapshot_at,
                    r.kind,
                    r.url[:2048],
                    r.sha256,
                    r.bytes,
                    _short(r.content_type),
                    r.fetched_at,
                    r.stored,
                    r.reason,
                )
                for r in records
            ],
        )


def _short(content_type: str | None) -> str | None:
    return None if content_type is None else content_type[:255]


def media_store(engine: Engine, directory: str) -> MediaStore:
    """The media store of an archive's engine with the backend ``directory`` names (empty:
    the database)."""
    return MediaStore(engine, blobs_for(directory))


def media_records(
    engine: Engine,
    article_id: int | None = None,
    site_id: int | None = None,
    kinds: Sequence[str] = (),
    snapshot_at: int | None = None,
) -> Iterator[MediaRecord]:
    """The (snapshot, item) records, by article, snapshot and the order they came in; those
    of one snapshot when ``article_id`` and ``snapshot_at`` are given."""
    row = snapshot_media.c
    query = select(snapshot_media).order_by(row.article_id, row.snapshot_at, row.media_id)
    if article_id is not None:
        query = query.where(row.article_id == article_id)
    if snapshot_at is not None:
        query = query.where(row.snapshot_at == snapshot_at)
    if site_id is not None:
        query = query.where(
            row.article_id.in_(select(article.c.article_id).where(article.c.site_id == site_id))
        )
    if kinds:
        query = query.where(row.kind.in_(list(kinds)))
    with engine.connect() as conn:
        for found in conn.execution_options(yield_per=1000).execute(query):
            yield record_of(found)


def record_of(found: Any) -> MediaRecord:
    """A SnapshotMedia row as its record (the one reading of a row: ``media_records``,
    the Parquet export, the rotation's export)."""
    return MediaRecord(
        int(found.article_id),
        int(found.snapshot_at),
        found.kind,
        found.url,
        None if found.sha256 is None else bytes(found.sha256),
        found.bytes,
        found.content_type,
        int(found.fetched_at),
        bool(found.stored),
        found.reason,
        found.expired_at,
    )


@dataclass(frozen=True)
class HeldItem:
    """What the index says of a stored item: its size and the Content-Type it came with."""

    size: int
    content_type: str | None


def held_item(engine: Engine, digest: bytes) -> HeldItem | None:
    """The index row of the item ``digest`` (one lookup), None when it is not stored."""
    with engine.connect() as conn:
        row = conn.execute(
            select(media_item.c.size, media_item.c.content_type).where(
                media_item.c.sha256 == digest
            )
        ).first()
    return None if row is None else HeldItem(int(row.size), row.content_type)


def shown_set(
    engine: Engine, article_id: int, snapshot_at: int, kinds: Sequence[str], limit: int
) -> list[MediaRecord]:
    """The items of ``kinds`` a snapshot showed: its own rows, or for an unchanged
    re-snapshot (which has none) those of the last snapshot before it that has rows of
    these kinds; at most ``limit``."""
    row = snapshot_media.c
    with engine.connect() as conn:
        at = conn.execute(
            select(func.max(row.snapshot_at)).where(
                row.article_id == article_id,
                row.snapshot_at <= snapshot_at,
                row.kind.in_(list(kinds)),
            )
        ).scalar()
    if at is None:
        return []
    found = media_records(engine, article_id, kinds=kinds, snapshot_at=int(at))
    return list(itertools.islice(found, limit))


def media_records_by_site(
    engine: Engine, site_id: int | None = None, kinds: Sequence[str] = ()
) -> Iterator[tuple[int, MediaRecord]]:
    """(site id, record) of every (snapshot, item) record, as ``media_records`` orders
    them, in one pass joined with their articles."""
    row = snapshot_media.c
    query = (
        select(snapshot_media, article.c.site_id)
        .join(article, article.c.article_id == row.article_id)
        .order_by(row.article_id, row.snapshot_at, row.media_id)
    )
    if site_id is not None:
        query = query.where(article.c.site_id == site_id)
    if kinds:
        query = query.where(row.kind.in_(list(kinds)))
    with engine.connect() as conn:
        for found in conn.execution_options(yield_per=1000).execute(query):
            yield int(found.site_id), record_of(found)


def any_media(engine: Engine) -> bool:
    """Whether the archive has any (snapshot, item) record (one indexed lookup)."""
    with engine.connect() as conn:
        return conn.execute(select(snapshot_media.c.media_id).limit(1)).first() is not None
