"""``scrapy copies --rebuild``: the copy index recomputed from the publications.

Two passes over each article's latest version (of the newest parser version): the first
counts every site's edge lines, so that the second, which fingerprints and clusters, drops
all of a site's boilerplate from its first article on (the parse run's hook learns it as
articles come). Resumable: each batch commits with the phase and the last article done
(``copy_rebuild``), so a run stopped goes on where it stopped; a finished run leaves no
state behind.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any, TextIO

from sqlalchemy import and_, func, select
from sqlalchemy.engine import Connection, Engine

from zeroarchive.copies import store
from zeroarchive.copies.fingerprint import edge_blocks_of
from zeroarchive.copies.index import Body, CopiesConfig, CopyIndex
from zeroarchive.core.progress import Progress
from zeroarchive.storage.publications import newest_parser_version
from zeroarchive.storage.schema import article, copy_rebuild, publication

RESUME = "run scrapy copies --rebuild again: it goes on where it stopped"
SCOPE = "all"
PHASES = ("blocks", "fingerprints")


def _latest(conn: Connection, parser_version: str, after: int, limit: int) -> list[Any]:
    """The latest version of the next ``limit`` articles after ``after``."""
    pub = publication.c
    latest = (
        select(pub.article_id, func.max(pub.version).label("version"))
        .where(pub.parser_version == parser_version, pub.article_id > after)
        .group_by(pub.article_id)
        .order_by(pub.article_id)
        .limit(limit)
        .subquery()
    )
    return list(
        conn.execute(
            select(
                pub.publication_id,
                pub.article_id,
                pub.site_id,
                pub.publication_text,
                pub.first_seen_at,
                article.c.first_snapshot_at,
            )
            .join(
                latest,
                and_(
                    pub.article_id == latest.c.article_id,
                    pub.version == latest.c.version,
                    pub.parser_version == parser_version,
                ),
            )
            .join(article, article.c.article_id == pub.article_id)
            .order_by(pub.article_id)
        )
    )


def _body(row: Any) -> Body:
    seen = min(row.first_snapshot_at or row.first_seen_at, row.first_seen_at)
    return Body(row.article_id, row.site_id, row.publication_id, row.publication_text, seen)


def _count(engine: Engine, parser_version: str, after: int) -> int:
    pub = publication.c
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count(pub.article_id.distinct())).where(
                    pub.parser_version == parser_version, pub.article_id > after
                )
            ).scalar_one()
        )


def rebuild(
    engine: Engine,
    config: CopiesConfig | None = None,
    stream: TextIO | None = None,
    now: int | None = None,
) -> tuple[int, bool]:
    """Recompute the copy index; return how many articles this run fingerprinted and
    whether it resumed a stopped one."""
    config = config or CopiesConfig()
    parser_version = newest_parser_version(engine)
    if parser_version is None:
        return 0, False
    state = copy_rebuild.c
    with engine.begin() as conn:
        row = conn.execute(select(copy_rebuild).where(state.scope == SCOPE)).first()
        resumed = row is not None and row.parser_version == parser_version
        if resumed:
            assert row is not None
            phase, last = row.phase, int(row.last_article_id)
        else:
            phase, last = PHASES[0], 0
            store.clear(conn)
            conn.execute(copy_rebuild.delete())
            conn.execute(
                copy_rebuild.insert().values(
                    scope=SCOPE,
                    parser_version=parser_version,
                    phase=phase,
                    last_article_id=0,
                    started_at=int(time.time()),
                )
            )
    index = CopyIndex(config)
    done = 0
    for name in PHASES[PHASES.index(phase) :]:
        total = _count(engine, parser_version, last)
        what = "copies: boilerplate" if name == "blocks" else "copies: fingerprints"
        with Progress(what, total=total, unit="article", resume=RESUME, stream=stream) as progress:
            for rows in _batches(engine, parser_version, last, config.rebuild_batch):
                with engine.begin() as conn:
                    if name == "blocks":
                        counts: Counter[tuple[int, int]] = Counter()
                        for row in rows:
                            for block in edge_blocks_of(row.publication_text):
                                counts[(row.site_id, block)] += 1
                        store.count_blocks(conn, counts)
                    else:
                        index.add_many(conn, [_body(row) for row in rows], now)
                    last = int(rows[-1].article_id)
                    conn.execute(
                        copy_rebuild.update()
                        .where(state.scope == SCOPE)
                        .values(phase=name, last_article_id=last)
                    )
                progress.advance(len(rows))
                if name != "blocks":
                    done += len(rows)
        last = 0
    with engine.begin() as conn:
        conn.execute(copy_rebuild.delete().where(state.scope == SCOPE))
    if engine.dialect.name != "sqlite":
        _compact(engine)
    return done, resumed


#: What a MariaDB rebuild rewrites at its end.
COMPACTED = ("copy_band", "copy_doc", "copy_block")


def _compact(engine: Engine) -> None:
    """Rewrite the copy tables InnoDB filled in random key order (their pages ~60 % full
    after the rebuild, ~94 % after: the index on disk 0.46x -> 0.41x the text it covers,
    bench/README.md)."""
    with engine.connect() as conn:
        for name in COMPACTED:
            conn.exec_driver_sql(f"OPTIMIZE TABLE {name}").all()


def _batches(engine: Engine, parser_version: str, after: int, size: int) -> Iterator[list[Any]]:
    while True:
        with engine.connect() as conn:
            rows = _latest(conn, parser_version, after, size)
        if not rows:
            return
        yield rows
        after = int(rows[-1].article_id)
