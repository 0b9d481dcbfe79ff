"""Reading and writing Article rows: discovery inserts, due-work selection, redirects."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, bindparam, func, select, update
from sqlalchemy.engine import Connection, Engine

from zeroarchive.core.owners import queued_owner
from zeroarchive.core.schedule import STOP
from zeroarchive.core.urls import url_hash
from zeroarchive.storage.dialect import insert_ignore
from zeroarchive.storage.schema import article

DEFAULT_LEASE = 3600


@dataclass(frozen=True)
class DueArticle:
    """An article handed to a spider for a snapshot, under a lease."""

    article_id: int
    site_id: int
    url: str
    article_type: str
    #: A long-tail watch check of an article that still answered (zeroarchive/events/):
    #: its request may be conditional on the last snapshot's validators.
    watched: bool = False
    last_snapshot_at: int = 0
    #: Conditional request headers (If-None-Match, If-Modified-Since) for a watch check.
    conditional: tuple[tuple[str, str], ...] = ()
    #: SHA-256 (hex) of its last snapshot's bytes: an unchanged page fetches no media again.
    last_hash: str | None = None


def due_for_snapshot(now: int) -> ColumnElement[bool]:
    """The condition on Article rows whose snapshot is due at ``now`` and not leased out."""
    return and_(
        # "> STOP", not "!=": times are never negative, and SQLite reads "!=" as a range
        # from the start of the index, through every finished article.
        article.c.next_snapshot_at > STOP,
        article.c.next_snapshot_at <= now,
        article.c.redirect_to.is_(None),
        article.c.lease_until <= now,
    )


def claim_query(site_ids: Sequence[int], now: int, limit: int) -> Select[Any]:
    """The locking read of a claim: up to ``limit`` due articles of these sites, in claim
    order (oldest due first)."""
    query = (
        select(
            article.c.article_id,
            article.c.site_id,
            article.c.url,
            article.c.article_type,
            article.c.watch_at,
            article.c.deleted_at,
            article.c.last_snapshot_at,
            article.c.last_content_hash,
        )
        .where(article.c.site_id.in_(list(site_ids)), due_for_snapshot(now))
        .order_by(article.c.next_snapshot_at, article.c.article_id)
        .limit(limit)
        # MySQL: rows another worker is claiming are skipped, not waited for and then
        # handed out twice (SQLite ignores this; its runs are serialised per site).
        .with_for_update(skip_locked=True)
    )
    # MariaDB weighs every site index against each site in the list: 14 ms of planning for
    # 500 sites, and for 200 of 500 it chose ix_Article_site_created and sorted all their
    # due rows (10M articles: over 10 s, not 9 ms). One site's due rows are in claim order
    # in ix_Article_site_next, several sites' in ix_Article_scheduled. FORCE, not USE:
    # when most rows are due it would rather scan the table and sort them all.
    index = "ix_Article_site_next" if len(site_ids) == 1 else "ix_Article_scheduled"
    for dialect in ("mysql", "mariadb"):
        query = query.with_hint(article, f"FORCE INDEX ({index})", dialect_name=dialect)
    return query


def insert_new(
    conn: Connection, site_id: int, article_type: str, urls: Iterable[str], now: int
) -> dict[str, int]:
    """Insert the canonical ``urls`` that are not known yet (due now); return {url: id} of all."""
    by_hash = {url_hash(url): url for url in urls}
    if not by_hash:
        return {}
    query = select(article.c.url_hash, article.c.article_id).where(
        article.c.url_hash.in_(list(by_hash))
    )
    known = {bytes(row.url_hash): row.article_id for row in conn.execute(query)}
    missing = [h for h in by_hash if h not in known]
    if missing:
        _insert_rows(conn, site_id, article_type, by_hash, missing, now)
        query = select(article.c.url_hash, article.c.article_id).where(
            article.c.url_hash.in_(missing)
        )
        known.update({bytes(row.url_hash): row.article_id for row in conn.execute(query)})
    return {by_hash[h]: article_id for h, article_id in known.items()}


def _insert_rows(
    conn: Connection,
    site_id: int,
    article_type: str,
    by_hash: Mapping[bytes, str],
    missing: Sequence[bytes],
    now: int,
) -> None:
    """Insert the Article rows of these hashes (their URLs ``by_hash``), due now; a row
    another writer inserted meanwhile is left as it is."""
    conn.execute(
        insert_ignore(conn, article),
        [
            {
                "site_id": site_id,
                "url": by_hash[h],
                "url_hash": h,
                "article_type": article_type,
                "created_at": now,
                "next_snapshot_at": now,
            }
            for h in missing
        ],
    )


_SET_PUBLISHED = (
    update(article)
    .where(article.c.url_hash == bindparam("p_hash"), article.c.published_at.is_(None))
    .values(published_at=bindparam("p_at"))
)


class ArticleStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add(
        self,
        site_id: int,
        article_type: str,
        urls: Sequence[str],
        now: int,
        published: Mapping[str, int] | None = None,
    ) -> int:
        """Record canonical article URLs found on a list page, and the publication times it
        gave (kept where none was known yet); return how many URLs were new."""
        with self.engine.begin() as conn:
            return _add(conn, site_id, article_type, urls, now, published)

    def add_and_claim(
        self,
        site_id: int,
        article_type: str,
        urls: Sequence[str],
        now: int,
        published: Mapping[str, int] | None,
        limit: int,
        lease: int = DEFAULT_LEASE,
        owner: str | None = None,
    ) -> tuple[int, list[DueArticle]]:
        """``add`` these URLs, then ``claim_due`` the site's due articles (the new ones
        among them) at ``now``, in one transaction: a list page's links stored and its new
        articles handed out with one commit and one round trip to the pool, not two (on
        MariaDB each commit waits for its log flush, on the path from a list page to its
        first snapshots). (how many URLs were new, the articles claimed)."""
        with self.engine.begin() as conn:
            new = _add(conn, site_id, article_type, urls, now, published)
            due = _claim(conn, [site_id], now, limit, lease, owner)
        return new, due

    def make_due(self, urls: Sequence[str], now: int) -> int:
        """Make these (canonical) articles due now, whatever their schedule (`scrapy save`);
        how many there were."""
        hashes = [url_hash(url) for url in urls]
        with self.engine.begin() as conn:
            return int(
                conn.execute(
                    update(article)
                    .where(article.c.url_hash.in_(hashes), article.c.redirect_to.is_(None))
                    .values(next_snapshot_at=now, lease_until=0)
                ).rowcount
            )

    def last_snapshot_times(self, urls: Sequence[str]) -> dict[str, int]:
        """When each of these (canonical) articles was last snapshotted (0: never)."""
        hashes = {url_hash(url): url for url in urls}
        query = select(article.c.url_hash, article.c.last_snapshot_at).where(
            article.c.url_hash.in_(list(hashes))
        )
        with self.engine.connect() as conn:
            found = {hashes[row.url_hash]: int(row.last_snapshot_at) for row in conn.execute(query)}
        return {url: found.get(url, 0) for url in urls}

    def ids_of(self, urls: Sequence[str]) -> dict[str, int]:
        """The article id of each of these (canonical) URLs that is in the archive."""
        hashes = {url_hash(url): url for url in urls}
        query = select(article.c.url_hash, article.c.article_id).where(
            article.c.url_hash.in_(list(hashes))
        )
        with self.engine.connect() as conn:
            return {hashes[row.url_hash]: int(row.article_id) for row in conn.execute(query)}

    def urls_of(self, article_ids: Sequence[int]) -> dict[int, str]:
        """The URL of each of these articles that is in the archive."""
        query = select(article.c.article_id, article.c.url).where(
            article.c.article_id.in_(list(article_ids))
        )
        with self.engine.connect() as conn:
            return {int(row.article_id): row.url for row in conn.execute(query)}

    def stop_watch(self, urls: Sequence[str]) -> int:
        """Take these (canonical) articles off the long-tail watch (`scrapy save` without
        ``--watch``); how many there were."""
        hashes = [url_hash(url) for url in urls]
        if not hashes:
            return 0
        with self.engine.begin() as conn:
            return int(
                conn.execute(
                    update(article).where(article.c.url_hash.in_(hashes)).values(watch_at=0)
                ).rowcount
            )

    def claim_due(
        self,
        site_ids: Sequence[int],
        now: int,
        limit: int,
        lease: int = DEFAULT_LEASE,
        owner: str | None = None,
    ) -> list[DueArticle]:
        """Due articles of these sites, oldest due first, leased until ``now + lease`` to
        ``owner`` (zeroarchive/core/owners.py; default: queued).

        The one selection of due snapshots; a leased article is not handed out again until
        its snapshot is recorded, its holder is found dead (zeroarchive/storage/leases.py)
        or the lease runs out.
        """
        with self.engine.begin() as conn:
            return _claim(conn, site_ids, now, limit, lease, owner)

    def count_due(self, site_ids: Sequence[int], now: int) -> int:
        with self.engine.connect() as conn:
            return int(
                conn.execute(
                    select(func.count())
                    .select_from(article)
                    .where(
                        article.c.site_id.in_(list(site_ids)),
                        article.c.next_snapshot_at != STOP,
                        article.c.next_snapshot_at <= now,
                        article.c.redirect_to.is_(None),
                    )
                ).scalar_one()
            )


def _add(
    conn: Connection,
    site_id: int,
    article_type: str,
    urls: Sequence[str],
    now: int,
    published: Mapping[str, int] | None,
) -> int:
    """``ArticleStore.add`` in ``conn``'s transaction: one read of the URLs known and one
    insert of the others (how many they were)."""
    unique = dict.fromkeys(urls)
    by_hash = {url_hash(url): url for url in unique}
    if not by_hash:
        return 0
    known = {
        bytes(h)
        for h in conn.execute(
            select(article.c.url_hash).where(article.c.url_hash.in_(list(by_hash)))
        ).scalars()
    }
    missing = [h for h in by_hash if h not in known]
    if missing:
        _insert_rows(conn, site_id, article_type, by_hash, missing, now)
    dated = [
        {"p_hash": url_hash(url), "p_at": at}
        for url, at in (published or {}).items()
        if url in unique
    ]
    if dated:
        conn.execute(_SET_PUBLISHED, dated)
    return len(missing)


def _claim(
    conn: Connection,
    site_ids: Sequence[int],
    now: int,
    limit: int,
    lease: int,
    owner: str | None,
) -> list[DueArticle]:
    """``ArticleStore.claim_due`` in ``conn``'s transaction."""
    if not site_ids:
        return []
    query = claim_query(site_ids, now, limit)
    token = owner or queued_owner()
    # Retried with the same owner after a lost connection, a claim whose commit went
    # through unseen gets its rows back: leased to nobody else, nor fetched.
    earlier = (
        conn.execute(
            select(*query.selected_columns).where(
                article.c.lease_owner == token,
                article.c.lease_until > now,
                article.c.site_id.in_(list(site_ids)),
            )
        ).all()
        if owner is not None
        else []
    )
    rows = conn.execute(query).all()
    if not rows and not earlier:
        return []
    # Only the rows this claim's UPDATE actually leased are returned: a concurrent
    # claim that read the same rows finds its token absent from them.
    ids = [row.article_id for row in rows]
    leased = conn.execute(
        update(article)
        .where(article.c.article_id.in_(ids), article.c.lease_until <= now)
        .values(lease_until=now + lease, lease_owner=token)
    ).rowcount
    # Every row matched was leased by this UPDATE (the usual case): no need to look.
    mine = {row.article_id for row in earlier} | (
        set(ids)
        if leased == len(ids)
        else set(
            conn.execute(
                select(article.c.article_id).where(
                    article.c.article_id.in_(ids), article.c.lease_owner == token
                )
            ).scalars()
        )
    )
    return [
        DueArticle(
            row.article_id,
            row.site_id,
            row.url,
            row.article_type,
            watched=bool(row.watch_at) and not row.deleted_at,
            last_snapshot_at=row.last_snapshot_at,
            last_hash=None if row.last_content_hash is None else bytes(row.last_content_hash).hex(),
        )
        for row in [*earlier, *rows]
        if row.article_id in mine
    ]
