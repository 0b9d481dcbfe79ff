"""0archive's articles as the archive's: URL identity recomputed (canonical URL, its
16-byte hash), 0archive's duplicates of one URL merged into one article, times and counts
kept, the schedule carried on, and ``redirect_to`` (a URL) turned into the archive's move
(the target article's id).

0archive's ``next_snapshot_at``: 0 means stopped, and the article stays stopped (as a
finished plan); a time, due or not, stays that time; -1 (or any negative value), which
0archive's own selection (``next_snapshot_at != 0 AND next_snapshot_at < now``) took for
due, is due at the import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.engine import Connection

from zeroarchive.core.schedule import STOP
from zeroarchive.core.urls import UrlRejected, UrlRules, canonicalize_url, url_hash
from zeroarchive.storage.articles import insert_new
from zeroarchive.storage.from_0archive.ids import ARTICLE, known_ids, remember
from zeroarchive.storage.from_0archive.source import OldArticle
from zeroarchive.storage.schema import article

#: The stop reason of an article 0archive had stopped: its plan ran out (or the page aged out).
STOPPED = "plan_complete"


@dataclass(frozen=True)
class TargetSite:
    site_id: int
    rules: UrlRules


def next_at(old: int, now: int) -> int:
    """The archive's next snapshot time for 0archive's ``next_snapshot_at``.

    >>> next_at(0, 1_700_000_000), next_at(1_600_000_000, 1_700_000_000)
    (0, 1600000000)
    >>> next_at(-1, 1_700_000_000)
    1700000000
    """
    if old == STOP:
        return STOP
    return now if old < 0 else old


def merged_next(a: int, b: int) -> int:
    """The next snapshot of two merged duplicates: the earlier scheduled one; stopped only
    when both are (0archive went on fetching whichever was scheduled).

    >>> merged_next(0, 5), merged_next(7, 5), merged_next(0, 0)
    (5, 5, 0)
    """
    scheduled = [at for at in (a, b) if at > STOP]
    return min(scheduled) if scheduled else STOP


def _earliest(a: int, b: int) -> int:
    return min(at for at in (a, b) if at) if (a or b) else 0


def canonical(url: str, rules: UrlRules) -> str:
    return canonicalize_url(url.strip(), rules)


@dataclass
class ArticleCounts:
    imported: int = 0
    added: int = 0
    merged: int = 0
    already: int = 0
    skipped: int = 0


_MERGE = (
    update(article)
    .where(article.c.article_id == bindparam("p_id"))
    .values(
        first_snapshot_at=bindparam("p_first"),
        last_snapshot_at=bindparam("p_last"),
        next_snapshot_at=bindparam("p_next"),
        snapshot_count=bindparam("p_count"),
        stop_reason=bindparam("p_stop"),
    )
)


def write_articles(
    conn: Connection,
    source: str,
    batch: Sequence[OldArticle],
    sites: Mapping[int, TargetSite],
    now: int,
    counts: ArticleCounts,
    skip: Callable[[str, str], None],
) -> None:
    """Import a batch of 0archive articles in the caller's transaction."""
    done = known_ids(conn, source, ARTICLE, [a.article_id for a in batch])
    counts.already += len(done)
    groups: dict[bytes, list[tuple[OldArticle, str]]] = {}
    for old in batch:
        if old.article_id in done:
            continue
        target = sites.get(old.site_id)
        if target is None:
            what = f"article {old.article_id} ({old.url[:200]})"
            skip(what, f"its site {old.site_id} is not in 0archive")
            counts.skipped += 1
            continue
        try:
            url = canonical(old.url, target.rules)
        except UrlRejected as exc:
            skip(f"article {old.article_id} ({old.url[:200]})", f"URL rejected: {exc}")
            counts.skipped += 1
            continue
        groups.setdefault(url_hash(url), []).append((old, url))
    if not groups:
        return
    existing = {
        bytes(row.url_hash): dict(row._mapping)
        for row in conn.execute(
            select(
                article.c.article_id,
                article.c.url_hash,
                article.c.first_snapshot_at,
                article.c.last_snapshot_at,
                article.c.next_snapshot_at,
                article.c.snapshot_count,
                article.c.stop_reason,
            ).where(article.c.url_hash.in_(list(groups)))
        )
    }
    inserts: list[dict[str, Any]] = []
    merges: list[dict[str, Any]] = []
    for digest, group in groups.items():
        row = existing.get(digest)
        olds = [old for old, _ in group]
        if row is None:
            first, *rest = olds
            row = {
                "site_id": sites[first.site_id].site_id,
                "url": group[0][1],
                "url_hash": digest,
                "article_type": first.article_type,
                "created_at": first.first_snapshot_at or now,
                "first_snapshot_at": first.first_snapshot_at,
                "last_snapshot_at": first.last_snapshot_at,
                "next_snapshot_at": next_at(first.next_snapshot_at, now),
                "snapshot_count": first.snapshot_count,
            }
            for old in rest:
                _fold(row, old, now)
            row["stop_reason"] = STOPPED if row["next_snapshot_at"] == STOP else None
            inserts.append(row)
            counts.added += 1
            counts.merged += len(rest)
        else:
            for old in olds:
                _fold(row, old, now)
            stop = row["stop_reason"] or STOPPED
            merges.append(
                {
                    "p_id": row["article_id"],
                    "p_first": row["first_snapshot_at"],
                    "p_last": row["last_snapshot_at"],
                    "p_next": row["next_snapshot_at"],
                    "p_count": row["snapshot_count"],
                    "p_stop": stop if row["next_snapshot_at"] == STOP else None,
                }
            )
            counts.merged += len(olds)
        counts.imported += len(olds)
    if inserts:
        conn.execute(article.insert(), inserts)
    if merges:
        conn.execute(_MERGE, merges)
    new_ids = {
        bytes(row.url_hash): int(row.article_id)
        for row in conn.execute(
            select(article.c.url_hash, article.c.article_id).where(
                article.c.url_hash.in_(list(groups))
            )
        )
    }
    remember(
        conn,
        source,
        ARTICLE,
        {old.article_id: new_ids[digest] for digest, group in groups.items() for old, _ in group},
    )


def _fold(row: dict[str, Any], old: OldArticle, now: int) -> None:
    """Count a duplicate's times and snapshots into the article it merges into."""
    row["first_snapshot_at"] = _earliest(row["first_snapshot_at"], old.first_snapshot_at)
    row["last_snapshot_at"] = max(row["last_snapshot_at"], old.last_snapshot_at)
    row["snapshot_count"] += old.snapshot_count
    upcoming = next_at(old.next_snapshot_at, now)
    row["next_snapshot_at"] = merged_next(row["next_snapshot_at"], upcoming)


def write_redirects(
    conn: Connection,
    source: str,
    batch: Sequence[OldArticle],
    sites: Mapping[int, TargetSite],
    now: int,
    skip: Callable[[str, str], None],
) -> int:
    """Turn 0archive's ``redirect_to`` URLs of a batch into moves: the article stops and
    names its target, which is created (due now, as the crawl's move does) when the
    archive does not have it. Returns how many moves were recorded."""
    ids = known_ids(conn, source, ARTICLE, [a.article_id for a in batch])
    if not ids:
        return 0
    pending = {
        int(row.article_id)
        for row in conn.execute(
            select(article.c.article_id).where(
                article.c.article_id.in_(sorted(set(ids.values()))), article.c.redirect_to.is_(None)
            )
        )
    }
    moves = 0
    for old in batch:
        new_id = ids.get(old.article_id)
        if new_id not in pending or old.redirect_to is None:
            continue
        target_site = sites[old.site_id]
        try:
            url = canonical(old.redirect_to, target_site.rules)
        except UrlRejected as exc:
            what = f"redirect of article {old.article_id} to {old.redirect_to[:200]}"
            skip(what, f"URL rejected: {exc}")
            continue
        target = insert_new(conn, target_site.site_id, old.article_type, [url], now)[url]
        if target == new_id:
            continue
        conn.execute(
            update(article)
            .where(article.c.article_id == new_id)
            .values(redirect_to=target, next_snapshot_at=STOP, stop_reason="moved", lease_until=0)
        )
        pending.discard(new_id)
        moves += 1
    return moves
