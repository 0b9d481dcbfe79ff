"""How often each list page, feed and sitemap of a site is walked: its own interval from the
rate at which it has shown new article links, and the site's daily request budget.

Pure functions over a page's walk history (``ListPage``), used by the walks of both modes
(zeroarchive/crawl/due_work.py, zeroarchive/crawl/list_pages.py) and by bench/discovery.py.

- The rate is a Poisson estimate: new links seen over the time walked, both sums fading
  with a half-life of ``HALF_LIFE`` so a section that went quiet (or busy) is seen to.
- The interval aims at ``TARGET_LINKS`` new links per walk (half a link: a page that
  shows a new link every ten minutes is walked every five), within the site's bounds
  (``ListBounds``, zeroarchive/core/schedule.py): the plan's ``list_interval`` is both the
  interval of a page with no history and the upper bound. A walk that shows new links
  at least halves the interval at once (a burst is followed from the walk that meets
  it); one that shows nothing at most doubles it, back up to the upper bound.
- A page's first walk (or its return to the plan's interval) puts its next one in the
  widest gap between the site's other pages' walks (``spread_out``): pages that list the
  same new article are asked for one after another, not all at once, for the same
  requests.
- A 304 (the page unchanged since its validators) is a walk that showed nothing new.
- The budget left by quiet pages (``shares``): each page counts its changes (a full answer
  with new validators, or none, after its first walk), fading with a half-life of
  ``CHANGE_HALF_LIFE``. Once a day old, a page that has not changed (``UNCHANGING``) while
  others of its site have is walked at most every ``stretched`` interval (an hour for
  news), and what the site's budget has left after its busy and unchanging pages is shared
  among the quiet pages that change, by the square root of their changes, each at most
  every plan interval and at least every lower bound: a quiet site's front page, feed and
  sitemap, which list its next article, are walked more often than its robots.txt and its
  second pages, which never do. A fixed walk (equal bounds) shares nothing.
- The budget: the walks of a UTC day make at most ``ListBounds.budget`` requests of the
  site's tracked list pages (by default what walking each at the plan's interval would
  make); when the pages' intervals would spend more by the day's end, the least
  productive due pages are postponed (by an upper bound, or to the next day when nothing
  is left), the most productive never while anything is left.
- A page neither linked by the site's walks (or its config) nor showing a new link for
  ``RETIRE_AFTER`` is retired (``retiring``): no longer tracked, found again if linked.
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
#: pages (``growth``), so pages that came down together do not climb back in step.
GROWTH = 2.0
#: A walk that shows new links cuts the interval to at most this part of it.
BURST_CUT = 0.5
#: A page neither linked nor showing new links this long is no longer tracked.
RETIRE_AFTER = 30 * DAY
#: Half-life of a page's count of changes: long, since a quiet site changes weekly.
CHANGE_HALF_LIFE = 7 * DAY
#: A page whose faded changes are fewer (none for four half-lives) has not changed.
UNCHANGING = 1 / 16
#: A page's changes are judged once it has been walked this long.
JUDGED_AFTER = DAY
#: An unchanging page is walked at most this many upper bounds apart (an hour at most).
STRETCH = 6
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
    #: When a walk of the site last found a link to it (or its config named it).
    linked_at: int = 0
    #: When its walk last showed a new article link.
    new_at: int = 0
    #: Its changes (full answers with new validators, or none, after its first walk),
    #: fading with ``CHANGE_HALF_LIFE``, as of its last walk; when it last changed.
    changes: float = 0.0
    changed_at: int = 0

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
    is higher: a walk with new links cuts it to ``BURST_CUT`` of what it was at most, so
    a burst after a quiet spell is followed at once; one without raises it by at most
    ``GROWTH``.

    >>> bounds = ListBounds(600, 60, 600, 0)
    >>> next_interval(ListPage("u", interval=300, rate_links=0, rate_seconds=600), bounds)
    584
    >>> next_interval(ListPage("u", interval=600, rate_links=5, rate_seconds=900), bounds)
    90
    >>> next_interval(ListPage("u", interval=600, rate_links=1, rate_seconds=9e4), bounds, 1e-4)
    300
    """
    rate = page.rate
    wanted = wanted_interval(rate if rate is None else max(rate, recent), bounds)
    if page.interval > 0:
        wanted = min(wanted, max(bounds.low, int(page.interval * growth(page.url))))
        if recent > 0:
            wanted = min(wanted, int(page.interval * BURST_CUT))
    return max(bounds.low, min(bounds.high, wanted))


def changes_at(page: ListPage, at: int) -> float:
    """The page's changes faded to ``at``.

    >>> changes_at(ListPage("u", last_walk_at=0, changes=2.0), CHANGE_HALF_LIFE)
    1.0
    """
    if not page.changes:
        return 0.0
    return page.changes * 0.5 ** (max(0, at - page.last_walk_at) / CHANGE_HALF_LIFE)


def walked(
    page: ListPage,
    bounds: ListBounds,
    at: int,
    new: int,
    *,
    not_modified: bool = False,
    etag: str | None = None,
    last_modified: str | None = None,
    failed: bool = False,
) -> ListPage:
    """The page after a walk at ``at`` that showed ``new`` new article links (0 for a 304,
    ``not_modified``); validators kept from a 304, replaced by a full answer's. A full
    answer after the first walk is a change unless it came with the validators the page
    had (a server that ignores conditional requests); a ``failed`` request is none.

    >>> bounds = ListBounds(600, 60, 600, 0)
    >>> first = walked(ListPage("u"), bounds, 1000, 30)
    >>> first.interval, first.next_walk_at, first.rate, first.walks, first.new_at
    (600, 1600, None, 1, 1000)
    >>> second = walked(first, bounds, 1600, 4)
    >>> second.rate_links, second.rate_seconds, second.interval
    (4.0, 600.0, 75)
    >>> quiet = walked(second, bounds, 1675, 0, not_modified=True)
    >>> quiet.not_modified, quiet.interval, quiet.new_at
    (1, 84, 1600)
    >>> second.changes, round(quiet.changes, 3), second.changed_at
    (1.0, 1.0, 1600)
    """
    changed = bool(page.walks) and not not_modified and not failed
    if changed and (etag or last_modified):
        changed = (etag or None, last_modified or None) != (page.etag, page.last_modified)
    changes = changes_at(page, at) + (1.0 if changed else 0.0)
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
        new_at=max(page.new_at, at) if new else page.new_at,
        not_modified=page.not_modified + (1 if not_modified else 0),
        changes=changes,
        changed_at=at if changed else page.changed_at,
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
    return replace(page, new_links=page.new_links + new, rate_links=links, new_at=page.last_walk_at)


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
    #: The site's daily budget, for its pages now.
    budget: int = 0
    #: Pages no longer tracked (``retiring``).
    retired: tuple[str, ...] = ()
    #: Requests of a walk a person asked for (``everything``) beyond what was left of the
    #: day's budget: made all the same, and said.
    over_budget: int = 0


def productivity(page: ListPage, bounds: ListBounds) -> float:
    """How productive a page is, for the budget's order: its rate, else (no history) the
    rate the plan's default interval stands for, so new pages come before quiet ones.

    >>> bounds = ListBounds(600, 60, 21600, 1440)
    >>> productivity(ListPage("u"), bounds) == TARGET_LINKS / 600
    True
    """
    rate = page.rate
    return TARGET_LINKS / bounds.default if rate is None else rate


def retiring(page: ListPage, now: int) -> bool:
    """Whether a page is no longer tracked: neither linked by the site's walks (nor named
    by its config) nor showing a new link for ``RETIRE_AFTER``, counted from its first walk
    for a page never either.

    >>> old = ListPage("u", walks=9, first_walk_at=1, linked_at=DAY, new_at=2 * DAY)
    >>> retiring(old, 2 * DAY + RETIRE_AFTER), retiring(old, 2 * DAY + RETIRE_AFTER - 1)
    (True, False)
    >>> retiring(ListPage("u"), RETIRE_AFTER)  # never walked: not judged
    False
    """
    if not page.walks or not page.first_walk_at:
        return False
    return now - max(page.first_walk_at, page.linked_at, page.new_at) >= RETIRE_AFTER


def spread(at: int, others: Iterable[int], interval: int) -> int:
    """When a page first walked at ``at`` is walked next: in the middle of the widest gap
    between the other pages' next walks, seen modulo ``interval`` (the walks ahead of a
    page that walks at it), so that pages listing the same new article are asked for one
    after another instead of together; ``at + interval`` when there are none.

    >>> spread(0, [], 600)
    600
    >>> spread(0, [600], 600), spread(0, [600, 300], 600)
    (300, 150)
    >>> spread(1000, [1600, 1900, 1750], 600)
    1450
    """
    phases = sorted({(t - at) % interval for t in others})
    if not phases:
        return at + interval
    best, start = -1, 0
    for i, phase in enumerate(phases):
        following = phases[i + 1] if i + 1 < len(phases) else phases[0] + interval
        if following - phase > best:
            best, start = following - phase, phase
    offset = (start + best // 2) % interval
    return at + (offset or interval)


def spread_out(
    page: ListPage,
    before: int,
    others: Iterable[ListPage],
    bounds: ListBounds,
    rest: int | None = None,
) -> ListPage:
    """A page just walked, its next walk ``spread`` among the site's ``others`` that walk
    at the plan's interval when it joins them: at its first walk, or back at the plan's
    interval from a shorter one (``before``: its interval before the walk). A busy page's
    phase changes with every walk, so it is neither moved nor counted. A page at its share
    of the budget (``rest``, from ``shares``) joins when it comes to it. The others counted
    are those that walk about as often: under twice its interval, and no more often than
    the plan's (at most twice as often as it, for a page at its share).

    >>> bounds = ListBounds(600, 60, 600, 0)
    >>> front = walked(ListPage("/"), bounds, 0, 20)
    >>> spread_out(walked(ListPage("/feed"), bounds, 0, 0), 0, [front], bounds).next_walk_at
    300
    >>> back = replace(front, url="/s", walks=9)  # walked at 0, due at 600
    >>> spread_out(back, 400, [front], bounds).next_walk_at  # back from 400 s: joins
    300
    >>> spread_out(back, 600, [front], bounds).next_walk_at  # was at 600 s: stays
    600
    """
    if rest is not None and page.interval == rest:
        # At its share of the budget: joins when it comes to it.
        if page.walks > 1 and before == rest:
            return page
        floor = (rest + 1) // 2
    else:
        joins = page.walks == 1 or before < bounds.default
        if not joins or page.interval < bounds.default:
            return page
        floor = bounds.default
    # Among the pages that walk about as often (an hourly one has no place in ten minutes).
    steady = (
        p.next_walk_at
        for p in others
        if p.url != page.url and floor <= p.interval < 2 * max(page.interval, floor)
    )
    return replace(page, next_walk_at=spread(page.last_walk_at, steady, page.interval))


def stretched(bounds: ListBounds) -> int:
    """How far apart an unchanging page is walked while others of its site change:
    ``STRETCH`` upper bounds, but not beyond an hour (nor under the upper bound).

    >>> stretched(ListBounds(600, 60, 600, 0)), stretched(ListBounds(DAY, 8640, DAY, 0))
    (3600, 86400)
    """
    return max(bounds.high, min(STRETCH * bounds.high, HOUR))


def shares(pages: Iterable[ListPage], bounds: ListBounds, now: int) -> dict[str, int]:
    """The interval each quiet page of a site rests at (URL -> seconds), from the budget
    its busy and unchanging pages leave: pages a day old that have not changed while
    others did at ``stretched``; the quiet pages that change share what is left by the
    square root of their changes, each between the bounds. Busy pages (whose rate asks
    for less than the upper bound) and young ones are not in it; nor is any page of a
    fixed walk or of a site with no change yet. When the budget leaves the changing quiet
    pages no more than the upper bound each, only the unchanging ones are in it.

    >>> bounds = ListBounds(600, 60, 600, 0)
    >>> old = ListPage("/", walks=200, first_walk_at=0, last_walk_at=DAY, changes=2.0)
    >>> pages = [old, replace(old, url="/feed"), replace(old, url="/robots.txt", changes=0)]
    >>> shares(pages, bounds, DAY)  # 432 a day less 3, 24 to robots.txt: 405 for two pages
    {'/robots.txt': 3600, '/': 427, '/feed': 427}
    >>> shares(pages[:2], bounds, DAY)  # nothing to share: both change
    {}
    """
    if bounds.low >= bounds.high:
        return {}
    pages = list(pages)
    judged = {
        p.url: changes_at(p, now)
        for p in pages
        if p.walks > 1
        and now - p.first_walk_at >= JUDGED_AFTER
        and wanted_interval(p.rate, bounds) >= bounds.high
    }
    changing = {url: math.sqrt(c) for url, c in judged.items() if c >= UNCHANGING}
    if not changing:
        return {}
    rest = {url: stretched(bounds) for url in judged if url not in changing}
    # Less one request a page: the budget's projection counts each page's next walk whole.
    spare = float(bounds.budget(len(pages)) - len(pages))
    for p in pages:
        spare -= DAY / rest.get(p.url, p.interval or bounds.default) if p.url not in changing else 0
    if spare <= len(changing) * DAY / bounds.high:
        return rest  # nothing left to share: the unchanging pages wait all the same
    # Water-filling: each changing page's share of the spare, by the root of its changes;
    # one that would be walked more often than the lower bound, or less than the upper,
    # is held at it and the others share what is left.
    left = dict(changing)
    while left:
        weight = sum(left.values())
        wanted = {u: DAY * weight / (spare * w) if spare > 0 else math.inf for u, w in left.items()}
        held = {u: bounds.low for u, i in wanted.items() if i < bounds.low}
        if not held:
            held = {u: bounds.high for u, i in wanted.items() if i > bounds.high}
        if not held:
            rest.update((u, max(bounds.low, min(bounds.high, round(i)))) for u, i in wanted.items())
            break
        for url, interval in held.items():
            rest[url] = interval
            spare -= DAY / interval
            del left[url]
    return rest


def settle(page: ListPage, before: int, others: Iterable[ListPage], bounds: ListBounds) -> ListPage:
    """A page just walked, brought to the interval its site's ``shares`` give it when it
    rests (at the upper bound, or above its share), then ``spread_out`` among the others.
    ``before``: its interval before the walk.

    >>> bounds = ListBounds(600, 60, 600, 0)
    >>> old = ListPage("/", walks=200, first_walk_at=0, last_walk_at=DAY, interval=600,
    ...     next_walk_at=DAY + 600, changes=2.0)
    >>> pages = [old, replace(old, url="/feed"), replace(old, url="/robots.txt", changes=0)]
    >>> settled = settle(old, 600, pages, bounds)
    >>> settled.interval, settled.next_walk_at - DAY
    (427, 386)
    >>> settle(pages[2], 600, pages, bounds).interval
    3600
    """
    others = list(others)
    pool = {p.url: p for p in others}
    pool[page.url] = page
    rest = shares(pool.values(), bounds, page.last_walk_at).get(page.url)
    if rest is not None and (page.interval >= bounds.high or page.interval > rest):
        page = replace(page, interval=rest, next_walk_at=page.last_walk_at + rest)
    return spread_out(page, before, others, bounds, rest)


def plan_walk(
    pages: Iterable[ListPage], bounds: ListBounds, now: int, *, everything: bool = False
) -> WalkPlan:
    """The due pages to walk now within the site's daily budget; pages ``retiring`` are
    left out. ``everything``: all its pages, as a person asked, whatever is left of the
    budget (it is meant for the scheduled walks, not to refuse a person): the requests
    beyond it are counted (``over_budget``) and, like all the walk's, on the day's budget.

    Each page would cost, by the day's end, about one request per interval: the pages are
    taken most productive first while their costs fit what is left of the day's budget;
    the due pages beyond are postponed by an upper bound (or to the next day once nothing
    is left), on their own phase (``later``), so that spread pages stay spread. The most
    productive due page is also walked when it does not fit while the site's requests of
    the day are not ahead of an even pace through it, else postponed till they are: a busy
    page spends the budget evenly, not all of it by the afternoon.

    >>> bounds = ListBounds(600, 60, 600, 150)
    >>> busy = ListPage("busy", walks=5, interval=60, rate_links=9, rate_seconds=600)
    >>> quiet = ListPage("quiet", walks=5, interval=600, rate_links=0, rate_seconds=9e4)
    >>> plan = plan_walk([quiet, busy], bounds, 72000)
    >>> list(plan.walk), plan.postponed
    (['busy'], {'quiet': 72600})
    >>> ahead = replace(busy, day=0, walks_today=126)  # 150 a day: 125 by 72000 on pace
    >>> plan = plan_walk([ahead, quiet], bounds, 72000)
    >>> list(plan.walk), plan.postponed
    (['quiet'], {'busy': 72576})
    >>> spent = replace(busy, day=0, walks_today=150)
    >>> plan = plan_walk([spent, quiet], bounds, 3600)
    >>> list(plan.walk), plan.postponed, plan.used
    ([], {'busy': 86400, 'quiet': 86400}, 150)
    >>> asked = plan_walk([spent, quiet], bounds, 3600, everything=True)
    >>> list(asked.walk), asked.postponed, asked.over_budget
    (['busy', 'quiet'], {}, 2)
    >>> gone = replace(quiet, first_walk_at=1, linked_at=5)
    >>> plan_walk([gone], bounds, 5 + RETIRE_AFTER).retired
    ('quiet',)
    """
    pages = list(pages)
    retired = tuple(p.url for p in pages if retiring(p, now))
    if retired:
        pages = [p for p in pages if p.url not in retired]
    used = requests_today(pages, now)
    budget = bounds.budget(len(pages))
    left = budget - used
    day_end = (day_of(now) + 1) * DAY
    # When the day's requests so far are on an even pace through it.
    paced_at = day_end - DAY + math.ceil(used * DAY / budget)
    due = {p.url for p in pages if p.next_walk_at <= now}
    order = sorted(
        pages, key=lambda p: (-productivity(p, bounds), -changes_at(p, now), p.depth, p.url)
    )
    walk: dict[str, ListPage] = {}
    postponed: dict[str, int] = {}
    projected = 0.0
    if everything:
        walk = {p.url: p for p in order}
        return WalkPlan(walk, {}, used, budget, retired, max(0, len(walk) - max(0, left)))
    for page in order:
        interval = page.interval or bounds.default
        cost = max(1.0, (day_end - now) / interval) if page.url in due else 0.0
        if page.url not in due:
            # A page not due now still spends its share of the day's budget later.
            projected += math.ceil((day_end - max(now, page.next_walk_at)) / interval)
            continue
        first = not walk and not postponed
        fits = projected + cost <= left or (first and now >= paced_at)
        if len(walk) < left and fits:
            walk[page.url] = page
            projected += cost
        elif left <= len(walk):
            postponed[page.url] = later(page.next_walk_at, day_end, interval)
        elif first:
            postponed[page.url] = min(paced_at, now + bounds.high)  # at most a bound
        else:
            postponed[page.url] = later(page.next_walk_at, now + 1, bounds.high)
    return WalkPlan(walk, postponed, used, budget, retired)


def later(due: int, not_before: int, step: int) -> int:
    """The first time at or after ``not_before`` that is ``due`` plus whole ``step``s: a
    postponed page keeps its phase.

    >>> later(1000, 1001, 600), later(1000, 86400, 600), later(90000, 86400, 600)
    (1600, 86800, 90000)
    """
    if due >= not_before:
        return due
    return due + -(-(not_before - due) // step) * step


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
