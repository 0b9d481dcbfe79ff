"""The 0archive sites API: its GraphQL schema exactly (``sites``, ``SitesResult``,
``Site``, ``ArticlesResult``, ``ArticleHistory``), plus queries for a site's articles, an
article, its snapshots and its publication versions. Times are unix seconds."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from ariadne import ObjectType, QueryType, ScalarType, make_executable_schema
from graphql import GraphQLError, GraphQLResolveInfo, GraphQLSchema
from sqlalchemy.engine import Engine

from zeroarchive.core.schedule import DAY
from zeroarchive.core.shown import masked_url
from zeroarchive.monitor import search_api
from zeroarchive.monitor.params import BadInput, row_id
from zeroarchive.monitor.query_limits import ListSizes
from zeroarchive.monitor.stats_cache import StatsCache
from zeroarchive.storage.browse import (
    SiteInfo,
    find_article,
    find_sites,
    publication_versions,
    recent_articles,
    snapshot_timeline,
)
from zeroarchive.storage.site_stats import day_start, new_per_day

MAX_ARTICLES = 500
MAX_HIST_DAYS = 3660

SCHEMA = """
schema {
    query: Query
}
scalar Date
type Query {
    sites(id: ID, isActive: Boolean): SitesResult!
    "A site's articles, the most recently found first."
    articles(siteId: ID!, limit: Int = 50, offset: Int = 0): [Article]!
    article(id: ID!): Article
    "An article's snapshots, oldest first."
    snapshots(articleId: ID!): [Snapshot]!
    "An article's parsed versions, per parser version, oldest first."
    publications(articleId: ID!): [Publication]!
}
type SitesResult {
    count: Int
    items: [Site]!
}
type Site {
    id: ID!
    name: String
    url: String
    type: String
    airtableId: String
    isActive: Boolean
    articles: ArticlesResult!
}
type ArticlesResult {
    count: Int
    "New articles per UTC day over the last `days` days, oldest first (each entry 1 day)."
    hist(days: Int = 7): [ArticleHistory]!
}
type ArticleHistory {
    startAt: Date
    days: Int
    count: Int
}
type Article {
    id: ID!
    siteId: ID!
    url: String
    articleType: String
    foundAt: Int
    publishedAt: Int
    firstSnapshotAt: Int
    lastSnapshotAt: Int
    nextSnapshotAt: Int
    snapshotCount: Int
    failureCount: Int
    stopReason: String
    redirectTo: ID
}
type Snapshot {
    snapshotAt: Int
    status: Int
    finalUrl: String
    rawSize: Int
    contentHash: String
    storesBytes: Boolean
    rendered: Boolean
}
type Publication {
    id: ID!
    parserVersion: String
    version: Int
    title: String
    text: String
    author: String
    publishedAt: Int
    firstSeenAt: Int
    lastSeenAt: Int
    parsedAt: Int
}
"""


@dataclass(frozen=True)
class Context:
    """What one request's resolvers share: one count of new articles per day per window,
    so a list of sites costs one grouped query, not one per site."""

    engine: Engine
    stats: StatsCache
    hist: dict[int, dict[int, list[int]]]  # days -> site id -> counts
    #: Save page now (save_page.Saver), for the ``save`` mutation.
    saver: Any = None
    #: Who asks (clients.Client), for the ``save`` mutation.
    client: Any = None


def _number(value: Any, name: str) -> int:
    """An id argument as a number; one no row can have (-1) when it is out of a signed
    64-bit column's range, so a huge id finds nothing instead of failing in the driver."""
    try:
        return row_id(value, name)
    except BadInput as exc:
        raise GraphQLError(str(exc)) from None


def _context(info: GraphQLResolveInfo) -> Context:
    context = info.context
    assert isinstance(context, Context)
    return context


date_scalar = ScalarType("Date")


@date_scalar.serializer
def _serialize_date(value: dt.date) -> str:
    return value.isoformat()


query = QueryType()
site_type = ObjectType("Site")
articles_result = ObjectType("ArticlesResult")
article_type = ObjectType("Article")
snapshot_type = ObjectType("Snapshot")
publication_type = ObjectType("Publication")


@query.field("sites")
def resolve_sites(
    _: None, info: GraphQLResolveInfo, id: Any = None, isActive: bool | None = None
) -> dict[str, Any]:
    site_id = None if id is None else _number(id, "id")
    items = find_sites(_context(info).engine, site_id, isActive)
    return {"count": len(items), "items": items}


@site_type.field("id")
def resolve_site_id(site: SiteInfo, _: GraphQLResolveInfo) -> str:
    return str(site.site_id)


@site_type.field("url")
def resolve_site_url(site: SiteInfo, _: GraphQLResolveInfo) -> str:
    return masked_url(site.url)


@site_type.field("name")
def resolve_site_name(site: SiteInfo, _: GraphQLResolveInfo) -> str:
    # Ad-hoc sites of saved pages were named after a URL's userinfo and host.
    return masked_url(site.name)


@site_type.field("airtableId")
def resolve_airtable_id(site: SiteInfo, _: GraphQLResolveInfo) -> str | None:
    return site.airtable_id


@site_type.field("isActive")
def resolve_is_active(site: SiteInfo, _: GraphQLResolveInfo) -> bool:
    return site.is_active


@site_type.field("articles")
def resolve_site_articles(site: SiteInfo, info: GraphQLResolveInfo) -> dict[str, Any]:
    stats = _context(info).stats.current().of_site(site.site_id)
    return {"site_id": site.site_id, "count": stats.articles if stats is not None else 0}


@articles_result.field("hist")
def resolve_hist(
    result: dict[str, Any], info: GraphQLResolveInfo, days: int = 7
) -> list[dict[str, Any]]:
    if not 1 <= days <= MAX_HIST_DAYS:
        raise GraphQLError(f"days must be 1-{MAX_HIST_DAYS}, got {days}")
    context = _context(info)
    view = context.stats.current()
    now = view.counted_at
    if days <= len(view.days):
        counts = view.recent(result["site_id"], days)
    else:
        if days not in context.hist:
            context.hist[days] = new_per_day(context.engine, now, days)
        counts = context.hist[days].get(result["site_id"], [0] * days)
    first = day_start(now) - (days - 1) * DAY
    return [
        {
            "startAt": dt.datetime.fromtimestamp(first + n * DAY, dt.UTC).date(),
            "days": 1,
            "count": count,
        }
        for n, count in enumerate(counts)
    ]


@query.field("articles")
def resolve_articles(
    _: None, info: GraphQLResolveInfo, siteId: Any, limit: int = 50, offset: int = 0
) -> list[Any]:
    if not 1 <= limit <= MAX_ARTICLES or offset < 0:
        raise GraphQLError(f"limit must be 1-{MAX_ARTICLES} and offset at least 0")
    return recent_articles(_context(info).engine, _number(siteId, "siteId"), limit, offset)


@query.field("article")
def resolve_article(_: None, info: GraphQLResolveInfo, id: Any) -> Any:
    return find_article(_context(info).engine, _number(id, "id"))


@query.field("snapshots")
def resolve_snapshots(_: None, info: GraphQLResolveInfo, articleId: Any) -> list[Any]:
    from zeroarchive.monitor.media_api import SnapshotOf

    article_id = _number(articleId, "articleId")
    return [SnapshotOf(article_id, s) for s in snapshot_timeline(_context(info).engine, article_id)]


@query.field("publications")
def resolve_publications(_: None, info: GraphQLResolveInfo, articleId: Any) -> list[Any]:
    return publication_versions(_context(info).engine, _number(articleId, "articleId"))


def _attribute(type_: ObjectType, field: str, attribute: str) -> None:
    type_.set_field(field, lambda obj, _info: getattr(obj, attribute))


for _field, _attr in {
    "id": "article_id",
    "siteId": "site_id",
    "articleType": "article_type",
    "foundAt": "created_at",
    "publishedAt": "published_at",
    "firstSnapshotAt": "first_snapshot_at",
    "lastSnapshotAt": "last_snapshot_at",
    "nextSnapshotAt": "next_snapshot_at",
    "snapshotCount": "snapshot_count",
    "failureCount": "failure_count",
    "stopReason": "stop_reason",
    "redirectTo": "redirect_to",
}.items():
    _attribute(article_type, _field, _attr)
for _field, _attr in {
    "snapshotAt": "snapshot_at",
    "status": "status",
    "rawSize": "raw_size",
    "storesBytes": "stores_bytes",
    "rendered": "rendered",
}.items():
    _attribute(snapshot_type, _field, _attr)
# Article URLs may carry credentials (a site's login in its links) as site URLs may.
article_type.set_field("url", lambda article, _info: masked_url(article.url))
snapshot_type.set_field("finalUrl", lambda snapshot, _info: masked_url(snapshot.final_url))
snapshot_type.set_field("contentHash", lambda snapshot, _info: snapshot.content_hash.hex())
for _field, _attr in {
    "id": "publication_id",
    "parserVersion": "parser_version",
    "version": "version",
    "title": "title",
    "text": "text",
    "author": "author",
    "publishedAt": "published_at",
    "firstSeenAt": "first_seen_at",
    "lastSeenAt": "last_seen_at",
    "parsedAt": "parsed_at",
}.items():
    _attribute(publication_type, _field, _attr)


def list_sizes(stats: StatsCache) -> ListSizes:
    """The cost model's sizes of this schema's lists: ``sites`` answers every site counted
    (one with ``id``); ``hist`` and ``articles`` are sized by their ``days`` and ``limit``,
    ``snapshots`` and ``publications`` by the default estimate."""
    sites = len(stats.current().sites)

    def size(parent: str, field: str, _args: dict[str, Any], up: dict[str, Any]) -> int | None:
        if (parent, field) == ("SitesResult", "items"):
            return 1 if up.get("id") is not None else sites
        return None

    return size


def build_schema() -> GraphQLSchema:
    from zeroarchive.monitor import copies_api, media_api
    from zeroarchive.monitor.events_api import BINDABLES, EVENTS_SCHEMA
    from zeroarchive.monitor.save_page import SAVE_SCHEMA, mutation

    return make_executable_schema(
        [
            SCHEMA,
            search_api.SCHEMA,
            EVENTS_SCHEMA,
            SAVE_SCHEMA,
            copies_api.COPIES_SCHEMA,
            media_api.MEDIA_SCHEMA,
        ],
        query,
        mutation,
        *search_api.BINDABLES,
        *BINDABLES,
        *copies_api.BINDABLES,
        *media_api.BINDABLES,
        site_type,
        articles_result,
        article_type,
        snapshot_type,
        publication_type,
        date_scalar,
    )
