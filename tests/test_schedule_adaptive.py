"""Adaptive re-snapshots: the pure rules (table-driven), a simulation against a known
change timeline (adaptive vs the fixed hourly plan), and a real crawl of a local site whose
article changes at known times, driven by a fake clock (ZEROARCHIVE_FAKE_NOW)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from sqlalchemy import create_engine, select

from tests.conftest import scrapy
from tests.replay import ReplayServer, Route, tw_news_pages, tw_news_routes
from zeroarchive.core.schedule import (
    DAY,
    HOUR,
    MINUTE,
    STOP,
    WEEK,
    NextSnapshot,
    Plan,
    Step,
    adapt_interval,
    next_adaptive_snapshot,
    plan_with_overrides,
)
from zeroarchive.sites.record import SiteConfigError, parse_spec
from zeroarchive.sources import plan_for_type
from zeroarchive.storage.schema import article, article_snapshot, site
from zeroarchive.storage.snapshots import content_hash

T0 = 1_700_000_000
NEWS = plan_for_type("news")
FARM = plan_for_type("content_farm")

# (plan, age at the snapshot, previous interval, changed, expected next age or None, interval)
ADAPTIVE_CASES = [
    # first snapshot: the step's own interval
    (NEWS, 0, 0, True, HOUR, HOUR),
    # unchanged doubles, up to 4 h
    (NEWS, HOUR, HOUR, False, 3 * HOUR, 2 * HOUR),
    (NEWS, 3 * HOUR, 2 * HOUR, False, 7 * HOUR, 4 * HOUR),
    (NEWS, 7 * HOUR, 4 * HOUR, False, 11 * HOUR, 4 * HOUR),
    # changed halves, down to 15 min
    (NEWS, HOUR, HOUR, True, HOUR + 30 * MINUTE, 30 * MINUTE),
    (NEWS, 2 * HOUR, 30 * MINUTE, True, 2 * HOUR + 15 * MINUTE, 15 * MINUTE),
    (NEWS, 2 * HOUR, 15 * MINUTE, True, 2 * HOUR + 15 * MINUTE, 15 * MINUTE),
    # never past the plan's end, and STOP at or after it
    (NEWS, 22 * HOUR, 4 * HOUR, False, DAY, 4 * HOUR),
    (NEWS, DAY - 1, 15 * MINUTE, True, DAY, 15 * MINUTE),
    (NEWS, DAY, HOUR, False, None, 0),
    (NEWS, 3 * DAY, HOUR, True, None, 0),
    # content farm: daily step 6 h .. 4 d, weekly step 1.75 d .. 4 weeks, ends at 30 days
    (FARM, 0, 0, True, DAY, DAY),
    (FARM, DAY, DAY, False, 3 * DAY, 2 * DAY),
    (FARM, 3 * DAY, 4 * DAY, False, WEEK, 4 * DAY),
    (FARM, 2 * DAY, DAY, True, 2 * DAY + 12 * HOUR, 12 * HOUR),
    # entering the weekly step: an interval from the daily step is lifted to its minimum
    (FARM, WEEK, 12 * HOUR, True, WEEK + 42 * HOUR, 42 * HOUR),
    (FARM, WEEK, 4 * DAY, False, WEEK + 8 * DAY, 8 * DAY),
    (FARM, 20 * DAY, 4 * WEEK, False, 30 * DAY, 4 * WEEK),
    # "once" plans never snapshot again
    (plan_for_type("gov"), 0, 0, True, None, 0),
]


@pytest.mark.parametrize(
    ("plan", "age", "previous", "changed", "next_age", "interval"), ADAPTIVE_CASES
)
def test_adaptive_next_snapshot(
    plan: Plan, age: int, previous: int, changed: bool, next_age: int | None, interval: int
) -> None:
    got = next_adaptive_snapshot(plan, T0, T0 + age, previous, changed)
    expected_at = STOP if next_age is None else T0 + next_age
    assert got == NextSnapshot(expected_at, interval)


@pytest.mark.parametrize("plan", [NEWS, FARM, plan_for_type("facebook")])
def test_intervals_never_leave_the_step_bounds(plan: Plan) -> None:
    for step in plan.steps:
        interval = 0
        for changed in [True, False] * 3 + [False] * 10 + [True] * 10:
            interval = adapt_interval(step, interval, changed)
            assert step.min_interval <= interval <= step.max_interval


# (overrides, expected steps as (interval, until, min, max), list interval)
OVERRIDE_CASES = [
    ({}, [(HOUR, DAY, 15 * MINUTE, 4 * HOUR)], 10 * MINUTE),
    ({"min_factor": 1, "max_factor": 1}, [(HOUR, DAY, HOUR, HOUR)], 10 * MINUTE),
    ({"list_interval": 1800, "max_factor": 2}, [(HOUR, DAY, 15 * MINUTE, 2 * HOUR)], 1800),
    (
        {
            "steps": [
                {"interval": 1800, "until": 6 * HOUR},
                {"interval": 3 * HOUR, "until": 3 * DAY},
            ]
        },
        [(1800, 6 * HOUR, 450, 2 * HOUR), (3 * HOUR, 3 * DAY, 45 * MINUTE, 12 * HOUR)],
        10 * MINUTE,
    ),
    ({"steps": []}, [], 10 * MINUTE),
]


@pytest.mark.parametrize(("overrides", "steps", "list_interval"), OVERRIDE_CASES)
def test_site_schedule_overrides(
    overrides: dict[str, object], steps: list[tuple[int, int, int, int]], list_interval: int
) -> None:
    spec = parse_spec(
        {
            "name": "s",
            "url": "https://news.example/",
            "config": {"article": "/a/", "schedule": overrides},
        }
    )
    from zeroarchive.sites.record import Site, parse_config

    site = Site(1, spec.name, spec.url, "news", parse_config(spec.config, "s"))
    plan = site.plan
    assert plan.list_interval == list_interval
    assert [(s.interval, s.until, s.min_interval, s.max_interval) for s in plan.steps] == steps


# (overrides, the field named in the error)
BAD_OVERRIDES = [
    ({"every": 60}, "schedule.every"),
    ({"list_interval": 5}, "schedule.list_interval"),
    ({"min_factor": 2}, "schedule.min_factor"),
    ({"max_factor": 0.5}, "schedule.max_factor"),
    ({"steps": {"interval": 60}}, "schedule.steps"),
    (
        {"steps": [{"interval": 600, "until": 60}, {"interval": 600, "until": 60}]},
        "schedule.steps[1].until",
    ),
    ({"steps": [{"interval": "1h", "until": 3600}]}, "schedule.steps[0].interval"),
    ("hourly", "schedule"),
]


@pytest.mark.parametrize(("overrides", "field"), BAD_OVERRIDES)
def test_bad_schedule_overrides_name_the_field(overrides: object, field: str) -> None:
    with pytest.raises(SiteConfigError) as error:
        parse_spec(
            {
                "name": "s",
                "url": "https://n.example/",
                "config": {"article": "/a/", "schedule": overrides},
            }
        )
    assert error.value.field == field


def test_a_fixed_step_still_works_like_the_old_plan() -> None:
    fixed = Plan(10 * MINUTE, (Step(HOUR, DAY, HOUR, HOUR),))
    at, interval = T0, 0
    taken = []
    while at != STOP:
        taken.append(at)
        upcoming = next_adaptive_snapshot(fixed, T0, at, interval, changed=False)
        at, interval = upcoming.at, upcoming.interval
    assert taken == [T0 + n * HOUR for n in range(25)]


# --- simulation against a known change timeline ----------------------------------------

# Seconds after first sight at which the page changes: a news story updated after 40 min,
# corrected at 2 h 30, edited once more at 9 h, then left alone.
CHANGES = (40 * MINUTE, 2 * HOUR + 30 * MINUTE, 9 * HOUR)


@dataclass(frozen=True)
class Outcome:
    fetches: list[int]  # ages of the snapshots
    captured: dict[int, int]  # version number -> age of its first snapshot
    missed: int  # versions never snapshotted


def version_at(age: int, changes: tuple[int, ...]) -> int:
    return sum(1 for change in changes if change <= age)


def simulate(plan: Plan, changes: tuple[int, ...]) -> Outcome:
    """What the archive would store of a page that changes at ``changes``."""
    fetches: list[int] = []
    captured: dict[int, int] = {}
    at, interval, last = 0, 0, None
    while True:
        fetches.append(at)
        version = version_at(at, changes)
        captured.setdefault(version, at)
        upcoming = next_adaptive_snapshot(plan, 0, at, interval, version != last)
        last = version
        if upcoming.at == STOP:
            break
        at, interval = upcoming.at, upcoming.interval
    return Outcome(fetches, captured, len(changes) + 1 - len(captured))


def test_adaptive_saves_fetches_and_misses_no_change() -> None:
    hourly = simulate(plan_with_overrides(NEWS, {"min_factor": 1, "max_factor": 1}), CHANGES)
    adaptive = simulate(NEWS, CHANGES)
    assert len(hourly.fetches) == 25
    assert adaptive.fetches == [
        a * MINUTE for a in (0, 60, 90, 150, 180, 240, 360, 600, 720, 960, 1200, 1440)
    ]
    assert hourly.missed == adaptive.missed == 0
    bound = NEWS.steps[0].max_interval
    for version, change in enumerate(CHANGES, start=1):
        assert 0 <= adaptive.captured[version] - change <= bound
        assert 0 <= hourly.captured[version] - change <= HOUR


# --- the real crawl, on a fake clock ---------------------------------------------------

STORY = "/story/1.html"


def story_versions() -> list[bytes]:
    """Four real (UTF-8) news pages, served one after the other at STORY."""
    routes = tw_news_routes()
    pages = [page for page in tw_news_pages() if page.charset.lower() == "utf-8"]
    return [routes[page.path].body for page in pages[: len(CHANGES) + 1]]


def site_routes(version: bytes) -> dict[str, Route]:
    html = f'<!doctype html><html><body><a href="{STORY}">story</a></body></html>'
    return {
        "/news/": Route(200, (("Content-Type", "text/html; charset=utf-8"),), html.encode()),
        STORY: Route(200, (("Content-Type", "text/html; charset=utf-8"),), version),
    }


def test_changing_site_is_captured_on_the_adaptive_schedule(db_url: str, tmp_path: Path) -> None:
    versions = story_versions()
    with ReplayServer(site_routes(versions[0])) as server:
        sites = [
            {
                "name": "changing",
                "url": server.url("/news/"),
                "type": "news",
                "config": {"article": r"/story/\d+\.html", "robots": False, "delay": 0},
            }
        ]
        (tmp_path / "sites.yaml").write_text(yaml.safe_dump(sites), encoding="utf-8")
        loaded = scrapy("load_sites", str(tmp_path / "sites.yaml"), db_url=db_url, cwd=tmp_path)
        assert loaded.returncode == 0, loaded.output
        engine = create_engine(db_url)
        clock, mode, runs = T0, "all", 0
        while clock != STOP:
            server.routes.update(site_routes(versions[version_at(clock - T0, CHANGES)]))
            run = scrapy(
                "crawl",
                "generic",
                "-a",
                f"mode={mode}",
                db_url=db_url,
                cwd=tmp_path,
                extra_env={"ZEROARCHIVE_FAKE_NOW": str(clock)},
            )
            assert run.returncode == 0 and "Traceback" not in run.output, run.output
            mode, runs = "snapshot", runs + 1
            with engine.connect() as conn:
                row = conn.execute(select(article.c.next_snapshot_at, article.c.stop_reason)).one()
            assert row.next_snapshot_at == STOP or row.next_snapshot_at > clock
            clock = row.next_snapshot_at
            assert runs <= 30, "the schedule never ended"
        with engine.connect() as conn:
            taken = conn.execute(
                select(article_snapshot.c.snapshot_at, article_snapshot.c.content_hash).order_by(
                    article_snapshot.c.snapshot_at
                )
            ).all()
            final = conn.execute(select(article.c.stop_reason, article.c.snapshot_interval)).one()
            list_ok = conn.execute(select(site.c.last_list_ok_at)).scalar_one()
        engine.dispose()

    expected = simulate(NEWS, CHANGES)
    assert [at - T0 for at, _ in taken] == expected.fetches
    assert final.stop_reason == "plan_complete" and final.snapshot_interval == 0
    # The monitor's "last successful list crawl": the one walk, on the fake clock.
    assert list_ok == T0
    hashes = [bytes(digest) for _, digest in taken]
    bound = NEWS.steps[0].max_interval
    for number, body in enumerate(versions):
        first = next(at for at, digest in taken if bytes(digest) == content_hash(body))
        change = T0 + (CHANGES[number - 1] if number else 0)
        assert 0 <= first - change <= bound
    assert len(set(hashes)) == len(versions)
