"""``scrapy reindex``: rebuild the search index from the publications, all or one site's.

Resumable: each batch is indexed in its own transaction with the last publication id done
(``search_reindex``), so a run stopped (Ctrl-C, a crash) goes on where it stopped when
started again with the same scope; a finished run leaves no state behind.
"""

from __future__ import annotations

import time
from typing import TextIO

from sqlalchemy import and_, func, select
from sqlalchemy.engine import Connection, Engine

from zeroarchive.core.progress import Progress
from zeroarchive.search.index import SearchIndex, read_docs
from zeroarchive.storage.schema import publication, search_reindex

RESUME = "run the same scrapy reindex again: it goes on where it stopped"
#: The scope of a whole rebuild (a site's is ``site:<id>``).
WHOLE = "all"


def whole_rebuild_pending(conn: Connection) -> bool:
    """Whether a rebuild of the whole index is running, or stopped and not yet resumed."""
    state = search_reindex.c
    return conn.execute(select(state.scope).where(state.scope == WHOLE)).first() is not None


def reindex(
    engine: Engine,
    index: SearchIndex,
    parser_version: str,
    site_id: int | None = None,
    batch: int = 500,
    stream: TextIO | None = None,
) -> tuple[int, bool]:
    """Index every publication version of ``parser_version`` (of one site); return how
    many were indexed by this run and whether it resumed an interrupted one."""
    scope = WHOLE if site_id is None else f"site:{site_id}"
    state = search_reindex.c
    with engine.begin() as conn:
        row = conn.execute(select(search_reindex).where(state.scope == scope)).first()
        resumed = row is not None and row.parser_version == parser_version
        if resumed:
            assert row is not None
            last = int(row.last_publication_id)
        else:
            last = 0
            index.clear(conn, site_id)
            # A whole rebuild covers every site's: theirs would only start over.
            gone = search_reindex.delete()
            if site_id is not None:
                gone = gone.where(state.scope == scope)
            conn.execute(gone)
            conn.execute(
                search_reindex.insert().values(
                    scope=scope,
                    parser_version=parser_version,
                    last_publication_id=0,
                    started_at=int(time.time()),
                )
            )
    if site_id is None:
        # After the state row: a search process that sees the index stopped knows why.
        index.begin_rebuild()
    pub = publication.c
    scope_clause = pub.parser_version == parser_version
    if site_id is not None:
        scope_clause = and_(scope_clause, pub.site_id == site_id)
    counted = select(func.count()).where(scope_clause)
    with engine.connect() as conn:
        total = int(conn.execute(counted.where(pub.publication_id > last)).scalar_one())
    done = 0
    with Progress(
        "reindex", total=total, unit="publication", resume=RESUME, stream=stream
    ) as progress:
        while True:
            with engine.begin() as conn:
                # The batch's ids first (an index range), then their rows by key.
                ids = (
                    conn.execute(
                        select(pub.publication_id)
                        .where(scope_clause, pub.publication_id > last)
                        .order_by(pub.publication_id)
                        .limit(batch)
                    )
                    .scalars()
                    .all()
                )
                if not ids:
                    conn.execute(search_reindex.delete().where(state.scope == scope))
                    break
                docs = read_docs(conn, pub.publication_id.in_(ids))
                index.index_publications(conn, docs)
                last = ids[-1]
                conn.execute(
                    search_reindex.update()
                    .where(state.scope == scope)
                    .values(last_publication_id=last)
                )
            done += len(docs)
            progress.advance(len(docs))
    if done or resumed or site_id is None:
        index.compact()
    return done, resumed
