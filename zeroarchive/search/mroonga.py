"""The MariaDB engine: a Mroonga table with a FULLTEXT index — Groonga inside the server,
so every query is answered through the index, never with a LIKE scan.

The table holds each document's tokens (``text.index_text``, the same as SQLite's index)
keyed by document id (``search_doc``), compressed (zlib: Mroonga indexes only what it
stores, and the plain text is in ``publication`` already); the index splits them at spaces
(TokenDelimit, no normaliser: they are normalised). Queries run in boolean mode with
``*D+`` (terms ANDed), every phrase quoted, so nothing in a query is Groonga syntax; match
escalation (Groonga's fallback to looser matching when nothing matches exactly) is off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Text, column, select, table, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql import ColumnElement, FromClause

from zeroarchive.search.index import Doc, SharedSearch, site_doc_ids
from zeroarchive.search.plan import Phrase, Plan, TermPlan, has_prefix, only_prefixes
from zeroarchive.search.text import index_document
from zeroarchive.storage.schema import search_doc

TABLE = "publication_search"
INSTALL_HINT = (
    "MariaDB has no Mroonga: apt-get install mariadb-plugin-mroonga, then as root "
    "INSTALL SONAME 'ha_mroonga'; then run scrapy reindex"
)
CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
    " doc_id BIGINT NOT NULL PRIMARY KEY,"
    " body LONGTEXT NOT NULL COMMENT 'flags \"COLUMN_SCALAR|COMPRESS_ZLIB\"',"
    f" FULLTEXT INDEX ft_{TABLE} (body)"
    ' COMMENT \'tokenizer "TokenDelimit", normalizer "none"\''
    ") ENGINE=Mroonga DEFAULT CHARSET=utf8mb4"
)
_fts = table(TABLE, column("doc_id"), column("body", Text))
#: Databases whose table is known to be there (each search asks; SHOW ENGINES is not free).
_READY: set[str] = set()


def create_table(conn: Connection) -> str | None:
    """Create the Mroonga table if it is missing; None, or why it cannot be."""
    engines = {row[0].lower() for row in conn.execute(text("SHOW ENGINES"))}
    if "mroonga" not in engines:
        return INSTALL_HINT
    conn.execute(text(CREATE))
    return None


def _phrase(phrase: Phrase) -> str:
    # A lone CJK character as a prefix; everything else quoted (tokens hold no quote).
    if phrase.prefix:
        return phrase.tokens[0] + "*"
    return '"' + " ".join(phrase.tokens) + '"'


def _term(term: TermPlan) -> str:
    return "(" + " OR ".join("(" + " ".join(map(_phrase, f)) + ")" for f in term) + ")"


def mroonga_query(engine_plan: Plan) -> str:
    """The boolean-mode query for a plan, its prefixes last: Groonga 7 searches whatever
    follows a prefix (``台*``) as a prefix too (``"ab"`` then finds ``abc``; a phrase of
    several tokens then nothing).

    >>> from zeroarchive.search.plan import plan
    >>> from zeroarchive.search.query import parse_query
    >>> mroonga_query(plan(parse_query('台 "台灣海峽" NEAR -covid -灣')))
    '*D+ (("台灣 灣海 海峽")) (("near")) -(("covid")) ((台*)) -((灣*))'
    """
    positive = list(engine_plan.positive)
    mixed = [term for term in positive if has_prefix(term) and not only_prefixes(term)]
    if mixed:  # only in a superset plan (plan.py): one such term at most, or none
        positive = [term for term in positive if term not in mixed] or mixed[:1]
        positive = [tuple(sorted(t, key=lambda form: form[0].prefix)) for t in positive]
    parts = [_term(t) for t in positive if not only_prefixes(t)]
    parts += ["-" + _term(t) for t in engine_plan.excluded if not only_prefixes(t)]
    parts += [_term(t) for t in positive if only_prefixes(t)]
    parts += ["-" + _term(t) for t in engine_plan.excluded if only_prefixes(t)]
    return "*D+ " + " ".join(parts)


class MroongaIndex(SharedSearch):
    name = "mariadb-mroonga"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def available(self) -> str | None:
        key = str(self.engine.url)
        if key in _READY:
            return None
        with self.engine.begin() as conn:
            missing = create_table(conn)
        if missing is None:
            _READY.add(key)
        return missing

    def _prepare(self, conn: Connection) -> None:
        # Else a query nothing matches exactly is searched again loosely ("ab" finds "abc").
        conn.execute(text("SET SESSION mroonga_match_escalation_threshold = -1"))

    def _add(self, conn: Connection, docs: Sequence[tuple[int, Doc]]) -> None:
        conn.execute(
            _fts.insert(),
            [{"doc_id": doc_id, "body": index_document(d.title, d.text)} for doc_id, d in docs],
        )

    def _forget(self, conn: Connection, docs: Sequence[tuple[int, Doc]]) -> None:
        conn.execute(_fts.delete().where(_fts.c.doc_id.in_([doc_id for doc_id, _ in docs])))

    def clear(self, conn: Connection, site_id: int | None = None) -> None:
        if site_id is None:
            conn.execute(text(f"TRUNCATE TABLE {TABLE}"))
            conn.execute(search_doc.delete())
            return
        docs = [doc for doc, _ in site_doc_ids(conn, site_id)]
        for start in range(0, len(docs), 1000):
            chunk = docs[start : start + 1000]
            conn.execute(_fts.delete().where(_fts.c.doc_id.in_(chunk)))
            conn.execute(search_doc.delete().where(search_doc.c.doc_id.in_(chunk)))

    def matched(self, plan: Plan, scored: bool) -> FromClause:
        # MariaDB's dialect spells match() MATCH (body) AGAINST (... IN BOOLEAN MODE).
        against = _fts.c.body.match(mroonga_query(plan))
        columns: list[ColumnElement[Any]] = [_fts.c.doc_id]
        if scored:
            columns.append(against.label("score"))
        return select(*columns).select_from(_fts).where(against).subquery("matched")
