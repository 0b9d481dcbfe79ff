"""The archive a process works on: one engine and its stores, opened once per database."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine

from zeroarchive.core.services import safe_url
from zeroarchive.storage.articles import ArticleStore
from zeroarchive.storage.engine import db_url_from, make_engine, migrate
from zeroarchive.storage.sites import SiteStore
from zeroarchive.storage.snapshots import SnapshotStore

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)
_open: dict[str, Archive] = {}
_open_lock = threading.Lock()


@dataclass(frozen=True)
class Archive:
    url: str
    engine: Engine
    sites: SiteStore
    articles: ArticleStore
    snapshots: SnapshotStore


def open_archive(settings: BaseSettings | None = None, url: str | None = None) -> Archive:
    """The archive at ``url`` (default: from settings/environment), its schema up to date.

    The spider and the pipelines of one crawl share it, so they share one connection pool.
    """
    url = url or db_url_from(settings)
    with _open_lock:
        if url not in _open:
            engine = make_engine(url)
            before, after = migrate(engine)
            if before != after:
                logger.info("Database %s migrated from %s to %s", safe_url(url), before, after)
            _open[url] = Archive(
                url=url,
                engine=engine,
                sites=SiteStore(engine),
                articles=ArticleStore(engine),
                snapshots=SnapshotStore(engine),
            )
        return _open[url]


def close_archives() -> None:
    """Dispose every open engine (tests open many databases in one process)."""
    with _open_lock:
        for archive in _open.values():
            archive.engine.dispose()
        _open.clear()
