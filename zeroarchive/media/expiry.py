"""Videos kept their site's ``video_keep_days``, then removed by the rotation
(`scrapy rotate_snapshots`), their records kept.

A video's bytes are stored once however many snapshots showed it, so they go only when
every record that refers to them is older than its own site's ``video_keep_days`` (by the
record's ``snapshot_at``): one younger snapshot, on any site, keeps them. Bytes that a
record of another kind refers to (an image with the same content) are never removed here.
The records stay, with ``stored`` false, ``reason`` "expired", their URL, digest, size and
type as they were, and ``expired_at`` (when the bytes were removed); the item leaves
``MediaItem``, so the same video fetched again later is stored anew.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from sqlalchemy import and_, delete, func, select, update
from sqlalchemy.engine import Engine

from zeroarchive.media.store import MediaStore
from zeroarchive.sites.record import DEFAULT_VIDEO_KEEP_DAYS, SiteConfigError, parse_config
from zeroarchive.storage.schema import article, media_item, snapshot_media

logger = logging.getLogger(__name__)
DAY = 86400
EXPIRED = "expired"


@dataclass(frozen=True)
class Expiring:
    """A stored video due for removal: its digest, size and the stored records seen."""

    sha256: bytes
    size: int
    records: int


@dataclass(frozen=True)
class Expired:
    """What one pass removed (or, in a dry run, would remove)."""

    videos: int
    bytes: int
    records: int

    def line(self, dry_run: bool) -> str:
        """
        >>> Expired(2, 3_000_000, 5).line(False)
        'Videos: 2 expired (3,000,000 bytes removed, 5 record(s) kept as expired)'
        >>> Expired(0, 0, 0).line(True)
        'Videos: 0 would expire (0 bytes)'
        """
        if dry_run:
            return f"Videos: {self.videos} would expire ({self.bytes:,} bytes)"
        return (
            f"Videos: {self.videos} expired ({self.bytes:,} bytes removed, "
            f"{self.records} record(s) kept as expired)"
        )


def keep_days(engine: Engine) -> dict[int, int]:
    """Each site's ``video_keep_days``. A config that no longer validates keeps the
    default, said in the log (its videos are never removed sooner than by default)."""
    from zeroarchive.storage.sites import SiteStore

    days = {}
    for site_id, spec in SiteStore(engine).specs():
        try:
            days[site_id] = parse_config(spec.config, spec.name).video_keep_days
        except SiteConfigError as exc:
            logger.error("%s; its videos are kept %d days", exc, DEFAULT_VIDEO_KEEP_DAYS)
            days[site_id] = DEFAULT_VIDEO_KEEP_DAYS
    return days


def expiring(engine: Engine, days: Mapping[int, int], at: int) -> Iterator[Expiring]:
    """The stored videos every record of which is older than its site's keep days at ``at``,
    in digest order (read as a stream: one item's records at a time)."""
    row = snapshot_media.c
    videos = select(row.sha256).where(row.kind == "video", row.stored.is_(True))
    query = (
        select(row.sha256, row.kind, row.snapshot_at, row.bytes, article.c.site_id)
        .select_from(snapshot_media.outerjoin(article, article.c.article_id == row.article_id))
        .where(row.stored.is_(True), row.sha256.in_(videos))
        .order_by(row.sha256)
    )
    with engine.connect() as conn:
        rows = conn.execution_options(yield_per=1000).execute(query)
        for digest, group in itertools.groupby(rows, key=lambda found: bytes(found.sha256)):
            records = list(group)
            old = all(
                found.kind == "video"
                and found.snapshot_at < at - days.get(found.site_id, DEFAULT_VIDEO_KEEP_DAYS) * DAY
                for found in records
            )
            if old:
                yield Expiring(digest, int(records[0].bytes or 0), len(records))


def expire_videos(store: MediaStore, at: int, dry_run: bool = False) -> Expired:
    """Remove the bytes of every video due (``expiring``), one transaction each: its
    records marked expired, its ``MediaItem`` row and bytes gone together. A video a crawl
    referred to again since it was found due is left (its records counted anew)."""
    engine = store.engine
    due = list(expiring(engine, keep_days(engine), at))
    if dry_run:
        return Expired(len(due), sum(item.size for item in due), sum(i.records for i in due))
    videos = size = records = 0
    row = snapshot_media.c
    for item in due:
        stored = and_(row.sha256 == item.sha256, row.stored.is_(True))
        with engine.begin() as conn:
            now_stored = conn.execute(
                select(func.count()).select_from(snapshot_media).where(stored)
            ).scalar()
            if now_stored != item.records:
                logger.info("Video %s was shown again; kept", item.sha256.hex())
                continue
            marked = conn.execute(
                update(snapshot_media)
                .where(stored)
                .values(stored=False, reason=EXPIRED, expired_at=at)
            ).rowcount
            conn.execute(delete(media_item).where(media_item.c.sha256 == item.sha256))
            store.blobs.remove(conn, item.sha256)
        videos += 1
        size += item.size
        records += marked
        logger.info(
            "Video %s expired: %d bytes removed, %d record(s) kept",
            item.sha256.hex(),
            item.size,
            marked,
        )
    return Expired(videos, size, records)


def rotate_videos(engine: Engine, media_dir: str, dry_run: bool) -> str:
    """`scrapy rotate_snapshots`' part: expire the videos due now (``dry_run``: count them);
    its line of output. ``media_dir`` names the backend (ZEROARCHIVE_MEDIA_DIR)."""
    from zeroarchive.core.clock import now
    from zeroarchive.media.store import media_store

    return expire_videos(media_store(engine, media_dir), now(), dry_run).line(dry_run)
