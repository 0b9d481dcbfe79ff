"""How often each list page, feed and sitemap of a site is walked: its own interval from the
rate at which it has shown new article links, and the site's daily request budget.

Pure functions over a page's walk history (``ListPage``), used by the walks of both modes
(zeroarchive/crawl/due_work.py, zeroarchive/crawl/list_pages.py) and by bench/discovery.py.

- The rate is a Poisson estimate: new links seen over the time walked, both sums fading
  with a half-life of ``HALF_LIFE`` so a section that went quiet (or busy) is seen to.
- The interval aims at ``TARGET_LINKS`` new links per walk (half a link: a page that
  shows a new link every ten minutes is walked every five), within the site's bounds
  (``ListBounds``, zeroarchive/core/schedule.py): a page with no history is walked at the
  plan's ``list_interval``; a page that shows nothing new at most doubles its interval per
  walk, up to the upper bound; one that shows new links comes down at once.
- A 304 (the page unchanged since its validators) is a walk that showed nothing new.
- The budget: the walks of a UTC day make at most ``daily_requests`` requests of the
  site's tracked list pages; when the pages' intervals would spend more by the day's end,
  the least productive due pages are postponed (to their upper bound, or the next day when
  nothing is left), the most productive never while anything is left.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from zeroarchive.core.schedule import DAY, HOUR, ListBounds

#: Half-life of the rate's memory: a walk's news weighs half as much this much later.
HALF_LIFE = 6 * HOUR
#: New links a walk should show on average: half of one.
TARGET_LINKS = 0.5
#: A quiet page's interval grows at most this much per walk; by a little less for most
#: pages (``growth``), so the pages of a site, found in one walk, drift apart instead of
#: walking in step: a quiet site whose ten pages all list its one new article is then
#: looked at ten times per upper bound, not once.
GROWTH = 2.0
#: What a tracked list page is (each kind is requested and read its own way).
KINDS = ("page", "feed", "sitemap", "robots")


@dataclass(frozen=True)
class ListPage:
    """One tracked list page of a site and its walk history."""

    url: str
    kind: str = "page"
    #: Its depth in the site's walk (a followed page walks on from there).
    depth: int = 0
    first_walk_at: int = 0
    last_walk_at: int = 0
    #: When it is due; 0 for a page never walked.
    next_walk_at: int = 0
    #: Its interval now; 0 before its first walk.
    interval: int = 0
    #: The fading sums of the Poisson estimate: new links, and seconds they came over.
    rate_links: float = 0.0
    rate_seconds: float = 0.0
    walks: int = 0
    new_links: int = 0
    not_modified: int = 0
    postponed: int = 0
    etag: str | None = None
    last_modified: str | None = None
    #: The UTC day (days since the epoch) of ``walks_today``.
    day: int = 0
    walks_today: int = 0

    @property
    def rate(self) -> float | None:
        """New links per second, None before two walks (the first walk's links are the
        page's backlog, not a rate).

        >>> ListPage("u", rate_links=3.0, rate_seconds=600.0).rate
        0.005
        >>> ListPage("u").rate is None
        True
        """
        if self.rate_seconds <= 0:
            return None
        return self.rate_links / self.rate_seconds

    def validators(self) -> dict[str, str]:
        """The conditional headers of its next request.

        >>> ListPage("u", etag='"a1"', last_modified="Sun, 29 Nov 2026 08:00:00 GMT").validators()
        {'If-None-Match': '"a1"', 'If-Modified-Since': 'Sun, 29 Nov 2026 08:00:00 GMT'}
        """
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


def day_of(at: int) -> int:
    """The UTC day of a time, as days since the epoch.

    >>> day_of(86399), day_of(86400)
    (0, 1)
    """
    return at // DAY


def wanted_interval(rate: float | None, bounds: ListBounds) -> int:
    """The interval a page's rate asks for: ``TARGET_LINKS`` new links per walk, within
    the bounds; the plan's default with no rate yet.

    >>> bounds = ListBounds(600, 60, 21600, 1440)
    >>> wanted_interval(None, bounds), wanted_interval(0.0, bounds)
    (600, 21600)
    >>> wanted_interval(1 / 180, bounds), wanted_interval(1.0, bounds)
    (90, 60)
    """
    if rate is None:
        return bounds.default
    if rate <= 0:
        return bounds.high
    return max(bounds.low, min(bounds.high, round(TARGET_LINKS / rate)))


def growth(url: str) -> float:
    """How much a quiet page's interval grows per walk: between 1.5 and ``GROWTH``, fixed
    for each URL.

    >>> round(growth("https://s.example/"), 3), round(growth("https://s.example/feed"), 3)
    (1.677, 1.612)
    """
    return GROWTH * (0.75 + 0.25 * (zlib.crc32(url.encode("utf-8")) % 1000) / 999)


def next_interval(page: ListPage, bounds: ListBounds, recent: float = 0.0) -> int:
    """The interval after a walk, from the page's rate (already updated by it) or the
    walk's own (``recent``: its new links over the time since the walk before) when that
    is higher, so a burst after a quiet spell is followed at once: down at once, up by at
    most ``GROWTH`` per walk.

    >>> bounds = ListBounds(600, 60, 21600, 1440)
    >>> next_interval(ListPage("u", interval=600, rate_links=0, rate_seconds=600), bounds)
    1168
    >>> next_interval(ListPage("u", interval=600, rate_links=5, rate_seconds=900), bounds)
    90
    """
    rate = page.rate
    wanted = wanted_interval(rate if rate is None else max(rate, recent), bounds)
    if page.interval > 0:
        wanted = min(wanted, max(bounds.low, int(page.interval * growth(page.url))))
    return max(bounds.low, min(bounds.high, wanted))


def walked(
    page: ListPage,
    bounds: ListBounds,
    at: int,
    new: int,
    *,
    not_modified: bool = False,
    etag: str | None = None,
    last_modified: str | None = None,
) -> ListPage:
    """The page after a walk at ``at`` that showed ``new`` new article links (0 for a 304,
    ``not_modified``); validators kept from a 304, replaced by a full answer's.

    >>> bounds = ListBounds(600, 60, 21600, 1440)
    >>> first = walked(ListPage("u"), bounds, 1000, 30)
    >>> first.interval, first.next_walk_at, first.rate, first.walks
    (600, 1600, None, 1)
    >>> second = walked(first, bounds, 1600, 4)
    >>> second.rate_links, second.rate_seconds, second.interval
    (4.0, 600.0, 75)
    >>> quiet = walked(second, bounds, 1675, 0, not_modified=True)
    >>> quiet.not_modified, quiet.interval
    (1, 84)
    """
    recent = 0.0
    if page.walks and page.last_walk_at and at > page.last_walk_at:
        elapsed = at - page.last_walk_at
        recent = new / elapsed
        fade = 0.5 ** (elapsed / HALF_LIFE)
        page = replace(
            page,
            rate_links=page.rate_links * fade + new,
            rate_seconds=page.rate_seconds * fade + elapsed,
        )
    validators = (
        {} if not_modified else {"etag": (etag or None), "last_modified": (last_modified or None)}
    )
    page = replace(
        page,
        first_walk_at=page.first_walk_at or at,
        last_walk_at=max(at, page.last_walk_at),
        walks=page.walks + 1,
        new_links=page.new_links + new,
        not_modified=page.not_modified + (1 if not_modified else 0),
        **validators,  # type: ignore[arg-type]
    )
    interval = next_interval(page, bounds, recent) if page.walks > 1 else bounds.default
    return replace(page, interval=interval, next_walk_at=page.last_walk_at + interval)


def credited(page: ListPage, new: int) -> ListPage:
    """New links found after the page's walk was recorded (a sampled page decided a shape of
    its links): added to its latest walk's count and its rate.

    >>> credited(ListPage("u", walks=2, rate_links=1.0, rate_seconds=60.0), 2).rate
    0.05
    """
    if new <= 0:
        return page
    links = page.rate_links + new if page.walks > 1 else page.rate_links
    return replace(page, new_links=page.new_links + new, rate_links=links)


def requests_today(pages: Iterable[ListPage], at: int) -> int:
    """The tracked list requests the site's walks made on the UTC day of ``at``.

    >>> requests_today([ListPage("a", day=1, walks_today=5), ListPage("b", day=0,
    ...     walks_today=9)], 86400 + 5)
    5
    """
    today = day_of(at)
    return sum(page.walks_today for page in pages if page.day == today)


@dataclass(frozen=True)
class WalkPlan:
    """Which tracked pages a walk requests, and which due pages it postpones."""

    #: The pages to request now (URL -> page), most productive first.
    walk: Mapping[str, ListPage]
    #: Due pages not requested for the budget, with when they are due again.
    postponed: Mapping[str, int] = field(default_factory=dict)
    #: The site's tracked list requests of the day before this walk.
    used: int = 0


def productivity(page: ListPage, bounds: ListBounds) -> float:
    """How productive a page is, for the budget's order: its rate, else (no history) the
    rate the plan's default interval stands for, so new pages come before quiet ones.

    >>> bounds = ListBounds(600, 60, 21600, 1440)
    >>> productivity(ListPage("u"), bounds) == TARGET_LINKS / 600
    True
    """
    rate = page.rate
    return TARGET_LINKS / bounds.default if rate is None else rate


def plan_walk(
    pages: Iterable[ListPage], bounds: ListBounds, now: int, *, everything: bool = False
) -> WalkPlan:
    """The due pages to walk now within the site's daily budget (``everything``: all its
    pages, as a person asked, as many as what is left of the budget allows).

    Each page would cost, by the day's end, about one request per interval: the pages are
    taken most productive first while their costs fit what is left of the day's budget;
    the due pages beyond are postponed, to their upper bound (or the next day once nothing
    is left). The most productive due page is walked whenever anything is left.

    >>> bounds = ListBounds(600, 60, 21600, 10)
    >>> busy = ListPage("busy", walks=5, interval=60, rate_links=9, rate_seconds=600)
    >>> quiet = ListPage("quiet", walks=5, interval=21600, rate_links=0, rate_seconds=9e4)
    >>> plan = plan_walk([quiet, busy], bounds, 0)
    >>> list(plan.walk), plan.postponed
    (['busy'], {'quiet': 21600})
    >>> spent = replace(busy, day=0, walks_today=10)
    >>> plan = plan_walk([spent, quiet], bounds, 3600)
    >>> list(plan.walk), plan.postponed, plan.used
    ([], {'busy': 86400, 'quiet': 86400}, 10)
    """
    pages = list(pages)
    used = requests_today(pages, now)
    left = bounds.daily_requests - used
    day_end = (day_of(now) + 1) * DAY
    due = {p.url for p in pages if everything or p.next_walk_at <= now}
    order = sorted(pages, key=lambda p: (-productivity(p, bounds), p.depth, p.url))
    walk: dict[str, ListPage] = {}
    postponed: dict[str, int] = {}
    projected = 0.0
    for page in order:
        interval = page.interval or bounds.default
        cost = max(1.0, (day_end - now) / interval) if page.url in due else 0.0
        if page.url not in due:
            # A page not due now still spends its share of the day's budget later.
            projected += math.ceil((day_end - max(now, page.next_walk_at)) / interval)
            continue
        fits = everything or projected + cost <= left or (not walk and not postponed)
        if len(walk) < left and fits:
            walk[page.url] = page
            projected += cost
        elif left <= len(walk):
            postponed[page.url] = day_end
        else:
            postponed[page.url] = min(now + bounds.high, day_end)
    return WalkPlan(walk, postponed, used)


def begun(page: ListPage, bounds: ListBounds, now: int) -> ListPage:
    """A page as its walk is asked for: due again in its interval (so no round asks for it
    while in flight), and one more request on the day's count.

    >>> page = begun(ListPage("u", day=0, walks_today=3), ListBounds(600, 60, 21600, 9), 86400)
    >>> page.next_walk_at, page.day, page.walks_today
    (87000, 1, 1)
    """
    today = day_of(now)
    count = page.walks_today + 1 if page.day == today else 1
    return replace(
        page,
        next_walk_at=now + (page.interval or bounds.default),
        day=today,
        walks_today=count,
    )


def postpone(page: ListPage, until: int) -> ListPage:
    """A due page the budget put off until ``until``."""
    return replace(page, next_walk_at=until, postponed=page.postponed + 1)
