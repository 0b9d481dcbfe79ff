"""Which archive row each 0archive row became (the ``legacy_id`` table): written in the
same transaction as that row, so a run killed at any moment leaves no row half-known."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import select
from sqlalchemy.engine import Connection

from zeroarchive.storage.schema import legacy_id

SITE = "site"
ARTICLE = "article"


def known_ids(conn: Connection, source: str, kind: str, old_ids: Iterable[int]) -> dict[int, int]:
    """The archive ids of those of ``old_ids`` already imported."""
    wanted = sorted(set(old_ids))
    if not wanted:
        return {}
    query = select(legacy_id.c.old_id, legacy_id.c.new_id).where(
        legacy_id.c.source == source, legacy_id.c.kind == kind, legacy_id.c.old_id.in_(wanted)
    )
    return {int(row.old_id): int(row.new_id) for row in conn.execute(query)}


def remember(conn: Connection, source: str, kind: str, ids: Mapping[int, int]) -> None:
    if ids:
        conn.execute(
            legacy_id.insert(),
            [{"source": source, "kind": kind, "old_id": o, "new_id": n} for o, n in ids.items()],
        )
