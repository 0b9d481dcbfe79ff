"""Recovery of lost work (zeroarchive/storage/leases.py, zeroarchive/crawl/recovery.py, the
dispatcher's rounds, worker heartbeats): what a dead worker, a lost queue or a killed
embedded run held is due again at once, never what a live worker holds.

In-process tests run on both databases with a fake clock, counting scheduler rounds;
tests/test_recovery_e2e.py SIGKILLs real workers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapy.utils.test import get_crawler
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from spiders.generic import GenericSpider
from tests.conftest import project_settings
from tests.tcp_forwarder import TcpForwarder
from zeroarchive.core.owners import host_prefix, queued_owner, run_owner, worker_owner
from zeroarchive.crawl import dispatch
from zeroarchive.crawl.dispatch import MARKER_KEY, DispatchConfig, Dispatcher
from zeroarchive.crawl.recovery import take_up_dead_runs
from zeroarchive.crawl.runlock import SiteRunLocks
from zeroarchive.distributed.heartbeat import Heartbeat, alive, heartbeat_key
from zeroarchive.distributed.queue import held_key, request_queue
from zeroarchive.distributed.redis_client import connect
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.leases import (
    end_walks,
    give_back,
    holders,
    release_in_flight,
    release_owners,
    take,
)
from zeroarchive.storage.schema import article, site
from zeroarchive.storage.site_stats import SiteStatsConfig, site_stats

NOW = 1_800_000_000
HEARTBEAT = 30


def add_site(archive: Archive, name: str, articles: int = 4) -> int:
    spec = parse_spec(
        {
            "name": name,
            "url": f"https://{name}.example/",
            "type": "news",
            "config": {"article": "/a/"},
        }
    )
    site_id, _ = archive.sites.upsert(spec, NOW - 3600)
    urls = [f"https://{name}.example/a/{n}" for n in range(articles)]
    archive.articles.add(site_id, "Article", urls, NOW - 3600)
    return site_id


def owners_of(archive: Archive) -> dict[int, str | None]:
    with archive.engine.connect() as conn:
        rows = conn.execute(select(article.c.article_id, article.c.lease_owner)).all()
    return {row.article_id: row.lease_owner for row in rows}


def site_row(archive: Archive, site_id: int) -> dict[str, object]:
    with archive.engine.connect() as conn:
        return dict(conn.execute(select(site).where(site.c.site_id == site_id)).mappings().one())


@pytest.fixture
def archive(db_url: str) -> Archive:
    return open_archive(url=db_url)


def test_a_dead_workers_work_is_released_and_a_live_ones_kept(archive: Archive) -> None:
    one, two = add_site(archive, "one"), add_site(archive, "two")
    dead, live = worker_owner(), worker_owner()
    archive.sites.mark_list_crawl(one, NOW, NOW + 600, queued_owner())
    archive.sites.mark_list_crawl(two, NOW, NOW + 600, queued_owner())
    first = archive.articles.claim_due([one], NOW, 3, 3600)
    second = archive.articles.claim_due([two], NOW, 3, 3600)
    assert {o[0] for o in owners_of(archive).values() if o} == {"q"}
    take(archive.engine, dead, NOW + 1, 3600, [a.article_id for a in first], [(one, NOW)])
    take(archive.engine, live, NOW + 1, 3600, [a.article_id for a in second], [(two, NOW)])
    assert holders(archive.engine, "w", NOW + 2) == {dead, live}
    assert site_row(archive, one)["walk_owner"] == dead

    released = release_owners(archive.engine, {dead}, NOW + 5)
    assert (released.articles, released.walks, released.by_site) == (3, 1, {one: 4})
    owners = owners_of(archive)
    assert all(owners[a.article_id] is None for a in first)
    assert all(owners[a.article_id] == live for a in second)
    assert site_row(archive, one)["walk_owner"] is None
    assert site_row(archive, one)["next_crawl_at"] == NOW + 5  # due again at once
    assert site_row(archive, two)["walk_owner"] == live
    # Due again: the next claim hands the dead worker's articles out, not the live one's.
    again = {a.article_id for a in archive.articles.claim_due([one, two], NOW + 5, 10, 3600)}
    with archive.engine.connect() as conn:
        of_one = set(
            conn.execute(select(article.c.article_id).where(article.c.site_id == one)).scalars()
        )
    # All of site one's (three released, one never claimed), one of two's never claimed.
    assert len(again) == 5 and of_one <= again
    assert not again & {a.article_id for a in second}
    # The recovery is counted per site, for site_stats and the monitor.
    stats = {s.site_id: s for s in site_stats(archive.engine, NOW + 6, SiteStatsConfig(3, 0))}
    assert (stats[one].recoveries, stats[one].last_recovery_at, stats[one].walk) == (4, NOW + 5, "")
    assert (stats[two].recoveries, stats[two].walk) == (0, "begun")


def test_a_walk_is_queued_then_begun_then_done(archive: Archive) -> None:
    one = add_site(archive, "one")
    owner, other = worker_owner(), worker_owner()
    archive.sites.mark_list_crawl(one, NOW, NOW + 600, queued_owner())
    stats = {s.site_id: s for s in site_stats(archive.engine, NOW, SiteStatsConfig(3, 0))}
    assert stats[one].walk == "queued"
    take(archive.engine, owner, NOW, 3600, [], [(one, NOW)])
    assert site_row(archive, one)["walk_owner"] == owner
    # A page of an older walk of the site neither takes nor ends this one.
    take(archive.engine, other, NOW, 3600, [], [(one, NOW - 600)])
    assert site_row(archive, one)["walk_owner"] == owner
    assert end_walks(archive.engine, [(one, NOW - 600)]) == 0
    # Its pages answered, the next queued: queued again; the taker of the next page holds it.
    give_back(archive.engine, other, (), [(one, NOW)])
    assert site_row(archive, one)["walk_owner"] == owner
    give_back(archive.engine, owner, (), [(one, NOW)])
    assert str(site_row(archive, one)["walk_owner"])[0] == "q"
    take(archive.engine, other, NOW, 3600, [], [(one, NOW)])
    assert site_row(archive, one)["walk_owner"] == other
    assert end_walks(archive.engine, [(one, NOW)]) == 1
    assert site_row(archive, one)["walk_owner"] is None
    # Done: a dead owner no longer holds it, so nothing is walked before its interval.
    assert not release_owners(archive.engine, {other}, NOW + 1)
    assert site_row(archive, one)["next_crawl_at"] == NOW + 600
    # A done walk is not begun again by a late page of it.
    take(archive.engine, owner, NOW, 3600, [], [(one, NOW)])
    assert site_row(archive, one)["walk_owner"] is None


def test_a_snapshot_written_ends_its_lease_and_owner(archive: Archive) -> None:
    one = add_site(archive, "one", articles=1)
    [due] = archive.articles.claim_due([one], NOW, 1, 3600)
    owner = worker_owner()
    take(archive.engine, owner, NOW, 3600, [due.article_id], [])
    from zeroarchive.core.items import FailedFetch

    archive.snapshots.record_failures([FailedFetch(due.article_id, one, NOW + 1, "timeout", None)])
    assert owners_of(archive)[due.article_id] is None
    assert holders(archive.engine, "w", NOW + 2) == set()


def test_lost_queues_release_all_in_flight_but_what_live_workers_hold(archive: Archive) -> None:
    one, two = add_site(archive, "one"), add_site(archive, "two")
    archive.sites.mark_list_crawl(one, NOW, NOW + 600, queued_owner())
    archive.sites.mark_list_crawl(two, NOW, NOW + 600, queued_owner())
    queued = archive.articles.claim_due([one], NOW, 2, 3600)
    held = archive.articles.claim_due([two], NOW, 2, 3600)
    live = worker_owner()
    take(archive.engine, live, NOW, 3600, [a.article_id for a in held], [(two, NOW)])
    released = release_in_flight(archive.engine, ["news"], NOW + 1, keep={live})
    # The live worker keeps its snapshots, not its walk: the walk's count of pages not
    # answered went with redis, so nobody could tell when it is done.
    assert (released.articles, released.walks) == (2, 2)
    owners = owners_of(archive)
    assert all(owners[a.article_id] is None for a in queued)
    assert all(owners[a.article_id] == live for a in held)
    assert site_row(archive, two)["next_crawl_at"] == NOW + 1
    # Another spider's types are left alone.
    assert not release_in_flight(archive.engine, ["ptt"], NOW + 1)


def test_an_embedded_run_takes_up_what_a_killed_run_of_its_host_held(
    archive: Archive, tmp_path: Path
) -> None:
    one, two, three = add_site(archive, "one"), add_site(archive, "two"), add_site(archive, "three")
    killed = run_owner()
    archive.sites.mark_list_crawl(one, NOW, NOW + 600, killed)
    archive.articles.claim_due([one], NOW, 3, 3600, run_owner())
    archive.articles.claim_due([two], NOW, 3, 3600, run_owner())
    # Another host's run, and a queued claim, are not this host's to take back.
    archive.articles.claim_due([three], NOW, 1, 3600, run_owner("elsewhere"))
    archive.articles.claim_due([three], NOW, 1, 3600)
    # A live run of this host holds site two's lock (flock: per open file, so this
    # process's second SiteRunLocks is blocked like another process).
    live = SiteRunLocks(tmp_path)
    assert live.acquire(two)
    locks = SiteRunLocks(tmp_path)
    released = take_up_dead_runs(archive, locks, NOW + 1, None)
    assert (released.articles, released.walks, released.by_site) == (3, 1, {one: 4})
    # The lock taken to give the work back is let go at once: any run may take the site.
    assert locks.held == []
    assert live.acquire(one)
    assert site_row(archive, one)["next_crawl_at"] == NOW + 1
    owners = owners_of(archive)
    assert sum(1 for o in owners.values() if o and o.startswith(host_prefix())) == 3
    assert sum(1 for o in owners.values() if o and o.startswith("q")) == 1
    live.release_all()
    locks.release_all()


# --- the dispatcher's rounds, with real redis ---------------------------------------------


@pytest.fixture
def server(redis_url: str) -> Iterator[redis.Redis]:
    client = connect(get_crawler(settings_dict=project_settings()).settings, redis_url)
    client.set(MARKER_KEY, "1")  # not the first round ever
    yield client
    client.close()


def dispatcher(archive: Archive, server: redis.Redis) -> Dispatcher:
    settings = project_settings(ZEROARCHIVE_DB_URL=archive.url)
    spider = GenericSpider.from_crawler(get_crawler(GenericSpider, settings))
    return Dispatcher(archive, server, [spider], DispatchConfig(50, 3600, 1000, HEARTBEAT))


def test_a_dead_workers_walk_and_snapshots_are_queued_again_in_the_next_round(
    archive: Archive, server: redis.Redis
) -> None:
    one = add_site(archive, "one")
    rounds = dispatcher(archive, server)
    first = rounds.run_once(NOW)["generic"]
    assert (first.list_sites, first.snapshots) == (1, 4)
    server.delete("zeroarchive:generic:requests")  # two workers took everything
    dead, live = (
        Heartbeat(server, worker_owner(), HEARTBEAT, "generic"),
        Heartbeat(server, worker_owner(), HEARTBEAT, "generic"),
    )
    dead.beat()
    live.beat()
    ids = sorted(owners_of(archive))
    take(archive.engine, dead.owner, NOW + 1, 3600, ids[:2], [(one, NOW)])
    take(archive.engine, live.owner, NOW + 1, 3600, ids[2:], [])
    # Both beat: a round takes nothing back, however often it runs.
    for n in range(3):
        report = rounds.run_once(NOW + 2 + n)["generic"]
        assert (report.list_sites, report.snapshots) == (0, 0)
    assert alive(server, {dead.owner, live.owner}) == {dead.owner, live.owner}
    server.delete(heartbeat_key(dead.owner))  # SIGKILLed: its key expires
    report = rounds.run_once(NOW + 10)["generic"]
    # Within one round: the walk and the two snapshots are queued again, nothing else.
    assert (report.list_sites, report.snapshots) == (1, 2)
    owners = owners_of(archive)
    assert [owners[i][0] for i in ids[:2]] == ["q", "q"]  # type: ignore[index]
    assert [owners[i] for i in ids[2:]] == [live.owner, live.owner]
    assert rounds.recovered.articles == 2 and rounds.recovered.walks == 1
    assert rounds.run_once(NOW + 11)["generic"].snapshots == 0


def test_a_flushed_redis_requeues_everything_and_waits_a_heartbeat_for_live_workers(
    archive: Archive, server: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    add_site(archive, "one")
    rounds = dispatcher(archive, server)
    rounds.run_once(NOW)
    ids = sorted(owners_of(archive))
    live, dead = Heartbeat(server, worker_owner(), HEARTBEAT, "generic"), worker_owner()
    take(archive.engine, live.owner, NOW + 1, 3600, ids[:1], [])
    take(archive.engine, dead, NOW + 1, 3600, ids[1:2], [])
    server.flushdb()  # the queue (walk and two snapshots), the Bloom filter, heartbeats
    caplog.set_level("WARNING")
    report = rounds.run_once(NOW + 2)["generic"]
    assert (report.list_sites, report.snapshots) == (1, 2)
    assert caplog.text.count("Redis lost its queues") == 1
    assert "1 list walk(s)" in caplog.text and "2 leased article(s)" in caplog.text
    # The live worker beats again within its period; the dead one never does.
    live.beat()
    assert rounds.run_once(NOW + 3)["generic"].snapshots == 0
    report = rounds.run_once(NOW + 2 + HEARTBEAT)["generic"]
    assert report.snapshots == 1
    assert owners_of(archive)[ids[0]] == live.owner
    assert f"Worker(s) {dead} gone" in caplog.text


def test_recovery_after_a_database_cut(mariadb_url: str, server: redis.Redis) -> None:
    with TcpForwarder(3306) as forwarder:
        archive = open_archive(url=forwarder.via(mariadb_url))
        add_site(archive, "one")
        rounds = dispatcher(archive, server)
        rounds.run_once(NOW)
        dead = worker_owner()
        take(archive.engine, dead, NOW + 1, 3600, sorted(owners_of(archive)), [])
        forwarder.cut()
        with pytest.raises(OperationalError):
            rounds.run_once(NOW + 2)
        forwarder.restore()
        # The round after the cut takes back what the dead worker held.
        report = rounds.run_once(NOW + 3)["generic"]
        assert report.snapshots == 4
        archive.engine.dispose()


def test_a_heartbeat_lives_while_renewed_and_goes_when_stopped(server: redis.Redis) -> None:
    beat = Heartbeat(server, worker_owner(), 3, "generic")
    beat.start()
    ttl = server.pttl(heartbeat_key(beat.owner))
    assert 0 < ttl <= 3000
    assert alive(server, {beat.owner, worker_owner()}) == {beat.owner}
    beat.stop()
    assert alive(server, {beat.owner}) == set()
    with pytest.raises(ValueError, match="at least 1"):
        Heartbeat(server, worker_owner(), 0.5, "generic")


def test_what_a_dead_worker_took_before_recording_it_is_put_back_once(
    archive: Archive, server: redis.Redis
) -> None:
    add_site(archive, "one")
    rounds = dispatcher(archive, server)
    first = rounds.run_once(NOW)["generic"]
    queue = request_queue(server, rounds.spiders[0])
    assert len(queue) == first.queued == first.list_requests + first.snapshots + first.probes
    # Killed between its pop and recording what it took: the database still says queued.
    dead = worker_owner()
    taken = queue.take(3, dead)
    assert len(queue) == first.queued - 3
    assert server.hlen(held_key(queue.key, dead)) == 3
    live = Heartbeat(server, worker_owner(), HEARTBEAT, "generic")
    live.beat()
    kept = queue.take(2, live.owner)
    report = rounds.run_once(NOW + 1)["generic"]
    # The dead worker's three are back under their own scores, once; the live one's two
    # stay with it, and nothing is claimed twice.
    assert report.snapshots == 0 and report.list_sites == 0
    assert len(queue) == first.queued - 2
    assert not server.exists(held_key(queue.key, dead))
    back = dict(server.zrange(queue.key, 0, -1, withscores=True))
    assert all(back[entry] == score for entry, score in taken)
    # Recorded in the database: the live worker's hash empties.
    queue.release_held(live.owner, [entry for entry, _ in kept])
    assert not server.exists(held_key(queue.key, live.owner))


def test_a_flush_followed_by_a_database_cut_is_recovered_by_the_round_after_the_cut(
    mariadb_url: str, server: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    with TcpForwarder(3306) as forwarder:
        archive = open_archive(url=forwarder.via(mariadb_url))
        add_site(archive, "one")
        rounds = dispatcher(archive, server)
        assert rounds.run_once(NOW)["generic"].snapshots == 4
        server.flushdb()
        release = dispatch.release_in_flight

        def cut_then_release(*args: Any, **kwargs: Any) -> Any:
            forwarder.cut()  # the round saw the flush; the database goes before it releases
            return release(*args, **kwargs)

        monkeypatch.setattr(dispatch, "release_in_flight", cut_then_release)
        with pytest.raises(OperationalError):
            rounds.run_once(NOW + 1)
        monkeypatch.setattr(dispatch, "release_in_flight", release)
        forwarder.restore()
        # The failed round released nothing: the next one does, in full.
        report = rounds.run_once(NOW + 2)["generic"]
        assert (report.list_sites, report.snapshots) == (1, 4)
        assert rounds.run_once(NOW + 3)["generic"].snapshots == 0
        archive.engine.dispose()
