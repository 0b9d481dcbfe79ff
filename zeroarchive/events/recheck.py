"""Recheck: what changed for articles a person asked to look at again now (`scrapy recheck`,
the monitor's recheck button), read from the archive once their fetch was stored and
parsed: an edit, a deletion, a restoration, a first sign of a deletion, or nothing."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Engine

from zeroarchive.core.clock import utc_minute
from zeroarchive.storage.schema import article, article_event, site

#: What a recheck found, in the order they are looked for.
OUTCOMES = ("deleted", "restored", "edited", "suspected", "changed", "unchanged", "failed")


@dataclass(frozen=True)
class Before:
    """An article as it was when the recheck was asked for."""

    article_id: int
    last_content_hash: bytes | None


@dataclass(frozen=True)
class Rechecked:
    """One article's recheck: its outcome (one of ``OUTCOMES``) and a line about it."""

    article_id: int
    url: str
    site: str
    outcome: str
    detail: str

    def line(self) -> str:
        return f"{self.outcome} {self.url} ({self.site}): {self.detail}"


def before_recheck(engine: Engine, article_ids: Sequence[int]) -> dict[int, Before]:
    """The state each article is compared with afterwards."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(article.c.article_id, article.c.last_content_hash).where(
                article.c.article_id.in_(list(article_ids))
            )
        ).all()
    return {row.article_id: Before(row.article_id, row.last_content_hash) for row in rows}


def what_changed(
    engine: Engine,
    before: Mapping[int, Before],
    asked_at: int,
    signs: Collection[int],
    why_not: Callable[[int], str],
) -> list[Rechecked]:
    """Each article's outcome since ``asked_at``: ``signs`` are the articles whose answer
    said they are gone, ``why_not`` says why an article that answered nothing was not
    fetched."""
    ids = list(before)
    with engine.connect() as conn:
        rows = {
            row.article_id: row
            for row in conn.execute(
                select(
                    article.c.article_id,
                    article.c.url,
                    article.c.last_snapshot_at,
                    article.c.last_content_hash,
                    article.c.gone_at,
                    article.c.gone_evidence,
                    article.c.deleted_at,
                    article.c.next_snapshot_at,
                    site.c.name,
                )
                .join(site, site.c.site_id == article.c.site_id)
                .where(article.c.article_id.in_(ids))
            )
        }
        events: dict[int, dict[str, str]] = {}
        for event in conn.execute(
            select(article_event.c.article_id, article_event.c.kind, article_event.c.evidence)
            .where(article_event.c.article_id.in_(ids), article_event.c.detected_at >= asked_at)
            .order_by(article_event.c.event_id)
        ):
            events.setdefault(event.article_id, {})[event.kind] = event.evidence
    return [
        _outcome(rows[i], before[i], events.get(i, {}), asked_at, i in signs, why_not) for i in ids
    ]


def _outcome(
    row: Any,
    before: Before,
    events: Mapping[str, str],
    asked_at: int,
    gone: bool,
    why_not: Callable[[int], str],
) -> Rechecked:
    def found(outcome: str, detail: str) -> Rechecked:
        return Rechecked(before.article_id, row.url, row.name, outcome, detail)

    if "deleted" in events:
        return found("deleted", f"confirmed now ({events['deleted']}); `scrapy events` lists it")
    if "restored" in events:
        return found("restored", "the page answers again with its content")
    if "edited" in events:
        fields = events["edited"].replace(",", " and ")
        return found(
            "edited",
            f"its {fields} changed; `scrapy events --article {before.article_id} --diff` shows how",
        )
    if gone and row.deleted_at:
        since = utc_minute(int(row.deleted_at))
        return found("deleted", f"still gone, deleted since {since} UTC ({row.gone_evidence})")
    gone_at = int(row.gone_at)
    if gone_at >= asked_at and not row.deleted_at:
        check = utc_minute(int(row.next_snapshot_at)) + " UTC"
        return found(
            "suspected",
            f"looks gone ({row.gone_evidence}); the check at {check} confirms it, "
            "or recheck it again to confirm now",
        )
    if int(row.last_snapshot_at) >= asked_at:
        if row.last_content_hash != before.last_content_hash:
            return found("changed", "a new snapshot; its title and text are as before")
        return found("unchanged", "the page is as archived")
    return found("failed", why_not(before.article_id))
