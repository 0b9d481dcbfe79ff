"""Moving the media items' bytes from one backend to the other (``scrapy move_media``).

Item by item, in digest order, each streamed (never whole in memory): the source's bytes
are copied to a temporary file while hashed (a damaged source copy is reported and left
where it is), handed to the target backend, read back from the target and hashed again,
and only when that matches the item's SHA-256 is the source copy removed. The index
(``MediaItem``) names items, not where they are, so a crash at any point leaves every item
whole in one backend or both, and running the move again finishes it: an item the target
already holds whole is checked and its source copy removed, one it holds damaged is
written again.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from zeroarchive.core.progress import Progress
from zeroarchive.media.store import Blobs
from zeroarchive.storage.schema import media_item

logger = logging.getLogger(__name__)

BATCH = 500


@dataclass
class Moved:
    """What a move came to."""

    moved: int = 0
    moved_bytes: int = 0
    already: int = 0  # the target held it whole (a move run before)
    missing: list[str] = field(default_factory=list)  # in neither backend
    damaged: list[str] = field(default_factory=list)  # the source's bytes do not match

    @property
    def ok(self) -> bool:
        return not self.missing and not self.damaged


def _items(engine: Engine) -> Iterator[tuple[bytes, int]]:
    after = b""
    while True:
        with engine.connect() as conn:
            rows = conn.execute(
                select(media_item.c.sha256, media_item.c.size)
                .where(media_item.c.sha256 > after)
                .order_by(media_item.c.sha256)
                .limit(BATCH)
            ).all()
        for row in rows:
            yield bytes(row.sha256), int(row.size)
        if len(rows) < BATCH:
            return
        after = bytes(rows[-1].sha256)


def _whole(engine: Engine, blobs: Blobs, digest: bytes) -> bool:
    """Whether ``blobs`` holds the item and its bytes hash to its name."""
    if not blobs.holds(engine, digest):
        return False
    hashed = hashlib.sha256()
    try:
        for chunk in blobs.read(engine, digest):
            hashed.update(chunk)
    except LookupError:
        return False
    return hashed.digest() == digest


def count_items(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(media_item)).scalar_one())


def move_items(
    engine: Engine, source: Blobs, target: Blobs, progress: Progress | None = None
) -> Moved:
    """Move every item's bytes from ``source`` to ``target``; see the module's docstring."""
    moved = Moved()
    for digest, size in _items(engine):
        name = digest.hex()
        if _whole(engine, target, digest):
            moved.already += 1
            _remove(engine, source, digest)
        elif not source.holds(engine, digest):
            logger.error("Media item %s is in neither backend", name)
            moved.missing.append(name)
        elif _copy(engine, source, target, digest):
            if not _whole(engine, target, digest):
                raise OSError(f"media item {name}: the {target.name} copy does not read back")
            _remove(engine, source, digest)
            moved.moved += 1
            moved.moved_bytes += size
        else:
            logger.error("Media item %s: the %s copy is damaged; left there", name, source.name)
            moved.damaged.append(name)
        if progress is not None:
            progress.advance()
    return moved


def _copy(engine: Engine, source: Blobs, target: Blobs, digest: bytes) -> bool:
    """Copy an item, streamed through a temporary file; False when the source's bytes do
    not hash to its name (nothing is written then)."""
    hashed = hashlib.sha256()
    with tempfile.NamedTemporaryFile(dir=target.spool_dir(), prefix="move-") as spool:
        try:
            for chunk in source.read(engine, digest):
                hashed.update(chunk)
                spool.write(chunk)
        except LookupError:
            return False
        if hashed.digest() != digest:
            return False
        spool.flush()
        spool.seek(0)
        # A damaged copy left in the target (a file changed on disk) goes first.
        stale = target.holds(engine, digest)
        with engine.begin() as conn:
            if stale:
                target.remove(conn, digest)
            target.keep(conn, digest, spool)
    return True


def _remove(engine: Engine, blobs: Blobs, digest: bytes) -> None:
    with engine.begin() as conn:
        blobs.remove(conn, digest)
