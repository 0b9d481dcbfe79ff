"""Clusters as ``scrapy copies`` shows them: each member with its site, archived URL, when
it was first seen, its similarity to the first and whether its script was converted."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, bindparam, func, select
from sqlalchemy.engine import Engine

from zeroarchive.copies.fingerprint import NO_SCRIPT
from zeroarchive.storage.schema import article, copy_cluster, copy_doc, publication, site

#: Clusters read per round trip when listing.
_BATCH = 200


@dataclass(frozen=True)
class Member:
    article_id: int
    site: str
    url: str
    first_seen_at: int
    #: When the page says it was published (None when it does not).
    published_at: int | None
    similarity: float
    #: "same" or "converted": its script against the first's.
    script: str
    site_id: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "article_id": self.article_id,
            "site": self.site,
            "url": self.url,
            "first_seen_at": self.first_seen_at,
            "similarity": self.similarity,
            "script": self.script,
        }


@dataclass(frozen=True)
class Cluster:
    cluster_id: int
    #: First seen first; the first is the first.
    members: tuple[Member, ...]

    @property
    def first(self) -> Member:
        return self.members[0]

    def as_dict(self) -> dict[str, Any]:
        first = self.first.as_dict()
        return {
            "cluster": self.cluster_id,
            "first": {key: first[key] for key in ("article_id", "site", "url", "first_seen_at")},
            "members": [member.as_dict() for member in self.members],
        }


def _member_rows() -> Select[Any]:
    """The members' columns and joins (each member's site, URL and published time)."""
    doc = copy_doc.c
    return (
        select(
            doc.cluster_id,
            doc.article_id,
            doc.site_id,
            site.c.name,
            article.c.url,
            doc.first_seen_at,
            publication.c.published_at,
            doc.similarity,
            doc.script,
        )
        .join(article, article.c.article_id == doc.article_id)
        .join(site, site.c.site_id == doc.site_id)
        .join(publication, publication.c.publication_id == doc.publication_id, isouter=True)
    )


def _members(engine: Engine, cluster_ids: Sequence[int]) -> dict[int, list[Any]]:
    doc = copy_doc.c
    query = (
        _member_rows()
        .where(doc.cluster_id.in_(cluster_ids))
        .order_by(doc.cluster_id, doc.first_seen_at, doc.article_id)
    )
    found: dict[int, list[Any]] = {}
    with engine.connect() as conn:
        for row in conn.execute(query):
            found.setdefault(int(row.cluster_id), []).append(row)
    return found


#: The article asked for by ``cluster_of``, joined to its cluster's members.
_ASKED = copy_doc.alias("asked")
#: ``cluster_of``'s one statement: on MariaDB each round trip waits for the server thread to
#: be scheduled, and under load that wait, not the work, was most of the answer's time
#: (two statements on two pooled connections, six round trips, before: bench/README.md).
_CLUSTER_OF = (
    _member_rows()
    .join(_ASKED, _ASKED.c.cluster_id == copy_doc.c.cluster_id)
    .where(_ASKED.c.article_id == bindparam("article_id"))
    .order_by(copy_doc.c.first_seen_at, copy_doc.c.article_id)
)


def _cluster(cluster_id: int, rows: list[Any], min_similarity: float | None) -> Cluster | None:
    first_script = rows[0].script
    members = []
    for index, row in enumerate(rows):
        similarity = 1.0 if index == 0 else float(row.similarity or 0.0)
        if index and min_similarity is not None and similarity < min_similarity:
            continue
        converted = NO_SCRIPT not in (row.script, first_script) and row.script != first_script
        members.append(
            Member(
                int(row.article_id),
                row.name,
                row.url,
                int(row.first_seen_at),
                None if row.published_at is None else int(row.published_at),
                similarity,
                "converted" if converted else "same",
                int(row.site_id),
            )
        )
    if len(members) < 2:
        return None
    return Cluster(cluster_id, tuple(members))


def cluster_of(
    engine: Engine, article_id: int, min_similarity: float | None = None
) -> Cluster | None:
    """The cluster the article is in (None: no copy of it is known)."""
    with engine.connect() as conn:
        rows = conn.execute(_CLUSTER_OF, {"article_id": int(article_id)}).all()
    return _cluster(int(rows[0].cluster_id), list(rows), min_similarity) if rows else None


def clusters(
    engine: Engine,
    site_ids: Sequence[int] = (),
    since: int | None = None,
    min_similarity: float | None = None,
    after: int = 0,
) -> Iterator[Cluster]:
    """Every cluster, oldest id first; with ``site_ids``, those with a member on one of
    them; with ``since``, those with a member first seen at or after it; with ``after``,
    those of a greater id."""
    doc = copy_doc.c
    last = after
    while True:
        query = (
            select(copy_cluster.c.cluster_id)
            .where(copy_cluster.c.cluster_id > last)
            .order_by(copy_cluster.c.cluster_id)
            .limit(_BATCH)
        )
        if site_ids:
            query = query.where(
                copy_cluster.c.cluster_id.in_(
                    select(doc.cluster_id).where(doc.site_id.in_(site_ids), doc.cluster_id > last)
                )
            )
        if since is not None:
            query = query.where(
                copy_cluster.c.cluster_id.in_(
                    select(doc.cluster_id).where(doc.first_seen_at >= since, doc.cluster_id > last)
                )
            )
        with engine.connect() as conn:
            ids = [int(value) for value in conn.execute(query).scalars()]
        if not ids:
            return
        members = _members(engine, ids)
        for cluster_id in ids:
            rows = members.get(cluster_id)
            found = _cluster(cluster_id, rows, min_similarity) if rows else None
            if found is not None:
                yield found
        last = ids[-1]


def cluster_sizes(engine: Engine, article_ids: Collection[int]) -> dict[int, tuple[int, int]]:
    """{article id: (its cluster, the cluster's members)} of those of ``article_ids`` in
    a cluster."""
    if not article_ids:
        return {}
    doc = copy_doc.c
    with engine.connect() as conn:
        found = {
            int(row.article_id): int(row.cluster_id)
            for row in conn.execute(
                select(doc.article_id, doc.cluster_id).where(
                    doc.article_id.in_(sorted(article_ids)), doc.cluster_id.is_not(None)
                )
            )
        }
        if not found:
            return {}
        sizes = {
            int(cluster): int(count)
            for cluster, count in conn.execute(
                select(doc.cluster_id, func.count())
                .where(doc.cluster_id.in_(sorted(set(found.values()))))
                .group_by(doc.cluster_id)
            )
        }
    return {article_id: (cluster, sizes[cluster]) for article_id, cluster in found.items()}
