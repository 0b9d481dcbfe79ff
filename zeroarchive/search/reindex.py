"""``scrapy reindex``: rebuild the search index from the publications, all or one site's.

Resumable: each batch is indexed in its own transaction with the last publication id done
(``search_reindex``), so a run stopped (Ctrl-C, a crash) goes on where it stopped when
started again with the same scope; a finished run leaves no state behind.
"""

from __future__ import annotations

import time
from typing import TextIO

from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from zeroarchive.core.progress import Progress
from zeroarchive.search.index import SearchIndex
from zeroarchive.storage.schema import publication, search_reindex

RESUME = "run the same scrapy reindex again: it goes on where it stopped"


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
    scope = "all" if site_id is None else f"site:{site_id}"
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
    pub = publication.c
    base = select(pub.publication_id, pub.title, pub.publication_text).where(
        pub.parser_version == parser_version
    )
    counted = select(func.count()).where(pub.parser_version == parser_version)
    if site_id is not None:
        base = base.where(pub.site_id == site_id)
        counted = counted.where(pub.site_id == site_id)
    with engine.connect() as conn:
        total = int(conn.execute(counted.where(pub.publication_id > last)).scalar_one())
    done = 0
    with Progress(
        "reindex", total=total, unit="publication", resume=RESUME, stream=stream
    ) as progress:
        while True:
            query = base.where(pub.publication_id > last).order_by(pub.publication_id)
            with engine.begin() as conn:
                rows = conn.execute(query.limit(batch)).all()
                if not rows:
                    conn.execute(search_reindex.delete().where(state.scope == scope))
                    break
                index.index_publications(
                    conn, [(r.publication_id, r.title, r.publication_text) for r in rows]
                )
                last = rows[-1].publication_id
                conn.execute(
                    search_reindex.update()
                    .where(state.scope == scope)
                    .values(last_publication_id=last)
                )
            done += len(rows)
            progress.advance(len(rows))
    return done, resumed
