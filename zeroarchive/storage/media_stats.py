"""Per site, the media its snapshots showed (``SnapshotMedia``): items recorded, stored,
refused by reason, bytes fetched and bytes stored, for ``scrapy site_stats`` and the
monitor's dashboard.

``bytes_fetched`` adds up the size of every stored record (what the crawl downloaded and
kept, the same logo once per snapshot that showed it); ``bytes_stored`` adds up the size of
the distinct items the site's records refer to (what they take in the store: the same logo
once). An item shared by two sites counts for each, so the archive's own total
(``store_totals``) is at most the sum of the sites'. Triggers on ``SnapshotMedia`` keep
them (migration 0028); a record counts for the site its article had when it was written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from zeroarchive.storage.schema import media_item, site_media_bytes, site_media_totals


@dataclass(frozen=True)
class SiteMedia:
    items: int = 0  # (snapshot, item) records
    stored: int = 0  # of them stored
    refused: dict[str, int] = field(default_factory=dict)  # reason -> records
    bytes_fetched: int = 0
    bytes_stored: int = 0

    def as_json(self) -> dict[str, Any]:
        """The ``media`` object of ``scrapy site_stats --json``.

        >>> SiteMedia(3, 2, {"failed:404": 1}, 200, 100).as_json()
        ... # doctest: +NORMALIZE_WHITESPACE
        {'items': 3, 'stored': 2, 'refused': {'failed:404': 1}, 'bytes_fetched': 200,
         'bytes_stored': 100}
        """
        return {
            "items": self.items,
            "stored": self.stored,
            "refused": dict(self.refused),
            "bytes_fetched": self.bytes_fetched,
            "bytes_stored": self.bytes_stored,
        }


def site_media(conn: Connection) -> dict[int, SiteMedia]:
    """The media of every site with any record, by site id: read from the totals the
    triggers on ``SnapshotMedia`` keep (migration 0028), a few rows per site."""
    totals = site_media_totals.c
    parts: dict[int, dict[str, Any]] = {}
    for site, stored, reason, records, fetched in conn.execute(
        select(totals.site_id, totals.stored, totals.reason, totals.records, totals.bytes_fetched)
    ):
        if not records:
            continue
        part = parts.setdefault(
            int(site), {"items": 0, "stored": 0, "refused": {}, "bytes_fetched": 0}
        )
        part["items"] += int(records)
        if stored:
            part["stored"] += int(records)
            part["bytes_fetched"] += int(fetched)
        else:
            part["refused"][reason or "unknown"] = int(records)
    sizes = dict(
        conn.execute(select(site_media_bytes.c.site_id, site_media_bytes.c.bytes_stored)).all()
    )
    return {
        site: SiteMedia(
            part["items"],
            part["stored"],
            dict(sorted(part["refused"].items(), key=lambda kv: (-kv[1], kv[0]))),
            part["bytes_fetched"],
            int(sizes.get(site) or 0),
        )
        for site, part in parts.items()
    }


def store_totals(conn: Connection) -> tuple[int, int]:
    """(items, bytes) held in the media store, each item once whatever shows it."""
    items, size = conn.execute(select(func.count(), func.sum(media_item.c.size))).one()
    return int(items or 0), int(size or 0)
