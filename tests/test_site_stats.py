"""`scrapy site_stats`: the monitor's counts per site, from a database in a known state."""

from __future__ import annotations

import json
import time
from pathlib import Path

from sqlalchemy import update

from tests.conftest import scrapy
from zeroarchive.archive import close_archives, open_archive
from zeroarchive.schedule import DAY, HOUR, STOP
from zeroarchive.sites import parse_spec
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
    table = scrapy("site_stats", "--quiet-days", "100000", db_url=db_url, cwd=tmp_path)
    assert table.returncode == 0, table.output
    assert "4 site(s), 0 without a new article in 100000 day(s)" in table.stdout
    assert "busy" in table.stdout and "QUIET" not in table.stdout
    bad = scrapy("site_stats", "--quiet-days", "0", db_url=db_url, cwd=tmp_path)
    assert bad.returncode == 2, bad.output
