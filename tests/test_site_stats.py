"""`scrapy site_stats`: the monitor's counts per site, from a database in a known state."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from sqlalchemy import delete, select, update

from tests.conftest import scrapy
from zeroarchive.core.schedule import DAY, HOUR, STOP
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import close_archives, open_archive
from zeroarchive.storage.schema import article, site
from zeroarchive.storage.site_stats import (
    SiteStatsConfig,
    new_per_day,
    record_list_success,
    site_stats,
)

NOW = 1_750_000_000

# (age in days, next snapshot relative to NOW or STOP, failures, stop reason, snapshots)
BUSY = [
    (0.5, +HOUR, 0, None, 1),  # new, scheduled, not due
    (2, -10, 0, None, 3),  # due, not overdue
    (5, -2 * HOUR, 0, None, 4),  # due and overdue
    (10, -3 * HOUR, 2, "last_error:timeout", 2),  # due, overdue and failing
    (12, +HOUR, 1, "last_error:blocked", 2),  # failing: met a bot challenge
    (20, STOP, 1, "gone:http_404", 1),  # stopped
    (100, STOP, 5, "failed_5_times:http_503", 0),  # stopped
    (300, STOP, 0, "plan_complete", 25),  # finished normally
    (400, STOP, 0, "moved", 1),  # moved: not a problem either
]


def build(db_url: str, now: int = NOW) -> dict[str, int]:
    archive = open_archive(url=db_url)
    ids = {}
    for name, active, created in (
        ("busy", True, now - 500 * DAY),
        ("gone-quiet", True, now - 500 * DAY),
        ("new-site", True, now - DAY),
        ("off", False, now - 500 * DAY),
    ):
        spec = parse_spec(
            {
                "name": name,
                "url": f"https://{name}.example/",
                "active": active,
                "config": {"article": "/a/"},
            }
        )
        ids[name], _ = archive.sites.upsert(spec, created)
    for number, (age, next_at, failures, reason, snapshots) in enumerate(BUSY):
        url = f"https://busy.example/a/{number}"
        created = int(now - age * DAY)
        archive.articles.add(ids["busy"], "Article", [url], created)
        with archive.engine.begin() as conn:
            conn.execute(
                update(article)
                .where(article.c.url == url)
                .values(
                    next_snapshot_at=next_at if next_at == STOP else now + next_at,
                    failure_count=failures,
                    stop_reason=reason,
                    snapshot_count=snapshots,
                )
            )
    archive.articles.add(
        ids["gone-quiet"], "Article", ["https://gone-quiet.example/a/1"], now - 30 * DAY
    )
    record_list_success(archive.engine, ids["busy"], now - 600)
    with archive.engine.begin() as conn:
        conn.execute(update(site).values(last_crawl_at=now - 600))
    return ids


def test_site_stats_counts(db_url: str) -> None:
    ids = build(db_url)
    engine = open_archive(url=db_url).engine
    stats = {s.name: s for s in site_stats(engine, NOW, SiteStatsConfig(3, HOUR))}
    busy = stats["busy"]
    assert (busy.site_id, busy.articles, busy.snapshots) == (ids["busy"], 9, 39)
    assert busy.new == {3: 2, 7: 3, 28: 6, 180: 7, 360: 8}
    assert (busy.due, busy.overdue, busy.failing, busy.blocked, busy.stopped) == (3, 2, 2, 1, 2)
    assert busy.last_list_ok_at == NOW - 600 and busy.last_new_article_at == int(NOW - 0.5 * DAY)
    assert not busy.quiet
    quiet = stats["gone-quiet"]
    assert quiet.quiet and quiet.articles == 1 and quiet.new[28] == 0 and quiet.new[180] == 1
    assert quiet.last_list_ok_at == 0
    # Too young to be quiet; inactive sites are never flagged.
    assert not stats["new-site"].quiet and stats["new-site"].articles == 0
    assert not stats["off"].quiet and not stats["off"].is_active
    # A longer quiet threshold clears the flag.
    longer = site_stats(engine, NOW, SiteStatsConfig(31, HOUR))
    assert not any(s.quiet for s in longer)
    # Walks ran (ten minutes ago) on every site; only busy's list page ever answered.
    assert {s.name: s.unanswered for s in stats.values()} == {
        "busy": "",
        "gone-quiet": "never",
        "new-site": "never",
        "off": "",  # inactive: not judged
    }
    # A list page that answered two days before the latest walk has stopped answering; a
    # walk under way is not judged until it ends.
    record_list_success(engine, ids["gone-quiet"], NOW - 2 * DAY)
    with engine.begin() as conn:
        conn.execute(
            update(site).where(site.c.site_id == ids["new-site"]).values(walk_owner="w" + "1" * 15)
        )
    later = {s.name: s.unanswered for s in site_stats(engine, NOW, SiteStatsConfig(3, HOUR))}
    assert (later["gone-quiet"], later["new-site"]) == ("stopped", "")
    a_week = SiteStatsConfig(3, HOUR, unanswered_seconds=7 * DAY)
    assert not any(s.unanswered == "stopped" for s in site_stats(engine, NOW, a_week))


def test_new_per_day(db_url: str) -> None:
    ids = build(db_url)
    engine = open_archive(url=db_url).engine
    # NOW is 15:06 UTC: the article of 0.5 days ago was found today (last), the one of
    # 2 days ago 3rd from last; 20 days reach back to 12 days ago, not to 20.
    counts = new_per_day(engine, NOW, 20)
    assert set(counts) == {ids["busy"]}
    busy = counts[ids["busy"]]
    assert [n for n, found in enumerate(busy) if found] == [7, 9, 14, 17, 19]
    wider = new_per_day(engine, NOW, 40)
    assert sum(wider[ids["busy"]]) == 6 and sum(wider[ids["gone-quiet"]]) == 1


def test_site_stats_command(db_url: str, tmp_path: Path) -> None:
    # The command reads the real clock: the same state, built around it.
    build(db_url, int(time.time()))
    close_archives()
    run = scrapy("site_stats", "--json", db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    rows = {r["name"]: r for r in map(json.loads, run.stdout.splitlines())}
    assert set(rows) == {"busy", "gone-quiet", "new-site", "off"}
    busy = rows["busy"]
    assert (busy["articles"], busy["snapshots"], busy["due"], busy["stopped"]) == (9, 39, 3, 2)
    assert busy["blocked"] == 1
    assert busy["new"] == {"3d": 2, "7d": 3, "28d": 6, "180d": 7, "360d": 8}
    assert rows["gone-quiet"]["quiet"] and not busy["quiet"]
    assert (rows["gone-quiet"]["unanswered"], busy["unanswered"]) == ("never", "")
    table = scrapy("site_stats", "--quiet-days", "100000", db_url=db_url, cwd=tmp_path)
    assert table.returncode == 0, table.output
    assert (
        "4 site(s), 0 without a new article in 100000 day(s), 2 whose list pages do not answer"
        in table.stdout
    )
    assert "busy" in table.stdout and "QUIET" not in table.stdout
    flagged = [line for line in table.stdout.splitlines() if "NEVER-ANSWERED" in line]
    assert sorted(line.split()[-1] for line in flagged) == ["gone-quiet", "new-site"]
    bad = scrapy("site_stats", "--quiet-days", "0", db_url=db_url, cwd=tmp_path)
    assert bad.returncode == 2, bad.output


def _recount(db_url: str, now: int) -> dict[int, tuple[object, ...]]:
    """The counts straight from every Article row: what the kept totals must add up to."""
    engine = open_archive(url=db_url).engine
    with engine.connect() as conn:
        rows = conn.execute(select(article)).all()
        site_ids = conn.execute(select(site.c.site_id)).scalars().all()
    counts = {}
    for site_id in site_ids:
        mine = [row for row in rows if row.site_id == site_id]
        live = [row for row in mine if row.next_snapshot_at != STOP]
        counts[site_id] = (
            len(mine),
            {days: sum(row.created_at >= now - days * DAY for row in mine) for days in (3, 7)},
            {days: sum(row.created_at >= now - days * DAY for row in mine) for days in (28, 360)},
            sum(row.snapshot_count for row in mine),
            sum(row.next_snapshot_at <= now for row in live),
            sum(row.next_snapshot_at <= now - HOUR for row in live),
            sum(row.failure_count > 0 for row in live),
            sum((row.stop_reason or "").endswith(":blocked") for row in mine),
            sum(
                row.next_snapshot_at == STOP
                and row.stop_reason not in (None, "plan_complete", "moved")
                for row in mine
            ),
            max((row.created_at for row in mine), default=0),
        )
    return counts


def _reported(db_url: str, now: int) -> dict[int, tuple[object, ...]]:
    engine = open_archive(url=db_url).engine
    return {
        s.site_id: (
            s.articles,
            {days: s.new[days] for days in (3, 7)},
            {days: s.new[days] for days in (28, 360)},
            s.snapshots,
            s.due,
            s.overdue,
            s.failing,
            s.blocked,
            s.stopped,
            s.last_new_article_at,
        )
        for s in site_stats(engine, now, SiteStatsConfig(3, HOUR))
    }


def test_kept_totals_follow_every_kind_of_write(db_url: str) -> None:
    """Inserts, schedule changes both ways across "finished", moves between sites and days,
    and deletes, written straight to Article: the triggers' totals match a recount."""
    archive = open_archive(url=db_url)
    rng = random.Random(13)
    site_ids = [
        archive.sites.upsert(
            parse_spec(
                {"name": f"s{n}", "url": f"https://s{n}.example/", "config": {"article": "/a/"}}
            ),
            NOW - 500 * DAY,
        )[0]
        for n in range(3)
    ]
    site_ids.append(
        archive.sites.upsert(
            parse_spec({"name": "none", "url": "https://n.example/", "config": {"article": "/a/"}}),
            NOW,
        )[0]
    )
    for batch in range(12):
        created = NOW - rng.choice(
            (0, 2 * HOUR, 3 * DAY, 3 * DAY + 1, 6 * DAY, 27 * DAY, 400 * DAY)
        )
        urls = [f"https://s.example/a/{batch}/{n}" for n in range(5)]
        archive.articles.add(rng.choice(site_ids[:3]), "Article", urls, created)
    reasons = (
        None,
        "plan_complete",
        "moved",
        "gone:http_404",
        "last_error:blocked",
        "failed_5_times:blocked",
        "last_error:timeout",
    )
    for round_ in range(4):
        with archive.engine.begin() as conn:
            ids = conn.execute(select(article.c.article_id)).scalars().all()
            for article_id in rng.sample(ids, 25):
                values: dict[str, object] = {
                    "next_snapshot_at": rng.choice(
                        (STOP, STOP, NOW - 2 * HOUR, NOW - 10, NOW + HOUR)
                    ),
                    "stop_reason": rng.choice(reasons),
                    "snapshot_count": rng.randint(0, 9),
                    "failure_count": rng.choice((0, 0, 2)),
                }
                if rng.random() < 0.2:
                    values["site_id"] = rng.choice(site_ids[:3])
                if rng.random() < 0.2:
                    values["created_at"] = NOW - rng.randint(0, 40) * DAY - rng.randint(0, DAY)
                conn.execute(
                    update(article).where(article.c.article_id == article_id).values(**values)
                )
            if round_ == 2:
                conn.execute(delete(article).where(article.c.article_id.in_(rng.sample(ids, 8))))
        assert _reported(db_url, NOW) == _recount(db_url, NOW), round_
    # Another clock moves the windows over the same kept counts.
    assert _reported(db_url, NOW + 2 * DAY + 7) == _recount(db_url, NOW + 2 * DAY + 7)
