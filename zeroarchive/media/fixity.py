"""The media items as a fixity source for ``scrapy verify``: each item's bytes, read back
from its backend, against the SHA-256 that names it (zeroarchive/storage/fixity.py).
Walked in digest order; ``--site`` and ``--since`` reach items through the snapshots that
showed them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sqlalchemy import exists, func, select
from sqlalchemy.sql import ColumnElement

from zeroarchive.media.store import MediaStore
from zeroarchive.storage.fixity import MISSING, Item, Unreadable
from zeroarchive.storage.schema import article, media_item, snapshot_media

BATCH = 500


class MediaFixity:
    name = "media"

    def __init__(self, store: MediaStore, site_id: int | None, since: int | None) -> None:
        self.store = store
        self.site_id = site_id
        self.since = since

    def _scope(self, after: str | None) -> list[ColumnElement[bool]]:
        where: list[ColumnElement[bool]] = []
        if after:
            where.append(media_item.c.sha256 > bytes.fromhex(after))
        if self.site_id is not None or self.since is not None:
            shown = snapshot_media.c.sha256 == media_item.c.sha256
            if self.since is not None:
                shown = shown & (snapshot_media.c.snapshot_at >= self.since)
            if self.site_id is not None:
                shown = shown & snapshot_media.c.article_id.in_(
                    select(article.c.article_id).where(article.c.site_id == self.site_id)
                )
            where.append(exists().where(shown))
        return where

    def count(self, after: str | None) -> int:
        with self.store.engine.connect() as conn:
            query = select(func.count()).select_from(media_item).where(*self._scope(after))
            return int(conn.execute(query).scalar() or 0)

    def items(self, after: str | None) -> Iterator[Item]:
        position = after
        while True:
            query = (
                select(media_item.c.sha256, media_item.c.size)
                .where(*self._scope(position))
                .order_by(media_item.c.sha256)
                .limit(BATCH)
            )
            with self.store.engine.connect() as conn:
                rows = conn.execute(query).all()
            for row in rows:
                digest = bytes(row.sha256)
                yield Item(
                    digest.hex(),
                    {"sha256": digest.hex()},
                    digest,
                    lambda digest=digest: self._read(digest),  # type: ignore[misc]
                    int(row.size),
                )
            if len(rows) < BATCH:
                return
            position = bytes(rows[-1].sha256).hex()

    def _read(self, digest: bytes) -> Iterable[bytes]:
        try:
            yield from self.store.read(digest)
        except LookupError as exc:
            raise Unreadable(MISSING, f"{self.store.blobs.name}: {exc}") from None

    def url(self, item: Item) -> str | None:
        with self.store.engine.connect() as conn:
            return conn.execute(
                select(snapshot_media.c.url).where(snapshot_media.c.sha256 == item.digest).limit(1)
            ).scalar()
