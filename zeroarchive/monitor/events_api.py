"""GraphQL ``events(site, kind, since, first, after)``: takedowns, restorations and silent
edits, newest first, paged with an opaque cursor (zeroarchive/events/store.py)."""

from __future__ import annotations

import base64
from typing import Any

from ariadne import ObjectType
from graphql import GraphQLError, GraphQLResolveInfo

from zeroarchive.core.shown import masked_url
from zeroarchive.events.store import KINDS, Event, iter_events
from zeroarchive.monitor.params import BadInput, cursor_numbers, number, quoted
from zeroarchive.storage.sites import MAX_ID

MAX_FIRST = 500

EVENTS_SCHEMA = """
extend type Query {
    "Takedowns, restorations and silent edits, newest first; `after` is a cursor."
    events(site: ID, kind: [String], since: Int, first: Int = 50, after: String): EventsResult!
}
type EventsResult {
    items: [Event]!
    "The cursor to pass as `after` for the next page (null at the end)."
    endCursor: String
}
type Event {
    id: ID!
    kind: String
    articleId: ID!
    siteId: ID!
    site: String
    url: String
    detectedAt: Int
    evidence: String
    beforeSnapshotAt: Int
    afterSnapshotAt: Int
    "An edit's diff as JSON: {fields, title, text}, each a list of [op, text] runs."
    diff: String
}
"""

events_query = ObjectType("Query")
event_type = ObjectType("Event")


def encode_cursor(event: Event) -> str:
    """An opaque cursor after ``event``.

    >>> decode_cursor(encode_cursor(Event(7, "deleted", 1, 1, "s", "u", 99, "404", None, 99, None)))
    (99, 7)
    """
    return base64.urlsafe_b64encode(f"{event.detected_at}:{event.event_id}".encode()).decode()


def decode_cursor(cursor: str) -> tuple[int, int]:
    """(detected at, event id) of a cursor; BadInput for no cursor of ours."""
    at, event_id = cursor_numbers(cursor, "after", "", 2, urlsafe=True)
    return at, event_id


@events_query.field("events")
def resolve_events(
    _: None,
    info: GraphQLResolveInfo,
    site: Any = None,
    kind: list[str] | None = None,
    since: int | None = None,
    first: int = 50,
    after: str | None = None,
) -> dict[str, Any]:
    kinds = kind or list(KINDS)
    unknown = sorted({repr(k) for k in kinds if k not in KINDS})
    if unknown:
        raise GraphQLError(f"kind: {', '.join(unknown)} (known: {', '.join(KINDS)})")
    if not 1 <= first <= MAX_FIRST:
        raise GraphQLError(f"first must be between 1 and {MAX_FIRST}, got {first}")
    site_id = None
    if site is not None:
        try:
            site_id = number(str(site), "site", 1, MAX_ID)
        except BadInput:
            raise GraphQLError(f"site must be a site id, got {quoted(str(site))}") from None
    cursor = decode_cursor(after) if after else None
    engine = info.context.engine
    items = list(
        iter_events(engine, site_id, kinds, since, after=cursor, limit=first + 1, newest_first=True)
    )
    more = len(items) > first
    items = items[:first]
    return {"items": items, "endCursor": encode_cursor(items[-1]) if more and items else None}


for _field, _attr in {
    "id": "event_id",
    "kind": "kind",
    "articleId": "article_id",
    "siteId": "site_id",
    "detectedAt": "detected_at",
    "beforeSnapshotAt": "before_snapshot_at",
    "afterSnapshotAt": "after_snapshot_at",
}.items():
    event_type.set_field(_field, lambda obj, _info, _a=_attr: getattr(obj, _a))
event_type.set_field("url", lambda event, _info: masked_url(event.url))
event_type.set_field("site", lambda event, _info: masked_url(event.site))
# A redirect's evidence names where it went.
event_type.set_field("evidence", lambda event, _info: masked_url(event.evidence))


@event_type.field("diff")
def resolve_diff(event: Event, _: GraphQLResolveInfo) -> str | None:
    import json

    return json.dumps(event.diff, ensure_ascii=False) if event.diff else None


BINDABLES = (events_query, event_type)
