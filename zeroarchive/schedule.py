"""When to walk a site's list pages and when to snapshot an article again.

Defaults follow the 0archive plan (DESIGN.md, Scheduling). All functions are pure: they
take the current time and return the next one; 0 means "never again".
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class Step:
    """Snapshot every ``interval`` seconds while the article is younger than ``until``."""

    interval: int
    until: int


@dataclass(frozen=True)
class Plan:
    list_interval: int
    steps: tuple[Step, ...]

    @property
    def end(self) -> int:
        return self.steps[-1].until if self.steps else 0


PLANS: dict[str, Plan] = {
    "news": Plan(10 * MINUTE, (Step(HOUR, DAY),)),
    "content_farm": Plan(10 * MINUTE, (Step(DAY, WEEK), Step(WEEK, 30 * DAY))),
    "facebook": Plan(10 * MINUTE, (Step(DAY, WEEK),)),
    "ptt": Plan(10 * MINUTE, (Step(DAY, WEEK),)),
    "dcard": Plan(10 * MINUTE, (Step(DAY, WEEK),)),
    # "once": the first snapshot is the only one.
    "gov": Plan(DAY, ()),
    "youtube": Plan(DAY, ()),
}


def plan_for(site_type: str) -> Plan:
    """The schedule plan of a site type.

    >>> plan_for("news").list_interval
    600
    """
    return PLANS[site_type]


def next_list_crawl_at(plan: Plan, now: int) -> int:
    """When the list pages are due again after a walk that started at ``now``.

    >>> next_list_crawl_at(plan_for("gov"), 1000)
    87400
    """
    return now + plan.list_interval


def next_snapshot_at(plan: Plan, first_seen_at: int, now: int) -> int:
    """When to snapshot again after a successful snapshot at ``now``; STOP past the plan.

    News: hourly for a day, so the last snapshot is taken at the day's end.

    >>> news = plan_for("news")
    >>> next_snapshot_at(news, 0, 0)
    3600
    >>> next_snapshot_at(news, 0, 23 * HOUR)
    86400
    >>> next_snapshot_at(news, 0, DAY)
    0
    >>> farm = plan_for("content_farm")
    >>> next_snapshot_at(farm, 0, 6 * DAY) // DAY, next_snapshot_at(farm, 0, 7 * DAY) // DAY
    (7, 14)
    >>> next_snapshot_at(plan_for("gov"), 0, 0)
    0
    """
    age = now - first_seen_at
    for step in plan.steps:
        if age < step.until:
            return min(now + step.interval, first_seen_at + plan.end)
    return STOP


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
