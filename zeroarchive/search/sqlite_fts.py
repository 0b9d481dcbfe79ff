"""The embedded engine: an FTS5 table in the SQLite archive itself (Python's own sqlite3).

The table is contentless (``content=''``): it holds the index, never a second copy of the
text. What it indexes is ``text.index_text`` of the normalised title and body, one token
per space: whole word runs, and CJK runs as overlapping character pairs plus each run's
last character — so a two-character word is one token, a one-character word a token
prefix, and a longer one a phrase of pairs: all found through the index, never a scan.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import column, select, table, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql import FromClause

from zeroarchive.search.index import SharedSearch, new_doc_ids, site_doc_ids
from zeroarchive.search.query import Query, Term
from zeroarchive.search.text import index_text, is_cjk, normalize, runs
from zeroarchive.storage.publications import AddedVersion
from zeroarchive.storage.schema import publication, search_doc

TABLE = "publication_search"
#: Whitespace alone separates tokens: they were cut already (index_text).
TOKENIZE = "unicode61 remove_diacritics 0 categories 'L* M* N* P* S* C*'"
CREATE = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING fts5("
    f"body, content='', columnsize=0, tokenize=\"{TOKENIZE}\")"
)
_fts = table(TABLE, column("rowid"))


def document(title: str, body: str) -> str:
    """What the index holds for a publication: its tokens, one space apart."""
    return index_text(normalize(title) + " " + normalize(body))


def _form(form: str) -> str:
    parts = []
    for run in runs(form):
        if is_cjk(run) and len(run) == 1:
            parts.append(f'"{run}"*')
        elif is_cjk(run):
            parts.append('"' + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + '"')
        else:
            parts.append(f'"{run}"')
    return "(" + " ".join(parts) + ")"


def fts_query(query: Query) -> str:
    """The FTS5 expression for a query's searchable terms (every token quoted: nothing in
    a query is FTS5 syntax).

    >>> from zeroarchive.search.query import parse_query
    >>> fts_query(parse_query('台 "台灣海峽" covid-19'))
    '(("台"*)) AND (("台灣 灣海 海峽")) AND (("covid" "19"))'
    """
    return " AND ".join(_term(t) for t in query.positive if t.searchable)


def _term(term: Term) -> str:
    return "(" + " OR ".join(_form(f) for f in term.forms if runs(f)) + ")"


class SqliteFtsIndex(SharedSearch):
    name = "sqlite-fts5"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def available(self) -> str | None:
        return None

    def index_version(self, conn: Connection, added: AddedVersion) -> None:
        self.index_publications(
            conn, [(added.publication_id, added.parsed.title, added.parsed.text)]
        )

    def index_publications(self, conn: Connection, rows: Sequence[tuple[int, str, str]]) -> None:
        new, old = new_doc_ids(conn, [row[0] for row in rows])
        texts = {row[0]: (row[1], row[2]) for row in rows}
        # A contentless table forgets a document only when told its tokens again; the
        # publication's text never changes while its search_doc row lives.
        for publication_id, doc_id in old.items():
            self._forget(conn, doc_id, document(*texts[publication_id]))
        conn.execute(
            text(f"INSERT INTO {TABLE}(rowid, body) VALUES (:doc, :body)"),
            [{"doc": new[pid], "body": document(title, body)} for pid, title, body in rows],
        )

    def _forget(self, conn: Connection, doc_id: int, tokens: str) -> None:
        conn.execute(
            text(f"INSERT INTO {TABLE}({TABLE}, rowid, body) VALUES ('delete', :doc, :body)"),
            {"doc": doc_id, "body": tokens},
        )

    def clear(self, conn: Connection, site_id: int | None = None) -> None:
        if site_id is None:
            conn.execute(text(f"INSERT INTO {TABLE}({TABLE}) VALUES ('delete-all')"))
            conn.execute(search_doc.delete())
            return
        docs = site_doc_ids(conn, site_id)
        for start in range(0, len(docs), 500):
            chunk = dict(docs[start : start + 500])
            texts = conn.execute(
                select(
                    publication.c.publication_id,
                    publication.c.title,
                    publication.c.publication_text,
                ).where(publication.c.publication_id.in_(list(chunk.values())))
            ).all()
            by_id = {row.publication_id: row for row in texts}
            for doc_id, publication_id in chunk.items():
                row = by_id[publication_id]
                self._forget(conn, doc_id, document(row.title, row.publication_text))
            conn.execute(search_doc.delete().where(search_doc.c.doc_id.in_(list(chunk))))

    def matching(self, query: Query) -> FromClause:
        return (
            select(search_doc.c.publication_id)
            .select_from(_fts.join(search_doc, search_doc.c.doc_id == _fts.c.rowid))
            .where(text(f"{TABLE} MATCH :fts").bindparams(fts=fts_query(query)))
            .subquery("matched")
        )
