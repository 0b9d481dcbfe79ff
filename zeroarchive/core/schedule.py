"""When to walk a site's list pages and when to snapshot an article again.

Each site type's default plan is in its source's record (zeroarchive/sources/); a site's
config may override it. All functions are pure: they take the current time and return
the next one; 0 means "never again".

Re-snapshots adapt within each plan step: an unchanged page doubles the article's interval
(up to the step's ``max_interval``), a changed one halves it (down to ``min_interval``).
Bounds default to a quarter and four times the step's interval (news: 15 min .. 4 h).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MINUTE = 60
HOUR = 60 * MINUTE
DAY = 24 * HOUR
WEEK = 7 * DAY

STOP = 0
MAX_FAILURES = 5
FAILURE_BACKOFF_BASE = 5 * MINUTE
FAILURE_BACKOFF_MAX = DAY
GONE_STATUSES = frozenset({404, 410})
# Retrying these cannot help until a person changes the site's config.
FORBIDDEN_KINDS = frozenset({"robots_disallowed"})


DEFAULT_MIN_FACTOR = 0.25
DEFAULT_MAX_FACTOR = 4.0
# How much one unchanged (changed) snapshot lengthens (shortens) the interval.
GROW = 2.0
SHRINK = 0.5


@dataclass(frozen=True)
class Step:
    """Snapshot every ``interval`` seconds while the article is younger than ``until``;
    adaptively, never more often than ``min_interval`` nor less than ``max_interval``
    (0 = the default factor of ``interval``).

    >>> Step(HOUR, DAY).min_interval, Step(HOUR, DAY).max_interval
    (900, 14400)
    """

    interval: int
    until: int
    min_interval: int = 0
    max_interval: int = 0

    def __post_init__(self) -> None:
        if not self.min_interval:
            object.__setattr__(self, "min_interval", int(self.interval * DEFAULT_MIN_FACTOR))
        if not self.max_interval:
            object.__setattr__(self, "max_interval", int(self.interval * DEFAULT_MAX_FACTOR))
        if not 0 < self.min_interval <= self.interval <= self.max_interval:
            raise ValueError(
                f"step bounds must satisfy 0 < min {self.min_interval} <= interval "
                f"{self.interval} <= max {self.max_interval}"
            )


#: List walk bounds (zeroarchive/crawl/list_intervals.py) as parts of the plan's list
#: interval: a busy page down to a tenth of it (never under a minute); the plan's interval
#: itself is the upper bound (no page is walked less often than the plan says unless the
#: daily budget postpones it).
LIST_MIN_DIVISOR = 10
LIST_MIN_FLOOR = MINUTE


@dataclass(frozen=True)
class Plan:
    """A site type's schedule: its list pages walked every ``list_interval`` by default
    (adaptively between ``list_min_interval`` and ``list_max_interval``, within
    ``list_daily_requests`` a day, 0 = what the fixed walk would make:
    zeroarchive/crawl/list_intervals.py), its articles snapshotted by ``steps``.

    >>> plan = Plan(600, ())
    >>> plan.list_min_interval, plan.list_max_interval, plan.list_daily_requests
    (60, 600, 0)
    >>> Plan(DAY, ()).list_min_interval, Plan(DAY, ()).list_max_interval // DAY
    (8640, 1)
    """

    list_interval: int
    steps: tuple[Step, ...]
    list_min_interval: int = 0
    list_max_interval: int = 0
    list_daily_requests: int = 0

    def __post_init__(self) -> None:
        if not self.list_min_interval:
            low = max(LIST_MIN_FLOOR, self.list_interval // LIST_MIN_DIVISOR)
            object.__setattr__(self, "list_min_interval", min(low, self.list_interval))
        if not self.list_max_interval:
            object.__setattr__(self, "list_max_interval", self.list_interval)
        if not 0 < self.list_min_interval <= self.list_interval <= self.list_max_interval:
            raise ValueError(
                f"list intervals must satisfy 0 < list_min_interval {self.list_min_interval} "
                f"<= list_interval {self.list_interval} <= list_max_interval "
                f"{self.list_max_interval}"
            )

    @property
    def end(self) -> int:
        return self.steps[-1].until if self.steps else 0


@dataclass(frozen=True)
class ListBounds:
    """A site's list walk intervals (zeroarchive/crawl/list_intervals.py): ``default``
    (no history) within ``low`` .. ``high``, and the tracked list requests its walks may
    make per UTC day (0: what a fixed walk at ``default`` would make, ``budget``)."""

    default: int
    low: int
    high: int
    daily_requests: int

    @classmethod
    def of(cls, plan: Plan, daily_requests: int | None = None) -> ListBounds:
        """The bounds of a site's plan, with its config's ``daily_requests`` (else the
        plan's default).

        >>> ListBounds.of(HOURLY_FOR_A_DAY)
        ListBounds(default=600, low=60, high=600, daily_requests=0)
        >>> ListBounds.of(ONCE, 20)
        ListBounds(default=86400, low=8640, high=86400, daily_requests=20)
        """
        return cls(
            plan.list_interval,
            plan.list_min_interval,
            plan.list_max_interval,
            plan.list_daily_requests if daily_requests is None else daily_requests,
        )

    def budget(self, pages: int) -> int:
        """The site's tracked list requests per UTC day with ``pages`` tracked pages: its
        ``daily_requests``, else what walking every page at ``default`` would make.

        >>> ListBounds(600, 60, 600, 0).budget(12), ListBounds(600, 60, 600, 50).budget(12)
        (1728, 50)
        >>> ListBounds(DAY, 8640, DAY, 0).budget(0)
        1
        """
        if self.daily_requests:
            return self.daily_requests
        return max(1, pages) * -(-DAY // self.default)


# 0archive's plans (DESIGN.md, Scheduling); each site type's record names the one it uses.
#: News: list pages every 10 minutes, each article hourly for a day.
HOURLY_FOR_A_DAY = Plan(10 * MINUTE, (Step(HOUR, DAY),))
#: Platforms (PTT, Dcard, Facebook): daily for a week, all comments.
DAILY_FOR_A_WEEK = Plan(10 * MINUTE, (Step(DAY, WEEK),))
#: Content farms: daily for a week, then weekly until a month.
DAILY_THEN_WEEKLY = Plan(10 * MINUTE, (Step(DAY, WEEK), Step(WEEK, 30 * DAY)))
#: Government pages: list pages daily, each page once.
ONCE = Plan(DAY, ())
#: Organisations edit and withdraw statements: list pages daily, each page daily for a week.
DAILY_LIST_DAILY_FOR_A_WEEK = Plan(DAY, (Step(DAY, WEEK),))


def _seconds(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name}: must be whole seconds between {low} and {high}, got {value!r}")
    return value


def _factor(value: Any, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ValueError(f"{name}: must be a number between {low} and {high}, got {value!r}")
    return float(value)


SCHEDULE_KEYS = (
    "list_interval",
    "list_min_interval",
    "list_max_interval",
    "steps",
    "min_factor",
    "max_factor",
)


def plan_with_overrides(base: Plan, overrides: Mapping[str, Any]) -> Plan:
    """``base`` changed by a site config's ``schedule`` mapping; ValueError names the key.

    Keys: ``list_interval`` (seconds), ``list_min_interval`` / ``list_max_interval`` (the
    bounds of each list page's adaptive interval; both equal to ``list_interval`` = a fixed
    walk), ``steps`` (a list of ``{interval, until}`` in seconds, ``[]`` = snapshot once),
    ``min_factor`` / ``max_factor`` (adaptive bounds as fractions/multiples of each step's
    interval; 1 and 1 = a fixed schedule).

    >>> steps = {"steps": [{"interval": 1800, "until": 7200}]}
    >>> plan = plan_with_overrides(HOURLY_FOR_A_DAY, steps)
    >>> plan.steps[0].interval, plan.steps[0].min_interval, plan.end
    (1800, 450, 7200)
    >>> plan_with_overrides(HOURLY_FOR_A_DAY, {"max_factor": 1}).steps[0].max_interval
    3600
    >>> fixed = plan_with_overrides(HOURLY_FOR_A_DAY, {"list_max_interval": 600,
    ...     "list_min_interval": 600})
    >>> fixed.list_min_interval, fixed.list_interval, fixed.list_max_interval
    (600, 600, 600)
    >>> plan_with_overrides(HOURLY_FOR_A_DAY, {"list_interval": 3600}).list_max_interval
    3600
    >>> capped = plan_with_overrides(HOURLY_FOR_A_DAY, {"list_max_interval": 300})
    >>> capped.list_min_interval, capped.list_interval, capped.list_max_interval
    (60, 300, 300)
    >>> plan_with_overrides(HOURLY_FOR_A_DAY, {"list_min_interval": 900, "list_max_interval": 600})
    Traceback (most recent call last):
    ...
    ValueError: list_max_interval: must not be under list_min_interval 900
    >>> plan_with_overrides(HOURLY_FOR_A_DAY, {"steps": [{"interval": 60}]})
    Traceback (most recent call last):
    ...
    ValueError: steps[0].until: must be whole seconds between 60 and 31536000, got None
    """
    unknown = sorted(set(overrides) - set(SCHEDULE_KEYS))
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown schedule key (known: {', '.join(SCHEDULE_KEYS)})")
    year = 365 * DAY
    list_interval = base.list_interval
    if "list_interval" in overrides:
        list_interval = _seconds(overrides["list_interval"], "list_interval", 60, year)
    min_factor = _factor(overrides.get("min_factor", DEFAULT_MIN_FACTOR), "min_factor", 0.01, 1)
    max_factor = _factor(overrides.get("max_factor", DEFAULT_MAX_FACTOR), "max_factor", 1, 100)
    raw_steps: list[tuple[int, int]] = [(step.interval, step.until) for step in base.steps]
    if "steps" in overrides:
        if not isinstance(overrides["steps"], list):
            raise ValueError("steps: must be a list of {interval, until}")
        raw_steps = []
        for i, raw in enumerate(overrides["steps"]):
            if not isinstance(raw, Mapping) or set(raw) - {"interval", "until"}:
                raise ValueError(f"steps[{i}]: must be a mapping with interval and until")
            interval = _seconds(raw.get("interval"), f"steps[{i}].interval", 60, year)
            until = _seconds(raw.get("until"), f"steps[{i}].until", 60, year)
            if raw_steps and until <= raw_steps[-1][1]:
                raise ValueError(f"steps[{i}].until: must be later than the step before")
            raw_steps.append((interval, until))
    steps = tuple(
        Step(
            interval,
            until,
            max(1, int(interval * min_factor)),
            int(interval * max_factor),
        )
        for interval, until in raw_steps
    )
    same = "list_interval" not in overrides
    low = base.list_min_interval if same else 0
    high = base.list_max_interval if same else 0
    if "list_min_interval" in overrides:
        low = _seconds(overrides["list_min_interval"], "list_min_interval", 60, year)
    if "list_max_interval" in overrides:
        high = _seconds(overrides["list_max_interval"], "list_max_interval", 60, year)
    if "list_min_interval" in overrides and "list_max_interval" in overrides and low > high:
        raise ValueError(f"list_max_interval: must not be under list_min_interval {low}")
    if same:
        # Bounds given without a list_interval pull the type's default into them, and
        # the bound not given makes room for it.
        if "list_min_interval" in overrides:
            list_interval = max(list_interval, low)
        if "list_max_interval" in overrides:
            list_interval = min(list_interval, high)
        low, high = min(low, list_interval), max(high, list_interval)
    elif low > list_interval:
        raise ValueError(f"list_min_interval: must not be over list_interval {list_interval}")
    elif high and high < list_interval:
        raise ValueError(f"list_max_interval: must not be under list_interval {list_interval}")
    daily = base.list_daily_requests if list_interval == base.list_interval else 0
    return Plan(list_interval, steps, low, high, daily)


def next_list_crawl_at(plan: Plan, now: int) -> int:
    """When the list pages are due again after a walk that started at ``now``.

    >>> next_list_crawl_at(ONCE, 1000)
    87400
    """
    return now + plan.list_interval


def next_snapshot_at(plan: Plan, first_seen_at: int, now: int) -> int:
    """When to snapshot again after a successful snapshot at ``now``; STOP past the plan.

    News: hourly for a day, so the last snapshot is taken at the day's end.

    >>> news = HOURLY_FOR_A_DAY
    >>> next_snapshot_at(news, 0, 0)
    3600
    >>> next_snapshot_at(news, 0, 23 * HOUR)
    86400
    >>> next_snapshot_at(news, 0, DAY)
    0
    >>> farm = DAILY_THEN_WEEKLY
    >>> next_snapshot_at(farm, 0, 6 * DAY) // DAY, next_snapshot_at(farm, 0, 7 * DAY) // DAY
    (7, 14)
    >>> next_snapshot_at(ONCE, 0, 0)
    0
    """
    age = now - first_seen_at
    for step in plan.steps:
        if age < step.until:
            return min(now + step.interval, first_seen_at + plan.end)
    return STOP


def step_at(plan: Plan, age: int) -> Step | None:
    """The plan step an article of this age is in; None once the plan is over.

    >>> step_at(DAILY_THEN_WEEKLY, 8 * DAY).interval == WEEK
    True
    >>> step_at(HOURLY_FOR_A_DAY, DAY) is None
    True
    """
    return next((step for step in plan.steps if age < step.until), None)


def adapt_interval(step: Step, previous: int, changed: bool) -> int:
    """The next interval after a snapshot: longer when unchanged, shorter when changed,
    always within the step's bounds. ``previous`` 0 means the article has no interval yet
    (its first snapshot), which starts at the step's own interval.

    >>> news = HOURLY_FOR_A_DAY.steps[0]
    >>> adapt_interval(news, 0, True), adapt_interval(news, HOUR, False) // HOUR
    (3600, 2)
    >>> adapt_interval(news, 4 * HOUR, False) // HOUR, adapt_interval(news, HOUR, True) // MINUTE
    (4, 30)
    >>> adapt_interval(news, 20 * MINUTE, True) // MINUTE
    15
    """
    if previous <= 0:
        return step.interval
    wanted = int(previous * (SHRINK if changed else GROW))
    return max(step.min_interval, min(step.max_interval, wanted))


@dataclass(frozen=True)
class NextSnapshot:
    at: int  # STOP: never again
    interval: int  # the article's interval from now on (0 once stopped)


def next_adaptive_snapshot(
    plan: Plan, first_seen_at: int, now: int, previous_interval: int, changed: bool
) -> NextSnapshot:
    """When to snapshot again after a successful snapshot at ``now`` that ``changed`` the
    page (or was the first), given the interval the article had; STOP past the plan's end.

    >>> news = HOURLY_FOR_A_DAY
    >>> next_adaptive_snapshot(news, 0, 0, 0, True)
    NextSnapshot(at=3600, interval=3600)
    >>> next_adaptive_snapshot(news, 0, HOUR, HOUR, False)
    NextSnapshot(at=10800, interval=7200)
    >>> next_adaptive_snapshot(news, 0, 22 * HOUR, 4 * HOUR, False)
    NextSnapshot(at=86400, interval=14400)
    >>> next_adaptive_snapshot(news, 0, DAY, HOUR, True)
    NextSnapshot(at=0, interval=0)
    """
    step = step_at(plan, now - first_seen_at)
    if step is None:
        return NextSnapshot(STOP, 0)
    interval = adapt_interval(step, previous_interval, changed)
    return NextSnapshot(min(now + interval, first_seen_at + plan.end), interval)


def next_after_failure(
    failures: int, now: int, status: int | None = None, kind: str = "error"
) -> tuple[int, str | None]:
    """``(next_at, stop_reason)`` after the ``failures``-th failure in a row of ``kind``.

    Back off exponentially; stop after MAX_FAILURES, and at once when the page is gone or
    the site forbids fetching it.

    >>> next_after_failure(1, 0)
    (300, None)
    >>> next_after_failure(3, 0)
    (1200, None)
    >>> next_after_failure(MAX_FAILURES, 0, 503)
    (0, 'failed_5_times:http_503')
    >>> next_after_failure(1, 0, 404)
    (0, 'gone:http_404')
    >>> next_after_failure(MAX_FAILURES, 0, kind="redirect_loop")
    (0, 'failed_5_times:redirect_loop')
    >>> next_after_failure(1, 0, kind="robots_disallowed")
    (0, 'forbidden:robots_disallowed')
    """
    if status in GONE_STATUSES:
        return STOP, f"gone:http_{status}"
    if kind in FORBIDDEN_KINDS:
        return STOP, f"forbidden:{kind}"
    if failures >= MAX_FAILURES:
        last = f"http_{status}" if status else kind
        return STOP, f"failed_{failures}_times:{last}"
    delay = min(FAILURE_BACKOFF_BASE * 2 ** (failures - 1), FAILURE_BACKOFF_MAX)
    return now + delay, None


def next_watch_at(ages: tuple[int, ...], first_snapshot_at: int, now: int) -> int:
    """When the long-tail watch next checks an article whose plan has ended: the first of
    ``ages`` (seconds after its first snapshot) still ahead of ``now``; STOP when none is
    (or the watch is off, ``ages`` empty).

    >>> ages = (7 * DAY, 30 * DAY)
    >>> next_watch_at(ages, 0, DAY) // DAY, next_watch_at(ages, 0, 8 * DAY) // DAY
    (7, 30)
    >>> next_watch_at(ages, 0, 31 * DAY), next_watch_at((), 0, DAY)
    (0, 0)
    """
    return next((first_snapshot_at + age for age in ages if first_snapshot_at + age > now), STOP)
