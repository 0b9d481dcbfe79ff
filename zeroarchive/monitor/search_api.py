"""Search in the monitor's GraphQL API: ``search(...)``, a connection (cursor pages) of
hits, the same search as ``scrapy search`` on the publications of the newest parser
version the archive has run."""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ariadne import ObjectType, QueryType
from graphql import GraphQLError, GraphQLResolveInfo
from markupsafe import Markup, escape
from sqlalchemy.engine import Engine

from zeroarchive.core.shown import html_safe, masked_url
from zeroarchive.monitor.params import cursor_numbers
from zeroarchive.search import open_index
from zeroarchive.search.index import (
    MAX_TOTAL,
    SORTS,
    Hit,
    Hits,
    IndexUnavailable,
    SearchRequest,
)
from zeroarchive.search.match import Snippet
from zeroarchive.search.query import QueryError, parse_query
from zeroarchive.storage.publications import newest_parser_version
from zeroarchive.storage.sites import SiteStore

MAX_FIRST = 100

SCHEMA = '''
extend type Query {
    """
    Full-text search of publications: words ANDed, "quoted phrases", -excluded (see
    docs/researchers/search.md); since and until are YYYY-MM-DD, UTC, inclusive.
    """
    search(
        query: String!
        site: [String!]
        since: String
        until: String
        allVersions: Boolean = false
        sort: String = "relevance"
        foldChinese: Boolean = false
        first: Int = 20
        after: String
    ): SearchConnection!
}
type SearchConnection {
    "Exact up to 10000; with totalCapped, there are more."
    totalCount: Int!
    totalCapped: Boolean!
    edges: [SearchEdge!]!
    pageInfo: SearchPageInfo!
}
type SearchEdge {
    cursor: String!
    node: SearchHit!
}
type SearchPageInfo {
    hasNextPage: Boolean!
    hasPreviousPage: Boolean!
    startCursor: String
    endCursor: String
}
type SearchHit {
    articleId: ID!
    publicationId: ID!
    version: Int!
    siteId: ID!
    site: String!
    "The URL archived (the article's)."
    url: String!
    "The URL the page names as its own (canonical link, og:url), when it names one."
    canonicalUrl: String
    title: String!
    publishedAt: Int
    "The text around the first match, matches between « and »."
    snippet: String!
    score: Float!
    "With allVersions: when the article's text held the query."
    versions: [SearchSpan!]
}
type SearchSpan {
    from: Int!
    to: Int
}
'''


def cursor(offset: int) -> str:
    """An opaque cursor for the hit at ``offset``.

    >>> cursor(19), offset_after(cursor(19))
    ('b2Zmc2V0OjE5', 20)
    """
    return base64.b64encode(f"offset:{offset}".encode()).decode()


def offset_after(value: str | None) -> int:
    """The offset after a cursor's hit (0 without one); BadInput for no cursor of ours."""
    if not value:
        return 0
    [offset] = cursor_numbers(value, "after", "offset", 1, urlsafe=False)
    return offset + 1


def day(value: str | None, name: str) -> int | None:
    """A YYYY-MM-DD day as the unix time its UTC day starts."""
    if not value:
        return None
    try:
        date = dt.date.fromisoformat(value)
    except ValueError:
        raise GraphQLError(f"{name}: a day as YYYY-MM-DD, not {value[:40]!r}") from None
    return int(dt.datetime(date.year, date.month, date.day, tzinfo=dt.UTC).timestamp())


def site_ids(engine: Engine, names: Sequence[str]) -> tuple[int, ...]:
    """The ids of the sites named (by id or name; a name several sites share: all)."""
    sites = SiteStore(engine)
    found: set[int] = set()
    for name in names:
        ids = sites.ids_named(name)
        if not ids:
            raise GraphQLError(f"site: no site {name[:100]!r}")
        found.update(ids)
    return tuple(sorted(found))


@dataclass(frozen=True)
class Page:
    hits: Hits
    offset: int


def run_search(
    engine: Engine,
    raw: str,
    *,
    sites: Sequence[str] = (),
    since: str | None = None,
    until: str | None = None,
    all_versions: bool = False,
    sort: str = "relevance",
    fold_chinese: bool = False,
    first: int = 20,
    offset: int = 0,
) -> Page:
    """One page of a search; bad input raises GraphQLError with one line."""
    if not 1 <= first <= MAX_FIRST:
        raise GraphQLError(f"first: 1 to {MAX_FIRST}, not {first}")
    if sort not in SORTS:
        raise GraphQLError(f"sort: one of {', '.join(SORTS)}, not {sort[:40]!r}")
    if offset >= MAX_TOTAL:
        raise GraphQLError(f"after: pages end at hit {MAX_TOTAL}")
    fold = None
    if fold_chinese:
        from zeroarchive.search.fold import chinese_forms

        fold = chinese_forms
    try:
        query = parse_query(raw, fold)
    except QueryError as exc:
        raise GraphQLError(f"query: {exc}") from None
    start = day(since, "since")
    end = day(until, "until")
    index = open_index(engine)
    missing = index.available()
    if missing:
        raise GraphQLError(missing)
    version = newest_parser_version(engine)
    if version is None:
        return Page(Hits((), 0), offset)
    request = SearchRequest(
        query=query,
        parser_version=version,
        site_ids=site_ids(engine, sites),
        since=start,
        until=end + 86_400 if end is not None else None,
        all_versions=all_versions,
        sort=sort,
        offset=offset,
        limit=first,
    )
    try:
        return Page(index.search(request), offset)
    except IndexUnavailable as exc:
        raise GraphQLError(str(exc)) from None


def snippet_html(snippet: Snippet) -> Markup:
    """The snippet as HTML, matches in <mark>, control characters escaped.

    >>> snippet_html(Snippet(("a\\x1b<", "b", "c")))
    Markup('a\\\\x1b&lt;<mark>b</mark>c')
    """
    return Markup("").join(
        Markup("<mark>{}</mark>").format(html_safe(piece)) if i % 2 else escape(html_safe(piece))
        for i, piece in enumerate(snippet.pieces)
    )


search_query = QueryType()
connection_type = ObjectType("SearchConnection")
hit_type = ObjectType("SearchHit")


@search_query.field("search")
def resolve_search(
    _obj: Any,
    info: GraphQLResolveInfo,
    query: str,
    site: list[str] | None = None,
    since: str | None = None,
    until: str | None = None,
    allVersions: bool = False,
    sort: str = "relevance",
    foldChinese: bool = False,
    first: int = 20,
    after: str | None = None,
) -> Page:
    return run_search(
        info.context.engine,
        query,
        sites=site or (),
        since=since,
        until=until,
        all_versions=allVersions,
        sort=sort,
        fold_chinese=foldChinese,
        first=first,
        offset=offset_after(after),
    )


connection_type.set_field("totalCount", lambda page, _info: page.hits.total)
connection_type.set_field("totalCapped", lambda page, _info: page.hits.capped)


@connection_type.field("edges")
def resolve_edges(page: Page, _info: GraphQLResolveInfo) -> list[dict[str, Any]]:
    return [
        {"cursor": cursor(page.offset + i), "node": hit} for i, hit in enumerate(page.hits.hits)
    ]


@connection_type.field("pageInfo")
def resolve_page_info(page: Page, _info: GraphQLResolveInfo) -> dict[str, Any]:
    count = len(page.hits.hits)
    return {
        "hasNextPage": page.offset + count < page.hits.total,
        "hasPreviousPage": page.offset > 0,
        "startCursor": cursor(page.offset) if count else None,
        "endCursor": cursor(page.offset + count - 1) if count else None,
    }


def _hit_field(field: str, value: Any) -> None:
    hit_type.set_field(field, lambda hit, _info: value(hit))


for _field, _value in {
    "articleId": lambda h: h.article_id,
    "publicationId": lambda h: h.publication_id,
    "version": lambda h: h.version,
    "siteId": lambda h: h.site_id,
    "site": lambda h: masked_url(h.site),
    "url": lambda h: masked_url(h.url),
    "canonicalUrl": lambda h: None if h.canonical_url is None else masked_url(h.canonical_url),
    "title": lambda h: h.title,
    "publishedAt": lambda h: h.published_at,
    "snippet": lambda h: h.snippet.marked(),
    "score": lambda h: h.score,
    "versions": lambda h: None if h.versions is None else [s.as_dict() for s in h.versions],
}.items():
    _hit_field(_field, _value)

BINDABLES = (search_query, connection_type, hit_type)
__all__ = ["BINDABLES", "SCHEMA", "Hit", "run_search", "snippet_html"]
