"""The snapshot and list-page schedule of every site type, and failure back-off.

The doctests in zeroarchive/core/schedule.py show a few points at time 0; these walk every plan
from a realistic first-seen time to its end.
"""

from __future__ import annotations

import pytest

from zeroarchive.core import schedule
from zeroarchive.core.schedule import (
    DAY,
    FAILURE_BACKOFF_BASE,
    FAILURE_BACKOFF_MAX,
    HOUR,
    MAX_FAILURES,
    MINUTE,
    STOP,
    WEEK,
    Plan,
    Step,
    next_after_failure,
    next_list_crawl_at,
    next_snapshot_at,
)
from zeroarchive.sources import plan_for_type, site_type_names

T0 = 1_700_000_000  # when the article was first seen: any fixed time, never the clock

# (site type, age of the article at the snapshot, age at the next one or None for STOP)
SNAPSHOT_CASES = [
    ("news", 0, HOUR),
    ("news", 1, HOUR + 1),
    ("news", 5 * HOUR + 17 * MINUTE, 6 * HOUR + 17 * MINUTE),
    ("news", 23 * HOUR, DAY),
    ("news", 23 * HOUR + 30 * MINUTE, DAY),
    ("news", DAY - 1, DAY),
    ("news", DAY, None),
    ("news", DAY + 1, None),
    ("news", 30 * DAY, None),
    ("content_farm", 0, DAY),
    ("content_farm", 3 * DAY + 5 * HOUR, 4 * DAY + 5 * HOUR),
    ("content_farm", 6 * DAY, WEEK),
    ("content_farm", WEEK - 1, WEEK + DAY - 1),
    ("content_farm", WEEK, 2 * WEEK),
    ("content_farm", WEEK + HOUR, 2 * WEEK + HOUR),
    ("content_farm", 3 * WEEK, 4 * WEEK),
    ("content_farm", 4 * WEEK, 30 * DAY),
    ("content_farm", 30 * DAY - 1, 30 * DAY),
    ("content_farm", 30 * DAY, None),
    ("content_farm", 31 * DAY, None),
    ("facebook", 0, DAY),
    ("facebook", 2 * DAY + 7 * HOUR, 3 * DAY + 7 * HOUR),
    ("facebook", 6 * DAY + 12 * HOUR, WEEK),
    ("facebook", WEEK, None),
    ("ptt", 0, DAY),
    ("ptt", 6 * DAY, WEEK),
    ("ptt", WEEK - 1, WEEK),
    ("ptt", WEEK, None),
    ("ptt", 2 * WEEK, None),
    ("dcard", 0, DAY),
    ("dcard", 4 * DAY, 5 * DAY),
    ("dcard", 6 * DAY + 1, WEEK),
    ("dcard", WEEK + 1, None),
    ("gov", 0, None),
    ("gov", HOUR, None),
    ("organization", 0, DAY),
    ("organization", 6 * DAY + HOUR, WEEK),
    ("organization", WEEK, None),
    ("youtube", 0, None),
    ("youtube", 5 * DAY, None),
]


def test_the_cases_cover_every_plan() -> None:
    assert {case[0] for case in SNAPSHOT_CASES} == set(site_type_names())


@pytest.mark.parametrize(("site_type", "age", "next_age"), SNAPSHOT_CASES)
def test_next_snapshot_at(site_type: str, age: int, next_age: int | None) -> None:
    expected = STOP if next_age is None else T0 + next_age
    assert next_snapshot_at(plan_for_type(site_type), T0, T0 + age) == expected


# (site type, ages of every snapshot taken on time, from the first to the last)
WHOLE_PLANS = [
    ("news", [HOUR * n for n in range(25)]),
    ("content_farm", [DAY * n for n in range(8)] + [2 * WEEK, 3 * WEEK, 4 * WEEK, 30 * DAY]),
    ("facebook", [DAY * n for n in range(8)]),
    ("ptt", [DAY * n for n in range(8)]),
    ("dcard", [DAY * n for n in range(8)]),
    ("gov", [0]),
    ("organization", [DAY * n for n in range(8)]),
    ("youtube", [0]),
]


@pytest.mark.parametrize(("site_type", "ages"), WHOLE_PLANS)
def test_a_whole_plan_ends_exactly_on_its_end(site_type: str, ages: list[int]) -> None:
    plan = plan_for_type(site_type)
    taken = [T0]
    while (due := next_snapshot_at(plan, T0, taken[-1])) != STOP:
        assert due > taken[-1]
        taken.append(due)
    assert [at - T0 for at in taken] == ages
    assert taken[-1] == T0 + plan.end


@pytest.mark.parametrize(
    ("site_type", "end"),
    [
        ("news", DAY),
        ("content_farm", 30 * DAY),
        ("facebook", WEEK),
        ("ptt", WEEK),
        ("dcard", WEEK),
        ("gov", 0),
        ("organization", WEEK),
        ("youtube", 0),
    ],
)
def test_plan_end(site_type: str, end: int) -> None:
    assert plan_for_type(site_type).end == end


def test_content_farm_goes_from_daily_to_weekly_at_seven_days() -> None:
    farm = plan_for_type("content_farm")
    intervals = {
        age: next_snapshot_at(farm, T0, T0 + age) - (T0 + age)
        for age in (0, WEEK - HOUR, WEEK - 1, WEEK, WEEK + 1, 2 * WEEK)
    }
    assert intervals == {
        0: DAY,
        WEEK - HOUR: DAY,
        WEEK - 1: DAY,
        WEEK: WEEK,
        WEEK + 1: WEEK,
        2 * WEEK: WEEK,
    }


def test_a_late_snapshot_is_rescheduled_from_when_it_was_taken() -> None:
    news = plan_for_type("news")
    # Due at T0 + 1 h but taken at T0 + 3 h 10 min (the crawler was down): the plan goes on
    # from then, it does not try to catch up.
    assert next_snapshot_at(news, T0, T0 + 3 * HOUR + 10 * MINUTE) == T0 + 4 * HOUR + 10 * MINUTE


@pytest.mark.parametrize(
    ("age", "next_age"),
    [(0, 10), (29, 39), (34, 44), (35, 55), (40, 60), (59, 60), (60, None), (61, None)],
)
def test_a_site_plan_with_uneven_steps(age: int, next_age: int | None) -> None:
    # A step's interval applies from any age below its end; only the plan's end is a cap.
    plan = Plan(list_interval=60, steps=(Step(10, 35), Step(20, 60)))
    expected = STOP if next_age is None else T0 + next_age
    assert next_snapshot_at(plan, T0, T0 + age) == expected


def test_a_plan_without_steps_takes_one_snapshot() -> None:
    once = Plan(list_interval=DAY, steps=())
    assert once.end == 0
    assert next_snapshot_at(once, T0, T0) == STOP


@pytest.mark.parametrize(
    ("site_type", "interval"),
    [
        ("news", 10 * MINUTE),
        ("content_farm", 10 * MINUTE),
        ("facebook", 10 * MINUTE),
        ("ptt", 10 * MINUTE),
        ("dcard", 10 * MINUTE),
        ("gov", DAY),
        ("organization", DAY),
        ("youtube", DAY),
    ],
)
def test_next_list_crawl_at(site_type: str, interval: int) -> None:
    assert next_list_crawl_at(plan_for_type(site_type), T0) == T0 + interval
    assert next_list_crawl_at(plan_for_type(site_type), T0 + 7) == T0 + 7 + interval


def test_plan_for_an_unknown_type() -> None:
    with pytest.raises(ValueError, match="unknown type 'blog'"):
        plan_for_type("blog")


# --- failures -----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [None, 500, 502, 503, 403, 429])
def test_failures_back_off_exponentially(status: int | None) -> None:
    delays = [next_after_failure(n, T0, status) for n in range(1, MAX_FAILURES)]
    assert delays == [
        (T0 + 5 * MINUTE, None),
        (T0 + 10 * MINUTE, None),
        (T0 + 20 * MINUTE, None),
        (T0 + 40 * MINUTE, None),
    ]
    assert FAILURE_BACKOFF_BASE == 5 * MINUTE


def test_the_back_off_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    # With the default limit the article stops (5 failures, 40 min) long before the cap;
    # a deployment that allows more failures must still wait at most a day.
    assert all(
        next_after_failure(n, T0)[0] - T0 <= FAILURE_BACKOFF_MAX for n in range(1, MAX_FAILURES)
    )
    monkeypatch.setattr(schedule, "MAX_FAILURES", 100)
    delays = [next_after_failure(n, T0)[0] - T0 for n in range(8, 13)]
    assert delays == [
        FAILURE_BACKOFF_BASE * 128,
        FAILURE_BACKOFF_BASE * 256,
        FAILURE_BACKOFF_MAX,
        FAILURE_BACKOFF_MAX,
        FAILURE_BACKOFF_MAX,
    ]
    assert FAILURE_BACKOFF_MAX == DAY
    assert next_after_failure(99, T0) == (T0 + DAY, None)


@pytest.mark.parametrize("status", [404, 410])
@pytest.mark.parametrize("failures", [1, 2, MAX_FAILURES - 1, MAX_FAILURES, MAX_FAILURES + 3])
def test_gone_pages_stop_at_once(status: int, failures: int) -> None:
    assert next_after_failure(failures, T0, status) == (STOP, f"gone:http_{status}")


@pytest.mark.parametrize(
    ("failures", "status", "reason"),
    [
        (MAX_FAILURES, None, f"failed_{MAX_FAILURES}_times:error"),
        (MAX_FAILURES, 500, f"failed_{MAX_FAILURES}_times:http_500"),
        (MAX_FAILURES, 403, f"failed_{MAX_FAILURES}_times:http_403"),
        (MAX_FAILURES + 1, 502, f"failed_{MAX_FAILURES + 1}_times:http_502"),
        (50, None, "failed_50_times:error"),
    ],
)
def test_too_many_failures_stop(failures: int, status: int | None, reason: str) -> None:
    assert next_after_failure(failures, T0, status) == (STOP, reason)


def test_one_failure_short_of_the_limit_still_backs_off() -> None:
    next_at, reason = next_after_failure(MAX_FAILURES - 1, T0, 503)
    assert reason is None
    assert next_at == T0 + FAILURE_BACKOFF_BASE * 2 ** (MAX_FAILURES - 2)
