"""Writing snapshots (and the article schedule they move), reading them back, exporting."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.engine import Connection, Engine

from zeroarchive.core.encoding import decode_body
from zeroarchive.core.items import FailedFetch, FetchedPage
from zeroarchive.core.schedule import (
    STOP,
    Plan,
    next_adaptive_snapshot,
    next_after_failure,
    next_watch_at,
)
from zeroarchive.sites.record import Site
from zeroarchive.storage.articles import insert_new
from zeroarchive.storage.compression import compress, compress_against, decompress
from zeroarchive.storage.engine import transaction
from zeroarchive.storage.schema import article, article_snapshot, site
from zeroarchive.storage.sites import site_from_row


@dataclass(frozen=True)
class SaveResult:
    article_id: int
    outcome: str  # "saved", "unchanged", "duplicate"
    moved_from: int | None
    stored_bytes: int
    # Compressed against an earlier snapshot of the article (a zstd-ref frame).
    referenced: bool = False


@dataclass(frozen=True)
class StoredSnapshot:
    article_id: int
    snapshot_at: int
    status: int
    final_url: str
    headers: dict[str, list[str]]
    encoding: str
    content_hash: bytes
    raw: bytes
    rendered: bool = False


def content_hash(raw: bytes) -> bytes:
    """SHA-256 of the raw page bytes: equal hashes mean an unchanged page."""
    return hashlib.sha256(raw).digest()


def snapshot_date(ts: int) -> dt.date:
    """A snapshot's ``snapshot_at_date``: the UTC date of its time (partitions use it).

    >>> snapshot_date(0), snapshot_date(1_800_000_000)
    (datetime.date(1970, 1, 1), datetime.date(2027, 1, 15))
    """
    return dt.datetime.fromtimestamp(ts, dt.UTC).date()


def snapshot_month(ts: int) -> dt.date:
    """The first day of a snapshot's UTC month (a reference frame never crosses it)."""
    return snapshot_date(ts).replace(day=1)


@dataclass(frozen=True)
class _Frame:
    """The bytes a snapshot stores, how they are compressed, and what they refer to."""

    data: bytes | None
    codec: str | None
    reference_at: int | None = None


@dataclass(frozen=True)
class Reference:
    """A stand-alone frame of an article: its time and its raw bytes."""

    at: int
    raw: bytes


def _snapshot_row(
    article_id: int, page: FetchedPage, digest: bytes, frame: _Frame
) -> dict[str, Any]:
    return {
        "article_id": article_id,
        "snapshot_at": page.fetched_at,
        "snapshot_at_date": snapshot_date(page.fetched_at),
        "status": page.status,
        "final_url": page.final_url[:2048],
        "headers": json.dumps(page.headers, ensure_ascii=False),
        "encoding": page.encoding,
        "content_hash": digest,
        "raw_size": len(page.body),
        "raw_data": frame.data,
        "codec": frame.codec,
        "reference_at": frame.reference_at,
        "rendered": page.rendered,
    }


# Bound parameters are prefixed: a bindparam may not share a name with a column it sets.
_RESCHEDULE = (
    update(article)
    .where(article.c.article_id == bindparam("p_article_id"))
    .values(
        first_snapshot_at=bindparam("p_first_snapshot_at"),
        last_snapshot_at=bindparam("p_last_snapshot_at"),
        next_snapshot_at=bindparam("p_next_snapshot_at"),
        snapshot_interval=bindparam("p_snapshot_interval"),
        snapshot_count=bindparam("p_snapshot_count"),
        failure_count=0,
        stop_reason=bindparam("p_stop_reason"),
        last_content_hash=bindparam("p_last_content_hash"),
        watch_at=bindparam("p_watch_at"),
        lease_until=0,
        lease_owner=None,
    )
)
_RESCHEDULED = (
    "article_id",
    "first_snapshot_at",
    "last_snapshot_at",
    "next_snapshot_at",
    "snapshot_interval",
    "snapshot_count",
    "stop_reason",
    "last_content_hash",
    "watch_at",
)


def _reschedule_params(row: dict[str, Any]) -> dict[str, Any]:
    return {f"p_{name}": row[name] for name in _RESCHEDULED}


class SnapshotStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # Sites and plans by (site id, type, config as stored): a site edited mid-run gets
        # its new plan.
        self._plans: dict[tuple[int, str, str], tuple[Plan, Site]] = {}

    def _site_plans(self, conn: Connection, site_ids: set[int]) -> dict[int, tuple[Plan, Site]]:
        """The schedule plan of each site, from the site itself (its type and overrides),
        and the site (for its long-tail ``watch``)."""
        rows = conn.execute(select(site).where(site.c.site_id.in_(sorted(site_ids)))).mappings()
        plans = {}
        for row in rows:
            key = (row["site_id"], row["type"], row["config"])
            if key not in self._plans:
                record = site_from_row(row)
                self._plans[key] = (record.plan, record)
            plans[row["site_id"]] = self._plans[key]
        missing = site_ids - plans.keys()
        if missing:
            raise LookupError(f"snapshots of unknown site(s): {sorted(missing)}")
        return plans

    def save(
        self, pages: Sequence[FetchedPage], conn: Connection | None = None
    ) -> list[SaveResult]:
        """Store a batch of fetched pages in one transaction (``conn``'s, if given) and
        reschedule their articles.

        A few statements per batch, not three per page: one read of every article row, one
        multi-row INSERT and one executemany UPDATE (per-page statements cost more than the
        compression on MariaDB). Pages are applied in order, so a second page of the same
        article in one batch sees the first one's hash and times.

        A changed page is compressed against the article's latest stand-alone frame of the
        same UTC month when there is one (most of a re-snapshot repeats it), else stands
        alone. Never across months: rotation drops a month at once, and no kept frame may
        refer to a dropped one.
        """
        if not pages:
            return []
        results = []
        with transaction(conn or self.engine) as conn:
            targets = [self._resolve_move(conn, page) for page in pages]
            rows = self._article_rows(conn, {article_id for article_id, _ in targets})
            plans = self._site_plans(conn, {page.site_id for page in pages})
            digests = [content_hash(page.body) for page in pages]
            # Only articles with stored bytes whose page changed need their reference read.
            changed = {
                article_id
                for (article_id, _), digest in zip(targets, digests, strict=True)
                if rows[article_id]["last_content_hash"] is not None
                and bytes(rows[article_id]["last_content_hash"]) != digest
            }
            references = latest_references(
                conn, changed, min(snapshot_month(page.fetched_at) for page in pages)
            )
            inserts: list[dict[str, Any]] = []
            updates: dict[int, dict[str, Any]] = {}
            for page, (article_id, moved_from), digest in zip(pages, targets, digests, strict=True):
                row = rows[article_id]
                if row["last_snapshot_at"] == page.fetched_at:
                    # Two fetches of one article within a second (a redirect target that
                    # was also queued itself): the first one stands.
                    results.append(SaveResult(article_id, "duplicate", moved_from, 0))
                    continue
                last = row["last_content_hash"]
                unchanged = last is not None and bytes(last) == digest
                frame = _Frame(None, None) if unchanged else _frame(page, references, article_id)
                inserts.append(_snapshot_row(article_id, page, digest, frame))
                # The first snapshot counts as a change: it starts at the plan step's interval.
                plan, record = plans[page.site_id]
                upcoming = next_adaptive_snapshot(
                    plan,
                    row["created_at"],
                    page.fetched_at,
                    row["snapshot_interval"],
                    not unchanged,
                )
                first = row["first_snapshot_at"] or page.fetched_at
                row.update(
                    first_snapshot_at=first,
                    last_snapshot_at=page.fetched_at,
                    next_snapshot_at=upcoming.at,
                    snapshot_interval=upcoming.interval,
                    snapshot_count=row["snapshot_count"] + 1,
                    stop_reason="plan_complete" if upcoming.at == STOP else None,
                    last_content_hash=digest,
                    # After the plan, the long-tail watch (zeroarchive/events/watch.py).
                    watch_at=next_watch_at(record.config.watch, first, page.fetched_at)
                    if upcoming.at == STOP
                    else 0,
                )
                updates[article_id] = row
                results.append(
                    SaveResult(
                        article_id,
                        "unchanged" if unchanged else "saved",
                        moved_from,
                        len(frame.data or b""),
                        frame.reference_at is not None,
                    )
                )
            if inserts:
                conn.execute(article_snapshot.insert(), inserts)
            if updates:
                conn.execute(_RESCHEDULE, [_reschedule_params(r) for r in updates.values()])
        return results

    def _article_rows(self, conn: Connection, ids: set[int]) -> dict[int, dict[str, Any]]:
        query = select(
            article.c.article_id,
            article.c.created_at,
            article.c.first_snapshot_at,
            article.c.snapshot_count,
            article.c.last_content_hash,
            article.c.last_snapshot_at,
            article.c.snapshot_interval,
        ).where(article.c.article_id.in_(sorted(ids)))
        rows = {row.article_id: dict(row._mapping) for row in conn.execute(query)}
        missing = ids - rows.keys()
        if missing:
            raise LookupError(f"snapshots of unknown article(s): {sorted(missing)}")
        return rows

    def _resolve_move(self, conn: Connection, page: FetchedPage) -> tuple[int, int | None]:
        if page.moved_to is None:
            return page.article_id, None
        ids = insert_new(conn, page.site_id, page.article_type, [page.moved_to], page.fetched_at)
        target = ids[page.moved_to]
        if target == page.article_id:
            return target, None
        conn.execute(
            update(article)
            .where(article.c.article_id == page.article_id)
            .values(
                redirect_to=target,
                next_snapshot_at=STOP,
                stop_reason="moved",
                lease_until=0,
                lease_owner=None,
            )
        )
        return target, page.article_id

    def record_failures(
        self, failures: Sequence[FailedFetch], conn: Connection | None = None
    ) -> list[tuple[int, str | None]]:
        """Back off or stop articles whose fetch failed (in ``conn``'s transaction, if
        given); return (article_id, stop_reason)."""
        results = []
        with transaction(conn or self.engine) as conn:
            plans = self._site_plans(conn, {failure.site_id for failure in failures})
            for failure in failures:
                row = conn.execute(
                    select(
                        article.c.failure_count, article.c.watch_at, article.c.first_snapshot_at
                    ).where(article.c.article_id == failure.article_id)
                ).one()
                count = row.failure_count + 1
                next_at, stop_reason = next_after_failure(
                    count, failure.failed_at, failure.status, failure.reason
                )
                watch_at = row.watch_at
                if next_at == STOP and watch_at:
                    # A watch check that keeps failing waits for the next watch age.
                    ages = plans[failure.site_id][1].config.watch
                    watch_at = next_watch_at(ages, row.first_snapshot_at, failure.failed_at)
                conn.execute(
                    update(article)
                    .where(article.c.article_id == failure.article_id)
                    .values(
                        failure_count=count,
                        next_snapshot_at=next_at,
                        stop_reason=stop_reason or f"last_error:{failure.reason}",
                        watch_at=watch_at,
                        lease_until=0,
                        lease_owner=None,
                    )
                )
                results.append((failure.article_id, stop_reason))
        return results


def _frame(page: FetchedPage, references: dict[int, Reference], article_id: int) -> _Frame:
    """Compress a changed page, against its article's reference of the month if any; a
    stand-alone frame becomes the reference of the article's next pages."""
    reference = month_reference(references, article_id, page.fetched_at)
    if reference is not None:
        data, codec = compress_against(page.body, reference.raw)
        return _Frame(data, codec, reference.at)
    data, codec = compress(page.body)
    references[article_id] = Reference(page.fetched_at, page.body)
    return _Frame(data, codec)


def month_reference(references: dict[int, Reference], article_id: int, at: int) -> Reference | None:
    """The article's reference frame if it is of the same UTC month as a page taken at
    ``at`` (never across months: rotation drops a month at once)."""
    reference = references.get(article_id)
    if reference is not None and snapshot_month(reference.at) == snapshot_month(at):
        return reference
    return None


def latest_references(conn: Connection, ids: set[int], since: dt.date) -> dict[int, Reference]:
    """Each article's latest stand-alone frame taken on or after ``since``."""
    if not ids:
        return {}
    # Only the latest one's bytes are read: rows written before migration 0008 are all
    # stand-alone, and a month of them per article would be read again on every batch.
    latest = (
        select(
            article_snapshot.c.article_id,
            func.max(article_snapshot.c.snapshot_at).label("at"),
        )
        .where(
            article_snapshot.c.article_id.in_(sorted(ids)),
            article_snapshot.c.snapshot_at_date >= since,
            article_snapshot.c.raw_data.is_not(None),
            article_snapshot.c.reference_at.is_(None),
        )
        .group_by(article_snapshot.c.article_id)
        .subquery()
    )
    rows = conn.execute(
        select(
            article_snapshot.c.article_id,
            article_snapshot.c.snapshot_at,
            article_snapshot.c.raw_data,
            article_snapshot.c.codec,
        ).join(
            latest,
            (article_snapshot.c.article_id == latest.c.article_id)
            & (article_snapshot.c.snapshot_at == latest.c.at),
        )
    ).all()
    return {
        row.article_id: Reference(row.snapshot_at, decompress(bytes(row.raw_data), row.codec))
        for row in rows
    }


def unpack_frame(
    conn: Connection,
    article_id: int,
    data: bytes,
    codec: str,
    reference_at: int | None,
    known: dict[tuple[int, int], bytes] | None = None,
) -> bytes:
    """The raw bytes of one stored frame; a zstd-ref frame's reference is read from
    ``known`` (article, time -> raw bytes) or the database."""
    if codec != "zstd-ref":
        return decompress(data, codec)
    if reference_at is None:
        raise LookupError(f"zstd-ref frame of article {article_id} names no reference")
    reference = (known or {}).get((article_id, reference_at))
    if reference is None:
        reference = _reference_bytes(conn, article_id, reference_at)
    return decompress(data, codec, reference)


def _reference_bytes(conn: Connection, article_id: int, at: int) -> bytes:
    row = conn.execute(
        select(article_snapshot.c.raw_data, article_snapshot.c.codec).where(
            article_snapshot.c.article_id == article_id,
            article_snapshot.c.snapshot_at == at,
            article_snapshot.c.raw_data.is_not(None),
        )
    ).one_or_none()
    if row is None:
        raise LookupError(f"reference snapshot of article {article_id} at {at} is missing")
    # References are stand-alone frames by construction: no chain to follow.
    return decompress(bytes(row.raw_data), row.codec)


def _raw_bytes(conn: Connection, article_id: int, digest: bytes) -> bytes:
    row = conn.execute(
        select(
            article_snapshot.c.raw_data,
            article_snapshot.c.codec,
            article_snapshot.c.reference_at,
        )
        .where(
            article_snapshot.c.article_id == article_id,
            article_snapshot.c.content_hash == digest,
            article_snapshot.c.raw_data.is_not(None),
        )
        .limit(1)
    ).one_or_none()
    if row is None:
        raise LookupError(f"no stored bytes for article {article_id} hash {digest.hex()}")
    return unpack_frame(conn, article_id, bytes(row.raw_data), row.codec, row.reference_at)


def _stored(row: object, raw: bytes) -> StoredSnapshot:
    return StoredSnapshot(
        article_id=row.article_id,  # type: ignore[attr-defined]
        snapshot_at=row.snapshot_at,  # type: ignore[attr-defined]
        status=row.status,  # type: ignore[attr-defined]
        final_url=row.final_url,  # type: ignore[attr-defined]
        headers=json.loads(row.headers),  # type: ignore[attr-defined]
        encoding=row.encoding,  # type: ignore[attr-defined]
        content_hash=bytes(row.content_hash),  # type: ignore[attr-defined]
        raw=raw,
        rendered=bool(row.rendered),  # type: ignore[attr-defined]
    )


def read_snapshot(engine: Engine, article_id: int, snapshot_at: int) -> StoredSnapshot:
    """The original bytes of one snapshot and the encoding to decode them with.

    This is the one way to read a snapshot back: an unchanged snapshot stores no bytes of
    its own, and this returns the bytes of the earlier snapshot it repeats; a zstd-ref
    frame is decompressed with the bytes of the snapshot it was compressed against.
    """
    with engine.connect() as conn:
        row = conn.execute(
            select(article_snapshot).where(
                article_snapshot.c.article_id == article_id,
                article_snapshot.c.snapshot_at == snapshot_at,
            )
        ).one()
        if row.raw_data is not None:
            raw = unpack_frame(conn, article_id, bytes(row.raw_data), row.codec, row.reference_at)
        else:
            raw = _raw_bytes(conn, article_id, bytes(row.content_hash))
    return _stored(row, raw)


@dataclass(frozen=True)
class ExportedSnapshot:
    site_id: int
    url: str
    snapshot: StoredSnapshot
    #: ``Article.article_type`` (which source archived it).
    article_type: str = "Article"


def snapshot_record(exported: ExportedSnapshot) -> dict[str, object]:
    """One JSON line of an export: the snapshot's facts and its page as decoded text."""
    snapshot = exported.snapshot
    return {
        "article_id": snapshot.article_id,
        "site_id": exported.site_id,
        "url": exported.url,
        "snapshot_at": snapshot.snapshot_at,
        "status": snapshot.status,
        "content_hash": snapshot.content_hash.hex(),
        "encoding": snapshot.encoding,
        "rendered": snapshot.rendered,
        "html": decode_body(snapshot.raw, snapshot.encoding),
    }


def iter_snapshots(
    engine: Engine,
    site_id: int | None = None,
    since: int | None = None,
    batch: int = 200,
    until: int | None = None,
) -> Iterator[ExportedSnapshot]:
    """Every snapshot (oldest article first), with the article's site and URL, in batches;
    only those taken at or after ``since`` and before ``until`` when given."""
    last_key = (-1, -1)
    while True:
        query = (
            select(article_snapshot, article.c.site_id, article.c.url, article.c.article_type)
            .join(article, article.c.article_id == article_snapshot.c.article_id)
            .where(
                (article_snapshot.c.article_id > last_key[0])
                | (
                    (article_snapshot.c.article_id == last_key[0])
                    & (article_snapshot.c.snapshot_at > last_key[1])
                )
            )
            .order_by(article_snapshot.c.article_id, article_snapshot.c.snapshot_at)
            .limit(batch)
        )
        if site_id is not None:
            query = query.where(article.c.site_id == site_id)
        if since is not None:
            query = query.where(article_snapshot.c.snapshot_at >= since)
        if until is not None:
            query = query.where(article_snapshot.c.snapshot_at < until)
        with engine.connect() as conn:
            rows = conn.execute(query).all()
            if not rows:
                return
            cache: dict[tuple[int, bytes], bytes] = {}
            stand_alone: dict[tuple[int, int], bytes] = {}
            for row in rows:
                digest = bytes(row.content_hash)
                if row.raw_data is not None:
                    raw = unpack_frame(
                        conn,
                        row.article_id,
                        bytes(row.raw_data),
                        row.codec,
                        row.reference_at,
                        stand_alone,
                    )
                    cache[(row.article_id, digest)] = raw
                    if row.reference_at is None:
                        stand_alone[(row.article_id, row.snapshot_at)] = raw
                else:
                    raw = cache.get((row.article_id, digest)) or _raw_bytes(
                        conn, row.article_id, digest
                    )
                yield ExportedSnapshot(row.site_id, row.url, _stored(row, raw), row.article_type)
        last_key = (rows[-1].article_id, rows[-1].snapshot_at)


def count_snapshots(
    engine: Engine,
    site_id: int | None = None,
    since: int | None = None,
    until: int | None = None,
) -> int:
    """How many snapshots ``iter_snapshots`` and ``iter_snapshot_metadata`` will give."""
    query = select(func.count()).select_from(article_snapshot)
    if site_id is not None:
        in_site = select(article.c.article_id).where(article.c.site_id == site_id)
        query = query.where(article_snapshot.c.article_id.in_(in_site))
    if since is not None:
        query = query.where(article_snapshot.c.snapshot_at >= since)
    if until is not None:
        query = query.where(article_snapshot.c.snapshot_at < until)
    with engine.connect() as conn:
        return int(conn.execute(query).scalar_one())


def iter_snapshot_metadata(
    engine: Engine, site_id: int | None = None, since: int | None = None, batch: int = 2000
) -> Iterator[dict[str, Any]]:
    """Every snapshot's facts without its page (no decompression), oldest article first;
    only those taken at or after ``since`` when given."""
    last_key = (-1, -1)
    columns = (
        article_snapshot.c.article_id,
        article_snapshot.c.snapshot_at,
        article_snapshot.c.status,
        article_snapshot.c.final_url,
        article_snapshot.c.encoding,
        article_snapshot.c.content_hash,
        article_snapshot.c.raw_size,
        article_snapshot.c.rendered,
        article.c.site_id,
        article.c.url,
    )
    while True:
        query = (
            select(*columns)
            .join(article, article.c.article_id == article_snapshot.c.article_id)
            .where(
                (article_snapshot.c.article_id > last_key[0])
                | (
                    (article_snapshot.c.article_id == last_key[0])
                    & (article_snapshot.c.snapshot_at > last_key[1])
                )
            )
            .order_by(article_snapshot.c.article_id, article_snapshot.c.snapshot_at)
            .limit(batch)
        )
        if site_id is not None:
            query = query.where(article.c.site_id == site_id)
        if since is not None:
            query = query.where(article_snapshot.c.snapshot_at >= since)
        with engine.connect() as conn:
            rows = conn.execute(query).all()
        if not rows:
            return
        for row in rows:
            record = dict(row._mapping)
            record["content_hash"] = bytes(row.content_hash).hex()
            record["rendered"] = bool(row.rendered)
            yield record
        last_key = (rows[-1].article_id, rows[-1].snapshot_at)
