"""The engine interface, and the search every engine shares.

An engine keeps an index of publication versions (``search_doc`` beside it: what the
filters need, and which version is each article's latest) and answers a ``plan.Plan``
with the matching document ids and its score. For an exact plan the search is SQL alone:
a count that stops at ``MAX_TOTAL`` + 1, and one page ranked by the engine's score with
recency as the tie-break; the text is read only for the page shown (snippets, spans).
For a plan that is a superset (a term with punctuation) each candidate is checked on its
stored text (``match.Matcher``). A new engine (a search cluster) implements
``SearchIndex``; the answers stay the same.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import func, select, true
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql import ColumnElement, FromClause, Select

from zeroarchive.core.deadline import check
from zeroarchive.search.match import Matcher, Snippet
from zeroarchive.search.plan import Plan, plan
from zeroarchive.search.query import Query
from zeroarchive.search.text import normalize
from zeroarchive.storage.publications import AddedVersion, VersionHook
from zeroarchive.storage.schema import article, article_event, publication, search_doc, site

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
    snapshot of the next version that no longer did, or to the article's deletion (None:
    it still does)."""

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
    #: The URL archived (the article's); ``canonical_url`` is the one the page claims.
    url: str
    title: str
    published_at: int | None
    score: float
    snippet: Snippet
    versions: tuple[Span, ...] | None = None
    canonical_url: str | None = None

    def as_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "article_id": self.article_id,
            "site": self.site,
            "url": self.url,
            "canonical_url": self.canonical_url,
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


@dataclass(frozen=True)
class Doc:
    """A publication version as an index takes it."""

    publication_id: int
    article_id: int
    parser_version: str
    version: int
    site_id: int
    #: The publication date, or when the version was first seen.
    date: int
    title: str
    text: str


def read_docs(conn: Connection, where: ColumnElement[bool]) -> list[Doc]:
    """The publications matching ``where``, as docs, in publication id order."""
    pub = publication.c
    rows = conn.execute(
        select(
            pub.publication_id,
            pub.article_id,
            pub.parser_version,
            pub.version,
            pub.site_id,
            func.coalesce(pub.published_at, pub.first_seen_at).label("date"),
            pub.title,
            pub.publication_text,
        )
        .where(where)
        .order_by(pub.publication_id)
    )
    return [Doc(*row) for row in rows]


class IndexUnavailable(RuntimeError):
    """The index cannot answer now (one line saying why and what to do)."""


class SearchIndex(Protocol):
    """What an engine provides (see the module docstring)."""

    name: str

    def available(self) -> str | None:
        """None when the index can be used; else why not (one line)."""

    def index_version(self, conn: Connection, added: AddedVersion) -> None:
        """Index a publication version inside the transaction that adds it."""

    def index_publications(self, conn: Connection, docs: Sequence[Doc]) -> None:
        """Index publication versions, replacing what they had."""

    def clear(self, conn: Connection, site_id: int | None = None) -> None:
        """Forget the index (of one site's publications)."""

    def begin_rebuild(self) -> None:
        """Before every publication is indexed anew: stop keeping the index up to date as
        documents come, where building it in one pass at the end (``compact``) is faster.
        Until then a search raises ``IndexUnavailable``."""

    def compact(self) -> None:
        """After a rebuild: make the index as small as it can be."""

    def flush(self) -> None:
        """Write what the committed transactions' ``index_version`` left for later."""

    def matched(self, plan: Plan, scored: bool) -> FromClause:
        """A selectable of ``doc_id`` (and ``score``, higher better, when ``scored``): the
        documents the plan's engine expression finds."""

    def search(self, request: SearchRequest) -> Hits:
        """The hits for a request."""


@dataclass(frozen=True)
class IndexHook:
    """The parser's hook that feeds an index with each new publication version (a
    ``BatchedHook``: an engine may write its part after the transaction, many at once)."""

    index: SearchIndex

    def __call__(self, conn: Connection, added: AddedVersion) -> None:
        self.index.index_version(conn, added)

    def flush(self) -> None:
        self.index.flush()


def index_hook(index: SearchIndex) -> VersionHook:
    """The parser's hook that feeds ``index`` with each new publication version."""
    return IndexHook(index)


@dataclass(frozen=True)
class Found:
    """A hit of a page before its row is read."""

    publication_id: int
    score: float


class SharedSearch:
    """Indexing's bookkeeping and ``search`` for every engine, on top of its ``matched``
    and its ``_add`` and ``_forget`` of documents."""

    engine: Engine

    def matched(self, plan: Plan, scored: bool) -> FromClause:
        raise NotImplementedError

    def _add(self, conn: Connection, docs: Sequence[tuple[int, Doc, bool]]) -> None:
        """Add (document id, doc, whether it is its article's latest) to the index."""
        raise NotImplementedError

    def _relabel(self, conn: Connection, doc_ids: set[int]) -> None:
        """Documents indexed before whose latest mark changed (nothing, unless an engine
        keeps the mark in its index)."""

    def _forget(self, conn: Connection, docs: Sequence[tuple[int, Doc]]) -> None:
        raise NotImplementedError

    def _prepare(self, conn: Connection) -> None:
        """Set up a connection before it searches (nothing, unless an engine needs it)."""

    def begin_rebuild(self) -> None:
        """Nothing, unless an engine builds its index faster in one pass."""

    def compact(self) -> None:
        """Nothing, unless an engine's index grows loose as it is updated."""

    def flush(self) -> None:
        """Nothing, unless an engine defers its writes."""

    def index_version(self, conn: Connection, added: AddedVersion) -> None:
        self.index_publications(
            conn, read_docs(conn, publication.c.publication_id == added.publication_id)
        )

    def index_publications(self, conn: Connection, docs: Sequence[Doc]) -> None:
        if not docs:
            return
        new, old, changed = new_doc_ids(conn, docs)
        by_id = {doc.publication_id: doc for doc in docs}
        if old:
            self._forget(conn, [(doc_id, by_id[pid]) for pid, doc_id in old.items()])
        # A new document is its article's latest when its mark changed (from unmarked).
        self._add(
            conn,
            [(new[doc.publication_id], doc, new[doc.publication_id] in changed) for doc in docs],
        )
        others = changed - set(new.values())
        if others:
            self._relabel(conn, others)

    def search(self, request: SearchRequest) -> Hits:
        matcher = Matcher(request.query)
        engine_plan = plan(request.query)
        with self.engine.connect() as conn:
            self._prepare(conn)
            if engine_plan.exact:
                fast = self._fast(conn, request, engine_plan)
                if fast is None:
                    page, total, capped = self._exact(conn, request, engine_plan)
                else:
                    page, counted = fast
                    total, capped = min(counted, MAX_TOTAL), counted > MAX_TOTAL
            else:
                page, total, capped = self._checked(conn, request, engine_plan, matcher)
            return self._page(conn, request, matcher, page, total, capped)

    def _fast(
        self, conn: Connection, request: SearchRequest, engine_plan: Plan
    ) -> tuple[list[Found], int] | None:
        """An engine's own way to an exact plan's page and its count of all hits, or None
        (then SQL's)."""
        return None

    def _filters(self, request: SearchRequest) -> list[ColumnElement[bool]]:
        doc = search_doc.c
        filters = [doc.parser_version == request.parser_version]
        if not request.all_versions:
            filters.append(doc.latest == true())
        if request.site_ids:
            filters.append(doc.site_id.in_(request.site_ids))
        if request.since is not None:
            filters.append(doc.date >= request.since)
        if request.until is not None:
            filters.append(doc.date < request.until)
        return filters

    def _exact(
        self, conn: Connection, request: SearchRequest, engine_plan: Plan
    ) -> tuple[list[Found], int, bool]:
        """The page and the total from the engine alone (its answer is the answer).

        The total is counted on its own, stopping at ``MAX_TOTAL`` + 1, except for a page
        of latest versions with a site or date filter: that count would read every match
        (few pass the filter), so it comes with the page, from the same read."""
        doc = search_doc.c
        filters = self._filters(request)
        scored = self.matched(engine_plan, scored=True)
        order = [doc.date.desc(), doc.publication_id.desc()]
        if request.sort == "relevance":
            order.insert(0, scored.c.score.desc())
        ranked = (
            select(doc.publication_id, doc.article_id, doc.version, doc.latest, scored.c.score)
            .select_from(scored.join(search_doc, doc.doc_id == scored.c.doc_id))
            .where(*filters)
            .order_by(*order)
        )
        filtered = bool(request.site_ids) or request.since is not None or request.until is not None
        if filtered and not request.all_versions:
            rows = conn.execute(
                ranked.add_columns(func.count().over().label("total"))
                .offset(request.offset)
                .limit(request.limit)
            ).all()
            found = [Found(row.publication_id, round(float(row.score), 6)) for row in rows]
            if rows or request.offset == 0:
                total = rows[0].total if rows else 0
                return found, min(total, MAX_TOTAL), total > MAX_TOTAL
        total = self._count(conn, request, engine_plan, filters)
        if total == 0:
            return [], 0, False
        if request.all_versions:
            found = self._newest_versions(conn, request, engine_plan, ranked)
        else:
            page = conn.execute(ranked.offset(request.offset).limit(request.limit))
            found = [Found(row.publication_id, round(float(row.score), 6)) for row in page]
        return found, min(total, MAX_TOTAL), total > MAX_TOTAL

    def _count(
        self,
        conn: Connection,
        request: SearchRequest,
        engine_plan: Plan,
        filters: list[ColumnElement[bool]],
    ) -> int:
        """Hits (articles, with --all-versions) up to ``MAX_TOTAL`` + 1."""
        doc = search_doc.c
        counted = self.matched(engine_plan, scored=False)
        hits = (
            select(doc.article_id if request.all_versions else doc.doc_id)
            .select_from(counted.join(search_doc, doc.doc_id == counted.c.doc_id))
            .where(*filters)
        )
        if request.all_versions:
            hits = hits.distinct()
        return int(
            conn.execute(
                select(func.count()).select_from(hits.limit(MAX_TOTAL + 1).subquery())
            ).scalar_one()
        )

    def _newest_versions(
        self, conn: Connection, request: SearchRequest, engine_plan: Plan, ranked: Select[Any]
    ) -> list[Found]:
        """--all-versions' page: each article once, at its newest version that holds the
        query (within the filters), ranked among the others.

        The best matching versions are read in rank order, a few more than the page. A
        latest version is its article's newest; an older one counts only when no newer
        version of its article holds the query too, which is asked for those few. Sorting
        every hit for a window (each article's newest) took 1.5-2 times as long at
        1,000,000 articles; it is the way only when older versions fill the top of the
        ranking (an article edited many times), which one read cannot get past."""
        wanted = request.offset + request.limit
        step = 2 * wanted + 16
        rows = conn.execute(ranked.limit(step)).all()
        older = [row for row in rows if not row.latest]
        outranked = self._newer_match(conn, request, engine_plan, older)
        placed: set[int] = set()
        found: list[Found] = []
        for row in rows:
            if row.article_id in placed or (row.article_id, row.version) in outranked:
                continue
            placed.add(row.article_id)
            found.append(Found(row.publication_id, round(float(row.score), 6)))
        if len(found) < wanted and len(rows) == step:
            found = self._newest_by_window(conn, request, engine_plan)
        return found[request.offset : wanted]

    def _newest_by_window(
        self, conn: Connection, request: SearchRequest, engine_plan: Plan
    ) -> list[Found]:
        """The first offset + limit articles, each at its newest version that holds the
        query, from a window over every matching version."""
        doc = search_doc.c
        scored = self.matched(engine_plan, scored=True)
        newest = func.row_number().over(partition_by=doc.article_id, order_by=doc.version.desc())
        inner = (
            select(doc.publication_id, doc.date, scored.c.score, newest.label("newest"))
            .select_from(scored.join(search_doc, doc.doc_id == scored.c.doc_id))
            .where(*self._filters(request))
            .subquery()
        )
        order = [inner.c.date.desc(), inner.c.publication_id.desc()]
        if request.sort == "relevance":
            order.insert(0, inner.c.score.desc())
        page = conn.execute(
            select(inner.c.publication_id, inner.c.score)
            .where(inner.c.newest == 1)
            .order_by(*order)
            .limit(request.offset + request.limit)
        )
        return [Found(row.publication_id, round(float(row.score), 6)) for row in page]

    def _newer_match(
        self, conn: Connection, request: SearchRequest, engine_plan: Plan, older: list[Any]
    ) -> set[tuple[int, int]]:
        """Which of these (article, version) rows have a newer version of their article
        that passes the filters and holds the query."""
        if not older:
            return set()
        doc = search_doc.c
        oldest: dict[int, int] = {}
        for row in older:
            oldest[row.article_id] = min(oldest.get(row.article_id, row.version), row.version)
        versions = conn.execute(
            select(doc.doc_id, doc.article_id, doc.version).where(
                doc.article_id.in_(list(oldest)), *self._filters(request)
            )
        ).all()
        newer = {v.doc_id: v for v in versions if v.version > oldest[v.article_id]}
        if not newer:
            return set()
        matched = self.matched(engine_plan, scored=False)
        newest: dict[int, int] = {}
        for doc_id in conn.execute(
            select(matched.c.doc_id).where(matched.c.doc_id.in_(list(newer)))
        ).scalars():
            version = newer[doc_id]
            newest[version.article_id] = max(newest.get(version.article_id, 0), version.version)
        return {
            (row.article_id, row.version)
            for row in older
            if newest.get(row.article_id, 0) > row.version
        }

    def _checked(
        self, conn: Connection, request: SearchRequest, engine_plan: Plan, matcher: Matcher
    ) -> tuple[list[Found], int, bool]:
        """The engine's candidates, newest first, each checked on its text (``BATCH`` read
        at a time); relevance from ``Matcher.score``."""
        doc = search_doc.c
        matched = self.matched(engine_plan, scored=False)
        keys = conn.execute(
            select(doc.publication_id, doc.article_id)
            .select_from(matched.join(search_doc, doc.doc_id == matched.c.doc_id))
            .where(*self._filters(request))
            .order_by(doc.date.desc(), doc.publication_id.desc())
        ).all()
        seen: set[int] = set()
        found: list[Found] = []
        capped = False
        for start in range(0, len(keys), BATCH):
            chunk = [key for key in keys[start : start + BATCH] if key.article_id not in seen]
            pub = publication.c
            texts = {
                row.publication_id: row
                for row in conn.execute(
                    select(pub.publication_id, pub.title, pub.publication_text).where(
                        pub.publication_id.in_([key.publication_id for key in chunk])
                    )
                )
            }
            for key in chunk:
                check()  # a request's deadline: texts of megabytes take a while each
                row = texts[key.publication_id]
                title, body = normalize(row.title), normalize(row.publication_text)
                if key.article_id in seen or not matcher.holds(title, body):
                    continue
                if len(found) == MAX_TOTAL:
                    capped = True
                    break
                seen.add(key.article_id)
                found.append(Found(key.publication_id, matcher.score(title, body)))
            if capped:
                break
        if request.sort == "relevance":
            # Stable: equal scores keep the newest-first order they were found in.
            found.sort(key=lambda f: -f.score)
        return found[request.offset : request.offset + request.limit], len(found), capped

    def _page(
        self,
        conn: Connection,
        request: SearchRequest,
        matcher: Matcher,
        page: list[Found],
        total: int,
        capped: bool,
    ) -> Hits:
        rows = {}
        if page:
            # The site's name as a subquery: joined, MariaDB read the sites first and each
            # one's publications by the site index (66 ms for 20 hits at 1,000,000).
            name = select(site.c.name).where(site.c.site_id == publication.c.site_id)
            url = select(article.c.url).where(article.c.article_id == publication.c.article_id)
            rows = {
                row.publication_id: row
                for row in conn.execute(
                    select(
                        publication,
                        name.scalar_subquery().label("site_name"),
                        url.scalar_subquery().label("article_url"),
                    ).where(publication.c.publication_id.in_([f.publication_id for f in page]))
                )
            }
        spans = {}
        if request.all_versions and rows:
            spans = self._spans(conn, request, matcher, {row.article_id for row in rows.values()})
        hits = []
        for item in page:
            row = rows[item.publication_id]
            hits.append(
                Hit(
                    publication_id=row.publication_id,
                    article_id=row.article_id,
                    version=row.version,
                    site_id=row.site_id,
                    site=row.site_name,
                    url=row.article_url,
                    canonical_url=row.canonical_url,
                    title=row.title,
                    published_at=row.published_at,
                    score=item.score,
                    snippet=matcher.snippet(row.title, row.publication_text),
                    versions=spans.get(row.article_id) if request.all_versions else None,
                )
            )
        return Hits(tuple(hits), total, capped)

    def _spans(
        self, conn: Connection, request: SearchRequest, matcher: Matcher, article_ids: set[int]
    ) -> dict[int, tuple[Span, ...]]:
        """For each article, the spans during which its versions held the query, less the
        times it was deleted (from a ``deleted`` event to the next ``restored`` one)."""
        pub = publication.c
        versions = conn.execute(
            select(pub.article_id, pub.first_seen_at, pub.title, pub.publication_text)
            .where(
                pub.article_id.in_(sorted(article_ids)),
                pub.parser_version == request.parser_version,
            )
            .order_by(pub.article_id, pub.version)
        ).all()
        held: dict[int, list[Span]] = {article_id: [] for article_id in article_ids}
        for article_id, rows in itertools.groupby(versions, key=lambda row: row.article_id):
            spans = held[article_id]
            start: int | None = None
            for row in rows:
                check()
                holds = matcher.holds(normalize(row.title), normalize(row.publication_text))
                if holds and start is None:
                    start = row.first_seen_at
                elif not holds and start is not None:
                    spans.append(Span(start, row.first_seen_at))
                    start = None
            if start is not None:
                spans.append(Span(start, None))
        gone = deletions(conn, article_ids)
        return {
            article_id: tuple(without_deletions(spans, gone.get(article_id, [])))
            for article_id, spans in held.items()
        }


def deletions(conn: Connection, article_ids: set[int]) -> dict[int, list[tuple[int, int | None]]]:
    """When each article was deleted: from each ``deleted`` event's answer to the next
    ``restored`` one's (None: still deleted)."""
    event = article_event.c
    found: dict[int, list[tuple[int, int | None]]] = {}
    for article_id, kind, at in conn.execute(
        select(event.article_id, event.kind, event.after_snapshot_at)
        .where(event.article_id.in_(sorted(article_ids)), event.kind.in_(("deleted", "restored")))
        .order_by(event.article_id, event.after_snapshot_at, event.event_id)
    ):
        gone = found.setdefault(article_id, [])
        if kind == "deleted" and (not gone or gone[-1][1] is not None):
            gone.append((at, None))
        elif kind == "restored" and gone and gone[-1][1] is None:
            gone[-1] = (gone[-1][0], at)
    return found


def without_deletions(spans: list[Span], gone: list[tuple[int, int | None]]) -> list[Span]:
    """``spans`` less the times in ``gone``.

    >>> without_deletions([Span(10, None)], [(20, 30), (40, None)])
    [Span(start=10, end=20), Span(start=30, end=40)]
    >>> without_deletions([Span(10, 15), Span(25, None)], [(20, 30)])
    [Span(start=10, end=15), Span(start=30, end=None)]
    """
    for low, high in gone:
        cut: list[Span] = []
        for span in spans:
            before = span.end is not None and span.end <= low
            if before or (high is not None and span.start >= high):
                cut.append(span)
                continue
            if span.start < low:
                cut.append(Span(span.start, low))
            if high is not None and (span.end is None or span.end > high):
                cut.append(Span(high, span.end))
        spans = cut
    return spans


def new_doc_ids(
    conn: Connection, docs: Sequence[Doc]
) -> tuple[dict[int, int], dict[int, int], set[int]]:
    """A new document id for each publication, the ids they had before (forgotten now),
    and the document ids whose latest mark changed: an index never reuses a document id,
    so a stale entry never names a live version (a trigger forgets a deleted
    publication's, migration 0012). Each article's newest version indexed is marked its
    latest."""
    doc = search_doc.c
    publication_ids = [d.publication_id for d in docs]
    old = {
        row.publication_id: row.doc_id
        for row in conn.execute(
            select(doc.publication_id, doc.doc_id).where(doc.publication_id.in_(publication_ids))
        )
    }
    if old:
        conn.execute(search_doc.delete().where(doc.publication_id.in_(list(old))))
    conn.execute(
        search_doc.insert(),
        [
            {
                "publication_id": d.publication_id,
                "article_id": d.article_id,
                "parser_version": d.parser_version,
                "version": d.version,
                "site_id": d.site_id,
                "date": d.date,
                "latest": False,
            }
            for d in docs
        ],
    )
    new = {
        row.publication_id: row.doc_id
        for row in conn.execute(
            select(doc.publication_id, doc.doc_id).where(doc.publication_id.in_(publication_ids))
        )
    }
    changed = mark_latest(conn, {(d.parser_version, d.article_id) for d in docs})
    return new, old, changed


def mark_latest(conn: Connection, articles: set[tuple[str, int]]) -> set[int]:
    """Mark each (parser version, article)'s newest indexed version, and only it; return
    the document ids whose mark changed (a new document counts as unmarked before)."""
    doc = search_doc.c
    changed: set[int] = set()
    for parser_version in {pv for pv, _ in articles}:
        ids = sorted(a for pv, a in articles if pv == parser_version)
        for start in range(0, len(ids), 500):
            rows = conn.execute(
                select(doc.doc_id, doc.article_id, doc.version, doc.latest).where(
                    doc.parser_version == parser_version,
                    doc.article_id.in_(ids[start : start + 500]),
                )
            ).all()
            newest: dict[int, int] = {}
            for row in rows:
                newest[row.article_id] = max(newest.get(row.article_id, 0), row.version)
            marked = {row.doc_id for row in rows if row.latest}
            latest = {row.doc_id for row in rows if row.version == newest[row.article_id]}
            for ids_, value in ((marked - latest, False), (latest - marked, True)):
                if ids_:
                    conn.execute(
                        search_doc.update().where(doc.doc_id.in_(sorted(ids_))).values(latest=value)
                    )
            changed |= marked ^ latest
    return changed


def site_doc_ids(conn: Connection, site_id: int | None) -> list[tuple[int, int]]:
    """(doc_id, publication_id) of every indexed publication (of one site)."""
    query = select(search_doc.c.doc_id, search_doc.c.publication_id)
    if site_id is not None:
        query = query.join(
            publication, publication.c.publication_id == search_doc.c.publication_id
        ).where(publication.c.site_id == site_id)
    return [(row.doc_id, row.publication_id) for row in conn.execute(query)]
