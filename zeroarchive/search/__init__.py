"""Full-text search over publications and their past versions (CJK first).

``text`` normalises (NFKC, case folded) and splits text into runs; ``query`` parses the
query language; ``match`` decides, on a publication's stored text, whether it holds a
query (the one judge of a hit on every engine), with its score and snippet; ``index`` is
the engine interface and the search every engine shares; ``sqlite_fts`` (SQLite FTS5)
and ``mroonga`` (MariaDB Mroonga) are the engines; ``reindex`` rebuilds an index.
``open_index`` picks the engine for an archive's database. Fed through the parser's
``VersionHook`` (``index_hook``), so the parser never imports it.

May import: ``storage``, ``core``.
Never imported by: ``core``, ``sources``, ``sites``, ``storage``, ``parser``, ``crawl``.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from zeroarchive.search.index import SearchIndex


def open_index(engine: Engine) -> SearchIndex:
    """The search index kept in this database: FTS5 in SQLite, Mroonga in MariaDB."""
    if engine.dialect.name == "sqlite":
        from zeroarchive.search.sqlite_fts import SqliteFtsIndex

        return SqliteFtsIndex(engine)
    from zeroarchive.search.mroonga import MroongaIndex

    return MroongaIndex(engine)


__all__ = ["SearchIndex", "open_index"]
