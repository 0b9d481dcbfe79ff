"""Who holds what, and taking back what a dead holder or a lost queue held.

Due articles are leased when handed out (``ArticleStore.claim_due``) and a site's list walk
when queued or begun (``Site.walk_owner``); the owner says who holds each
(zeroarchive/core/owners.py). A snapshot written, or a failure recorded, ends an article's
lease. A walk ends when its last page was answered: in distributed mode its pages are
counted in redis (zeroarchive/distributed/walks.py) and the walk is named by its site and
round, the ``last_crawl_at`` it began at, so a page of an older walk of the site never
ends or takes a newer one; an embedded run's walks end when it finishes. Recovery makes
what a dead holder or a lost queue held due again at once and counts it per site
(``Site.recoveries``, ``last_recovery_at``: `site_stats`, the monitor).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam, func, not_, or_, select, update
from sqlalchemy.engine import Engine

from zeroarchive.core.owners import QUEUED, WORKER, prefix_range, queued_owner
from zeroarchive.storage.schema import article, site

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Released:
    """What one recovery made due again."""

    articles: int = 0
    walks: int = 0
    #: Articles and walks released, by site id.
    by_site: dict[int, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.articles or self.walks)

    def __add__(self, other: Released) -> Released:
        return Released(
            self.articles + other.articles,
            self.walks + other.walks,
            dict(Counter(self.by_site) + Counter(other.by_site)),
        )


def _in_range(column: Any, prefix: str) -> ColumnElement[bool]:
    low, high = prefix_range(prefix)
    return and_(column >= low, column < high)


def _walks_match(walks: Collection[tuple[int, int]]) -> ColumnElement[bool]:
    """The Site rows of these walks (site id, round), while not done."""
    return and_(
        or_(*(and_(site.c.site_id == s, site.c.last_crawl_at == r) for s, r in sorted(walks))),
        site.c.walk_owner.is_not(None),
    )


def take(
    engine: Engine,
    owner: str,
    now: int,
    lease: int,
    article_ids: Collection[int] = (),
    walks: Collection[tuple[int, int]] = (),
) -> None:
    """A worker took these articles' snapshots and pages of these walks (site id, round)
    from the queue: held by ``owner`` (an article's lease runs from now; a walk is its
    last taker's until done). Work no longer queued (done meanwhile, or released) is left
    alone."""
    with engine.begin() as conn:
        if article_ids:
            conn.execute(
                update(article)
                .where(
                    article.c.article_id.in_(sorted(article_ids)),
                    article.c.lease_until > now,
                    _in_range(article.c.lease_owner, QUEUED),
                )
                .values(lease_owner=owner, lease_until=now + lease)
            )
        if walks:
            conn.execute(
                update(site)
                .where(
                    _walks_match(walks),
                    or_(_in_range(site.c.walk_owner, QUEUED), _in_range(site.c.walk_owner, WORKER)),
                )
                .values(walk_owner=owner)
            )


def give_back(
    engine: Engine,
    owner: str,
    article_ids: Collection[int] = (),
    walks: Collection[tuple[int, int]] = (),
) -> None:
    """``owner`` no longer holds these: put back in the queue unstarted (a closing worker),
    or, for walks, their pages it held were answered and the next ones are queued."""
    queued = queued_owner()
    with engine.begin() as conn:
        if article_ids:
            conn.execute(
                update(article)
                .where(
                    article.c.article_id.in_(sorted(article_ids)), article.c.lease_owner == owner
                )
                .values(lease_owner=queued)
            )
        if walks:
            conn.execute(
                update(site)
                .where(_walks_match(walks), site.c.walk_owner == owner)
                .values(walk_owner=queued)
            )


def end_walks(engine: Engine, walks: Collection[tuple[int, int]]) -> int:
    """These walks (site id, round) had their last page answered: done; return how many
    (a walk made due again since, or begun again, is another and stays)."""
    if not walks:
        return 0
    with engine.begin() as conn:
        result = conn.execute(update(site).where(_walks_match(walks)).values(walk_owner=None))
    return int(result.rowcount)


def holders(engine: Engine, prefix: str, now: int) -> set[str]:
    """Every owner starting with ``prefix`` that holds a live lease or a walk (an index
    range of Article, and Site)."""
    with engine.connect() as conn:
        leases = conn.execute(
            select(article.c.lease_owner)
            .where(_in_range(article.c.lease_owner, prefix), article.c.lease_until > now)
            .distinct()
        ).scalars()
        found = set(leases)
        found.update(
            conn.execute(
                select(site.c.walk_owner).where(_in_range(site.c.walk_owner, prefix)).distinct()
            ).scalars()
        )
    return {owner for owner in found if owner}


def sites_held(engine: Engine, prefix: str, now: int) -> set[int]:
    """Sites with a live lease or a walk held by an owner starting with ``prefix``."""
    with engine.connect() as conn:
        ids = set(
            conn.execute(
                select(article.c.site_id)
                .where(_in_range(article.c.lease_owner, prefix), article.c.lease_until > now)
                .distinct()
            ).scalars()
        )
        ids.update(
            conn.execute(
                select(site.c.site_id).where(_in_range(site.c.walk_owner, prefix))
            ).scalars()
        )
    return ids


def release_owners(engine: Engine, owners: Collection[str], now: int) -> Released:
    """Make everything ``owners`` (dead holders) held due again now."""
    if not owners:
        return Released()
    names = sorted(owners)
    return _release(
        engine,
        now,
        article.c.lease_owner.in_(names),
        site.c.walk_owner.in_(names),
    )


def release_in_flight(
    engine: Engine, site_types: Sequence[str], now: int, keep: Collection[str] = ()
) -> Released:
    """The queues were lost: make every leased article of sites of these types due again
    now, but for what the owners in ``keep`` (live workers) hold, and every walk not done:
    its counter went with the queue, so no one could tell when its last page is answered.

    Leases are found by their owners (queued or a worker's) in ``ix_Article_lease_owner``:
    over the sites' subquery MariaDB scanned every article (1M: 44 s, not 0.1 s).
    """
    with engine.connect() as conn:
        site_ids = list(
            conn.execute(select(site.c.site_id).where(site.c.type.in_(list(site_types)))).scalars()
        )
    if not site_ids:
        return Released()
    in_flight = or_(
        _in_range(article.c.lease_owner, QUEUED), _in_range(article.c.lease_owner, WORKER)
    )
    articles_held: ColumnElement[bool] = and_(in_flight, article.c.site_id.in_(site_ids))
    walks_held = and_(site.c.site_id.in_(site_ids), site.c.walk_owner.is_not(None))
    if keep:
        kept = sorted(keep)
        articles_held = and_(articles_held, not_(article.c.lease_owner.in_(kept)))
    return _release(engine, now, articles_held, walks_held)


def release_runs(
    engine: Engine,
    site_ids: Collection[int],
    prefix: str,
    now: int,
    *,
    recovery: bool = True,
    walks_done: bool = False,
) -> Released:
    """Make what embedded runs (owners starting with ``prefix``) held on these sites due
    again now; the caller holds the sites' run locks, so no other live run holds any.
    ``recovery`` False: a run closing gives back its own leftovers (not counted); its walks
    are done if it finished (``walks_done``), else due again now."""
    if not site_ids:
        return Released()
    ids = sorted(site_ids)
    return _release(
        engine,
        now,
        and_(article.c.site_id.in_(ids), _in_range(article.c.lease_owner, prefix)),
        and_(site.c.site_id.in_(ids), _in_range(site.c.walk_owner, prefix)),
        recovery=recovery,
        walks_done=walks_done,
    )


_COUNT_RECOVERY = (
    update(site)
    .where(site.c.site_id == bindparam("p_site_id"))
    .values(recoveries=site.c.recoveries + bindparam("p_n"), last_recovery_at=bindparam("p_at"))
)


def _release(
    engine: Engine,
    now: int,
    articles_held: ColumnElement[bool],
    walks_held: ColumnElement[bool],
    *,
    recovery: bool = True,
    walks_done: bool = False,
) -> Released:
    leased = and_(articles_held, article.c.lease_until > now)
    with engine.begin() as conn:
        per_site: Counter[int] = Counter(
            {
                row.site_id: int(row.n)
                for row in conn.execute(
                    select(article.c.site_id, func.count().label("n"))
                    .where(leased)
                    .group_by(article.c.site_id)
                )
            }
        )
        articles = 0
        if per_site:
            articles = int(
                conn.execute(
                    update(article).where(leased).values(lease_until=0, lease_owner=None)
                ).rowcount
            )
        walked = list(conn.execute(select(site.c.site_id).where(walks_held)).scalars())
        if walked:
            # A walk given back by a run that finished was done (it ran to the end); one
            # taken back from a dead holder or a lost queue, or left by a run stopped before
            # its end, is due again now.
            values: dict[str, Any] = {"walk_owner": None}
            if recovery or not walks_done:
                values["next_crawl_at"] = now
            conn.execute(update(site).where(site.c.site_id.in_(walked)).values(**values))
            per_site.update(walked)
        if per_site and recovery:
            conn.execute(
                _COUNT_RECOVERY,
                [{"p_site_id": s, "p_n": n, "p_at": now} for s, n in sorted(per_site.items())],
            )
    return Released(articles, len(walked), dict(per_site))
