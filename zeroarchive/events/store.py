"""Writing events and the deletion state of articles, and reading events back.

A sign that an article is gone (``signs``) first makes it a suspect: its next check is
``CONFIRM_AFTER`` seconds later and it is not stopped. A second sign at least that long
after the first confirms the deletion: one ``deleted`` event, and the article keeps being
checked (its plan while it lasts, then the long-tail watch). An answer with content in
between clears the suspicion (a transient 404: no event); an answer with content after a
confirmed deletion is a ``restored`` event.

Events are unique per article, kind and the answer that showed them (``after_snapshot_at``):
recording one twice adds nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.engine import Connection, Engine

from zeroarchive.core.schedule import STOP, next_watch_at, step_at
from zeroarchive.sites.record import Site
from zeroarchive.storage.dialect import insert_ignore
from zeroarchive.storage.engine import transaction
from zeroarchive.storage.schema import article, article_event, site
from zeroarchive.storage.sites import site_from_row

#: Seconds between the first sign of a deletion and the fetch that may confirm it.
CONFIRM_AFTER = 600
KINDS = ("deleted", "edited", "restored")


@dataclass(frozen=True)
class GoneAnswer:
    """An answer that says the article is gone, and the evidence."""

    article_id: int
    site_id: int
    at: int
    evidence: str


@dataclass(frozen=True)
class Answered:
    """An answer with the article's content, stored as a snapshot taken ``at``."""

    article_id: int
    site_id: int
    at: int
    status: int


@dataclass(frozen=True)
class Event:
    event_id: int
    kind: str
    article_id: int
    site_id: int
    site: str
    url: str
    detected_at: int
    evidence: str
    before_snapshot_at: int | None
    after_snapshot_at: int
    diff: dict[str, Any] | None

    def as_json(self) -> dict[str, Any]:
        """The record `scrapy events --json` prints (the issue's keys, nothing more)."""
        return {
            "kind": self.kind,
            "article_id": self.article_id,
            "site": self.site,
            "url": self.url,
            "detected_at": self.detected_at,
            "evidence": self.evidence,
            "before_snapshot_at": self.before_snapshot_at,
            "after_snapshot_at": self.after_snapshot_at,
        }


def _sites(conn: Connection, site_ids: set[int]) -> dict[int, Site]:
    rows = conn.execute(select(site).where(site.c.site_id.in_(sorted(site_ids)))).mappings()
    return {row["site_id"]: site_from_row(row) for row in rows}


def insert_event(
    conn: Connection,
    kind: str,
    article_id: int,
    site_id: int,
    detected_at: int,
    evidence: str,
    before: int | None,
    after: int,
    diff: dict[str, Any] | None = None,
) -> bool:
    """Add an event unless the same one is there; whether it was added."""
    result = conn.execute(
        insert_ignore(conn, article_event),
        {
            "kind": kind,
            "article_id": article_id,
            "site_id": site_id,
            "detected_at": detected_at,
            "evidence": evidence,
            "before_snapshot_at": before or None,
            "after_snapshot_at": after,
            "diff": json.dumps(diff, ensure_ascii=False) if diff else None,
        },
    )
    return bool(result.rowcount)


def keep_checking(site_record: Site, row: Any, now: int) -> dict[str, Any]:
    """The schedule of a deleted article: its plan's checks while the plan lasts, then the
    long-tail watch; STOP when neither is left."""
    plan = site_record.plan
    step = step_at(plan, now - row.created_at)
    if step is not None:
        return {
            "next_snapshot_at": max(now + 1, min(now + step.interval, row.created_at + plan.end)),
            "watch_at": 0,
        }
    first = row.first_snapshot_at or now
    return {
        "next_snapshot_at": STOP,
        "watch_at": next_watch_at(site_record.config.watch, first, now),
    }


def record_gone(bind: Engine | Connection, answers: Sequence[GoneAnswer]) -> list[str]:
    """Apply gone answers in order; the outcome of each: "suspected" (first sign),
    "deleted" (confirmed: an event), "waiting" (a second sign too soon to confirm) or
    "still_deleted"."""
    if not answers:
        return []
    outcomes = []
    with transaction(bind) as conn:
        sites = _sites(conn, {answer.site_id for answer in answers})
        for answer in answers:
            row = _gone_row(conn, answer.article_id)
            values: dict[str, Any]
            if row.deleted_at:
                outcome = "still_deleted"
                values = keep_checking(sites[answer.site_id], row, answer.at)
            elif not row.gone_at:
                outcome = "suspected"
                values = {
                    "gone_at": answer.at,
                    "gone_evidence": answer.evidence[:255],
                    "next_snapshot_at": answer.at + CONFIRM_AFTER,
                }
            elif answer.at - row.gone_at >= CONFIRM_AFTER:
                outcome = "deleted"
                values = _confirm(conn, sites[answer.site_id], row, answer)
            else:
                outcome = "waiting"
                values = {"next_snapshot_at": row.gone_at + CONFIRM_AFTER}
            conn.execute(
                update(article)
                .where(article.c.article_id == answer.article_id)
                .values(failure_count=0, lease_until=0, **values)
            )
            outcomes.append(outcome)
    return outcomes


def confirm_asked(
    bind: Engine | Connection, answers: Sequence[GoneAnswer], asked_at: int
) -> list[bool]:
    """Confirm at once the deletions a person asked about (`scrapy recheck`): an answer
    that is the second sign, the first having come before ``asked_at``, is a ``deleted``
    event now; ``CONFIRM_AFTER`` is the schedule's rule, not the person's. Whether each
    was confirmed (a first sign, or an article already deleted, is left as it is)."""
    confirmed = []
    with transaction(bind) as conn:
        sites = _sites(conn, {answer.site_id for answer in answers})
        for answer in answers:
            row = _gone_row(conn, answer.article_id)
            if row.deleted_at or not 0 < row.gone_at < asked_at:
                confirmed.append(False)
                continue
            values = _confirm(conn, sites[answer.site_id], row, answer)
            conn.execute(
                update(article)
                .where(article.c.article_id == answer.article_id)
                .values(failure_count=0, lease_until=0, **values)
            )
            confirmed.append(True)
    return confirmed


def _gone_row(conn: Connection, article_id: int) -> Any:
    return conn.execute(
        select(
            article.c.created_at,
            article.c.first_snapshot_at,
            article.c.last_snapshot_at,
            article.c.gone_at,
            article.c.gone_evidence,
            article.c.deleted_at,
        ).where(article.c.article_id == article_id)
    ).one()


def _confirm(conn: Connection, site_record: Site, row: Any, answer: GoneAnswer) -> dict[str, Any]:
    """The ``deleted`` event of a confirmed deletion; the article's new values."""
    evidence = row.gone_evidence or answer.evidence
    insert_event(
        conn,
        "deleted",
        answer.article_id,
        answer.site_id,
        answer.at,
        evidence,
        row.last_snapshot_at,
        answer.at,
    )
    return {
        "deleted_at": answer.at,
        "stop_reason": f"deleted:{evidence}"[:64],
        **keep_checking(site_record, row, answer.at),
    }


def record_answered(
    bind: Engine | Connection, answers: Sequence[Answered]
) -> list[tuple[int, str]]:
    """Articles that answered with content after a sign of deletion: a suspect is cleared
    ("cleared"), a confirmed deletion becomes a ``restored`` event ("restored"). One read
    of the batch's articles when none was gone (the usual case)."""
    if not answers:
        return []
    by_id = {answer.article_id: answer for answer in answers}
    found = []
    with transaction(bind) as conn:
        rows = conn.execute(
            select(article.c.article_id, article.c.deleted_at, article.c.gone_at).where(
                article.c.article_id.in_(sorted(by_id)),
                or_(article.c.gone_at > 0, article.c.deleted_at > 0),
            )
        ).all()
        for row in rows:
            answer = by_id[row.article_id]
            if row.deleted_at:
                before = conn.execute(
                    select(article_event.c.before_snapshot_at).where(
                        article_event.c.article_id == row.article_id,
                        article_event.c.kind == "deleted",
                        article_event.c.after_snapshot_at == row.deleted_at,
                    )
                ).scalar()
                insert_event(
                    conn,
                    "restored",
                    row.article_id,
                    answer.site_id,
                    answer.at,
                    f"answered:{answer.status}",
                    before,
                    answer.at,
                )
                found.append((row.article_id, "restored"))
            else:
                found.append((row.article_id, "cleared"))
            conn.execute(
                update(article)
                .where(article.c.article_id == row.article_id)
                .values(gone_at=0, gone_evidence=None, deleted_at=0)
            )
    return found


def record_not_modified(
    bind: Engine | Connection, article_ids: Sequence[tuple[int, int]], at: int
) -> None:
    """Watch checks answered 304 Not Modified (``(article_id, site_id)`` pairs): nothing
    changed and nothing is stored; the article waits for its next watch age."""
    if not article_ids:
        return
    with transaction(bind) as conn:
        sites = _sites(conn, {site_id for _, site_id in article_ids})
        for article_id, site_id in article_ids:
            row = conn.execute(
                select(article.c.created_at, article.c.first_snapshot_at).where(
                    article.c.article_id == article_id
                )
            ).one()
            conn.execute(
                update(article)
                .where(article.c.article_id == article_id)
                .values(
                    failure_count=0,
                    lease_until=0,
                    gone_at=0,
                    gone_evidence=None,
                    stop_reason="plan_complete",
                    **keep_checking(sites[site_id], row, at),
                )
            )


def iter_events(
    engine: Engine,
    site_id: int | None = None,
    kinds: Sequence[str] = KINDS,
    since: int | None = None,
    after: tuple[int, int] | None = None,
    limit: int | None = None,
    newest_first: bool = False,
    batch: int = 1000,
    until: int | None = None,
    article_id: int | None = None,
) -> Iterator[Event]:
    """Events oldest first (by detection time, then id), or newest first; only those of
    ``site_id`` (or of ``article_id``), of ``kinds``, detected at or after ``since`` and
    before ``until``, past the cursor ``after`` ((detected_at, event_id) of the last one
    seen), up to ``limit``."""
    cursor = after
    left = limit
    while left is None or left > 0:
        size = batch if left is None else min(batch, left)
        query = (
            select(article_event, article.c.url, site.c.name.label("site_name"))
            .join(article, article.c.article_id == article_event.c.article_id)
            .join(site, site.c.site_id == article_event.c.site_id)
            .where(article_event.c.kind.in_(list(kinds)))
            .limit(size)
        )
        key = (article_event.c.detected_at, article_event.c.event_id)
        if newest_first:
            query = query.order_by(key[0].desc(), key[1].desc())
        else:
            query = query.order_by(*key)
        if site_id is not None:
            query = query.where(article_event.c.site_id == site_id)
        if since is not None:
            query = query.where(article_event.c.detected_at >= since)
        if until is not None:
            query = query.where(article_event.c.detected_at < until)
        if article_id is not None:
            query = query.where(article_event.c.article_id == article_id)
        if cursor is not None:
            at, event_id = cursor
            if newest_first:
                query = query.where(or_(key[0] < at, and_(key[0] == at, key[1] < event_id)))
            else:
                query = query.where(or_(key[0] > at, and_(key[0] == at, key[1] > event_id)))
        with engine.connect() as conn:
            rows = conn.execute(query).all()
        for row in rows:
            yield Event(
                event_id=row.event_id,
                kind=row.kind,
                article_id=row.article_id,
                site_id=row.site_id,
                site=row.site_name,
                url=row.url,
                detected_at=row.detected_at,
                evidence=row.evidence,
                before_snapshot_at=row.before_snapshot_at,
                after_snapshot_at=row.after_snapshot_at,
                diff=json.loads(row.diff) if row.diff else None,
            )
        if len(rows) < size:
            return
        cursor = (rows[-1].detected_at, rows[-1].event_id)
        if left is not None:
            left -= len(rows)


def get_event(engine: Engine, event_id: int) -> Event | None:
    """One event by id."""
    with engine.connect() as conn:
        row = conn.execute(
            select(article_event.c.detected_at).where(article_event.c.event_id == event_id)
        ).first()
    if row is None:
        return None
    return next(
        (
            event
            for event in iter_events(engine, after=(row.detected_at, event_id - 1), limit=50)
            if event.event_id == event_id
        ),
        None,
    )


def monthly_counts(engine: Engine, site_id: int | None = None) -> list[dict[str, int | str]]:
    """Deletions, edits and restorations per site and UTC month (``YYYY-MM``), newest
    month first."""
    query = select(article_event.c.site_id, article_event.c.kind, article_event.c.detected_at)
    if site_id is not None:
        query = query.where(article_event.c.site_id == site_id)
    counts: dict[tuple[int, str], dict[str, int]] = {}
    import datetime as dt

    with engine.connect() as conn:
        for row in conn.execute(query):
            month = dt.datetime.fromtimestamp(row.detected_at, dt.UTC).strftime("%Y-%m")
            bucket = counts.setdefault((row.site_id, month), dict.fromkeys(KINDS, 0))
            bucket[row.kind] = bucket.get(row.kind, 0) + 1
    return [
        {"site_id": key[0], "month": key[1], **value}
        for key, value in sorted(
            counts.items(), key=lambda item: (item[0][1], -item[0][0]), reverse=True
        )
    ]


def count_events(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(article_event)).scalar_one())
