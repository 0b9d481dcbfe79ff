"""The deletion state machine, the long-tail watch's choice and budget, and the watch going
through the redis queue with conditional requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis
from sqlalchemy import select, update

from tests.conftest import scrapy
from tests.replay import ReplayServer
from tests.test_events import article_page, front_page
from tests.test_generic import write_sites
from zeroarchive.core.items import FetchedPage
from zeroarchive.core.schedule import DAY, HOUR, MINUTE, STOP
from zeroarchive.events.store import (
    Answered,
    GoneAnswer,
    iter_events,
    record_answered,
    record_gone,
)
from zeroarchive.events.watch import promote_watch
from zeroarchive.sites.record import SiteConfigError, SiteSpec, parse_config
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.schema import article, watch_usage

T0 = 1_800_000_000


def archive_with(
    db_url: str, n: int, config: dict[str, Any] | None = None
) -> tuple[Archive, list[int]]:
    archive = open_archive(url=db_url)
    spec = SiteSpec(name="farm", url="https://farm.example/", type="news", config=config or {})
    site_id, _ = archive.sites.upsert(spec, T0)
    urls = [f"https://farm.example/news/{i}" for i in range(n)]
    archive.articles.add(site_id, "Article", urls, T0)
    with archive.engine.connect() as conn:
        ids = list(
            conn.execute(select(article.c.article_id).order_by(article.c.article_id)).scalars()
        )
    pages = [
        FetchedPage(i, site_id, "Article", T0, 200, url, {"ETag": [f'"{i}"']}, "utf-8", b"<p>x</p>")
        for i, url in zip(ids, urls, strict=True)
    ]
    archive.snapshots.save(pages)
    return archive, ids


def test_a_transient_404_is_cleared_and_a_confirmed_one_is_one_event(db_url: str) -> None:
    archive, (flaky, gone) = archive_with(db_url, 2)
    site_id = 1
    assert record_gone(archive.engine, [GoneAnswer(flaky, site_id, T0 + HOUR, "404")]) == [
        "suspected"
    ]
    assert record_answered(archive.engine, [Answered(flaky, site_id, T0 + HOUR + 60, 200)]) == [
        (flaky, "cleared")
    ]
    outcomes = record_gone(
        archive.engine,
        [
            GoneAnswer(gone, site_id, T0 + HOUR, "410"),
            GoneAnswer(gone, site_id, T0 + HOUR + 5 * MINUTE, "410"),
            GoneAnswer(gone, site_id, T0 + HOUR + 10 * MINUTE, "410"),
            GoneAnswer(gone, site_id, T0 + 2 * HOUR, "410"),
        ],
    )
    assert outcomes == ["suspected", "waiting", "deleted", "still_deleted"]
    with archive.engine.connect() as conn:
        row = conn.execute(select(article).where(article.c.article_id == gone)).one()
    # Still checked (news: hourly while its day lasts), never stopped at a 404.
    assert row.next_snapshot_at == T0 + 3 * HOUR and row.deleted_at == T0 + HOUR + 10 * MINUTE
    record_answered(archive.engine, [Answered(gone, site_id, T0 + 3 * HOUR, 200)])
    events = [(e.kind, e.article_id, e.evidence) for e in iter_events(archive.engine)]
    assert events == [("deleted", gone, "410"), ("restored", gone, "answered:200")]
    assert [e.kind for e in iter_events(archive.engine, kinds=["restored"])] == ["restored"]
    assert [e.kind for e in iter_events(archive.engine, since=T0 + 2 * HOUR)] == ["restored"]
    assert list(iter_events(archive.engine, site_id=2)) == []
    # Recording the same answers again adds no event.
    record_answered(archive.engine, [Answered(gone, site_id, T0 + 3 * HOUR, 200)])
    assert len(list(iter_events(archive.engine))) == 2


def test_the_watch_takes_the_longest_waiting_first_within_the_daily_budget(db_url: str) -> None:
    archive, ids = archive_with(db_url, 6, {"watch_budget": 4})
    with archive.engine.connect() as conn:
        rows = conn.execute(select(article.c.next_snapshot_at, article.c.watch_at)).all()
    assert all(r.next_snapshot_at > 0 and r.watch_at == 0 for r in rows)  # plan running
    with archive.engine.begin() as conn:
        for offset, article_id in enumerate(reversed(ids)):
            conn.execute(
                update(article)
                .where(article.c.article_id == article_id)
                .values(next_snapshot_at=STOP, watch_at=T0 + 7 * DAY + offset)
            )
    site = archive.sites.get(1)
    assert site is not None
    now = T0 + 8 * DAY
    assert promote_watch(archive.engine, [site], now) == {1: 4}
    assert promote_watch(archive.engine, [site], now + HOUR) == {}  # today's budget spent
    with archive.engine.connect() as conn:
        due = set(
            conn.execute(
                select(article.c.article_id).where(article.c.next_snapshot_at == now)
            ).scalars()
        )
        used = conn.execute(select(watch_usage.c.checks)).scalar_one()
    assert due == set(list(reversed(ids))[:4]) and used == 4
    assert promote_watch(archive.engine, [site], now + DAY) == {1: 2}  # a new day


def test_watch_off_and_bad_watch_config() -> None:
    assert parse_config({"watch": []}, "s").watch == ()
    assert parse_config({}, "s").watch == (7 * DAY, 30 * DAY, 90 * DAY, 180 * DAY, 365 * DAY)
    for bad in ({"watch": "weekly"}, {"watch": [100.5]}, {"watch_budget": -1}, {"watch": [10]}):
        with pytest.raises(SiteConfigError):
            parse_config(bad, "s")


def queued_requests(server: redis.Redis) -> list[dict[str, Any]]:
    found = []
    for key in server.scan_iter("zeroarchive:*:requests"):
        for raw in server.zrange(key, 0, -1):
            found.append(json.loads(raw))
    return found


def test_watch_checks_go_through_the_redis_queue_as_conditional_requests(
    mariadb_url: str, redis_url: str, tmp_path: Path
) -> None:
    names = ("a", "b", "c")
    routes = {"/": front_page(names), **{f"/news/{n}": article_page(n) for n in names}}
    with ReplayServer(routes) as http:
        config = {
            "article": "/news/",
            "following": r"^http://127\.0\.0\.1:\d+/$",
            "delay": 0,
            "watch": [7 * DAY],
            "watch_budget": 2,
        }
        sites = [{"name": "farm", "url": http.url("/"), "type": "news", "config": config}]
        path = write_sites(tmp_path / "s.yaml", sites)
        assert scrapy("load_sites", str(path), db_url=mariadb_url, cwd=tmp_path).returncode == 0
        for at in (T0, T0 + DAY + HOUR):  # the first snapshots, then the plan's end
            done = scrapy(
                "crawl",
                "generic",
                "-s",
                "ROBOTSTXT_OBEY=False",
                db_url=mariadb_url,
                cwd=tmp_path,
                extra_env={"ZEROARCHIVE_FAKE_NOW": str(at)},
            )
            assert done.returncode == 0, done.output
        env = {"REDIS_URL": redis_url, "ZEROARCHIVE_FAKE_NOW": str(T0 + 8 * DAY)}
        done = scrapy("schedule", "--once", db_url=mariadb_url, cwd=tmp_path, extra_env=env)
        assert done.returncode == 0, done.output
        server = redis.Redis.from_url(redis_url)
        checks = [r for r in queued_requests(server) if "/news/" in r["url"]]
        assert len(checks) == 2, done.output  # the budget
        for check in checks:
            names = {k.lower() if isinstance(k, str) else k for k in check["headers"]}
            assert "if-none-match" in {str(n).lower() for n in names}, check["headers"]
        done = scrapy("schedule", "--once", db_url=mariadb_url, cwd=tmp_path, extra_env=env)
        assert len([r for r in queued_requests(server) if "/news/" in r["url"]]) == 2
