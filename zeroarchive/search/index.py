"""The engine interface, and the search every engine shares.

An engine keeps an index of publication versions and, for a query, proposes candidates: a
superset of the versions that hold it (``matching``). The search here narrows them with
SQL (parser version, latest version, sites, dates), checks each on its stored text
(``match.Matcher``), ranks, counts (exactly, up to ``MAX_TOTAL``) and pages. A new
engine (a search cluster) implements ``SearchIndex``; the answers stay the same.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import exists, func, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql import FromClause

from zeroarchive.search.match import Matcher, Snippet
from zeroarchive.search.query import Query
from zeroarchive.search.text import normalize
from zeroarchive.storage.publications import AddedVersion, VersionHook
from zeroarchive.storage.schema import publication, search_doc, site

logger = logging.getLogger(__name__)

#: Counts are exact up to here; above, "10000+".
MAX_TOTAL = 10_000
#: Candidates read (with their text) per round trip.
BATCH = 500
SORTS = ("relevance", "date")


@dataclass(frozen=True)
class SearchRequest:
    query: Query
    parser_version: str
    site_ids: tuple[int, ...] = ()
    #: Unix seconds, inclusive start and exclusive end, of the publication date (or,
    #: without one, of when the version was first seen).
    since: int | None = None
    until: int | None = None
    all_versions: bool = False
    sort: str = "relevance"
    offset: int = 0
    limit: int = 20


@dataclass(frozen=True)
class Span:
    """When an article's text held the query: from a version's first snapshot to the first
    snapshot of the next version that no longer did (None: it still does)."""

    start: int
    end: int | None

    def as_dict(self) -> dict[str, int | None]:
        return {"from": self.start, "to": self.end}


@dataclass(frozen=True)
class Hit:
    publication_id: int
    article_id: int
    version: int
    site_id: int
    site: str
    url: str
    title: str
    published_at: int | None
    score: float
    snippet: Snippet
    versions: tuple[Span, ...] | None = None

    def as_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "article_id": self.article_id,
            "site": self.site,
            "url": self.url,
            "title": self.title,
            "published_at": self.published_at,
            "snippet": self.snippet.marked(),
            "score": self.score,
        }
        if self.versions is not None:
            record["versions"] = [span.as_dict() for span in self.versions]
        return record


@dataclass(frozen=True)
class Hits:
    hits: tuple[Hit, ...]
    #: Exact when not ``capped``; else MAX_TOTAL and there are more.
    total: int
    capped: bool = False

    def total_line(self) -> str:
        return f"{MAX_TOTAL}+ hits" if self.capped else f"{self.total} hits"


class SearchIndex(Protocol):
    """What an engine provides (see the module docstring)."""

    name: str

    def available(self) -> str | None:
        """None when the index can be used; else why not (one line)."""

    def index_version(self, conn: Connection, added: AddedVersion) -> None:
        """Index a publication version inside the transaction that adds it."""

    def index_publications(self, conn: Connection, rows: Sequence[tuple[int, str, str]]) -> None:
        """Index (publication_id, title, text) rows, replacing what they had."""

    def clear(self, conn: Connection, site_id: int | None = None) -> None:
        """Forget the index (of one site's publications)."""

    def matching(self, query: Query) -> FromClause:
        """A selectable of ``publication_id``: at least every version holding ``query``."""

    def search(self, request: SearchRequest) -> Hits:
        """The hits for a request."""


def index_hook(index: SearchIndex) -> VersionHook:
    """The parser's hook that feeds ``index`` with each new publication version."""
    return index.index_version


@dataclass(frozen=True)
class _Candidate:
    publication_id: int
    article_id: int
    date: int
    title: str
    publication_text: str


@dataclass
class _Found:
    publication_id: int
    article_id: int
    date: int
    score: float
    ids: list[int] = field(default_factory=list)


class SharedSearch:
    """``search`` for every engine, on top of its ``matching``."""

    engine: Engine

    def matching(self, query: Query) -> FromClause:
        raise NotImplementedError

    def search(self, request: SearchRequest) -> Hits:
        matcher = Matcher(request.query)
        found: dict[int, _Found] = {}
        order: list[_Found] = []
        with self.engine.connect() as conn:
            for row in self._candidates(conn, request):
                title, body = normalize(row.title), normalize(row.publication_text)
                if not matcher.holds(title, body):
                    continue
                if row.article_id in found:  # an older version (--all-versions)
                    found[row.article_id].ids.append(row.publication_id)
                    continue
                if len(order) == MAX_TOTAL:
                    return self._page(conn, request, matcher, order, capped=True)
                hit = _Found(
                    row.publication_id, row.article_id, row.date, matcher.score(title, body)
                )
                hit.ids.append(row.publication_id)
                found[row.article_id] = hit
                order.append(hit)
            return self._page(conn, request, matcher, order, capped=False)

    def _candidates(self, conn: Connection, request: SearchRequest) -> Iterable[Any]:
        """The candidate versions, newest first: their keys in one query (the engine's
        match runs once), their text ``BATCH`` at a time as the check gets to them."""
        pub = publication.c
        date = func.coalesce(pub.published_at, pub.first_seen_at)
        matched = self.matching(request.query)
        keys = (
            select(pub.publication_id, pub.article_id, date.label("date"))
            .select_from(matched.join(publication, pub.publication_id == matched.c.publication_id))
            .where(pub.parser_version == request.parser_version)
            .order_by(date.desc(), pub.publication_id.desc())
        )
        if not request.all_versions:
            later = publication.alias("later")
            keys = keys.where(
                ~exists().where(
                    later.c.article_id == pub.article_id,
                    later.c.parser_version == pub.parser_version,
                    later.c.version > pub.version,
                )
            )
        if request.site_ids:
            keys = keys.where(pub.site_id.in_(request.site_ids))
        if request.since is not None:
            keys = keys.where(date >= request.since)
        if request.until is not None:
            keys = keys.where(date < request.until)
        found = conn.execute(keys).all()
        for start in range(0, len(found), BATCH):
            chunk = found[start : start + BATCH]
            texts = {
                row.publication_id: row
                for row in conn.execute(
                    select(pub.publication_id, pub.title, pub.publication_text).where(
                        pub.publication_id.in_([key.publication_id for key in chunk])
                    )
                )
            }
            for key in chunk:
                row = texts[key.publication_id]
                yield _Candidate(
                    key.publication_id, key.article_id, key.date, row.title, row.publication_text
                )

    def _page(
        self,
        conn: Connection,
        request: SearchRequest,
        matcher: Matcher,
        order: list[_Found],
        capped: bool,
    ) -> Hits:
        if request.sort == "relevance":
            # Stable: equal scores keep the newest-first order they were found in.
            order = sorted(order, key=lambda f: -f.score)
        page = order[request.offset : request.offset + request.limit]
        rows = {}
        if page:
            rows = {
                row.publication_id: row
                for row in conn.execute(
                    select(publication, site.c.name.label("site_name"))
                    .join(site, site.c.site_id == publication.c.site_id)
                    .where(publication.c.publication_id.in_([f.publication_id for f in page]))
                )
            }
        hits = []
        for item in page:
            row = rows[item.publication_id]
            versions = None
            if request.all_versions:
                versions = self._spans(conn, request, matcher, row.article_id)
            hits.append(
                Hit(
                    publication_id=row.publication_id,
                    article_id=row.article_id,
                    version=row.version,
                    site_id=row.site_id,
                    site=row.site_name,
                    url=row.canonical_url,
                    title=row.title,
                    published_at=row.published_at,
                    score=item.score,
                    snippet=matcher.snippet(row.title, row.publication_text),
                    versions=versions,
                )
            )
        return Hits(tuple(hits), len(order), capped)

    def _spans(
        self, conn: Connection, request: SearchRequest, matcher: Matcher, article_id: int
    ) -> tuple[Span, ...]:
        """The spans during which the article's versions held the query."""
        pub = publication.c
        versions = conn.execute(
            select(pub.first_seen_at, pub.title, pub.publication_text)
            .where(pub.article_id == article_id, pub.parser_version == request.parser_version)
            .order_by(pub.version)
        ).all()
        spans: list[Span] = []
        start: int | None = None
        for row in versions:
            holds = matcher.holds(normalize(row.title), normalize(row.publication_text))
            if holds and start is None:
                start = row.first_seen_at
            elif not holds and start is not None:
                spans.append(Span(start, row.first_seen_at))
                start = None
        if start is not None:
            spans.append(Span(start, None))
        return tuple(spans)


def new_doc_ids(
    conn: Connection, publication_ids: Sequence[int]
) -> tuple[dict[int, int], dict[int, int]]:
    """A new document id for each publication, and the ids they had before (forgotten
    now): an index never reuses a document id, so a stale entry never names a live
    version. A trigger forgets a deleted publication's (migration 0012)."""
    old = {
        row.publication_id: row.doc_id
        for row in conn.execute(
            select(search_doc.c.publication_id, search_doc.c.doc_id).where(
                search_doc.c.publication_id.in_(publication_ids)
            )
        )
    }
    if old:
        conn.execute(search_doc.delete().where(search_doc.c.publication_id.in_(list(old))))
    conn.execute(search_doc.insert(), [{"publication_id": pid} for pid in publication_ids])
    new = {
        row.publication_id: row.doc_id
        for row in conn.execute(
            select(search_doc.c.publication_id, search_doc.c.doc_id).where(
                search_doc.c.publication_id.in_(publication_ids)
            )
        )
    }
    return new, old


def site_doc_ids(conn: Connection, site_id: int | None) -> list[tuple[int, int]]:
    """(doc_id, publication_id) of every indexed publication (of one site)."""
    query = select(search_doc.c.doc_id, search_doc.c.publication_id)
    if site_id is not None:
        query = query.join(
            publication, publication.c.publication_id == search_doc.c.publication_id
        ).where(publication.c.site_id == site_id)
    return [(row.doc_id, row.publication_id) for row in conn.execute(query)]
