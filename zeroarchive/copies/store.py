"""The copy tables (storage/schema.py, migration 0025) as the index reads and writes them,
on a connection of the caller's transaction: the same SQL on SQLite and MariaDB, save the
counters' upsert (``storage.dialect.add_counts``).

The statements run often (a rebuild makes several per body) go to the driver as written
(``_run``: SQL text with ``?`` for parameters, integer lists written in): SQLAlchemy's
statement building cost more than the database's work on them."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection

from zeroarchive.storage.schema import (
    copy_band,
    copy_block,
    copy_cluster,
    copy_doc,
)

#: Band keys asked for in one statement (a body has ``BANDS`` of them).
_IN_LIMIT = 2000


def _run(conn: Connection, sql: str, params: Sequence[Any] | Sequence[Sequence[Any]] = ()) -> Any:
    """``sql`` (``?`` for each parameter) on the driver; a list of tuples runs it once per
    tuple (the driver's ``executemany``)."""
    if conn.dialect.paramstyle != "qmark":
        sql = sql.replace("?", "%s")
    return conn.exec_driver_sql(sql, params)


#: Rows written into one INSERT (``_insert``).
_ROWS_PER_STATEMENT = 5000


def _literal(value: object) -> str:
    """A number, bytes or None as SQL (never text from outside: anything else is refused)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool) or not isinstance(value, int | float | bytes):
        raise TypeError(f"not written into SQL: {type(value).__name__}")
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"not a finite number: {value}")
        return repr(value)
    return str(int(value))


def _insert(conn: Connection, head: str, rows: Sequence[Sequence[Any]], tail: str = "") -> None:
    """``head`` (``INSERT INTO t (a, b)``) with ``rows`` written in as VALUES, a few
    thousand a statement: PyMySQL's ``executemany`` escapes each value in Python (~17 µs a
    row, most of a MariaDB rebuild's writing), SQLite's is no faster than this."""
    for start in range(0, len(rows), _ROWS_PER_STATEMENT):
        values = ",".join(
            "(" + ",".join(map(_literal, row)) + ")"
            for row in rows[start : start + _ROWS_PER_STATEMENT]
        )
        conn.exec_driver_sql(f"{head} VALUES {values}{tail}")


def _insert_columns(
    conn: Connection, head: str, columns: Sequence[np.ndarray], tail: str = ""
) -> None:
    """``_insert`` of rows given as integer columns (numpy): each row formatted by one
    ``str.format`` (a rebuild writes millions of band rows; ``_literal`` per value took
    ~3x as long)."""
    row = "(" + ",".join("{}" for _ in columns) + ")"
    lists = [np.asarray(column, dtype=np.int64).tolist() for column in columns]
    total = len(lists[0]) if lists else 0
    for start in range(0, total, _ROWS_PER_STATEMENT):
        end = start + _ROWS_PER_STATEMENT
        values = ",".join(map(row.format, *(values[start:end] for values in lists)))
        conn.exec_driver_sql(f"{head} VALUES {values}{tail}")


def _ints(values: Collection[int]) -> str:
    """Integers written into SQL (never text from outside: ``int`` refuses anything else)."""
    return ",".join(str(int(value)) for value in values)


def _rows_in(conn: Connection, select: str, column: str, values: Collection[int]) -> Iterator[Any]:
    """The rows of ``select WHERE column IN values``, asked ``_IN_LIMIT`` values at a time."""
    ordered = sorted(values)
    for start in range(0, len(ordered), _IN_LIMIT):
        chunk = _ints(ordered[start : start + _IN_LIMIT])
        yield from _run(conn, f"{select} WHERE {column} IN ({chunk})")


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


_SELECT_DOC = "SELECT " + ", ".join(column.name for column in _DOC_COLUMNS) + " FROM copy_doc"


_DOC_OF_D = ", ".join("d." + column.name for column in _DOC_COLUMNS)


def doc_and_first_snapshot(
    conn: Connection,
    article_id: int,
    lines: tuple[int, Collection[int], int] | None = None,
) -> tuple[Doc | None, int | None, set[int]]:
    """The article's ``copy_doc`` row (None: not fingerprinted), when it was first
    snapshotted (None: not known) and, given ``lines`` (site, line hashes, count), those of
    the lines that at least ``count`` of the site's articles had at either end (its
    boilerplate among them), in one statement (were three round trips a body; reading the
    site's whole boilerplate scanned all of its ``copy_block`` rows, 18,000 a site at
    200,000 publications)."""
    number = int(article_id)
    sql = (
        f"SELECT 0, (SELECT first_snapshot_at FROM Article WHERE article_id = {number}),"
        f" {_DOC_OF_D} FROM (SELECT 1 AS one) AS one LEFT JOIN copy_doc d ON d.article_id ="
        f" {number}"
    )
    if lines is not None and lines[1]:
        sql += _site_lines(lines, ">=", len(_DOC_COLUMNS))
    doc, first, found = None, None, set()
    for row in _run(conn, sql):
        if row[0]:
            found.add(int(row[1]))
            continue
        first = None if row[1] is None else int(row[1])
        doc = None if row[2] is None else _doc(row[2:])
    return doc, first, found


def _site_lines(lines: tuple[int, Collection[int], int], compare: str, nulls: int) -> str:
    """A ``UNION ALL`` of those of ``lines`` (site, line hashes, count) whose article count
    compares so to the count, as rows of a 1, the line's hash and ``nulls`` NULLs (the
    statement's own rows start with 0)."""
    site, hashes, count = lines
    padding = ", NULL" * nulls
    return (
        f" UNION ALL SELECT 1, block{padding} FROM copy_block WHERE site_id = {int(site)}"
        f" AND block IN ({_ints(sorted({int(h) for h in hashes}))}) AND articles {compare}"
        f" {int(count)}"
    )


def boilerplate_among(
    conn: Connection, lines: Mapping[int, Collection[int]], least: int
) -> set[tuple[int, int]]:
    """(site, line hash) of those of ``lines`` (by site) that at least ``least`` of the
    site's articles had: a site's boilerplate among them, one statement for all."""
    asked = [(int(site), sorted(blocks)) for site, blocks in sorted(lines.items()) if blocks]
    if not asked:
        return set()
    where = " OR ".join(
        f"(site_id = {site} AND block IN ({_ints(blocks)}))" for site, blocks in asked
    )
    rows = _run(
        conn, f"SELECT site_id, block FROM copy_block WHERE ({where}) AND articles >= {int(least)}"
    )
    return {(int(site), int(block)) for site, block in rows}


@dataclass(frozen=True)
class Sharing:
    """What ``sharing_docs`` found: the candidates by article id, the first article of
    each of their clusters, and the edge lines asked about that have just reached the
    boilerplate count (``reached``; empty when none were asked about)."""

    docs: dict[int, Doc]
    firsts: dict[int, int]
    reached: set[int]


def sharing_docs(
    conn: Connection,
    keys: Sequence[int],
    article_id: int,
    blocks: tuple[int, Collection[int], int] | None = None,
) -> Sharing:
    """The other articles with a band key among ``keys``, as their ``copy_doc`` rows, by
    article id: one statement, each article once (a join gave a verbatim copy's row once
    per band, 18 times, and a story with 20 copies 360 rows for PyMySQL to decode), with
    the first article of each one's cluster (the cluster's row joined: a body joining a
    cluster whose first is among them reads no other member). ``blocks`` (site, edge
    lines, count): ``reached`` of them asked in the same statement (a ``UNION ALL``, its
    rows told apart by their first column), one round trip less a body."""
    docs: dict[int, Doc] = {}
    firsts: dict[int, int] = {}
    found: set[int] = set()
    ordered = sorted({int(key) for key in keys})
    for number, start in enumerate(range(0, max(len(ordered), 1), _IN_LIMIT)):
        part = ordered[start : start + _IN_LIMIT]
        sql = (
            f"SELECT 0, {_DOC_OF_D}, c.first_article_id FROM copy_doc d"
            " LEFT JOIN copy_cluster c ON c.cluster_id = d.cluster_id"
            " WHERE d.article_id IN (SELECT b.article_id FROM copy_band b"
            f" WHERE b.band_key IN ({_ints(part) or 'NULL'})) AND d.article_id <> {int(article_id)}"
        )
        if blocks is not None and blocks[1] and number == 0:
            sql += _site_lines(blocks, "=", len(_DOC_COLUMNS))
        for row in _run(conn, sql):
            if row[0]:
                found.add(int(row[1]))
                continue
            doc = _doc(row[1:-1])
            docs[doc.article_id] = doc
            if doc.cluster_id is not None and row[-1] is not None:
                firsts[int(doc.cluster_id)] = int(row[-1])
    return Sharing(docs, firsts, found)


def cluster_docs(conn: Connection, cluster_id: int) -> tuple[list[Doc], int | None]:
    """A cluster's members, first seen first, and the first it names (None: no such
    cluster), in one statement."""
    rows = _run(
        conn,
        f"SELECT {_DOC_OF_D}, c.first_article_id FROM copy_doc d"
        " JOIN copy_cluster c ON c.cluster_id = d.cluster_id"
        " WHERE d.cluster_id = ? ORDER BY d.first_seen_at, d.article_id",
        (int(cluster_id),),
    ).all()
    first = int(rows[0][-1]) if rows else None
    return [_doc(row[:-1]) for row in rows], first


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
        add_docs(conn, [doc], [])


_INSERT_DOC = "INSERT INTO copy_doc (" + ", ".join(column.name for column in _DOC_COLUMNS) + ")"


def _row(doc: Doc) -> tuple[Any, ...]:
    return (
        doc.article_id,
        doc.publication_id,
        doc.site_id,
        doc.first_seen_at,
        doc.script,
        doc.bands,
        doc.cluster_id,
        doc.similarity,
    )


def add_docs(conn: Connection, docs: Sequence[Doc], keys: Sequence[Sequence[int]]) -> None:
    """New articles' rows and their band keys (``keys``: each doc's, or none), in two
    statements."""
    _insert(conn, _INSERT_DOC, [_row(doc) for doc in docs])
    rows = [
        (int(key), doc.article_id) for doc, mine in zip(docs, keys, strict=False) for key in mine
    ]
    _insert(conn, "INSERT INTO copy_band (band_key, article_id)", rows)


def drop_doc(conn: Connection, article_id: int) -> None:
    conn.execute(delete(copy_doc).where(copy_doc.c.article_id == article_id))


def add_bands(conn: Connection, article_id: int, keys: Sequence[int]) -> None:
    _insert(
        conn,
        "INSERT INTO copy_band (band_key, article_id)",
        [(int(key), int(article_id)) for key in keys],
    )


def drop_bands(conn: Connection, article_id: int, keys: Sequence[int]) -> None:
    if keys:
        _run(
            conn,
            f"DELETE FROM copy_band WHERE band_key IN ({_ints(keys)}) AND article_id = ?",
            (int(article_id),),
        )


def _block_upsert(conn: Connection) -> str:
    if conn.dialect.name == "sqlite":
        return " ON CONFLICT (site_id, block) DO UPDATE SET articles = articles + excluded.articles"
    return " ON DUPLICATE KEY UPDATE articles = articles + VALUES(articles)"


def count_blocks(conn: Connection, counts: Mapping[tuple[int, int], int]) -> None:
    """Add to how many articles of a site had an edge line: {(site, line hash): articles}."""
    if not counts:
        return
    _insert(
        conn,
        "INSERT INTO copy_block (site_id, block, articles)",
        [(int(site), int(block), int(count)) for (site, block), count in sorted(counts.items())],
        _block_upsert(conn),
    )


def count_block_columns(
    conn: Connection, sites: np.ndarray, blocks: np.ndarray, counts: np.ndarray
) -> None:
    """``count_blocks`` of counts given as columns, in the table's key order."""
    _insert_columns(
        conn,
        "INSERT INTO copy_block (site_id, block, articles)",
        (sites, blocks, counts),
        _block_upsert(conn),
    )


def reached(conn: Connection, site_id: int, blocks: Collection[int], count: int) -> set[int]:
    """Those of ``blocks`` that have just now been on ``count`` of the site's articles."""
    if not blocks:
        return set()
    rows = _run(
        conn,
        f"SELECT block FROM copy_block WHERE site_id = ? AND block IN ({_ints(sorted(blocks))})"
        " AND articles = ?",
        (int(site_id), int(count)),
    )
    return {int(row[0]) for row in rows}


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


def publication_text(conn: Connection, publication_id: int) -> str | None:
    return publication_texts(conn, [publication_id]).get(publication_id)


def publication_texts(conn: Connection, publication_ids: Collection[int]) -> dict[int, str]:
    """The bodies of publication versions, by id (those not found are left out)."""
    select = "SELECT publication_id, publication_text FROM publication"
    rows = _rows_in(conn, select, "publication_id", publication_ids)
    return {int(key): value for key, value in rows if value is not None}


def new_cluster(conn: Connection, first_article_id: int, now: int) -> int:
    result = _run(
        conn,
        "INSERT INTO copy_cluster (first_article_id, created_at) VALUES (?, ?)",
        (int(first_article_id), int(now)),
    )
    return int(result.lastrowid)


def set_first(conn: Connection, cluster_id: int, first_article_id: int) -> None:
    _run(
        conn,
        "UPDATE copy_cluster SET first_article_id = ? WHERE cluster_id = ?",
        (int(first_article_id), int(cluster_id)),
    )


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
    _run(
        conn,
        "UPDATE copy_doc SET cluster_id = ?, similarity = ? WHERE article_id = ?",
        (cluster_id, similarity, int(article_id)),
    )


def cluster_size(conn: Connection, cluster_id: int) -> int:
    return int(
        _run(
            conn, "SELECT COUNT(*) FROM copy_doc WHERE cluster_id = ?", (int(cluster_id),)
        ).scalar_one()
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


@dataclass(frozen=True)
class Sketches:
    """Every fingerprinted body at once, as a rebuild clusters them: one row each, by
    article id."""

    article_ids: np.ndarray
    publication_ids: np.ndarray
    site_ids: np.ndarray
    first_seen: np.ndarray
    sketches: np.ndarray


def all_sketches(conn: Connection, width: int, page: int = 50_000) -> Sketches:
    """Every ``copy_doc`` row's ids, first sighting and sketch (``width`` values each), read
    a page of article ids at a time."""
    columns: list[list[int]] = [[], [], [], []]
    blobs: list[bytes] = []
    after = -1
    while True:
        rows = _run(
            conn,
            "SELECT article_id, publication_id, site_id, first_seen_at, bands FROM copy_doc"
            f" WHERE article_id > ? ORDER BY article_id LIMIT {int(page)}",
            (after,),
        ).all()
        if not rows:
            break
        for place, column in enumerate(columns):
            column.extend(row[place] for row in rows)
        blobs.extend(bytes(row[4]) for row in rows)
        after = int(rows[-1][0])
    sketches = np.frombuffer(b"".join(blobs), dtype="<u2").reshape(len(blobs), width)
    article_ids, publication_ids, site_ids, first_seen = (
        np.array(column, dtype=np.int64) for column in columns
    )
    return Sketches(article_ids, publication_ids, site_ids, first_seen, sketches)


def clear_clusters(conn: Connection) -> None:
    """No cluster left, no article in one."""
    _run(conn, "DELETE FROM copy_cluster")
    _run(
        conn,
        "UPDATE copy_doc SET cluster_id = NULL, similarity = NULL WHERE cluster_id IS NOT NULL",
    )


def add_clusters(conn: Connection, firsts: Sequence[int], now: int) -> dict[int, int]:
    """New clusters, in this order, by their first article; returns each one's id by it."""
    if not firsts:
        return {}
    _insert(
        conn,
        "INSERT INTO copy_cluster (first_article_id, created_at)",
        [(int(first), int(now)) for first in firsts],
    )
    select = "SELECT first_article_id, cluster_id FROM copy_cluster"
    rows = _rows_in(conn, select, "first_article_id", firsts)
    return {int(first): int(cluster) for first, cluster in rows}


def set_memberships(conn: Connection, rows: Sequence[tuple[int, int, float]]) -> None:
    """Many ``(article_id, cluster_id, similarity)`` at once."""
    # One statement per thousand rows (an UPDATE's executemany is a round trip a row).
    for start in range(0, len(rows), 1000):
        part = rows[start : start + 1000]
        clusters = " ".join(f"WHEN {int(a)} THEN {int(c)}" for a, c, _ in part)
        similarities = " ".join(f"WHEN {int(a)} THEN {_literal(float(v))}" for a, _, v in part)
        conn.exec_driver_sql(
            f"UPDATE copy_doc SET cluster_id = CASE article_id {clusters} END,"
            f" similarity = CASE article_id {similarities} END"
            f" WHERE article_id IN ({_ints([a for a, _, _ in part])})"
        )


def add_band_rows(conn: Connection, keys: np.ndarray, article_ids: np.ndarray) -> None:
    """``copy_band`` rows given as two columns (in the table's order, for full pages)."""
    _insert_columns(conn, "INSERT INTO copy_band (band_key, article_id)", (keys, article_ids))


def drop_band_rows_after(conn: Connection, key: int) -> None:
    """The ``copy_band`` rows above a band key (all of them: ``key`` below every key)."""
    _run(conn, "DELETE FROM copy_band WHERE band_key > ?", (int(key),))
