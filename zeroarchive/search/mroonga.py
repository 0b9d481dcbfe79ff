"""The MariaDB engine: a Mroonga table with a FULLTEXT index (TokenBigram, an NFKC
normaliser) — Groonga inside the server, so one- and two-character CJK words are found
through the index, never with a LIKE scan.

The table holds the normalised title and body (Mroonga indexes only what it stores) keyed
by document id (``search_doc``). Queries run in boolean mode with ``*D+`` (terms ANDed),
every run of a term quoted, so nothing in a query is Groonga syntax.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy import column, select, table, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import FromClause

from zeroarchive.search.index import SharedSearch, new_doc_ids, site_doc_ids
from zeroarchive.search.query import Query, Term
from zeroarchive.search.text import normalize, runs
from zeroarchive.storage.publications import AddedVersion
from zeroarchive.storage.schema import search_doc

logger = logging.getLogger(__name__)
TABLE = "publication_search"
#: Newest first: the first the server's Groonga knows is used (7.0.7 has NFKC51 only).
NORMALIZERS = ("NormalizerNFKC121", "NormalizerNFKC100", "NormalizerNFKC51")
INSTALL_HINT = (
    "MariaDB has no Mroonga: apt-get install mariadb-plugin-mroonga, then as root "
    "INSTALL SONAME 'ha_mroonga'; then run scrapy reindex"
)
_fts = table(TABLE, column("doc_id"), column("body"))
#: Databases whose table is known to be there (each search asks; SHOW ENGINES is not free).
_READY: set[str] = set()


def create_table(conn: Connection) -> str | None:
    """Create the Mroonga table if it is missing; None, or why it cannot be."""
    engines = {row[0].lower() for row in conn.execute(text("SHOW ENGINES"))}
    if "mroonga" not in engines:
        return INSTALL_HINT
    for normalizer in NORMALIZERS:
        try:
            conn.execute(
                text(
                    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
                    " doc_id BIGINT NOT NULL PRIMARY KEY,"
                    " body LONGTEXT NOT NULL,"
                    f" FULLTEXT INDEX ft_{TABLE} (body)"
                    f' COMMENT \'tokenizer "TokenBigram", normalizer "{normalizer}"\''
                    ") ENGINE=Mroonga DEFAULT CHARSET=utf8mb4"
                )
            )
            return None
        except DBAPIError as exc:
            logger.debug("Mroonga refused %s: %s", normalizer, exc)
    return "Mroonga knows none of the normalizers " + ", ".join(NORMALIZERS)


def document(title: str, body: str) -> str:
    return normalize(title) + "\n" + normalize(body)


def _form(form: str) -> str:
    return "(" + " ".join(f'"{run}"' for run in runs(form)) + ")"


def _term(term: Term) -> str:
    return "(" + " OR ".join(_form(f) for f in term.forms if runs(f)) + ")"


def mroonga_query(query: Query) -> str:
    """The boolean-mode query for a query's searchable terms.

    >>> from zeroarchive.search.query import parse_query
    >>> mroonga_query(parse_query('台 covid-19 NEAR'))
    '*D+ (("台")) (("covid" "19")) (("near"))'
    """
    return "*D+ " + " ".join(_term(t) for t in query.positive if t.searchable)


class MroongaIndex(SharedSearch):
    name = "mariadb-mroonga"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._missing: str | None = None

    def available(self) -> str | None:
        key = str(self.engine.url)
        if key in _READY:
            return None
        with self.engine.begin() as conn:
            missing = create_table(conn)
        if missing is None:
            _READY.add(key)
        return missing

    def index_version(self, conn: Connection, added: AddedVersion) -> None:
        self.index_publications(
            conn, [(added.publication_id, added.parsed.title, added.parsed.text)]
        )

    def index_publications(self, conn: Connection, rows: Sequence[tuple[int, str, str]]) -> None:
        new, old = new_doc_ids(conn, [row[0] for row in rows])
        if old:
            conn.execute(_fts.delete().where(_fts.c.doc_id.in_(list(old.values()))))
        conn.execute(
            _fts.insert(),
            [{"doc_id": new[pid], "body": document(title, body)} for pid, title, body in rows],
        )

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

    def matching(self, query: Query) -> FromClause:
        return (
            select(search_doc.c.publication_id)
            .select_from(_fts.join(search_doc, search_doc.c.doc_id == _fts.c.doc_id))
            .where(
                text(f"MATCH({TABLE}.body) AGAINST(:fts IN BOOLEAN MODE)").bindparams(
                    fts=mroonga_query(query)
                )
            )
            .subquery("matched")
        )
