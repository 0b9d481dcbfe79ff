"""Each list page's own walk interval (zeroarchive/crawl/list_intervals.py): the plan's
interval with no history and as the upper bound, busy pages walked often, a burst followed
at once, pages spread apart, 304s, the daily budget (by default what the fixed walk makes)
postponing the least productive pages, the budget of unchanging pages shared among the
quiet pages that change, and pages retired."""

from __future__ import annotations

from dataclasses import replace

import pytest

from zeroarchive.core.schedule import DAY, HOUR, MINUTE, ListBounds
from zeroarchive.crawl.list_intervals import (
    CHANGE_HALF_LIFE,
    RETIRE_AFTER,
    ListPage,
    begun,
    changes_at,
    growth,
    plan_walk,
    postpone,
    requests_today,
    retiring,
    settle,
    shares,
    spread_out,
    stretched,
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
    # Asked for by a person: every page, the two beyond the budget counted, none put off.
    asked = plan_walk(pages, bounds, T0 + HOUR, everything=True)
    assert list(asked.walk) == ["p0", "p1", "p2", "p3", "p4"]
    assert (asked.postponed, asked.over_budget) == ({}, 2)
    # By their schedule, the first page alone would spend it by the day's end.
    plan = plan_walk(pages, bounds, T0 + HOUR)
    assert list(plan.walk) == ["p0"]
    # Put off by an upper bound on their own phase (due at 0: every six hours).
    assert set(plan.postponed.values()) == {T0 + 6 * HOUR}
    # The person's requests count on the day's budget: the scheduled walks wait for the
    # next day's, and a second walk asked for is all over the budget.
    spent = [begun(page, bounds, T0 + HOUR) for page in asked.walk.values()]
    assert requests_today(spent, T0 + 2 * HOUR) == 5
    assert requests_today(spent, T0 + DAY) == 0
    later = plan_walk([replace(p, next_walk_at=0) for p in spent], bounds, T0 + 2 * HOUR)
    assert not later.walk and set(later.postponed.values()) == {T0 + DAY}
    assert plan_walk(spent, bounds, T0 + 2 * HOUR, everything=True).over_budget == 5
    # The next day, the budget is whole again.
    again = plan_walk(spent, bounds, T0 + DAY + 1, everything=True)
    assert (len(again.walk), again.over_budget) == (5, 2)
    # Within the budget, nothing is over it.
    roomy = plan_walk(pages, replace(bounds, daily_requests=5), T0 + HOUR, everything=True)
    assert (len(roomy.walk), roomy.over_budget) == (5, 0)


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


def test_changes_are_full_answers_with_new_validators_after_the_first_walk() -> None:
    bounds = ListBounds(600, 60, 600, 0)
    first = walked(ListPage("/"), bounds, T0, 20, etag='"a"')
    assert (first.changes, first.changed_at) == (0.0, 0)  # its backlog, not a change
    changed = walked(first, bounds, T0 + 600, 1, etag='"b"')
    assert (changed.changes, changed.changed_at) == (1.0, T0 + 600)
    # A 304, a failed request, and a full answer with the same validators (a server that
    # ignores conditional requests) are no change.
    at = T0 + 1200
    assert walked(changed, bounds, at, 0, not_modified=True).changed_at == T0 + 600
    assert walked(changed, bounds, at, 0, etag='"b"', failed=True).changed_at == T0 + 600
    assert walked(changed, bounds, at, 0, etag='"b"').changed_at == T0 + 600
    # A site that sends no validators: every full answer may be a change.
    bare = walked(walked(ListPage("/x"), bounds, T0, 20), bounds, T0 + 600, 0)
    assert bare.changes == 1.0
    # They fade with a week's half-life.
    assert changes_at(changed, T0 + 600 + CHANGE_HALF_LIFE) == pytest.approx(0.5)


def quiet_site(changes: dict[str, float], at: int) -> list[ListPage]:
    """A site walked every ten minutes for two days, with these changes."""
    return [
        ListPage(
            url,
            walks=288,
            first_walk_at=at - 2 * DAY,
            last_walk_at=at,
            interval=600,
            next_walk_at=at + 600,
            rate_links=0.0,
            rate_seconds=9e4,
            changes=count,
        )
        for url, count in changes.items()
    ]


def test_a_quiet_sites_unchanging_pages_leave_their_budget_to_the_pages_that_change() -> None:
    bounds = ListBounds(600, 60, 600, 0)
    at = T0 + 2 * DAY
    changes = {"/": 2.0, "/feed": 2.0, "/sitemap.xml": 4.0, "/s/1": 1.0, "/s/3": 0.1}
    changes |= {"/s/1?page=2": 0.0, "/s/2": 0.0, "/robots.txt": 0.0}
    pages = quiet_site(changes, at)
    rest = shares(pages, bounds, at)
    # The pages that never changed are walked hourly ...
    assert {u for u, i in rest.items() if i == stretched(bounds)} == {
        "/s/1?page=2",
        "/s/2",
        "/robots.txt",
    }
    assert stretched(bounds) == HOUR
    # ... and the rest of the budget goes to the pages that change, more often than the
    # plan's interval, by the root of their changes: twice the changes, 1.4 times the walks.
    assert all(rest[u] < 600 for u in ("/", "/feed", "/sitemap.xml", "/s/1"))
    assert rest["/"] / rest["/sitemap.xml"] == pytest.approx(2**0.5, rel=0.01)
    assert rest["/s/1"] / rest["/"] == pytest.approx(2**0.5, rel=0.01)
    # One that changed a tenth as often is walked at the plan's interval, never less often.
    assert rest["/s/3"] == 600
    # All within the budget (the fixed walk's), less a request a page for rounding.
    cost = sum(DAY / i for i in rest.values())
    assert len(pages) * 144 - len(pages) - 1 <= cost <= len(pages) * 144 - len(pages) + 1
    # No page more often than the lower bound: what one cannot take goes to the others.
    tight = shares(
        quiet_site({"/": 50.0, "/feed": 0.1, "/robots.txt": 0.0}, at),
        ListBounds(600, 300, 600, 0),
        at,
    )
    assert tight["/"] == 300 and 300 < tight["/feed"] <= 600


def test_nothing_is_shared_without_evidence_or_room() -> None:
    bounds = ListBounds(600, 60, 600, 0)
    at = T0 + 2 * DAY
    mixed = {"/": 2.0, "/robots.txt": 0.0}
    assert shares(quiet_site(mixed, at), bounds, at)  # shared
    # A fixed walk stays fixed; a site none of whose pages changed yet keeps the plan.
    assert shares(quiet_site(mixed, at), ListBounds(600, 600, 600, 0), at) == {}
    assert shares(quiet_site({"/": 0.0, "/robots.txt": 0.0}, at), bounds, at) == {}
    # Pages younger than a day are not judged.
    young = [replace(p, first_walk_at=at - HOUR) for p in quiet_site(mixed, at)]
    assert shares(young, bounds, at) == {}
    # A busy site that spends its budget on its busy page has nothing to share: its
    # unchanging pages still rest at the stretched interval (the budget put them off).
    busy = ListPage(
        "/live",
        walks=900,
        first_walk_at=T0,
        last_walk_at=at,
        interval=60,
        rate_links=30,
        rate_seconds=3600,
        changes=40.0,
    )
    rest = shares([busy, *quiet_site({"/s": 5.0, "/robots.txt": 0.0}, at)], bounds, at)
    assert rest == {"/robots.txt": HOUR}
    # A config's small budget: the same.
    small = shares(quiet_site(mixed, at), replace(bounds, daily_requests=100), at)
    assert small == {"/robots.txt": HOUR}


def test_a_page_settles_at_its_share_and_is_spread_among_its_peers() -> None:
    bounds = ListBounds(600, 60, 600, 0)
    at = T0 + 2 * DAY
    pages = {p.url: p for p in quiet_site({"/": 2.0, "/feed": 2.0, "/robots.txt": 0.0}, at)}
    share = shares(pages.values(), bounds, at)["/"]
    # Both changing pages walked at `at`: settled one after the other, half a share apart.
    for url in ("/robots.txt", "/", "/feed"):
        pages[url] = settle(pages[url], 600, pages.values(), bounds)
    assert pages["/"].interval == pages["/feed"].interval == share < 600
    gap = abs(pages["/"].next_walk_at - pages["/feed"].next_walk_at)
    assert gap == pytest.approx(share / 2, abs=2)
    assert pages["/robots.txt"].interval == HOUR
    # A burst's shorter interval is kept (the share is where it rests, not a floor).
    burst = replace(pages["/"], interval=90, next_walk_at=at + 90)
    assert settle(burst, share, pages.values(), bounds).interval == 90


def test_hourly_pages_are_spread_among_each_other_not_among_faster_ones() -> None:
    bounds = ListBounds(600, 60, 600, 0)
    at = T0 + 2 * DAY
    changes = {"/": 2.0, "/feed": 2.0, "/robots.txt": 0.0, "/s?page=2": 0.0}
    pages = {p.url: p for p in quiet_site(changes, at)}
    for url in ("/robots.txt", "/s?page=2"):
        pages[url] = settle(pages[url], 600, pages.values(), bounds)
    hourly = sorted(pages[u].next_walk_at - at for u in ("/robots.txt", "/s?page=2"))
    # The first meets no page walked about hourly; the second goes half an hour from it.
    assert hourly == [HOUR // 2, HOUR]


def test_the_budget_puts_off_unchanging_pages_before_changing_ones() -> None:
    bounds = ListBounds(600, 60, 600, 2)
    at = T0 + 2 * DAY
    pages = quiet_site({"/robots.txt": 0.0, "/": 1.0, "/a": 0.0}, at)
    due = [replace(p, next_walk_at=at) for p in pages]
    plan = plan_walk(due, bounds, at)
    assert list(plan.walk) == ["/"] and set(plan.postponed) == {"/a", "/robots.txt"}
