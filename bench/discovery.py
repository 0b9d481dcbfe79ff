"""Adaptive list walks against fixed ones, side by side on one simulated set of sites
(issue 39 point 3): how long a new article waits from its publication to its first
snapshot, and how many list requests a day the walks make.

Three simulated news sites, each with a front page (its newest 20 articles), one page per
section (the section's newest 20) and a second page of each section (the 20 before), a
feed (newest 20), a news sitemap (the last two days) and robots.txt:
- busy: an article every 3 minutes on average (Poisson), 4 sections;
- bursty: bursts of 10-20 articles a minute or two apart, a burst every 4-20 hours, else
  nothing, 4 sections;
- quiet: an article a week on average, 3 sections.
A page whose listing did not change since its last walk answers 304 (the sites send
validators). Both arms run the project's own scheduling code over the same publications:
zeroarchive/crawl/list_intervals.py's ``plan_walk``, ``begun``, ``walked`` and ``postpone``
with each site's ``ListBounds`` from its plan (zeroarchive/core/schedule.py); the fixed
arm is the same code with ``list_min_interval`` = ``list_max_interval`` = the plan's 10
minutes (what every walk did before). A walk is asked for as soon as a page is due (the
scheduler's rounds are seconds apart) and answered at once; a new article is snapshotted as
soon as its first list page is stored (the crawl claims it then), so its delay is the time
from its publication to the walk that first listed it. The first simulated day (every page's
first walk finds its whole backlog) is not measured.

    python bench/discovery.py [--days 15] [--seed 39]
"""

from __future__ import annotations

import argparse
import bisect
import random
import statistics
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from zeroarchive.core.schedule import (  # noqa: E402
    DAY,
    HOUR,
    HOURLY_FOR_A_DAY,
    MINUTE,
    WEEK,
    ListBounds,
    plan_with_overrides,
)
from zeroarchive.crawl.list_intervals import (  # noqa: E402
    ListPage,
    begun,
    plan_walk,
    postpone,
    walked,
)

START = 1_800_000_000 - 1_800_000_000 % DAY
LISTED = 20
SITEMAP_AGE = 2 * DAY


@dataclass
class Article:
    published: int
    section: int
    seen: int = 0


@dataclass
class SimSite:
    name: str
    sections: int
    articles: list[Article]
    bounds: ListBounds
    pages: dict[str, ListPage] = field(default_factory=dict)
    #: What each page listed at its last walk (its ETag, in effect).
    listed: dict[str, tuple[int, ...]] = field(default_factory=dict)
    requests: int = 0
    not_modified: int = 0
    postponed: int = 0
    measured_requests: int = 0
    published: list[int] = field(default_factory=list)
    by_section: list[list[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.published = [a.published for a in self.articles]
        self.by_section = [
            [i for i, a in enumerate(self.articles) if a.section == s] for s in range(self.sections)
        ]

    def urls(self) -> Iterator[tuple[str, str]]:
        yield "/", "page"
        for s in range(self.sections):
            yield f"/section/{s}", "page"
            yield f"/section/{s}?page=2", "page"
        yield "/feed", "feed"
        yield "/sitemap.xml", "sitemap"
        yield "/robots.txt", "robots"

    def listing(self, url: str, at: int, upto: int) -> tuple[int, ...]:
        """Indexes of the articles ``url`` lists at ``at`` (``upto``: published by then)."""
        if url == "/robots.txt":
            return ()
        if url == "/sitemap.xml":
            first = bisect.bisect_right(self.published, at - SITEMAP_AGE)
            return tuple(range(first, upto))
        if url in ("/", "/feed"):
            return tuple(range(max(0, upto - LISTED), upto))
        section = self.by_section[int(url.split("/")[2].split("?")[0])]
        mine = section[: bisect.bisect_left(section, upto)]
        if url.endswith("?page=2"):
            return tuple(mine[-2 * LISTED : -LISTED])
        return tuple(mine[-LISTED:])


def poisson(rng: random.Random, mean_gap: float, start: int, end: int) -> list[int]:
    times, t = [], float(start)
    while True:
        t += rng.expovariate(1 / mean_gap)
        if t >= end:
            return times
        times.append(int(t))


def bursts(rng: random.Random, start: int, end: int) -> list[int]:
    times, t = [], float(start)
    while True:
        t += rng.uniform(4 * HOUR, 20 * HOUR)
        if t >= end:
            return times
        at = t
        for _ in range(rng.randint(10, 20)):
            at += rng.uniform(MINUTE, 2 * MINUTE)
            times.append(int(at))


def make_sites(days: int, seed: int, fixed: bool) -> list[SimSite]:
    rng = random.Random(seed)
    end = START + days * DAY
    plan = HOURLY_FOR_A_DAY
    if fixed:
        plan = plan_with_overrides(
            plan, {"list_min_interval": plan.list_interval, "list_max_interval": plan.list_interval}
        )
    # The fixed arm walks every page every time, as before: no budget holds it back.
    bounds = ListBounds.of(plan, 10**6 if fixed else None)
    sites = []
    for name, sections, times in (
        ("busy", 4, poisson(rng, 3 * MINUTE, START - DAY, end)),
        ("bursty", 4, bursts(rng, START - DAY, end)),
        ("quiet", 3, poisson(rng, WEEK, START - 4 * WEEK, end)),
    ):
        articles = [Article(at, rng.randrange(sections)) for at in sorted(times)]
        sites.append(SimSite(name, sections, articles, bounds))
    return sites


def walk_site(site: SimSite, now: int, measure_from: int) -> None:
    if not site.pages:
        site.pages = {url: ListPage(url, kind) for url, kind in site.urls()}
    upto = bisect.bisect_right(site.published, now)
    plan = plan_walk(site.pages.values(), site.bounds, now)
    for url, until in plan.postponed.items():
        site.pages[url] = postpone(site.pages[url], until)
        site.postponed += 1
    for url, page in plan.walk.items():
        page = begun(page, site.bounds, now)
        site.requests += 1
        if now >= measure_from:
            site.measured_requests += 1
        listing = site.listing(url, now, upto)
        if site.listed.get(url) == listing and page.walks:
            site.not_modified += 1
            site.pages[url] = walked(page, site.bounds, now, 0, not_modified=True)
            continue
        site.listed[url] = listing
        new = 0
        for i in listing:
            if not site.articles[i].seen:
                site.articles[i].seen = now
                new += 1
        site.pages[url] = walked(page, site.bounds, now, new, etag=str(hash(listing)))


def run(days: int, seed: int, fixed: bool) -> list[SimSite]:
    sites = make_sites(days, seed, fixed)
    now, end = START - DAY, START + days * DAY
    while now < end:
        for site in sites:
            if not site.pages or min(p.next_walk_at for p in site.pages.values()) <= now:
                walk_site(site, now, START)
        now = max(now + 1, min(min(p.next_walk_at for p in s.pages.values()) for s in sites))
    return sites


def delays(site: SimSite, days: int) -> list[int]:
    end = START + days * DAY
    return [a.seen - a.published for a in site.articles if START <= a.published < end and a.seen]


def missed(site: SimSite, days: int) -> int:
    end = START + days * DAY - DAY  # the last day's may still come
    return sum(1 for a in site.articles if START <= a.published < end and not a.seen)


def fmt(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds < 2 * HOUR else f"{seconds / HOUR:.1f} h"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=15, help="simulated days measured")
    parser.add_argument("--seed", type=int, default=39)
    args = parser.parse_args()
    arms = {"fixed": run(args.days, args.seed, True), "adaptive": run(args.days, args.seed, False)}
    print(f"{args.days} simulated days (after one day unmeasured), seed {args.seed}\n")
    print("| site | arm | articles | median delay | 90th pct | requests/day | 304s | postponed |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    totals: dict[str, tuple[list[int], int]] = {}
    for arm, sites in arms.items():
        every: list[int] = []
        requests = 0
        for site in sites:
            waits = delays(site, args.days)
            every += waits
            requests += site.measured_requests
            q = statistics.quantiles(waits, n=10)[-1] if len(waits) > 1 else waits[0]
            print(
                f"| {site.name} | {arm} | {len(waits)} | {fmt(statistics.median(waits))} | "
                f"{fmt(q)} | {site.measured_requests / args.days:.0f} | {site.not_modified} | "
                f"{site.postponed} |"
            )
            lost = missed(site, args.days)
            if lost:
                print(f"|   {site.name}: {lost} article(s) never listed by a walk | | | | | | | |")
        totals[arm] = (every, requests)
    for arm, (every, requests) in totals.items():
        print(
            f"| all | {arm} | {len(every)} | {fmt(statistics.median(every))} | "
            f"{fmt(statistics.quantiles(every, n=10)[-1])} | {requests / args.days:.0f} | | |"
        )
    fixed_median = statistics.median(totals["fixed"][0])
    adaptive_median = statistics.median(totals["adaptive"][0])
    print(
        f"\nadaptive/fixed median delay: {adaptive_median / fixed_median:.2f} (aim <= 0.25); "
        f"list requests a day: {totals['adaptive'][1] / args.days:.0f} adaptive, "
        f"{totals['fixed'][1] / args.days:.0f} fixed (aim: no more)"
    )


if __name__ == "__main__":
    main()
