"""The long-tail watch: articles whose snapshot plan has ended are checked again at the
site's ``watch`` ages (default about 7, 30, 90, 180 and 365 days after their first
snapshot), at most ``watch_budget`` checks per site and UTC day, the longest-waiting first.

A check is not a crawl of its own: ``promote_watch`` makes the chosen articles due now,
and the one selection of due work (zeroarchive/crawl/due_work.py) hands them to the
spiders, embedded or through the redis queue, with the same politeness as every request.
The request is conditional (If-None-Match / If-Modified-Since from the last snapshot), so
an unchanged page costs a 304 and stores nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Select, select, tuple_, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from zeroarchive.core.schedule import DAY, STOP
from zeroarchive.sites.record import Site
from zeroarchive.storage.schema import article, article_snapshot, watch_usage


def watch_query(site_id: int, now: int, limit: int) -> Select[Any]:
    """A site's articles whose watch check is due, longest waiting first."""
    query = (
        select(article.c.article_id)
        .where(
            article.c.site_id == site_id,
            article.c.next_snapshot_at == STOP,
            article.c.watch_at > 0,
            article.c.watch_at <= now,
        )
        .order_by(article.c.watch_at, article.c.article_id)
        .limit(limit)
    )
    for dialect in ("mysql", "mariadb"):
        query = query.with_hint(article, "FORCE INDEX (ix_Article_watch)", dialect_name=dialect)
    return query


def used_today(conn: Connection, site_ids: Sequence[int], now: int) -> dict[int, int]:
    """Watch checks handed out today (UTC) per site."""
    rows = conn.execute(
        select(watch_usage.c.site_id, watch_usage.c.checks).where(
            watch_usage.c.day == now // DAY, watch_usage.c.site_id.in_(list(site_ids))
        )
    )
    return {row.site_id: row.checks for row in rows}


def _spend(conn: Connection, site_id: int, day: int, checks: int) -> None:
    done = conn.execute(
        update(watch_usage)
        .where(watch_usage.c.site_id == site_id, watch_usage.c.day == day)
        .values(checks=watch_usage.c.checks + checks)
    ).rowcount
    if not done:
        conn.execute(watch_usage.insert().values(site_id=site_id, day=day, checks=checks))


def promote_watch(engine: Engine, sites: Iterable[Site], now: int) -> dict[int, int]:
    """Make each site's due watch checks due now, within what is left of its daily budget;
    return how many per site. A site with ``watch: []`` is skipped."""
    watched = [s for s in sites if s.config.watch and s.config.watch_budget > 0]
    if not watched:
        return {}
    promoted: dict[int, int] = {}
    with engine.begin() as conn:
        used = used_today(conn, [s.site_id for s in watched], now)
        for site_record in watched:
            left = site_record.config.watch_budget - used.get(site_record.site_id, 0)
            if left <= 0:
                continue
            ids = list(conn.execute(watch_query(site_record.site_id, now, left)).scalars())
            if not ids:
                continue
            count = conn.execute(
                update(article)
                .where(article.c.article_id.in_(ids), article.c.next_snapshot_at == STOP)
                .values(next_snapshot_at=now, stop_reason=None)
            ).rowcount
            try:
                with conn.begin_nested():
                    _spend(conn, site_record.site_id, now // DAY, count)
            except IntegrityError:  # another scheduler added today's row first
                _spend(conn, site_record.site_id, now // DAY, count)
            promoted[site_record.site_id] = count
    return promoted


def validators(engine: Engine, last: Mapping[int, int]) -> dict[int, dict[str, str]]:
    """Conditional request headers (If-None-Match, If-Modified-Since) for articles, from
    the ETag and Last-Modified their last snapshot (``article_id -> snapshot_at``) came
    with; articles whose snapshot had neither are left out."""
    if not last:
        return {}
    keys = [(article_id, at) for article_id, at in last.items()]
    found: dict[int, dict[str, str]] = {}
    with engine.connect() as conn:
        rows = conn.execute(
            select(article_snapshot.c.article_id, article_snapshot.c.headers).where(
                tuple_(article_snapshot.c.article_id, article_snapshot.c.snapshot_at).in_(keys)
            )
        )
        for row in rows:
            headers = conditional_headers(json.loads(row.headers))
            if headers:
                found[row.article_id] = headers
    return found


def conditional_headers(stored: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """The conditional headers a snapshot's stored response headers allow.

    >>> conditional_headers({"ETag": ['"abc"'], "Last-Modified": ["Tue, 01 Jan 2030 00:00:00 GMT"]})
    {'If-None-Match': '"abc"', 'If-Modified-Since': 'Tue, 01 Jan 2030 00:00:00 GMT'}
    >>> conditional_headers({"Content-Type": ["text/html"]})
    {}
    """
    by_name = {name.lower(): values for name, values in stored.items() if values}
    headers = {}
    if "etag" in by_name:
        headers["If-None-Match"] = by_name["etag"][0]
    if "last-modified" in by_name:
        headers["If-Modified-Since"] = by_name["last-modified"][0]
    return headers
