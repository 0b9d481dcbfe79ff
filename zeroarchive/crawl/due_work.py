"""The one selection of due work, for both modes: the embedded crawl's start and idle
batches (archive_spider.py) and every round of `scrapy schedule` (dispatch.py).

A site is due when its list pages are (``next_crawl_at`` has come) or when one of its
articles is (its snapshot is due and not leased out). Due articles are handed out under a
lease, so none is handed out twice while in flight, and work a killed process held comes
due again when its lease runs out.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace

from zeroarchive.core.items import ArticleLinks
from zeroarchive.crawl.list_intervals import WalkPlan
from zeroarchive.crawl.list_pages import begin_pages, walk_plan
from zeroarchive.events.watch import promote_watch, validators
from zeroarchive.sites.record import Site, SiteConfigError
from zeroarchive.storage.archive import Archive
from zeroarchive.storage.articles import DueArticle
from zeroarchive.storage.list_pages import ListPageStore
from zeroarchive.storage.sites import site_from_row

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DueSites:
    #: Active sites of the asked types with due work, by id.
    sites: dict[int, Site]
    #: Ids of those whose list pages are due.
    walk: frozenset[int]
    #: Names of sites skipped because their stored config is bad (each logged).
    bad: tuple[str, ...] = ()
    #: When the last walk of each site began (``last_crawl_at``), by id.
    last_walk: dict[int, int] = field(default_factory=dict)
    #: The type of each site of ``bad``, in its order.
    bad_types: tuple[str, ...] = ()

    def of_types(self, types: Collection[str]) -> DueSites:
        """The part of this selection that is of these types: one selection for all
        spiders, split by spider (`scrapy schedule` selects once a round, not once per
        spider: the same due-articles read five times a round, with the watch's).

        >>> from zeroarchive.sites.record import SiteConfig
        >>> a, b = (Site(i, f"s{i}", f"https://s{i}.example/", t, SiteConfig())
        ...         for i, t in ((1, "news"), (2, "ptt")))
        >>> due = DueSites({1: a, 2: b}, frozenset({1, 2}), ("x",), {1: 5, 2: 6}, ("ptt",))
        >>> part = due.of_types(("ptt",))
        >>> list(part.sites), set(part.walk), part.bad, part.last_walk
        ([2], {2}, ('x',), {2: 6})
        """
        sites = {i: site for i, site in self.sites.items() if site.type in types}
        bad = [(name, t) for name, t in zip(self.bad, self.bad_types, strict=True) if t in types]
        return DueSites(
            sites,
            self.walk & sites.keys(),
            tuple(name for name, _ in bad),
            {i: at for i, at in self.last_walk.items() if i in sites},
            tuple(t for _, t in bad),
        )


def due_sites(
    archive: Archive,
    site_types: Sequence[str],
    now: int,
    *,
    lists: bool = True,
    snapshots: bool = True,
) -> DueSites:
    """The sites of these types with due list pages (``lists``) or due snapshots
    (``snapshots``) at ``now``; a site whose stored config no longer validates is logged
    and skipped, never the whole selection."""
    sites: dict[int, Site] = {}
    walk: set[int] = set()
    bad: list[str] = []
    bad_types: list[str] = []
    last_walk: dict[int, int] = {}
    if snapshots:
        watch_checks(archive, site_types, now)
    rows = archive.sites.due_rows(tuple(site_types), now, lists=lists, snapshots=snapshots)
    for row in rows:
        try:
            site = site_from_row(row)
        except SiteConfigError as exc:
            logger.error("Skipping a site with a bad stored config: %s", exc)
            bad.append(row["name"])
            bad_types.append(row["type"])
            continue
        sites[site.site_id] = site
        last_walk[site.site_id] = int(row["last_crawl_at"])
        if lists and site.is_active and row["next_crawl_at"] <= now:
            walk.add(site.site_id)
    return DueSites(sites, frozenset(walk), tuple(bad), last_walk, tuple(bad_types))


def watch_checks(archive: Archive, site_types: Sequence[str], now: int) -> dict[int, int]:
    """Make the long-tail watch checks of the watched sites of these types (active ones,
    and the ad-hoc sites of saved pages) due now, within each site's daily budget
    (zeroarchive/events/watch.py); how many per site."""
    watched = []
    for row in archive.sites.watched_rows(tuple(site_types)):
        try:
            watched.append(site_from_row(row))
        except SiteConfigError:
            continue  # due_sites logs it
    promoted = promote_watch(archive.engine, watched, now)
    if promoted:
        logger.info("Long-tail watch: %d check(s) due now", sum(promoted.values()))
    return promoted


def walk_round(now: int, last_walk: int) -> int:
    """The round of a walk begun at ``now``: its time, but always after the site's last
    walk, so that no two walks of a site share one (rounds a second apart, a frozen clock).

    >>> walk_round(1800000000, 1799999400)
    1800000000
    >>> walk_round(1800000000, 1800000000)
    1800000001
    """
    return max(now, last_walk + 1)


def plan_walk_of(archive: Archive, site: Site, now: int, everything: bool = False) -> WalkPlan:
    """Which of the site's known list pages a walk at ``now`` asks for, within its budget
    (zeroarchive/crawl/list_intervals.py); ``everything`` when a person asked for the site."""
    return walk_plan(ListPageStore(archive.engine), site, now, everything)


def begin_walk(
    archive: Archive, site: Site, now: int, owner: str, plan: WalkPlan | None = None
) -> None:
    """Record that a walk of the site's list pages starts at ``now`` (its round), held by
    ``owner`` (queued, or an embedded run: zeroarchive/core/owners.py), with the pages its
    ``plan`` asks for and postpones, and when the next one is due: its earliest page."""
    if plan is None:
        plan = plan_walk_of(archive, site, now)
    next_at = begin_pages(ListPageStore(archive.engine), site, plan, now)
    archive.sites.mark_list_crawl(site.site_id, now, next_at, owner)


def skip_walk(archive: Archive, site: Site, now: int, plan: WalkPlan) -> None:
    """A due site none of whose pages is asked for now (none due after all, or all put off
    by the budget): its postponements recorded, its next walk when its earliest page is."""
    next_at = begin_pages(ListPageStore(archive.engine), site, plan, now)
    archive.sites.set_next_crawl(site.site_id, max(next_at, now + 1))


def claim_due(
    archive: Archive,
    site_ids: Sequence[int],
    now: int,
    limit: int,
    lease: int,
    owner: str | None = None,
) -> list[DueArticle]:
    """Up to ``limit`` due articles of these sites, oldest due first, leased until
    ``now + lease`` to ``owner`` (default: queued); a watch check carries the conditional
    headers of its last snapshot."""
    return _with_validators(archive, archive.articles.claim_due(site_ids, now, limit, lease, owner))


@dataclass(frozen=True)
class LinksClaim:
    """How a spider has its site's due articles claimed with a list page's links
    (pipelines/articles.py)."""

    limit: int
    lease: int
    #: The lease owner, the same for every retry of the write (see ``claim_due``).
    owner: str


def store_and_claim(
    archive: Archive, links: ArticleLinks, now: int, claim: LinksClaim
) -> tuple[int, list[DueArticle]]:
    """Store a list page's article links found at ``now`` and claim its site's due
    articles (``claim_due``) in one transaction: (how many links were new, the claim)."""
    new, due = archive.articles.add_and_claim(
        links.site_id,
        links.article_type,
        links.urls,
        now,
        links.published,
        claim.limit,
        claim.lease,
        claim.owner,
    )
    return new, _with_validators(archive, due)


def _with_validators(archive: Archive, due: list[DueArticle]) -> list[DueArticle]:
    """The claimed articles, a watch check's with the conditional headers of its last
    snapshot."""
    found = validators(archive.engine, {a.article_id: a.last_snapshot_at for a in due if a.watched})
    return [
        replace(a, conditional=tuple(found[a.article_id].items())) if a.article_id in found else a
        for a in due
    ]
