"""GraphQL ``copies(articleId)``, the cluster of copies an article is in, and
``clusters(site, since, first, after)``, every cluster oldest id first, paged with an
opaque cursor (zeroarchive/copies/read.py)."""

from __future__ import annotations

import base64
import itertools
from typing import Any

from ariadne import ObjectType
from graphql import GraphQLError, GraphQLResolveInfo

from zeroarchive.copies.read import Cluster, Member, cluster_of, clusters
from zeroarchive.core.shown import masked_url
from zeroarchive.monitor.params import BadInput, cursor_numbers, number, quoted, row_id
from zeroarchive.storage.sites import MAX_ID

MAX_FIRST = 200

COPIES_SCHEMA = '''
extend type Query {
    "The cluster of copies the article is in (null: no copy of it is known)."
    copies(articleId: ID!): Cluster
    """
    Clusters of copies, oldest first; `site`: with a member there; `since`: with a member
    first seen at or after it (unix seconds); `after` is a cursor.
    """
    clusters(site: ID, since: Int, first: Int = 50, after: String): ClustersResult!
}
type ClustersResult {
    items: [Cluster!]!
    "The cursor to pass as `after` for the next page (null at the end)."
    endCursor: String
}
type Cluster {
    id: ID!
    "The member first seen."
    first: CopyMember!
    "Every member, first seen first, the first included."
    members: [CopyMember!]!
}
type CopyMember {
    articleId: ID!
    siteId: ID!
    site: String!
    "The URL archived."
    url: String!
    "When the archive first had it (unix seconds)."
    firstSeenAt: Int!
    "When the page says it was published, if it says."
    publishedAt: Int
    "Seconds after the first was first seen (0 for the first)."
    delaySeconds: Int!
    "Its similarity to the first (containment, 0-1)."
    similarity: Float!
    "same or converted: its Chinese script against the first's."
    script: String!
}
'''

copies_query = ObjectType("Query")
cluster_type = ObjectType("Cluster")
member_type = ObjectType("CopyMember")


def encode_cursor(cluster_id: int) -> str:
    """An opaque cursor after the cluster ``cluster_id``.

    >>> decode_cursor(encode_cursor(42))
    42
    """
    return base64.urlsafe_b64encode(f"cluster:{cluster_id}".encode()).decode()


def decode_cursor(cursor: str) -> int:
    """The cluster id of a cursor; BadInput for no cursor of ours."""
    [cluster_id] = cursor_numbers(cursor, "after", "cluster", 1, urlsafe=True)
    return cluster_id


@copies_query.field("copies")
def resolve_copies(_: None, info: GraphQLResolveInfo, articleId: Any) -> Cluster | None:
    article_id = row_id(articleId, "articleId")
    if article_id < 0:
        return None
    return cluster_of(info.context.engine, article_id)


@copies_query.field("clusters")
def resolve_clusters(
    _: None,
    info: GraphQLResolveInfo,
    site: Any = None,
    since: int | None = None,
    first: int = 50,
    after: str | None = None,
) -> dict[str, Any]:
    if not 1 <= first <= MAX_FIRST:
        raise GraphQLError(f"first must be between 1 and {MAX_FIRST}, got {first}")
    site_ids: list[int] = []
    if site is not None:
        try:
            site_ids = [number(str(site), "site", 1, MAX_ID)]
        except BadInput:
            raise GraphQLError(f"site must be a site id, got {quoted(str(site))}") from None
    last = decode_cursor(after) if after else 0
    found = list(
        itertools.islice(clusters(info.context.engine, site_ids, since, after=last), first + 1)
    )
    more = len(found) > first
    found = found[:first]
    return {"items": found, "endCursor": encode_cursor(found[-1].cluster_id) if more else None}


cluster_type.set_field("id", lambda cluster, _info: cluster.cluster_id)
cluster_type.set_field("first", lambda cluster, _info: (cluster, cluster.first))
cluster_type.set_field(
    "members", lambda cluster, _info: [(cluster, member) for member in cluster.members]
)


def _member_field(name: str, read: Any) -> None:
    member_type.set_field(name, lambda pair, _info: read(pair[0], pair[1]))


def _delay(cluster: Cluster, member: Member) -> int:
    return member.first_seen_at - cluster.first.first_seen_at


for _field, _read in {
    "articleId": lambda _c, m: m.article_id,
    "siteId": lambda _c, m: m.site_id,
    # Site names and archived URLs may carry credentials (a saved page's netloc).
    "site": lambda _c, m: masked_url(m.site),
    "url": lambda _c, m: masked_url(m.url),
    "firstSeenAt": lambda _c, m: m.first_seen_at,
    "publishedAt": lambda _c, m: m.published_at,
    "delaySeconds": _delay,
    "similarity": lambda _c, m: m.similarity,
    "script": lambda _c, m: m.script,
}.items():
    _member_field(_field, _read)

BINDABLES = (copies_query, cluster_type, member_type)
