"""Read-only lookups for the monitor: sites, a site's recent articles, an article's
snapshots (facts only, never the bytes) and its publication versions. Each is one indexed
query; the per-site counts come from ``site_stats``."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.engine import Engine

from zeroarchive.storage.schema import (
    article,
    article_snapshot,
    publication,
    publication_mapping,
    site,
)


@dataclass(frozen=True)
class SiteInfo:
    site_id: int
    name: str
    url: str
    type: str
    category: str | None
    airtable_id: str | None
    is_active: bool
    config: str  # as stored (JSON); may hold proxy credentials: mask before showing
    created_at: int


@dataclass(frozen=True)
class ArticleRow:
    article_id: int
    site_id: int
    url: str
    article_type: str
    created_at: int
    published_at: int | None
    first_snapshot_at: int
    last_snapshot_at: int
    next_snapshot_at: int
    snapshot_count: int
    failure_count: int
    stop_reason: str | None
    redirect_to: int | None
    watch_at: int
    gone_at: int
    gone_evidence: str | None
    deleted_at: int


@dataclass(frozen=True)
class SnapshotFacts:
    snapshot_at: int
    status: int
    final_url: str
    raw_size: int
    content_hash: bytes
    stores_bytes: bool  # False: the same bytes as an earlier snapshot
    rendered: bool


@dataclass(frozen=True)
class PublicationVersion:
    publication_id: int
    parser_version: str
    version: int
    title: str
    text: str
    author: str | None
    published_at: int | None
    first_seen_at: int
    last_seen_at: int
    parsed_at: int


_SITE_COLUMNS = (
    site.c.site_id,
    site.c.name,
    site.c.url,
    site.c.type,
    site.c.category,
    site.c.airtable_id,
    site.c.is_active,
    site.c.config,
    site.c.created_at,
)
_ARTICLE_COLUMNS = (
    article.c.article_id,
    article.c.site_id,
    article.c.url,
    article.c.article_type,
    article.c.created_at,
    article.c.published_at,
    article.c.first_snapshot_at,
    article.c.last_snapshot_at,
    article.c.next_snapshot_at,
    article.c.snapshot_count,
    article.c.failure_count,
    article.c.stop_reason,
    article.c.redirect_to,
    article.c.watch_at,
    article.c.gone_at,
    article.c.gone_evidence,
    article.c.deleted_at,
)


def _site(row: object) -> SiteInfo:
    values = dict(row._mapping)  # type: ignore[attr-defined]
    values["is_active"] = bool(values["is_active"])
    return SiteInfo(**values)


def find_sites(
    engine: Engine, site_id: int | None = None, is_active: bool | None = None
) -> list[SiteInfo]:
    """Sites by id, all of them or only the one ``site_id``, only (in)active ones if asked."""
    query = select(*_SITE_COLUMNS).order_by(site.c.site_id)
    if site_id is not None:
        query = query.where(site.c.site_id == site_id)
    if is_active is not None:
        query = query.where(site.c.is_active == is_active)
    with engine.connect() as conn:
        return [_site(row) for row in conn.execute(query)]


def recent_articles(engine: Engine, site_id: int, limit: int, offset: int = 0) -> list[ArticleRow]:
    """A site's articles, the most recently found first (the index on site and found time)."""
    query = (
        select(*_ARTICLE_COLUMNS)
        .where(article.c.site_id == site_id)
        .order_by(article.c.created_at.desc(), article.c.article_id.desc())
        .limit(limit)
        .offset(offset)
    )
    with engine.connect() as conn:
        return [ArticleRow(**row._mapping) for row in conn.execute(query)]


def find_article(engine: Engine, article_id: int) -> ArticleRow | None:
    with engine.connect() as conn:
        row = conn.execute(
            select(*_ARTICLE_COLUMNS).where(article.c.article_id == article_id)
        ).one_or_none()
    return ArticleRow(**row._mapping) if row is not None else None


def snapshot_timeline(engine: Engine, article_id: int) -> list[SnapshotFacts]:
    """Every snapshot of an article, oldest first, without reading its bytes."""
    query = (
        select(
            article_snapshot.c.snapshot_at,
            article_snapshot.c.status,
            article_snapshot.c.final_url,
            article_snapshot.c.raw_size,
            article_snapshot.c.content_hash,
            article_snapshot.c.raw_data.is_not(None).label("stores_bytes"),
            article_snapshot.c.rendered,
        )
        .where(article_snapshot.c.article_id == article_id)
        .order_by(article_snapshot.c.snapshot_at)
    )
    with engine.connect() as conn:
        return [
            SnapshotFacts(
                snapshot_at=row.snapshot_at,
                status=row.status,
                final_url=row.final_url,
                raw_size=row.raw_size,
                content_hash=bytes(row.content_hash),
                stores_bytes=bool(row.stores_bytes),
                rendered=bool(row.rendered),
            )
            for row in conn.execute(query)
        ]


def publication_versions(engine: Engine, article_id: int) -> list[PublicationVersion]:
    """The parsed versions of an article, per parser version, oldest first."""
    query = (
        select(
            publication.c.publication_id,
            publication.c.parser_version,
            publication.c.version,
            publication.c.title,
            publication.c.publication_text.label("text"),
            publication.c.author,
            publication.c.published_at,
            publication.c.first_seen_at,
            publication.c.last_seen_at,
            publication.c.parsed_at,
        )
        .where(publication.c.article_id == article_id)
        .order_by(publication.c.parser_version, publication.c.version)
    )
    with engine.connect() as conn:
        return [PublicationVersion(**row._mapping) for row in conn.execute(query)]


@dataclass(frozen=True)
class SnapshotParse:
    snapshot_at: int
    parser_version: str
    publication_id: int | None  # None: the snapshot could not be parsed
    status: str


def snapshot_parses(engine: Engine, article_id: int) -> list[SnapshotParse]:
    """What each snapshot of an article was parsed into, per parser version, oldest first
    (the primary key of ``publication_mapping``)."""
    query = (
        select(
            publication_mapping.c.snapshot_at,
            publication_mapping.c.parser_version,
            publication_mapping.c.publication_id,
            publication_mapping.c.status,
        )
        .where(publication_mapping.c.article_id == article_id)
        .order_by(publication_mapping.c.snapshot_at, publication_mapping.c.parser_version)
    )
    with engine.connect() as conn:
        return [SnapshotParse(**row._mapping) for row in conn.execute(query)]


def latest_titles(engine: Engine, article_ids: list[int]) -> dict[int, str]:
    """The title of each article's latest version (the last first seen), for the articles
    parsed at all: one query over the publication table's article index."""
    if not article_ids:
        return {}
    query = (
        select(publication.c.article_id, publication.c.title)
        .where(publication.c.article_id.in_(article_ids))
        .order_by(publication.c.first_seen_at, publication.c.parsed_at)
    )
    with engine.connect() as conn:
        return {row.article_id: row.title for row in conn.execute(query)}
