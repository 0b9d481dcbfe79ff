"""The copy tables (storage/schema.py, migration 0025) as the index reads and writes them,
on a connection of the caller's transaction: the same SQL on SQLite and MariaDB, save the
counters' upsert (``storage.dialect.add_counts``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, func, select, update
from sqlalchemy.engine import Connection

from zeroarchive.storage.dialect import add_counts
from zeroarchive.storage.schema import (
    article,
    copy_band,
    copy_block,
    copy_cluster,
    copy_doc,
    publication,
)

#: Band keys asked for in one statement (a body has ``BANDS`` of them).
_IN_LIMIT = 500


@dataclass(frozen=True)
class Doc:
    """One article's fingerprinted body, as ``copy_doc`` has it."""

    article_id: int
    publication_id: int
    site_id: int
    first_seen_at: int
    script: int
    bands: bytes
    cluster_id: int | None
    similarity: float | None


def _doc(row: object) -> Doc:
    return Doc(*row)  # type: ignore[misc]


_DOC_COLUMNS = (
    copy_doc.c.article_id,
    copy_doc.c.publication_id,
    copy_doc.c.site_id,
    copy_doc.c.first_seen_at,
    copy_doc.c.script,
    copy_doc.c.bands,
    copy_doc.c.cluster_id,
    copy_doc.c.similarity,
)


def get_doc(conn: Connection, article_id: int) -> Doc | None:
    row = conn.execute(select(*_DOC_COLUMNS).where(copy_doc.c.article_id == article_id)).first()
    return None if row is None else _doc(row)


def get_docs(conn: Connection, article_ids: Collection[int]) -> dict[int, Doc]:
    if not article_ids:
        return {}
    rows = conn.execute(select(*_DOC_COLUMNS).where(copy_doc.c.article_id.in_(article_ids)))
    return {row.article_id: _doc(row) for row in rows}


def cluster_docs(conn: Connection, cluster_id: int) -> list[Doc]:
    """A cluster's members, first seen first."""
    rows = conn.execute(
        select(*_DOC_COLUMNS)
        .where(copy_doc.c.cluster_id == cluster_id)
        .order_by(copy_doc.c.first_seen_at, copy_doc.c.article_id)
    )
    return [_doc(row) for row in rows]


def put_doc(conn: Connection, doc: Doc, replace: bool) -> None:
    values = {
        "publication_id": doc.publication_id,
        "site_id": doc.site_id,
        "first_seen_at": doc.first_seen_at,
        "script": doc.script,
        "bands": doc.bands,
        "cluster_id": doc.cluster_id,
        "similarity": doc.similarity,
    }
    if replace:
        conn.execute(
            update(copy_doc).where(copy_doc.c.article_id == doc.article_id).values(**values)
        )
    else:
        conn.execute(copy_doc.insert().values(article_id=doc.article_id, **values))


def add_docs(conn: Connection, docs: Sequence[Doc], keys: Sequence[Sequence[int]]) -> None:
    """New articles' rows and their band keys, in two statements."""
    conn.execute(
        copy_doc.insert(),
        [
            {
                "article_id": doc.article_id,
                "publication_id": doc.publication_id,
                "site_id": doc.site_id,
                "first_seen_at": doc.first_seen_at,
                "script": doc.script,
                "bands": doc.bands,
                "cluster_id": doc.cluster_id,
                "similarity": doc.similarity,
            }
            for doc in docs
        ],
    )
    conn.execute(
        copy_band.insert(),
        [
            {"band_key": key, "article_id": doc.article_id}
            for doc, mine in zip(docs, keys, strict=True)
            for key in mine
        ],
    )


def drop_doc(conn: Connection, article_id: int) -> None:
    conn.execute(delete(copy_doc).where(copy_doc.c.article_id == article_id))


def add_bands(conn: Connection, article_id: int, keys: Sequence[int]) -> None:
    if keys:
        conn.execute(
            copy_band.insert(), [{"band_key": key, "article_id": article_id} for key in keys]
        )


def drop_bands(conn: Connection, article_id: int, keys: Sequence[int]) -> None:
    if keys:
        conn.execute(
            delete(copy_band).where(
                copy_band.c.band_key.in_(keys), copy_band.c.article_id == article_id
            )
        )


def sharing(conn: Connection, keys: Sequence[int], article_id: int) -> set[int]:
    """The other articles with a band key among ``keys``."""
    found: set[int] = set()
    for start in range(0, len(keys), _IN_LIMIT):
        found.update(
            conn.execute(
                select(copy_band.c.article_id)
                .where(copy_band.c.band_key.in_(keys[start : start + _IN_LIMIT]))
                .distinct()
            ).scalars()
        )
    found.discard(article_id)
    return found


def sharing_by_key(conn: Connection, keys: Sequence[int]) -> dict[int, list[int]]:
    """The articles under each of ``keys`` (those under none are left out)."""
    found: dict[int, list[int]] = {}
    for start in range(0, len(keys), _IN_LIMIT):
        rows = conn.execute(
            select(copy_band.c.band_key, copy_band.c.article_id).where(
                copy_band.c.band_key.in_(keys[start : start + _IN_LIMIT])
            )
        )
        for key, article_id in rows:
            found.setdefault(int(key), []).append(int(article_id))
    return found


def count_blocks(conn: Connection, counts: Mapping[tuple[int, int], int]) -> None:
    """Add to how many articles of a site had an edge line: {(site, line hash): articles}."""
    rows = [
        {"site_id": site_id, "block": block, "articles": count}
        for (site_id, block), count in sorted(counts.items())
    ]
    add_counts(conn, copy_block, rows, "articles")


def reached(conn: Connection, site_id: int, blocks: Collection[int], count: int) -> set[int]:
    """Those of ``blocks`` that have just now been on ``count`` of the site's articles."""
    if not blocks:
        return set()
    return set(
        conn.execute(
            select(copy_block.c.block).where(
                copy_block.c.site_id == site_id,
                copy_block.c.block.in_(sorted(blocks)),
                copy_block.c.articles == count,
            )
        ).scalars()
    )


def clustered(conn: Connection, site_id: int) -> list[Doc]:
    """The site's articles that are in a cluster."""
    rows = conn.execute(
        select(*_DOC_COLUMNS)
        .where(copy_doc.c.site_id == site_id, copy_doc.c.cluster_id.is_not(None))
        .order_by(copy_doc.c.article_id)
    )
    return [_doc(row) for row in rows]


def boilerplate(conn: Connection, site_id: int, least: int) -> frozenset[int]:
    """The site's edge lines that at least ``least`` of its articles had."""
    return frozenset(
        conn.execute(
            select(copy_block.c.block).where(
                copy_block.c.site_id == site_id, copy_block.c.articles >= least
            )
        ).scalars()
    )


def first_seen(conn: Connection, article_id: int, seen: int) -> int:
    """When the article was first snapshotted (``seen`` if no earlier snapshot is known)."""
    first = conn.execute(
        select(article.c.first_snapshot_at).where(article.c.article_id == article_id)
    ).scalar()
    return min(int(first), seen) if first else seen


def publication_text(conn: Connection, publication_id: int) -> str | None:
    return conn.execute(
        select(publication.c.publication_text).where(publication.c.publication_id == publication_id)
    ).scalar()


def new_cluster(conn: Connection, first_article_id: int, now: int) -> int:
    result = conn.execute(
        copy_cluster.insert().values(first_article_id=first_article_id, created_at=now)
    )
    return int(result.inserted_primary_key[0])  # type: ignore[index]


def set_first(conn: Connection, cluster_id: int, first_article_id: int) -> None:
    conn.execute(
        update(copy_cluster)
        .where(copy_cluster.c.cluster_id == cluster_id)
        .values(first_article_id=first_article_id)
    )


def cluster_first(conn: Connection, cluster_id: int) -> int | None:
    return conn.execute(
        select(copy_cluster.c.first_article_id).where(copy_cluster.c.cluster_id == cluster_id)
    ).scalar()


def move_members(conn: Connection, from_ids: Collection[int], to_id: int) -> None:
    """Merge clusters: their members join ``to_id``, and they are gone."""
    if not from_ids:
        return
    conn.execute(
        update(copy_doc).where(copy_doc.c.cluster_id.in_(from_ids)).values(cluster_id=to_id)
    )
    conn.execute(delete(copy_cluster).where(copy_cluster.c.cluster_id.in_(from_ids)))


def set_membership(
    conn: Connection, article_id: int, cluster_id: int | None, similarity: float | None
) -> None:
    conn.execute(
        update(copy_doc)
        .where(copy_doc.c.article_id == article_id)
        .values(cluster_id=cluster_id, similarity=similarity)
    )


def cluster_size(conn: Connection, cluster_id: int) -> int:
    return int(
        conn.execute(select(func.count()).where(copy_doc.c.cluster_id == cluster_id)).scalar_one()
    )


def drop_cluster(conn: Connection, cluster_id: int) -> None:
    conn.execute(
        update(copy_doc)
        .where(copy_doc.c.cluster_id == cluster_id)
        .values(cluster_id=None, similarity=None)
    )
    conn.execute(delete(copy_cluster).where(copy_cluster.c.cluster_id == cluster_id))


def clear(conn: Connection) -> None:
    """Every copy table emptied (a rebuild's start)."""
    for table in (copy_band, copy_doc, copy_block, copy_cluster):
        conn.execute(delete(table))
