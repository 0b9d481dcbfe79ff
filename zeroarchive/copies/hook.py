"""The parse run's hook: each new publication version's body is fingerprinted and
clustered in the transaction that adds the version (``storage.publications.VersionHook``),
so the copy index never holds a version that was rolled back."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import Connection

from zeroarchive.copies.index import CopiesConfig, CopyIndex
from zeroarchive.storage.publications import AddedVersion, VersionHook


@dataclass(frozen=True)
class CopiesHook:
    index: CopyIndex

    def __call__(self, conn: Connection, added: AddedVersion) -> None:
        self.index.add(
            conn,
            added.article_id,
            added.site_id,
            added.publication_id,
            added.parsed.text,
            added.snapshot_at,
        )


def copies_hook(config: CopiesConfig | None = None) -> VersionHook:
    """The parser's hook that adds each new publication version to the copy index."""
    return CopiesHook(CopyIndex(config))
