"""The embedded engine: an FTS5 table in the SQLite archive itself (Python's own sqlite3).

The table is contentless (``content=''``): it holds the index, never a second copy of the
text. What it indexes is ``text.index_text`` of the normalised title and body, one token
per space, so a plan's phrase is an FTS5 phrase of the same tokens (a lone CJK character a
token prefix) and its score FTS5's bm25.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import column, literal_column, select, table, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql import FromClause

from zeroarchive.search.index import Doc, SharedSearch, read_docs, site_doc_ids
from zeroarchive.search.plan import Phrase, Plan, TermPlan
from zeroarchive.search.text import index_document
from zeroarchive.storage.schema import publication, search_doc

TABLE = "publication_search"
#: Whitespace alone separates tokens: they were cut already (index_text).
TOKENIZE = "unicode61 remove_diacritics 0 categories 'L* M* N* P* S* C*'"
CREATE = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING fts5("
    f"body, content='', columnsize=0, tokenize=\"{TOKENIZE}\")"
)
_fts = table(TABLE, column("rowid"))


def _phrase(phrase: Phrase) -> str:
    # Tokens are runs or the markers: never a quote, so quoting makes them text.
    return '"' + " ".join(phrase.tokens) + '"' + ("*" if phrase.prefix else "")


def _term(term: TermPlan) -> str:
    return "(" + " OR ".join("(" + " AND ".join(map(_phrase, f)) + ")" for f in term) + ")"


def fts_query(engine_plan: Plan) -> str:
    """The FTS5 expression for a plan.

    >>> from zeroarchive.search.plan import plan
    >>> from zeroarchive.search.query import parse_query
    >>> fts_query(plan(parse_query('台 "台灣海峽" -covid')))
    '(("台"*)) AND (("台灣 灣海 海峽")) NOT (("covid"))'
    """
    found = " AND ".join(map(_term, engine_plan.positive))
    for term in engine_plan.excluded:
        found = f"{found} NOT {_term(term)}"
    return found


class SqliteFtsIndex(SharedSearch):
    name = "sqlite-fts5"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def available(self) -> str | None:
        return None

    def _add(self, conn: Connection, docs: Sequence[tuple[int, Doc, bool]]) -> None:
        conn.execute(
            text(f"INSERT INTO {TABLE}(rowid, body) VALUES (:doc, :body)"),
            [{"doc": doc_id, "body": index_document(d.title, d.text)} for doc_id, d, _ in docs],
        )

    def _forget(self, conn: Connection, docs: Sequence[tuple[int, Doc]]) -> None:
        # A contentless table forgets a document only when told its tokens again; the
        # publication's text never changes while its search_doc row lives.
        conn.execute(
            text(f"INSERT INTO {TABLE}({TABLE}, rowid, body) VALUES ('delete', :doc, :body)"),
            [{"doc": doc_id, "body": index_document(d.title, d.text)} for doc_id, d in docs],
        )

    def clear(self, conn: Connection, site_id: int | None = None) -> None:
        if site_id is None:
            conn.execute(text(f"INSERT INTO {TABLE}({TABLE}) VALUES ('delete-all')"))
            conn.execute(search_doc.delete())
            return
        docs = site_doc_ids(conn, site_id)
        for start in range(0, len(docs), 500):
            chunk = dict(docs[start : start + 500])
            found = read_docs(conn, publication.c.publication_id.in_(list(chunk.values())))
            by_id = {d.publication_id: d for d in found}
            self._forget(conn, [(doc_id, by_id[pid]) for doc_id, pid in chunk.items()])
            conn.execute(search_doc.delete().where(search_doc.c.doc_id.in_(list(chunk))))

    def matched(self, plan: Plan, scored: bool) -> FromClause:
        columns = [_fts.c.rowid.label("doc_id")]
        if scored:
            # bm25 is lower for better matches.
            columns.append(literal_column(f"-bm25({TABLE})").label("score"))
        return (
            select(*columns)
            .select_from(_fts)
            .where(text(f"{TABLE} MATCH :fts").bindparams(fts=fts_query(plan)))
            .subquery("matched")
        )
