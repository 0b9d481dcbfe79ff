"""The site monitor: per site, what was found lately and how its snapshots stand.

The 0archive monitor counted new articles over the last 3, 7, 28, 180 and 360 days; a
site that stops yielding new articles has usually been redesigned (the regexes no longer
match) or has blocked us. Nothing scans Article: its triggers keep per-site totals and
per-site-and-day counts (migration 0008); scheduled articles, the few whose counts change
with the clock, are read as one index range; a site's newest article and the part of a
day a window starts in are index lookups per site.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, case, func, select, update
from sqlalchemy.engine import Connection, Engine

from zeroarchive.core.errors import BLOCKED
from zeroarchive.core.owners import kind_of
from zeroarchive.core.schedule import DAY, STOP
from zeroarchive.core.url_shapes import readable
from zeroarchive.sites.record import SiteConfigError
from zeroarchive.storage.list_pages import ListPageStore
from zeroarchive.storage.media_stats import SiteMedia, site_media
from zeroarchive.storage.patterns import PatternStore, UnmatchedShape
from zeroarchive.storage.schema import (
    article,
    article_event,
    site,
    site_article_days,
    site_article_totals,
)
from zeroarchive.storage.sites import site_from_row

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

NEW_ARTICLE_DAYS = (3, 7, 28, 180, 360)
#: Shapes of unmatched links shown per site.
UNMATCHED_SHOWN = 3
# Stops that are the plan working as meant, not a problem with the site.
NORMAL_STOPS = ("plan_complete", "moved")


@dataclass(frozen=True)
class SiteStatsConfig:
    quiet_days: int
    overdue_seconds: int
    unanswered_seconds: int = DAY

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SiteStatsConfig:
        config = cls(
            quiet_days=settings.getint("SITE_STATS_QUIET_DAYS"),
            overdue_seconds=settings.getint("SITE_STATS_OVERDUE_SECONDS"),
            unanswered_seconds=settings.getint("SITE_STATS_UNANSWERED_SECONDS"),
        )
        if config.quiet_days < 1 or config.overdue_seconds < 0 or config.unanswered_seconds < 1:
            raise ValueError(
                "SITE_STATS_QUIET_DAYS and SITE_STATS_UNANSWERED_SECONDS must be >= 1, "
                "SITE_STATS_OVERDUE_SECONDS >= 0"
            )
        return config


@dataclass(frozen=True)
class ListPageStats:
    """One tracked list page of a site (zeroarchive/crawl/list_intervals.py)."""

    url: str
    kind: str
    interval: int  # seconds between its walks now (0: never walked)
    #: Its estimated new article links per day (None before its second walk).
    new_per_day: float | None
    walks: int
    new_links: int
    not_modified: int  # walks answered 304
    postponed: int  # times the site's budget put it off
    last_walk_at: int
    next_walk_at: int
    #: When the site's walks last linked it, and when it last showed a new link (a page
    #: neither for list_intervals.RETIRE_AFTER is retired).
    linked_at: int = 0
    new_at: int = 0
    #: Its changes (full answers with new validators), fading over a week, as of its last
    #: walk, and when it last changed: pages that never change leave their share of the
    #: budget to those that do (list_intervals.shares).
    changes: float = 0.0
    changed_at: int = 0


@dataclass(frozen=True)
class SiteStats:
    site_id: int
    name: str
    type: str
    category: str | None  # the researchers' category (Airtable label), if any
    is_active: bool
    articles: int
    new: dict[int, int]  # days -> articles first seen in the last that many days
    snapshots: int  # snapshots taken (rotation drops rows, not this count)
    due: int  # snapshots due now
    overdue: int  # due for longer than the overdue threshold
    failing: int  # still scheduled, but the last fetch(es) failed
    blocked: int  # the last fetch met a block page (bot challenge, captcha, login wall)
    stopped: int  # stopped for a reason other than the plan ending or a move
    last_list_crawl_at: int  # a walk of the list pages started
    last_list_ok_at: int  # a list page answered
    last_new_article_at: int
    quiet: bool  # active, and no new article for quiet_days
    # Its list pages "never" answered a finished walk, or "stopped" answering ("": they do).
    unanswered: str = ""
    # The list walk: "queued", "begun" (a worker or run holds it) or "" (walked; owners.py).
    walk: str = ""
    recoveries: int = 0  # walks and leases taken back from dead holders or lost queues
    last_recovery_at: int = 0
    #: Events (zeroarchive/events/) per UTC month "YYYY-MM" of the last year, newest first:
    #: {"deleted": n, "edited": n, "restored": n}.
    events: dict[str, dict[str, int]] = field(default_factory=dict)
    #: The most common shapes of the same-site links its latest walk matched to neither
    #: ``article`` nor ``following`` (zeroarchive/crawl/link_sorting.py), most first.
    unmatched: tuple[UnmatchedShape, ...] = ()
    #: The media its snapshots showed (zeroarchive/storage/media_stats.py).
    media: SiteMedia = field(default_factory=SiteMedia)
    #: Its tracked list pages, shortest interval first.
    list_pages: tuple[ListPageStats, ...] = ()
    #: Tracked list requests its walks made this UTC day, and its daily budget of them.
    list_requests_today: int = 0
    list_budget: int = 0

    def events_this_month(self, now: int) -> dict[str, int]:
        """This UTC month's deletions, edits and restorations."""
        return self.events.get(_month(now), dict.fromkeys(EVENT_KINDS, 0))

    def as_json(self) -> dict[str, Any]:
        record = dict(self.__dict__)
        record["new"] = {f"{days}d": n for days, n in self.new.items()}
        record["unmatched"] = [
            {"shape": readable(u.shape), "links": u.links, "example": u.example}
            for u in self.unmatched
        ]
        record["media"] = self.media.as_json()
        record["list_pages"] = [dict(page.__dict__) for page in self.list_pages]
        return record


def list_page_stats(rows: list[dict[str, Any]], now: int) -> tuple[tuple[ListPageStats, ...], int]:
    """A site's tracked pages as stats, shortest interval first, and its requests today."""
    today = now // DAY
    pages = []
    for row in rows:
        seconds = float(row["rate_seconds"])
        pages.append(
            ListPageStats(
                url=str(row["url"]),
                kind=str(row["kind"]),
                interval=int(row["interval"]),
                new_per_day=round(float(row["rate_links"]) / seconds * DAY, 2)
                if seconds > 0
                else None,
                walks=int(row["walks"]),
                new_links=int(row["new_links"]),
                not_modified=int(row["not_modified"]),
                postponed=int(row["postponed"]),
                last_walk_at=int(row["last_walk_at"]),
                next_walk_at=int(row["next_walk_at"]),
                linked_at=int(row.get("linked_at") or 0),
                new_at=int(row.get("new_at") or 0),
                changes=round(float(row.get("changes") or 0.0), 2),
                changed_at=int(row.get("changed_at") or 0),
            )
        )
    pages.sort(key=lambda p: (p.interval or 10**9, p.url))
    used = sum(int(row["walks_today"]) for row in rows if int(row["day"]) == today)
    return tuple(pages), used


def _budget(row: Any, pages: int) -> int:
    """A site's daily budget of tracked list requests with ``pages`` tracked pages (0 when
    its config is bad)."""
    try:
        return site_from_row(row._mapping).list_bounds.budget(pages)
    except SiteConfigError:
        return 0


def unanswered(
    is_active: bool, walk: str, last_crawl_at: int, last_list_ok_at: int, after: int
) -> str:
    """Whether an active site's list pages have stopped answering: "never" (walks ran, not
    one list page answered), "stopped" (the latest walk began ``after`` seconds or more
    after the last answer), or "". A walk under way is not judged.

    >>> [unanswered(True, "", 500, ok, 100) for ok in (0, 300, 450)]
    ['never', 'stopped', '']
    >>> unanswered(True, "begun", 500, 0, 100), unanswered(False, "", 500, 0, 100)
    ('', '')
    """
    if not is_active or walk or not last_crawl_at:
        return ""
    if not last_list_ok_at:
        return "never"
    return "stopped" if last_crawl_at - last_list_ok_at >= after else ""


def walk_state(owner: str | None) -> str:
    """What a site's ``walk_owner`` says of its list walk.

    >>> [walk_state(o) for o in (None, "q" + "0" * 15, "w" + "1" * 15, "r" + "2" * 15)]
    ['', 'queued', 'begun', 'begun']
    """
    kind = kind_of(owner)
    if kind is None:
        return ""
    return "queued" if kind == "queued" else "begun"


EVENT_KINDS = ("deleted", "edited", "restored")


def _month(ts: int) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m")


def monthly_events(conn: Connection, now: int) -> dict[int, dict[str, dict[str, int]]]:
    """Per site, the events of each UTC month of the last year, newest month first."""
    # Counted per site, kind and UTC day in the database (one row each, whatever the
    # number of events), then the days folded into months here.
    day_of = article_event.c.detected_at // DAY
    rows = conn.execute(
        select(article_event.c.site_id, article_event.c.kind, day_of, func.count())
        .where(article_event.c.detected_at >= now - 366 * DAY)
        .group_by(article_event.c.site_id, article_event.c.kind, day_of)
    )
    found: dict[int, dict[str, dict[str, int]]] = {}
    for site_id, kind, day_number, events in rows:
        months = found.setdefault(site_id, {})
        counts = months.setdefault(_month(int(day_number) * DAY), dict.fromkeys(EVENT_KINDS, 0))
        counts[kind] = counts.get(kind, 0) + int(events)
    return {
        site_id: dict(sorted(months.items(), reverse=True)) for site_id, months in found.items()
    }


def _sum(condition: Any) -> Any:
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


def _window_starts(now: int) -> dict[int, int]:
    return {days: now - days * DAY for days in NEW_ARTICLE_DAYS}


def _scheduled_counts(now: int, config: SiteStatsConfig) -> Select[Any]:
    """Counts over the articles still on their plan, which change with the clock."""
    # Grouped by an expression, not the column: else SQLite (no statistics) scans all of
    # ix_Article_site_next to get site order, rather than the range of scheduled articles.
    site_id = (article.c.site_id + 0).label("site_id")
    return (
        select(
            site_id,
            func.coalesce(func.sum(article.c.snapshot_count), 0).label("snapshots"),
            _sum(article.c.next_snapshot_at <= now).label("due"),
            _sum(article.c.next_snapshot_at <= now - config.overdue_seconds).label("overdue"),
            _sum(article.c.failure_count > 0).label("failing"),
            _sum(article.c.stop_reason.like(f"%:{BLOCKED}")).label("blocked"),
        )
        .where(article.c.next_snapshot_at > STOP)
        .group_by(site_id)
    )


def _whole_days_since(now: int) -> Select[Any]:
    """Articles per site created on the days after the one each window starts in."""
    days = site_article_days.c
    starts = _window_starts(now)
    return (
        select(
            days.site_id,
            *(
                func.coalesce(
                    func.sum(case((days.day > start // DAY, days.articles), else_=0)), 0
                ).label(f"new_{n}")
                for n, start in starts.items()
            ),
        )
        .where(days.day > min(starts.values()) // DAY)
        .group_by(days.site_id)
    )


def _newest_articles() -> Select[Any]:
    # Correlated ORDER BY ... LIMIT 1 is one index probe per site on both databases; MAX()
    # read every article of the site on MariaDB, GROUP BY every article on SQLite.
    newest = (
        select(article.c.created_at)
        .where(article.c.site_id == site.c.site_id)
        .order_by(article.c.created_at.desc())
        .limit(1)
        .scalar_subquery()
    )
    return select(site.c.site_id, newest.label("last"))


def _start_of_window(site_ids: list[int], start: int) -> Select[Any]:
    """Articles per site created in the window's first (part) day: from ``start`` to the
    end of its day (an IN list, so both databases range-scan each site's index part)."""
    return (
        select(article.c.site_id, func.count().label("articles"))
        .where(
            article.c.site_id.in_(site_ids),
            article.c.created_at >= start,
            article.c.created_at < (start // DAY + 1) * DAY,
        )
        .group_by(article.c.site_id)
    )


def site_stats(engine: Engine, now: int, config: SiteStatsConfig) -> list[SiteStats]:
    """Stats of every site (sites without articles included), by site id."""
    unmatched = PatternStore(engine).unmatched(UNMATCHED_SHOWN)
    list_pages = ListPageStore(engine).by_site()
    with engine.connect() as conn:
        scheduled = {row.site_id: row for row in conn.execute(_scheduled_counts(now, config))}
        totals = {row.site_id: row for row in conn.execute(select(site_article_totals))}
        whole_days = {row.site_id: row for row in conn.execute(_whole_days_since(now))}
        newest = {row.site_id: row.last for row in conn.execute(_newest_articles())}
        events = monthly_events(conn, now)
        media = site_media(conn)
        site_ids = list(newest)
        part_days: dict[int, dict[int, int]] = {
            n: {r.site_id: r.articles for r in conn.execute(_start_of_window(site_ids, start))}
            for n, start in _window_starts(now).items()
        }
        sites = conn.execute(
            select(
                site.c.site_id,
                site.c.name,
                site.c.url,
                site.c.type,
                site.c.config,
                site.c.category,
                site.c.is_active,
                site.c.created_at,
                site.c.last_crawl_at,
                site.c.last_list_ok_at,
                site.c.walk_owner,
                site.c.recoveries,
                site.c.last_recovery_at,
            ).order_by(site.c.site_id)
        ).all()
    quiet_since = now - config.quiet_days * DAY
    stats = []
    for row in sites:
        live = scheduled.get(row.site_id)
        total = totals.get(row.site_id)
        days = whole_days.get(row.site_id)
        last_new = int(newest[row.site_id] or 0)
        pages, used = list_page_stats(list_pages.get(row.site_id, []), now)
        stats.append(
            SiteStats(
                site_id=row.site_id,
                name=row.name,
                type=row.type,
                category=row.category,
                is_active=bool(row.is_active),
                articles=int(total.articles) if total is not None else 0,
                new={
                    n: part_days[n].get(row.site_id, 0)
                    + (int(getattr(days, f"new_{n}")) if days is not None else 0)
                    for n in NEW_ARTICLE_DAYS
                },
                snapshots=(int(live.snapshots) if live is not None else 0)
                + (int(total.finished_snapshots) if total is not None else 0),
                due=int(live.due) if live is not None else 0,
                overdue=int(live.overdue) if live is not None else 0,
                failing=int(live.failing) if live is not None else 0,
                blocked=(int(live.blocked) if live is not None else 0)
                + (int(total.finished_blocked) if total is not None else 0),
                stopped=int(total.stopped) if total is not None else 0,
                last_list_crawl_at=row.last_crawl_at,
                last_list_ok_at=row.last_list_ok_at,
                last_new_article_at=last_new,
                # A site added less than quiet_days ago has not had the chance to go quiet.
                quiet=bool(row.is_active)
                and row.created_at < quiet_since
                and last_new < quiet_since,
                unanswered=unanswered(
                    bool(row.is_active),
                    walk_state(row.walk_owner),
                    int(row.last_crawl_at),
                    int(row.last_list_ok_at),
                    config.unanswered_seconds,
                ),
                walk=walk_state(row.walk_owner),
                recoveries=int(row.recoveries),
                last_recovery_at=int(row.last_recovery_at),
                events=events.get(row.site_id, {}),
                unmatched=tuple(unmatched.get(row.site_id, ())),
                media=media.get(row.site_id, SiteMedia()),
                list_pages=pages,
                list_requests_today=used,
                list_budget=_budget(row, len(pages)),
            )
        )
    return stats


def day_start(ts: int) -> int:
    """The start (00:00 UTC) of the day ``ts`` falls in.

    >>> day_start(1_700_000_000)
    1699920000
    """
    return ts - ts % DAY


def new_per_day(engine: Engine, now: int, days: int) -> dict[int, list[int]]:
    """New articles (first seen) per UTC day over the last ``days`` days, today last:
    site id -> ``days`` counts (sites without any left out). Read from the per-site-and-day
    counts the triggers keep (one row per site and day), never from Article."""
    if days < 1:
        raise ValueError(f"days must be at least 1, got {days}")
    first_day = now // DAY - (days - 1)
    query = select(
        site_article_days.c.site_id, site_article_days.c.day, site_article_days.c.articles
    ).where(site_article_days.c.day >= first_day, site_article_days.c.day <= now // DAY)
    counts: dict[int, list[int]] = {}
    with engine.connect() as conn:
        for row in conn.execute(query):
            if row.articles:
                counts.setdefault(row.site_id, [0] * days)[row.day - first_day] = int(row.articles)
    return counts


def record_list_success(engine: Engine, site_id: int, at: int) -> None:
    """Note that a list page of the site answered at ``at`` (the monitor shows it)."""
    with engine.begin() as conn:
        conn.execute(update(site).where(site.c.site_id == site_id).values(last_list_ok_at=at))
