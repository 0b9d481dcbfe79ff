"""GraphQL: each snapshot's media (``Snapshot.media``), the items the page showed as the
archive keeps them (zeroarchive/media/): kind, URL, SHA-256, size, Content-Type, when it
was fetched, whether it is stored and if not why. An unchanged re-snapshot has no items of
its own: it gives its version's (``snapshotAt`` says which snapshot recorded them), as the
stored-page view shows them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ariadne import ObjectType
from graphql import GraphQLResolveInfo

from zeroarchive.core.shown import masked_url
from zeroarchive.media.store import MediaRecord, shown_set
from zeroarchive.monitor.media import SET_LIMIT
from zeroarchive.storage.browse import SnapshotFacts

MEDIA_SCHEMA = """
extend type Snapshot {
    "The images, stylesheets, video and screenshot the page showed (its version's set)."
    media: [Media!]!
}
type Media {
    "image, style, video or screenshot."
    kind: String!
    "The item's URL (a screenshot's: the page's)."
    url: String!
    "Hex SHA-256 of the stored bytes (null when not stored)."
    sha256: String
    "Its size in bytes (null when not stored)."
    bytes: Int
    contentType: String
    "When it was fetched (unix seconds)."
    fetchedAt: Int!
    stored: Boolean!
    "Why it is not stored: too-large, too-many, not-media, expired, failed:<status or error>."
    reason: String
    "The snapshot that recorded it (an earlier one for an unchanged re-snapshot)."
    snapshotAt: Int!
}
"""


@dataclass(frozen=True)
class SnapshotOf:
    """A snapshot's facts with its article, which its media need."""

    article_id: int
    facts: SnapshotFacts

    def __getattr__(self, name: str) -> Any:
        return getattr(self.facts, name)


snapshot_media_type = ObjectType("Snapshot")
media_type = ObjectType("Media")


@snapshot_media_type.field("media")
def resolve_media(snapshot: Any, info: GraphQLResolveInfo) -> list[MediaRecord]:
    engine = info.context.engine
    found: list[MediaRecord] = []
    # Pictures and stylesheets, video and screenshot: each kind's latest set up to then.
    for kinds in (("image", "style"), ("video",), ("screenshot",)):
        found += shown_set(engine, snapshot.article_id, snapshot.snapshot_at, kinds, SET_LIMIT)
    return found


media_type.set_field("url", lambda record, _info: masked_url(record.url))
media_type.set_field("sha256", lambda r, _info: None if r.sha256 is None else r.sha256.hex())
media_type.set_field("contentType", lambda record, _info: record.content_type)
media_type.set_field("fetchedAt", lambda record, _info: record.fetched_at)
media_type.set_field("snapshotAt", lambda record, _info: record.snapshot_at)
BINDABLES = (snapshot_media_type, media_type)
