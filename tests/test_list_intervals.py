"""Each list page's own walk interval (zeroarchive/crawl/list_intervals.py): the plan's
interval with no history and as the upper bound, busy pages walked often, a burst followed
at once, pages spread apart, 304s, the daily budget (by default what the fixed walk makes)
postponing the least productive pages, and pages retired."""

from __future__ import annotations

from dataclasses import replace

import pytest

from zeroarchive.core.schedule import DAY, HOUR, MINUTE, ListBounds
from zeroarchive.crawl.list_intervals import (
    RETIRE_AFTER,
    ListPage,
    begun,
    growth,
    plan_walk,
    postpone,
    requests_today,
    retiring,
    spread_out,
    walked,
)
from zeroarchive.sites.record import Site, SiteConfigError, parse_config

T0 = 1_800_000_000 - 1_800_000_000 % DAY
NEWS = ListBounds(10 * MINUTE, MINUTE, 6 * HOUR, 1440)


def site(type_: str = "news", **config: object) -> Site:
    return Site(1, "s", "https://s.example/", type_, parse_config(config, "s"))


def walks(page: ListPage, bounds: ListBounds, new_per_walk: list[int]) -> ListPage:
    """The page after walks each at its due time showing these new links."""
    at = page.next_walk_at or T0
    for new in new_per_walk:
        page = walked(begun(page, bounds, at), bounds, at, new)
        at = page.next_walk_at
    return page


def test_a_page_with_no_history_is_walked_at_the_plans_interval() -> None:
    first = walked(ListPage("https://s.example/"), NEWS, T0, 40)
    # The first walk's links are the page's backlog, not a rate.
    assert (first.interval, first.next_walk_at, first.rate) == (600, T0 + 600, None)
    # The plan's interval is also the upper bound; the budget is the fixed walk's.
    assert site().list_bounds == ListBounds(600, 60, 600, 0)
    # A government site's plan walks daily: its bounds are its own.
    assert site("gov").list_bounds == ListBounds(DAY, 8640, DAY, 0)
    quiet = walks(ListPage("https://s.example/"), site().list_bounds, [20, 0, 0, 0])
    assert quiet.interval == 600


def test_a_quiet_page_doubles_its_interval_up_to_the_upper_bound() -> None:
    url = "https://s.example/section"
    page = walks(ListPage(url), NEWS, [20, 0])
    # At most doubled; a little less for most URLs, so a site's pages drift apart.
    assert 1.5 <= growth(url) <= 2
    assert page.interval == int(600 * growth(url)) and page.rate == 0
    page = walks(page, NEWS, [0])
    assert page.interval == int(int(600 * growth(url)) * growth(url))
    page = walks(page, NEWS, [0] * 10)
    assert page.interval == NEWS.high
    assert page.walks == 13 and page.new_links == 20


def test_a_busy_page_comes_down_to_the_lower_bound_at_once() -> None:
    # Twelve new links in ten minutes: half a link a walk wants a walk every 25 s, but
    # never under the lower bound.
    page = walks(ListPage("https://s.example/"), NEWS, [20, 12])
    assert page.interval == NEWS.low
    # Two new links per ten minutes: a walk every 2.5 minutes.
    page = walks(ListPage("https://s.example/"), NEWS, [20, 2])
    assert page.interval == 150


def test_a_burst_after_silence_shortens_the_interval_at_once() -> None:
    page = walks(ListPage("https://s.example/"), NEWS, [20] + [0] * 12)
    assert page.interval == NEWS.high
    burst = walks(page, NEWS, [9])
    # Nine links in six hours: the walk's own rate, higher than the faded one, decides.
    assert burst.interval == round(0.5 / (9 / NEWS.high))


def test_a_304_is_a_walk_with_nothing_new_that_keeps_its_validators() -> None:
    page = walked(ListPage("u"), NEWS, T0, 5, etag='"v1"', last_modified="Sun, 29 Nov 2026")
    after = walked(page, NEWS, T0 + 600, 0, not_modified=True)
    assert (after.etag, after.last_modified, after.not_modified) == (
        '"v1"',
        "Sun, 29 Nov 2026",
        1,
    )
    assert after.validators() == {
        "If-None-Match": '"v1"',
        "If-Modified-Since": "Sun, 29 Nov 2026",
    }
    assert after.interval == int(600 * growth("u")) and after.walks == 2
    # A full answer without validators drops the old ones: they no longer name the page.
    full = walked(after, NEWS, T0 + 1800, 0)
    assert full.validators() == {}


def test_the_budget_postpones_the_least_productive_due_pages() -> None:
    bounds = ListBounds(600, 60, 6 * HOUR, 300)
    busy = ListPage("busy", walks=9, interval=300, rate_links=6, rate_seconds=3600)
    middling = ListPage("middling", walks=9, interval=1200, rate_links=1, rate_seconds=3600)
    quiet = ListPage("quiet", walks=9, interval=6 * HOUR, rate_links=0, rate_seconds=9 * HOUR)
    plan = plan_walk([quiet, middling, busy], bounds, T0)
    # busy costs 288 requests by the day's end at its interval, middling 72 more: over 300.
    assert list(plan.walk) == ["busy", "quiet"]
    assert plan.postponed == {"middling": T0 + 6 * HOUR}
    assert postpone(middling, T0 + 6 * HOUR).postponed == 1
    # Room for all: nothing postponed.
    roomy = replace(bounds, daily_requests=1440)
    assert set(plan_walk([quiet, middling, busy], roomy, T0).walk) == {"busy", "middling", "quiet"}


def test_a_spent_budget_puts_every_page_off_to_the_next_day() -> None:
    bounds = ListBounds(600, 60, 6 * HOUR, 3)
    pages = [ListPage(f"p{i}") for i in range(5)]
    # Asked for by a person: every page, but never more requests than the budget.
    asked = plan_walk(pages, bounds, T0 + HOUR, everything=True)
    assert list(asked.walk) == ["p0", "p1", "p2"]
    assert set(asked.postponed.values()) == {T0 + DAY}
    # By their schedule, the first page alone would spend it by the day's end.
    plan = plan_walk(pages, bounds, T0 + HOUR)
    assert list(plan.walk) == ["p0"]
    # Put off by an upper bound on their own phase (due at 0: every six hours).
    assert set(plan.postponed.values()) == {T0 + 6 * HOUR}
    spent = [begun(page, bounds, T0 + HOUR) for page in asked.walk.values()]
    assert requests_today(spent, T0 + 2 * HOUR) == 3
    assert requests_today(spent, T0 + DAY) == 0
    later = plan_walk([replace(p, next_walk_at=0) for p in spent], bounds, T0 + 2 * HOUR)
    assert not later.walk and set(later.postponed.values()) == {T0 + DAY}
    # The next day, the budget is whole again.
    assert len(plan_walk(spent, bounds, T0 + DAY + 1, everything=True).walk) == 3


def test_config_keys_change_the_bounds_and_the_budget() -> None:
    custom = site(daily_requests=200, schedule={"list_max_interval": HOUR})
    assert custom.list_bounds == ListBounds(600, 60, HOUR, 200)
    fixed = site(schedule={"list_min_interval": 600, "list_max_interval": 600})
    assert (fixed.list_bounds.low, fixed.list_bounds.high) == (600, 600)
    with pytest.raises(SiteConfigError, match="daily_requests"):
        site(daily_requests=-3)
    with pytest.raises(SiteConfigError, match="list_max_interval"):
        site(schedule={"list_min_interval": 900, "list_max_interval": 600})


def test_a_walk_with_new_links_at_least_halves_the_interval() -> None:
    bounds = ListBounds(600, 60, 600, 0)
    page = walks(ListPage("https://s.example/"), bounds, [20] + [0] * 30)
    assert page.interval == 600 and page.rate is not None and page.rate < 1 / 6000
    # One new link after hours of none: the faded rate asks for little, the walk halves.
    burst = walks(page, bounds, [1])
    assert burst.interval == 300
    assert walks(burst, bounds, [3]).interval == 60


def test_the_default_budget_is_what_the_fixed_walk_makes() -> None:
    bounds = ListBounds(600, 60, 600, 0)
    steady = [
        ListPage(f"p{i}", walks=9, interval=600, rate_links=0, rate_seconds=9e4) for i in range(12)
    ]
    plan = plan_walk(steady, bounds, T0)
    # Twelve pages every ten minutes: 1,728 requests a day, and all of them fit.
    assert plan.budget == 12 * 144 and len(plan.walk) == 12 and not plan.postponed
    # A busy page at the lower bound spends more: the quiet pages are put off.
    busy = ListPage("busy", walks=9, interval=60, rate_links=30, rate_seconds=3600)
    plan = plan_walk([*steady[:11], busy], bounds, T0)
    assert plan.budget == 12 * 144 and "busy" in plan.walk
    assert len(plan.walk) + len(plan.postponed) == 12 and plan.postponed
    assert set(plan.postponed.values()) == {T0 + 600}
    # A config's budget wins.
    assert plan_walk(steady, replace(bounds, daily_requests=50), T0).budget == 50


def test_pages_found_in_one_walk_are_spread_over_the_interval() -> None:
    bounds = ListBounds(600, 60, 600, 0)
    pages: list[ListPage] = []
    for url in ("/", "/feed", "/a", "/b"):
        page = walked(begun(ListPage(url), bounds, T0), bounds, T0, 5)
        pages.append(spread_out(page, 0, pages, bounds))
    assert sorted(p.next_walk_at - T0 for p in pages) == [150, 300, 450, 600]
    # Without spreading every page would come due at once.
    assert {walked(ListPage(u), bounds, T0, 5).next_walk_at for u in "xyz"} == {T0 + 600}


def test_pages_neither_linked_nor_productive_for_long_are_retired() -> None:
    bounds = ListBounds(600, 60, 600, 0)
    found = walked(ListPage("/old", first_walk_at=T0, linked_at=T0), bounds, T0, 3)
    assert found.new_at == T0
    later = T0 + RETIRE_AFTER
    assert retiring(found, later)
    assert not retiring(replace(found, linked_at=T0 + DAY), later)
    productive = walked(found, bounds, T0 + DAY, 1)
    assert productive.new_at == T0 + DAY and not retiring(productive, later)
    plan = plan_walk([found, ListPage("/kept", walks=1, first_walk_at=later)], bounds, later)
    assert plan.retired == ("/old",) and list(plan.walk) == ["/kept"]


def test_a_busy_page_spends_the_budget_at_an_even_pace() -> None:
    bounds = ListBounds(600, 60, 600, 144)
    busy = ListPage("busy", walks=9, interval=60, rate_links=30, rate_seconds=3600)
    # Noon, 72 of 144 spent: on pace, the busy page is walked though it does not fit.
    noon = replace(busy, day=T0 // DAY, walks_today=72)
    assert list(plan_walk([noon], bounds, T0 + DAY // 2).walk) == ["busy"]
    # One more: ahead of the pace, it waits till the pace catches up (ten minutes).
    ahead = replace(noon, walks_today=73)
    plan = plan_walk([ahead], bounds, T0 + DAY // 2)
    assert not plan.walk and plan.postponed == {"busy": T0 + DAY // 2 + 600}
