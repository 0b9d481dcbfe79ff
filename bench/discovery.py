"""Adaptive list walks against fixed ones, side by side on one simulated set of sites
(issue 39 point 3): how long a new article waits from its publication to its first
snapshot, and how many list requests a day the walks make.

Simulated news sites, each with a front page (its newest 20 articles), one page per
section (the section's newest 20) and a second page of each section (the 20 before), a
feed (newest 20), a news sitemap (the last two days) and robots.txt:
- busy (1 site): an article every 3 minutes on average (Poisson), 4 sections;
- bursty (1 site): bursts of 10-20 articles a minute or two apart, a burst every 4-20
  hours, else nothing, 4 sections;
- quiet (``--quiet`` sites, 12 by default, so that their medians rest on more than a
  handful of articles): an article a week on average each, 3 sections.
A page whose listing did not change since its last walk answers 304 (the sites send
validators); a 304 is counted as a request like any other. Every arm runs the project's
own scheduling code over the same publications (zeroarchive/crawl/list_intervals.py's
``plan_walk``, ``begun``, ``walked``, ``settle`` and ``postpone``, with each site's
``ListBounds`` from its plan, zeroarchive/core/schedule.py):
- fixed: ``list_min_interval`` = ``list_max_interval`` = the plan's 10 minutes, no budget,
  every page of a site walked together (what every walk did before issue 39);
- fixed, spread: the same intervals, each page's first walk spread among the site's
  others (how much of the gain spreading alone gives, for the same requests);
- adaptive: the plan's defaults (10 minutes the upper bound, 1 minute the lower) and the
  default daily budget (what the fixed walk makes: each page every 10 minutes).
A walk is asked for as soon as a page is due (the scheduler's rounds are seconds apart)
and answered at once; a new article is snapshotted as soon as its first list page is
stored (the crawl claims it then), so its delay is the time from its publication to the
walk that first listed it. The first simulated day (every page's first walk finds its
whole backlog) is not measured.

The rates above are the ``tune`` set (seed 39), the one the walks were developed on;
``--set held-out`` (``SETS``) is another seed with other rates and section counts (busy:
an article every 5 minutes, 6 sections; bursty: 5-30 articles 30 s to 4 min apart every
2-30 hours, 3 sections; quiet: an article every 3 days, 5 sections), written down before
the quiet sites' change and only run to check it.

    python bench/discovery.py [--days 29] [--set tune|held-out] [--seed N] [--quiet 12]
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import random
import statistics
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
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
    settle,
    walked,
)

START = 1_800_000_000 - 1_800_000_000 % DAY
LISTED = 20
SITEMAP_AGE = 2 * DAY
KINDS = ("busy", "bursty", "quiet")
ARMS = ("fixed", "fixed, spread", "adaptive")


@dataclass(frozen=True)
class Publishing:
    """How a set of simulated sites publishes: fixed before any tuning, never tuned to the
    walks (the held-out set was written down before the walks it checks were changed)."""

    seed: int
    #: Busy: the mean gap of its Poisson publications, its sections.
    busy_gap: int
    busy_sections: int
    #: Bursty: the gap between bursts, the articles in one, the gap between those.
    burst_every: tuple[int, int]
    burst_size: tuple[int, int]
    burst_gap: tuple[int, int]
    bursty_sections: int
    #: Quiet: the mean gap of each quiet site's Poisson publications, its sections.
    quiet_gap: int
    quiet_sections: int


SETS = {
    # What the walks were developed on (issue 39's busy, bursty and quiet sites).
    "tune": Publishing(
        39, 3 * MINUTE, 4, (4 * HOUR, 20 * HOUR), (10, 20), (MINUTE, 2 * MINUTE), 4, WEEK, 3
    ),
    # Kept apart (2026-11-29, before the quiet sites' change): other rates, other section
    # counts, another seed; only ever run to check, never to choose a constant.
    "held-out": Publishing(
        1123,
        5 * MINUTE,
        6,
        (2 * HOUR, 30 * HOUR),
        (5, 30),
        (30, 4 * MINUTE),
        3,
        3 * DAY,
        5,
    ),
}


@dataclass
class Article:
    published: int
    section: int
    seen: int = 0


@dataclass
class SimSite:
    kind: str
    sections: int
    articles: list[Article]
    bounds: ListBounds
    spread: bool
    pages: dict[str, ListPage] = field(default_factory=dict)
    #: What each page listed at its last walk (its ETag, in effect).
    listed: dict[str, tuple[int, ...]] = field(default_factory=dict)
    requests: int = 0
    not_modified: int = 0
    postponed: int = 0
    #: When its earliest page is due.
    due: int = 0
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


def bursts(rng: random.Random, start: int, end: int, pub: Publishing) -> list[int]:
    times, t = [], float(start)
    while True:
        t += rng.uniform(*pub.burst_every)
        if t >= end:
            return times
        at = t
        for _ in range(rng.randint(*pub.burst_size)):
            at += rng.uniform(*pub.burst_gap)
            times.append(int(at))


def bounds_of(arm: str) -> ListBounds:
    plan = HOURLY_FOR_A_DAY
    if arm == "adaptive":
        return ListBounds.of(plan)
    fixed = plan_with_overrides(
        plan, {"list_min_interval": plan.list_interval, "list_max_interval": plan.list_interval}
    )
    # The fixed arms walk every page every time, as before: no budget holds them back.
    return ListBounds.of(fixed, 10**7)


def make_sites(days: int, pub: Publishing, quiet: int, arm: str) -> list[SimSite]:
    """The same publications for every arm (one seed)."""
    rng = random.Random(pub.seed)
    end = START + days * DAY
    bounds = bounds_of(arm)
    spread = arm != "fixed"
    made = [
        ("busy", pub.busy_sections, poisson(rng, pub.busy_gap, START - DAY, end)),
        ("bursty", pub.bursty_sections, bursts(rng, START - DAY, end, pub)),
    ]
    made += [
        ("quiet", pub.quiet_sections, poisson(rng, pub.quiet_gap, START - 4 * WEEK, end))
        for _ in range(quiet)
    ]
    sites = []
    for kind, sections, times in made:
        articles = [Article(at, rng.randrange(sections)) for at in sorted(times)]
        sites.append(SimSite(kind, sections, articles, bounds, spread))
    return sites


def walk_site(site: SimSite, now: int) -> None:
    if not site.pages:
        site.pages = {url: ListPage(url, kind) for url, kind in site.urls()}
    upto = bisect.bisect_right(site.published, now)
    plan = plan_walk(site.pages.values(), site.bounds, now)
    for url, until in plan.postponed.items():
        site.pages[url] = postpone(site.pages[url], until)
        if now >= START:
            site.postponed += 1
    for url, page in plan.walk.items():
        before = page.interval
        page = begun(page, site.bounds, now)
        measured = now >= START
        site.requests += measured
        listing = site.listing(url, now, upto)
        if site.listed.get(url) == listing and page.walks:
            site.not_modified += measured
            page = walked(page, site.bounds, now, 0, not_modified=True)
        else:
            site.listed[url] = listing
            new = 0
            for i in listing:
                if not site.articles[i].seen:
                    site.articles[i].seen = now
                    new += 1
            page = walked(page, site.bounds, now, new, etag=str(hash(listing)))
        if site.spread:
            page = settle(page, before, site.pages.values(), site.bounds)
        site.pages[url] = page
    site.due = min(p.next_walk_at for p in site.pages.values())


def run(days: int, pub: Publishing, quiet: int, arm: str) -> list[SimSite]:
    sites = make_sites(days, pub, quiet, arm)
    now, end = START - DAY, START + days * DAY
    queue = [(now, i) for i in range(len(sites))]
    while queue[0][0] < end:
        now, i = heapq.heappop(queue)
        if sites[i].due <= now:
            walk_site(sites[i], now)
        heapq.heappush(queue, (max(now + 1, sites[i].due), i))
    return sites


def delays(sites: list[SimSite], days: int) -> list[int]:
    end = START + days * DAY
    return [
        a.seen - a.published
        for site in sites
        for a in site.articles
        if START <= a.published < end and a.seen
    ]


def missed(sites: list[SimSite], days: int) -> int:
    end = START + days * DAY - DAY  # the last day's may still come
    return sum(
        1 for site in sites for a in site.articles if START <= a.published < end and not a.seen
    )


def fmt(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds < 2 * HOUR else f"{seconds / HOUR:.1f} h"


@dataclass(frozen=True)
class Row:
    articles: int
    median: float
    p90: float
    requests: float
    not_modified: float
    postponed: float
    missed: int
    #: Articles that waited over an hour.
    late: int


def row_of(sites: list[SimSite], days: int) -> Row:
    waits = delays(sites, days)
    p90 = statistics.quantiles(waits, n=10)[-1] if len(waits) > 1 else float(waits[0])
    return Row(
        len(waits),
        statistics.median(waits),
        p90,
        sum(s.requests for s in sites) / days,
        sum(s.not_modified for s in sites) / days,
        sum(s.postponed for s in sites) / days,
        missed(sites, days),
        sum(1 for wait in waits if wait > HOUR),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=29, help="simulated days measured")
    parser.add_argument(
        "--set", choices=sorted(SETS), default="tune", help="publishing rates and seed"
    )
    parser.add_argument("--seed", type=int, help="another seed for the set's rates")
    parser.add_argument("--quiet", type=int, default=12, help="quiet sites")
    args = parser.parse_args()
    pub = SETS[args.set]
    if args.seed is not None:
        pub = replace(pub, seed=args.seed)
    arms = {arm: run(args.days, pub, args.quiet, arm) for arm in ARMS}
    print(
        f"{args.days} simulated days (after one day unmeasured), set {args.set}, seed "
        f"{pub.seed}, sites: 1 busy, 1 bursty, {args.quiet} quiet\n{pub}\n"
    )
    print(
        "| sites | arm | articles | median delay | 90th pct | requests/day | of them 304 "
        "| postponed/day | over 1 h | vs fixed: median | vs fixed: requests |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    ratios: dict[tuple[str, str], tuple[float, float]] = {}
    for kind in (*KINDS, "all"):
        rows = {
            arm: row_of([s for s in sites if kind in ("all", s.kind)], args.days)
            for arm, sites in arms.items()
        }
        base = rows["fixed"]
        for arm, row in rows.items():
            median_ratio = row.median / base.median
            request_ratio = row.requests / base.requests
            ratios[kind, arm] = (median_ratio, request_ratio)
            print(
                f"| {kind} | {arm} | {row.articles} | {fmt(row.median)} | {fmt(row.p90)} | "
                f"{row.requests:.0f} | {row.not_modified:.0f} | {row.postponed:.1f} | {row.late} | "
                f"{median_ratio:.2f} | {request_ratio:.2f} |"
            )
            if row.missed:
                print(f"|   {kind}, {arm}: {row.missed} article(s) never listed by a walk |")
    print()
    for kind in (*KINDS, "all"):
        median_ratio, request_ratio = ratios[kind, "adaptive"]
        verdict = "met" if median_ratio <= 0.25 and request_ratio <= 1.0 else "NOT met"
        print(
            f"{kind}: adaptive/fixed median delay {median_ratio:.2f} (aim <= 0.25), "
            f"list requests {request_ratio:.2f} (aim <= 1.00): {verdict}"
        )


if __name__ == "__main__":
    main()
