"""Recording snapshots taken elsewhere (an imported WARC) beside the ones the crawl takes.

An imported capture may be older than what the crawl already holds, so it must not move
the article's schedule back: the article's last snapshot, last content hash and next
snapshot follow an import only when its capture is newer than the newest stored one (then
exactly as if the crawl had taken it). A capture at a second the article already has a
snapshot for is a duplicate and adds nothing, so importing a WARC twice adds nothing.
Bytes are stored once per article and content hash, like the crawl's unchanged snapshots;
read_snapshot() finds them whichever snapshot holds them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, select, tuple_, update
from sqlalchemy.engine import Connection, Engine

from zeroarchive.core.schedule import STOP, NextSnapshot, Plan, next_adaptive_snapshot
from zeroarchive.core.urls import url_hash
from zeroarchive.sites.record import Site
from zeroarchive.storage.articles import insert_new
from zeroarchive.storage.compression import compress
from zeroarchive.storage.schema import article, article_snapshot


@dataclass(frozen=True)
class ImportedSnapshot:
    """One capture to record under the article with canonical URL ``url``."""

    url: str
    fetched_at: int
    status: int
    final_url: str
    headers: Mapping[str, Sequence[str]]
    encoding: str
    content_hash: bytes
    # None: a revisit, whose bytes an earlier snapshot of the article must already hold.
    body: bytes | None = field(repr=False)
    rendered: bool = False
    # The length of the bytes a revisit repeats (a snapshot with a body: its length).
    raw_size: int = 0

    @property
    def size(self) -> int:
        return len(self.body) if self.body is not None else self.raw_size


@dataclass(frozen=True)
class StoredCapture:
    """What a revisit needs of the snapshot it refers to."""

    content_hash: bytes
    status: int
    headers: dict[str, list[str]]
    encoding: str
    rendered: bool
    raw_size: int


# Outcomes, one per imported snapshot.
ADDED = "added"  # a new snapshot with its bytes
UNCHANGED = "unchanged"  # a new snapshot whose bytes the article already had
DUPLICATE = "duplicate"  # the article already has a snapshot at that second
NO_BYTES = "no_bytes"  # a revisit of bytes this article does not have

_SCHEDULE = (
    update(article)
    .where(article.c.article_id == bindparam("p_article_id"))
    .values(
        created_at=bindparam("p_created_at"),
        first_snapshot_at=bindparam("p_first_snapshot_at"),
        last_snapshot_at=bindparam("p_last_snapshot_at"),
        next_snapshot_at=bindparam("p_next_snapshot_at"),
        snapshot_interval=bindparam("p_snapshot_interval"),
        snapshot_count=bindparam("p_snapshot_count"),
        stop_reason=bindparam("p_stop_reason"),
        last_content_hash=bindparam("p_last_content_hash"),
    )
)


def _row(article_id: int, snap: ImportedSnapshot, data: bytes | None, codec: str | None) -> dict:
    return {
        "article_id": article_id,
        "snapshot_at": snap.fetched_at,
        "snapshot_at_date": dt.datetime.fromtimestamp(snap.fetched_at, dt.UTC).date(),
        "status": snap.status,
        "final_url": snap.final_url[:2048],
        "headers": json.dumps(dict(snap.headers), ensure_ascii=False),
        "encoding": snap.encoding,
        "content_hash": snap.content_hash,
        "raw_size": snap.size,
        "raw_data": data,
        "codec": codec,
        "rendered": snap.rendered,
    }


def record_imported(
    engine: Engine,
    site: Site,
    article_type: str,
    snapshots: Sequence[ImportedSnapshot],
    now: int,
) -> list[str]:
    """Record a batch of imported snapshots of ``site`` in one transaction; return one
    outcome per snapshot (ADDED, UNCHANGED, DUPLICATE or NO_BYTES), in order.

    Articles not known yet are created (first seen at their earliest capture) and scheduled
    from their newest capture by the site's plan; one whose plan ended before ``now`` is
    finished, so old captures never bring a burst of fetches.
    """
    if not snapshots:
        return []
    plan = site.plan
    with engine.begin() as conn:
        ids, created = _articles(conn, site, article_type, snapshots)
        if not ids:
            return [NO_BYTES] * len(snapshots)
        rows = _article_rows(conn, set(ids.values()))
        taken = _taken(conn, ids, snapshots)
        with_bytes = _hashes_with_bytes(conn, set(ids.values()))
        outcomes: list[str] = []
        inserts: list[dict[str, Any]] = []
        added: dict[int, list[ImportedSnapshot]] = {}
        for snap in snapshots:
            article_id = ids.get(snap.url)
            if article_id is None:
                outcomes.append(NO_BYTES)
                continue
            if (article_id, snap.fetched_at) in taken:
                outcomes.append(DUPLICATE)
                continue
            known = (article_id, snap.content_hash) in with_bytes
            if snap.body is None and not known:
                outcomes.append(NO_BYTES)
                continue
            if known:
                inserts.append(_row(article_id, snap, None, None))
                outcomes.append(UNCHANGED)
            else:
                assert snap.body is not None
                inserts.append(_row(article_id, snap, *compress(snap.body)))
                with_bytes.add((article_id, snap.content_hash))
                outcomes.append(ADDED)
            taken.add((article_id, snap.fetched_at))
            added.setdefault(article_id, []).append(snap)
        if inserts:
            conn.execute(article_snapshot.insert(), inserts)
        schedules = [
            _schedule(rows[article_id], snaps, article_id in created, plan, now)
            for article_id, snaps in added.items()
        ]
        if schedules:
            conn.execute(_SCHEDULE, schedules)
    return outcomes


def _articles(
    conn: Connection, site: Site, article_type: str, snapshots: Sequence[ImportedSnapshot]
) -> tuple[dict[str, int], set[int]]:
    """The ids of the snapshots' articles, and which of them this batch created: only a
    URL with bytes to store gets a new article (a revisit alone has nothing to show)."""
    urls = list(dict.fromkeys(snap.url for snap in snapshots))
    known = {
        bytes(row.url_hash)
        for row in conn.execute(
            select(article.c.url_hash).where(article.c.url_hash.in_([url_hash(u) for u in urls]))
        )
    }
    with_body = {snap.url for snap in snapshots if snap.body is not None}
    wanted = [url for url in urls if url_hash(url) in known or url in with_body]
    if not wanted:
        return {}, set()
    earliest = min(snap.fetched_at for snap in snapshots)
    ids = insert_new(conn, site.site_id, article_type, wanted, earliest)
    created = {ids[url] for url in wanted if url_hash(url) not in known}
    return ids, created


def _article_rows(conn: Connection, ids: set[int]) -> dict[int, dict[str, Any]]:
    query = select(
        article.c.article_id,
        article.c.created_at,
        article.c.first_snapshot_at,
        article.c.last_snapshot_at,
        article.c.next_snapshot_at,
        article.c.snapshot_interval,
        article.c.snapshot_count,
        article.c.stop_reason,
        article.c.last_content_hash,
    ).where(article.c.article_id.in_(sorted(ids)))
    return {row.article_id: dict(row._mapping) for row in conn.execute(query)}


def _taken(
    conn: Connection, ids: Mapping[str, int], snapshots: Sequence[ImportedSnapshot]
) -> set[tuple[int, int]]:
    keys = {(ids[snap.url], snap.fetched_at) for snap in snapshots if snap.url in ids}
    query = select(article_snapshot.c.article_id, article_snapshot.c.snapshot_at).where(
        tuple_(article_snapshot.c.article_id, article_snapshot.c.snapshot_at).in_(sorted(keys))
    )
    return {(row.article_id, row.snapshot_at) for row in conn.execute(query)}


def _hashes_with_bytes(conn: Connection, ids: set[int]) -> set[tuple[int, bytes]]:
    query = (
        select(article_snapshot.c.article_id, article_snapshot.c.content_hash)
        .where(
            article_snapshot.c.article_id.in_(sorted(ids)),
            article_snapshot.c.raw_data.is_not(None),
        )
        .distinct()
    )
    return {(row.article_id, bytes(row.content_hash)) for row in conn.execute(query)}


def _schedule(
    row: dict[str, Any], snaps: list[ImportedSnapshot], created: bool, plan: Plan, now: int
) -> dict[str, Any]:
    """The article's row after these snapshots were added to it."""
    earliest = min(snap.fetched_at for snap in snaps)
    newest = max(snaps, key=lambda snap: snap.fetched_at)
    values = dict(row)
    if created:
        values["created_at"] = earliest
    values["first_snapshot_at"] = min(row["first_snapshot_at"] or earliest, earliest)
    values["snapshot_count"] = row["snapshot_count"] + len(snaps)
    if newest.fetched_at > row["last_snapshot_at"]:
        last = row["last_content_hash"]
        values["last_snapshot_at"] = newest.fetched_at
        values["last_content_hash"] = newest.content_hash
        # A stopped article (moved, gone, finished) stays stopped; a new one is scheduled.
        if created or row["next_snapshot_at"] != STOP:
            upcoming = next_adaptive_snapshot(
                plan,
                values["created_at"],
                newest.fetched_at,
                row["snapshot_interval"],
                last is None or bytes(last) != newest.content_hash,
            )
            if created and values["created_at"] + plan.end <= now:
                upcoming = NextSnapshot(STOP, 0)
            values["next_snapshot_at"] = upcoming.at
            values["snapshot_interval"] = upcoming.interval
            if upcoming.at == STOP:
                values["stop_reason"] = "plan_complete"
    return {f"p_{name}": value for name, value in values.items()}


def stored_capture(engine: Engine, url: str, at: int) -> StoredCapture | None:
    """The snapshot of the article with canonical ``url`` taken at ``at``, if stored."""
    with engine.connect() as conn:
        row = conn.execute(
            select(
                article_snapshot.c.content_hash,
                article_snapshot.c.status,
                article_snapshot.c.headers,
                article_snapshot.c.encoding,
                article_snapshot.c.rendered,
                article_snapshot.c.raw_size,
            )
            .join(article, article.c.article_id == article_snapshot.c.article_id)
            .where(article.c.url_hash == url_hash(url), article_snapshot.c.snapshot_at == at)
        ).one_or_none()
    if row is None:
        return None
    return StoredCapture(
        bytes(row.content_hash),
        row.status,
        json.loads(row.headers),
        row.encoding,
        bool(row.rendered),
        row.raw_size,
    )


def snapshot_near(conn: Connection, url: str, at: int, window: int = 0) -> tuple[int, int] | None:
    """(article id, snapshot time) of the snapshot of the article with canonical ``url``
    taken nearest ``at``, at most ``window`` seconds away (0: at ``at`` exactly)."""
    rows = conn.execute(
        select(article_snapshot.c.article_id, article_snapshot.c.snapshot_at)
        .join(article, article.c.article_id == article_snapshot.c.article_id)
        .where(
            article.c.url_hash == url_hash(url),
            article_snapshot.c.snapshot_at.between(at - window, at + window),
        )
    ).all()
    best = min(rows, key=lambda row: (abs(row.snapshot_at - at), row.snapshot_at), default=None)
    return None if best is None else (int(best.article_id), int(best.snapshot_at))
