"""Distributed mode against real Redis and MariaDB: shared queues, the dispatcher, faults.

Workers are real `scrapy crawl` processes with REDIS_URL set; `scrapy schedule` is the
one process that decides when. Each test has its own Redis database and MariaDB database.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
import yaml
from scrapy import Spider
from scrapy.core.engine import ExecutionEngine
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler
from sqlalchemy import create_engine, func, select
from sqlalchemy.engine import Engine

from tests.conftest import REPO, Process, project_settings, scrapy, start_scrapy
from tests.replay import ReplayServer, tw_news_pages, tw_news_routes
from tests.tcp_forwarder import TcpForwarder, free_port
from zeroarchive.distributed.scheduler import RedisScheduler
from zeroarchive.storage.schema import article, article_snapshot

NEWS_ARTICLE = r"^http://127\.0\.0\.1:\d+/[\w.-]+\.(com|net|tw)[\w.]*/"
# While a server is away, every process of these tests tries again after 0.25, 0.5, 1, 1 ...
# s instead of 1, 2, 4 ... 60 s: an outage of a few seconds then takes the same course as
# one of minutes (failed tries, growing pauses, the work held, then taken up), and a test
# pays for the outage, not for a pause of up to twice its length after it.
QUICK_RETRIES = ("ZEROARCHIVE_RETRY_PAUSE_SECONDS=0.25", "ZEROARCHIVE_RETRY_PAUSE_MAX_SECONDS=1")
# How long the tests cut MariaDB or redis: several tries and a few pauses at their longest.
OUTAGE_SECONDS = 6
# Articles of the news site (of tw_news_pages' 34, both sources): two list pages, enough
# for a kill or a cut to land mid-crawl; each one more cost every process that met it CPU.
ARTICLES = 12


def news_site(server: ReplayServer, delay: float = 0) -> dict[str, object]:
    return {
        "name": "tw-news",
        "url": server.url("/news/"),
        "type": "news",
        "config": {
            "article": NEWS_ARTICLE,
            "following": r"/news/list-\d+\.html$",
            "depth": 5,
            "delay": delay,
        },
    }


def env_for(db_url: str, redis_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "ZEROARCHIVE_DB_URL": db_url,
        "REDIS_URL": redis_url,
        "PYTHONPATH": str(REPO),
        "SCRAPY_SETTINGS_MODULE": "settings.base",
    }


def start_worker(
    db_url: str,
    redis_url: str,
    cwd: Path,
    log: Path,
    *settings: str,
    mode: str = "all",
    extra_env: dict[str, str] | None = None,
) -> Process:
    args = ["crawl", "generic", "-a", f"mode={mode}"]
    for setting in (
        "ZEROARCHIVE_IDLE_LIMIT=6",
        "ZEROARCHIVE_SNAPSHOT_FLUSH_SECONDS=0.5",
        *QUICK_RETRIES,
        *settings,
    ):
        args += ["-s", setting]
    return start_scrapy(args, {**env_for(db_url, redis_url), **(extra_env or {})}, cwd, log)


def schedule_once(db_url: str, redis_url: str, cwd: Path, *settings: str) -> str:
    extra = [arg for setting in settings for arg in ("-s", setting)]
    run = scrapy(
        "schedule", "--once", *extra, db_url=db_url, cwd=cwd, extra_env={"REDIS_URL": redis_url}
    )
    assert run.returncode == 0, run.output
    return run.output


def load_sites(db_url: str, cwd: Path, sites: list[dict[str, object]]) -> None:
    path = cwd / "sites.yaml"
    path.write_text(yaml.safe_dump(sites, allow_unicode=True), encoding="utf-8")
    run = scrapy("load_sites", str(path), db_url=db_url, cwd=cwd)
    assert run.returncode == 0, run.output


_readers: dict[str, Engine] = {}


def reader(db_url: str) -> Engine:
    """One engine for the test's looks at ``db_url`` (the last one asked for): a new engine
    for each look cost 0.07 CPU s, and the tests look several times a second for minutes."""
    engine = _readers.get(db_url)
    if engine is None:
        for old in _readers.values():
            old.dispose()
        _readers.clear()
        engine = _readers[db_url] = create_engine(db_url)
    return engine


def counts(db_url: str) -> tuple[int, int, int]:
    """(articles, snapshots, articles with at least one snapshot)."""
    with reader(db_url).connect() as conn:
        articles = conn.execute(select(func.count()).select_from(article)).scalar_one()
        snapshots = conn.execute(select(func.count()).select_from(article_snapshot)).scalar_one()
        covered = conn.execute(
            select(func.count(func.distinct(article_snapshot.c.article_id)))
        ).scalar_one()
    return articles, snapshots, covered


def stat(output: str, key: str) -> int:
    found = re.search(rf"'{re.escape(key)}': (\d+)", output)
    return int(found.group(1)) if found else 0


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.3)


def leases_ran_out(db_url: str) -> bool:
    """Whether every article's lease has run out by the clock the scheduler reads (an
    article is due again once its ``lease_until`` is not after now)."""
    with reader(db_url).connect() as conn:
        latest = conn.execute(select(func.max(article.c.lease_until))).scalar()
    return latest is None or latest <= int(time.time())


def finish(worker: Process, log: Path, timeout: float = 120) -> str:
    worker.wait(timeout=timeout)
    output = log.read_text(errors="replace")
    assert worker.returncode == 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    return output


# What a worker logs once it is running (its signal handlers in place).
STARTED = "Distributed worker: waiting for requests"


def stop_once_stored(
    worker: Process, log: Path, db_url: str, articles: int, timeout: float = 120
) -> str:
    """Once ``articles`` articles have their snapshots, the worker is stopped as an operator
    stops one (SIGTERM: it closes as at its idle limit, writing what it holds) instead of
    waiting out its idle limit (6-15 s a worker); its log, as ``finish`` checks it."""
    wait_until(
        lambda: counts(db_url)[2] >= articles or worker.poll() is not None,
        timeout,
        "every article stored",
    )
    # Not before it has started: until Scrapy's handler is in place the signal kills it (a
    # worker started last, on a loaded machine, may find everything done already).
    wait_until(
        lambda: STARTED in log.read_text(errors="replace") or worker.poll() is not None,
        timeout,
        "the worker to start",
    )
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
    return finish(worker, log)


def test_two_workers_share_one_queue_and_fetch_each_article_once(
    mariadb_url: str, redis_url: str, tmp_path: Path
) -> None:
    pages = tw_news_pages(ARTICLES)
    with ReplayServer(tw_news_routes(count=ARTICLES)) as server:
        load_sites(mariadb_url, tmp_path, [news_site(server, delay=0.2)])
        first = schedule_once(mariadb_url, redis_url, tmp_path)
        # The front page, and robots.txt for the sitemaps it may name.
        assert "generic: 2 list request(s) for 1 site(s), 0 snapshot(s) queued" in first
        # Its soft-404 probe goes with the first snapshots, not with a list walk.
        assert "; 0 soft-404 probe(s)" in first
        logs = [tmp_path / "worker-1.log", tmp_path / "worker-2.log"]
        # Four requests in flight each at most, so one worker cannot take the whole queue.
        workers = [
            start_worker(mariadb_url, redis_url, tmp_path, log, "CONCURRENT_REQUESTS=4")
            for log in logs
        ]
        wait_until(lambda: counts(mariadb_url)[0] == len(pages), 60, "discovery")
        # The worker that walked the list claimed the new articles under a lease and queued
        # them itself, so the scheduler's next round must not queue them again.
        second = schedule_once(mariadb_url, redis_url, tmp_path)
        assert "generic: 0 list request(s) for 0 site(s), 0 snapshot(s) queued" in second
        outputs = [
            stop_once_stored(worker, log, mariadb_url, len(pages))
            for worker, log in zip(workers, logs, strict=True)
        ]

        assert counts(mariadb_url) == (len(pages), len(pages), len(pages))
        for page in pages:
            assert server.hits[server.route_key(page.path)] == 1, page.name
        # Between them the workers saved every page once (how they split it depends on
        # when each started).
        saved = [stat(output, "zeroarchive/snapshots_saved") for output in outputs]
        assert sum(saved) == len(pages), saved
        assert all("Distributed worker: waiting for requests" in out for out in outputs)
        # Nothing is queued twice while leased: a third round finds nothing due.
        third = schedule_once(mariadb_url, redis_url, tmp_path)
        assert "0 snapshot(s) queued; 0 waiting" in third


def test_a_worker_killed_mid_crawl_loses_no_article(
    mariadb_url: str, redis_url: str, tmp_path: Path
) -> None:
    pages = tw_news_pages(ARTICLES)
    lease = "ZEROARCHIVE_LEASE_SECONDS=4"
    with ReplayServer(tw_news_routes(count=ARTICLES)) as server:
        # Slow enough that the kill lands mid-crawl even on a loaded machine.
        load_sites(mariadb_url, tmp_path, [news_site(server, delay=1.0)])
        schedule_once(mariadb_url, redis_url, tmp_path, lease)
        log = tmp_path / "doomed.log"
        # The worker claims what it discovers under its own lease.
        doomed = start_worker(mariadb_url, redis_url, tmp_path, log, lease)
        wait_until(lambda: counts(mariadb_url)[0] == len(pages), 60, "discovery")
        schedule_once(mariadb_url, redis_url, tmp_path, lease)
        wait_until(lambda: counts(mariadb_url)[1] >= 3, 60, "the first snapshots")
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
        # Articles, not snapshots: a lease of 4 s may run out while the worker still
        # holds its article, which is then fetched twice; that loses nothing.
        covered_before = counts(mariadb_url)[2]
        assert covered_before < len(pages)
        # What the dead worker held (popped or still queued) is handed out again once the
        # leases run out (waited for, not slept: 5 s were slept); the queue itself keeps
        # what it was not given.
        wait_until(lambda: leases_ran_out(mariadb_url), 30, "the leases to run out")
        again = schedule_once(mariadb_url, redis_url, tmp_path, lease)
        assert "snapshot(s) queued" in again
        # The survivor need not be slow: a site's delay is read when a worker starts.
        load_sites(mariadb_url, tmp_path, [news_site(server, delay=0.1)])
        log2 = tmp_path / "survivor.log"
        survivor = start_worker(mariadb_url, redis_url, tmp_path, log2, lease)
        stop_once_stored(survivor, log2, mariadb_url, len(pages))
        articles, _, covered = counts(mariadb_url)
        assert covered == articles == len(pages)


def test_redis_restarted_empty_loses_nothing(mariadb_url: str, tmp_path: Path) -> None:
    pages = tw_news_pages(ARTICLES)
    with (
        private_redis(tmp_path) as (redis_url, restart),
        ReplayServer(tw_news_routes(count=ARTICLES)) as server,
    ):
        load_sites(mariadb_url, tmp_path, [news_site(server)])
        schedule_once(mariadb_url, redis_url, tmp_path)
        log = tmp_path / "discover.log"
        # Discovery only, so the scheduler is the one that queues the snapshots.
        finish(
            start_worker(
                mariadb_url, redis_url, tmp_path, log, "ZEROARCHIVE_IDLE_LIMIT=2", mode="discover"
            ),
            log,
        )
        assert counts(mariadb_url)[0] == len(pages)
        queued = schedule_once(mariadb_url, redis_url, tmp_path)
        assert f"{len(pages)} snapshot(s) queued" in queued
        restart()  # the queue and its leased articles are gone
        assert redis.Redis.from_url(redis_url).dbsize() == 0
        requeued = schedule_once(mariadb_url, redis_url, tmp_path)
        assert f"{len(pages)} snapshot(s) queued" in requeued
        assert "Redis lost its queues" in requeued
        log = tmp_path / "snapshots.log"
        finish(start_worker(mariadb_url, redis_url, tmp_path, log, "ZEROARCHIVE_IDLE_LIMIT=2"), log)
        assert counts(mariadb_url) == (len(pages), len(pages), len(pages))


def test_mariadb_unreachable_mid_crawl_loses_no_item(
    mariadb_url: str, redis_url: str, tmp_path: Path
) -> None:
    pages = tw_news_pages(ARTICLES)
    with TcpForwarder(3306) as proxy, ReplayServer(tw_news_routes(count=ARTICLES)) as server:
        via_proxy = proxy.via(mariadb_url)
        # Slow enough that the crawl goes on through the outage and after it.
        load_sites(via_proxy, tmp_path, [news_site(server, delay=0.5)])
        schedule_once(via_proxy, redis_url, tmp_path)
        log = tmp_path / "worker.log"
        worker = start_worker(via_proxy, redis_url, tmp_path, log, "ZEROARCHIVE_IDLE_LIMIT=60")
        wait_until(lambda: counts(mariadb_url)[0] == len(pages), 60, "discovery")
        schedule_once(via_proxy, redis_url, tmp_path)
        wait_until(lambda: counts(mariadb_url)[1] >= 2, 60, "the first snapshots")
        proxy.cut()
        time.sleep(OUTAGE_SECONDS)
        stored_during_outage = counts(mariadb_url)[1]
        proxy.restore()
        output = stop_once_stored(worker, log, mariadb_url, len(pages))
        assert stored_during_outage < len(pages)
        # Tried again and again while it was away, the pauses growing.
        assert output.count("Database unavailable while writing") >= 3, output[-3000:]
        assert "retrying in 0.5 s" in output, output[-3000:]
        assert "errors/db_write" not in output
        assert counts(mariadb_url) == (len(pages), len(pages), len(pages))


def quick_retries() -> list[str]:
    """QUICK_RETRIES as options of a `scrapy` command line."""
    return [arg for setting in QUICK_RETRIES for arg in ("-s", setting)]


def redis_port(redis_url: str) -> int:
    port = urllib.parse.urlsplit(redis_url).port
    assert port is not None
    return port


def wait_for_text(log: Path, text: str, timeout: float, times: int = 1) -> None:
    wait_until(lambda: log.read_text(errors="replace").count(text) >= times, timeout, repr(text))


def test_a_worker_under_scrapyd_waits_for_the_database_and_redis_then_crawls(
    mariadb_url: str, redis_url: str, tmp_path: Path
) -> None:
    """Nobody restarts a scrapyd job: a worker started while its servers are away waits."""
    pages = tw_news_pages(ARTICLES)
    database, queue = TcpForwarder(3306), TcpForwarder(redis_port(redis_url))
    with ReplayServer(tw_news_routes(count=ARTICLES)) as server:
        load_sites(mariadb_url, tmp_path, [news_site(server)])
        schedule_once(mariadb_url, redis_url, tmp_path)
        log = tmp_path / "worker.log"
        # Neither forwarder listens yet: both servers refuse.
        worker = start_worker(
            database.via(mariadb_url),
            queue.via(redis_url),
            tmp_path,
            log,
            extra_env={"SCRAPY_JOB": "job-1"},
        )
        try:
            wait_for_text(log, "Waiting: cannot reach the database at", 60, times=2)
            database.restore()
            wait_for_text(log, "Waiting: cannot reach redis at", 60, times=2)
            queue.restore()
            output = stop_once_stored(worker, log, mariadb_url, len(pages))
        finally:
            worker.kill()
            database.cut()
            queue.cut()
    assert "next try in 0.5 s" in output, "the pauses grow"
    assert counts(mariadb_url) == (len(pages), len(pages), len(pages))


def test_schedule_rides_out_a_database_cut_and_a_redis_cut(
    mariadb_url: str, redis_url: str, tmp_path: Path
) -> None:
    """The scheduler and a worker, both through forwarders the test cuts mid-crawl: each
    logs, waits and resumes; every article is stored and the scheduler keeps queueing."""
    pages = tw_news_pages(ARTICLES)
    with (
        TcpForwarder(3306) as database,
        TcpForwarder(redis_port(redis_url)) as queue,
        ReplayServer(tw_news_routes(count=ARTICLES)) as server,
    ):
        db_via, redis_via = database.via(mariadb_url), queue.via(redis_url)
        load_sites(mariadb_url, tmp_path, [news_site(server, delay=1.0)])
        schedule_log = tmp_path / "schedule.log"
        schedule = start_scrapy(
            ["schedule", "--interval", "1", *quick_retries()],
            env_for(db_via, redis_via),
            tmp_path,
            schedule_log,
        )
        log = tmp_path / "worker.log"
        worker = start_worker(db_via, redis_via, tmp_path, log, "ZEROARCHIVE_IDLE_LIMIT=60")
        try:
            # Generous: two scrapy processes start, then walk the list politely.
            wait_until(lambda: counts(mariadb_url)[0] == len(pages), 180, "discovery")
            database.cut()
            wait_for_text(schedule_log, "Round failed", 30, times=2)
            time.sleep(OUTAGE_SECONDS / 2)
            database.restore()
            wait_for_text(schedule_log, "Round succeeded again", 60)
            queue.cut()
            wait_for_text(schedule_log, "Round failed", 30, times=4)
            wait_for_text(log, "Redis does not answer at", 30)
            time.sleep(OUTAGE_SECONDS / 2)
            queue.restore()
            wait_for_text(schedule_log, "Round succeeded again", 60, times=2)
            output = stop_once_stored(worker, log, mariadb_url, len(pages), timeout=240)
            assert schedule.poll() is None, schedule_log.read_text(errors="replace")[-3000:]
        finally:
            schedule.send_signal(signal.SIGTERM)
            schedule.wait(timeout=60)
            worker.kill()
    scheduled = schedule_log.read_text(errors="replace")
    assert schedule.returncode == 0, scheduled[-3000:]
    assert "Traceback" not in scheduled, scheduled[-3000:]
    after_cuts = scheduled.rsplit("Round succeeded again", 1)[1]
    assert "generic: 0 list request(s)" in after_cuts, "rounds go on after the cuts"
    assert "Redis answers again" in output
    assert counts(mariadb_url) == (len(pages), len(pages), len(pages))


def test_a_malformed_queue_entry_is_logged_and_skipped(
    mariadb_url: str, redis_url: str, tmp_path: Path
) -> None:
    pages = tw_news_pages(ARTICLES)
    with ReplayServer(tw_news_routes(count=ARTICLES)) as server:
        load_sites(mariadb_url, tmp_path, [news_site(server)])
        schedule_once(mariadb_url, redis_url, tmp_path)
        client = redis.Redis.from_url(redis_url)
        key = "zeroarchive:generic:requests"
        # Ahead of the real request (lower score pops first), none of them a request.
        client.zadd(key, {b"\x80\x04not json": -10, b'{"no": "url"}': -9, b"[1, 2]": -8})
        log = tmp_path / "worker.log"
        # What it found it claims and crawls itself: nothing comes after the queue is empty.
        worker = start_worker(mariadb_url, redis_url, tmp_path, log, "ZEROARCHIVE_IDLE_LIMIT=3")
        output = finish(worker, log)
        assert output.count("Skipping a malformed entry") == 3
        assert "'scheduler/redis/malformed': 3" in output
        assert counts(mariadb_url)[0] == len(pages)


# --- helpers: a private redis to restart ---------------------------------------------


class private_redis:
    """A redis-server of the test's own on a free port, which the test may restart empty."""

    def __init__(self, tmp_path: Path) -> None:
        self.port = free_port()
        self.dir = tmp_path
        self.process: subprocess.Popen[bytes] | None = None

    def _start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.dir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port)
        wait_until(lambda: _pings(client), 10, "redis to start")
        client.close()

    def _stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)

    def restart(self) -> None:
        self._stop()
        self._start()

    def __enter__(self) -> tuple[str, Callable[[], None]]:
        self._start()
        return f"redis://127.0.0.1:{self.port}/0", self.restart

    def __exit__(self, *exc: object) -> None:
        self._stop()


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


def test_scrapyd_refuses_strangers_and_runs_a_deployed_worker(
    mariadb_url: str, redis_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """scrapyd as docs/operators/workers.md sets it up (basic auth, a private address): without the
    password nothing can be uploaded or run; a clean checkout deploys with the credentials
    from the environment, and a scheduled job archives into MariaDB with credentials from
    the environment that never show in its log."""
    password = "pw-" + os.urandom(6).hex()
    database = mariadb_url.rsplit("/", 1)[1]
    # A user of this test's own: one name for all gave a run beside it (another process,
    # another clone on the same server) a password changed under its worker.
    user = f"za_worker_{os.urandom(4).hex()}"
    admin = create_engine(mariadb_url)
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY '{password}'")
        conn.exec_driver_sql(f"GRANT ALL ON {database}.* TO '{user}'@'127.0.0.1'")
    admin.dispose()

    def drop_user() -> None:
        engine = create_engine(mariadb_url)
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP USER IF EXISTS '{user}'@'127.0.0.1'")
        engine.dispose()

    request.addfinalizer(drop_user)
    worker_db = f"mysql+pymysql://{user}:{password}@127.0.0.1:3306/{database}"

    project = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(REPO), str(project)], check=True)
    port = free_port()
    # The shipped scrapy.cfg's [deploy] section gives every target its credentials.
    with (project / "scrapy.cfg").open("a") as cfg:
        cfg.write(f"\n[deploy:test]\nurl = http://127.0.0.1:{port}/\n")
    home = tmp_path / "scrapyd"
    home.mkdir()
    auth = ("zeroarchive", "sd-" + os.urandom(12).hex())
    (home / "scrapyd.conf").write_text(
        f"[scrapyd]\nbind_address = 127.0.0.1\nhttp_port = {port}\n"
        f"username = {auth[0]}\npassword = {auth[1]}\n"
        f"eggs_dir = {home}/eggs\nlogs_dir = {home}/logs\n"
        f"dbs_dir = {home}/dbs\nitems_dir =\njobs_to_keep = 5\npoll_interval = 1\n"
    )
    pages = tw_news_pages(ARTICLES)
    env = env_for(worker_db, redis_url)
    env.pop("PYTHONPATH")
    env.pop("SCRAPY_SETTINGS_MODULE")
    # scrapyd takes its credentials from scrapyd.conf only; scrapyd-deploy from these.
    env.pop("SCRAPYD_USERNAME", None)
    env.pop("SCRAPYD_PASSWORD", None)
    deployer = {**env, "SCRAPYD_USERNAME": auth[0], "SCRAPYD_PASSWORD": auth[1]}

    def deploy(environment: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SCRAPYD_DEPLOY, *args],
            cwd=project,
            env=environment,
            capture_output=True,
            text=True,
            check=False,
        )

    egg = tmp_path / "zeroarchive.egg"
    built = deploy(env, "--build-egg", str(egg))
    assert built.returncode == 0, built.stdout + built.stderr
    with ReplayServer(tw_news_routes(count=ARTICLES)) as server:
        load_sites(worker_db, tmp_path, [news_site(server)])
        scrapyd = subprocess.Popen(
            [sys.executable, "-m", "scrapyd"],
            cwd=home,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until(lambda: _answers(port), 30, "scrapyd")
            upload = {"project": "zeroarchive", "version": "1"}
            schedule = {"project": "zeroarchive", "spider": "generic"}
            # Without the password (or with a wrong one) nobody uploads code or runs it.
            for stranger in (None, (auth[0], "guess")):
                status, _ = _scrapyd_call(port, "addversion.json", upload, stranger, egg=egg)
                assert status == 401
                assert _scrapyd_call(port, "schedule.json", schedule, stranger)[0] == 401
            # Without the variables scrapyd-deploy sends their literal names, and fails.
            # (The egg built above: building it again would test nothing more.)
            unset = deploy(env, "test", "--egg", str(egg))
            assert unset.returncode == 1
            assert "Deploy failed (401)" in unset.stderr
            assert _scrapyd_call(port, "listprojects.json", None, auth)[1]["projects"] == []

            # The egg the clean checkout built above (building it once more cost 2-3 CPU s).
            deployed = deploy(deployer, "test", "--egg", str(egg))
            assert deployed.returncode == 0, deployed.stdout + deployed.stderr
            assert _scrapyd_call(port, "schedule.json", schedule, None)[0] == 401
            schedule_once(worker_db, redis_url, tmp_path)
            # An idle limit past the pauses below (the job ends because it is cancelled,
            # which its log says), short enough that a job left by a failed run ends soon.
            status, job = _scrapyd_call(
                port, "schedule.json", {**schedule, "setting": "ZEROARCHIVE_IDLE_LIMIT=60"}, auth
            )
            assert (status, job["status"]) == (200, "ok"), job
            wait_until(lambda: counts(mariadb_url)[0] == len(pages), 90, "discovery")
            schedule_once(worker_db, redis_url, tmp_path)
            wait_until(lambda: counts(mariadb_url)[2] == len(pages), 90, "snapshots")
            # Done, the job is ended as an operator ends one (its idle limit of 8 s was
            # waited out before); not by a stranger.
            cancel = {"project": "zeroarchive", "job": str(job["jobid"])}
            assert _scrapyd_call(port, "cancel.json", cancel, None)[0] == 401
            status, cancelled = _scrapyd_call(port, "cancel.json", cancel, auth)
            assert (status, cancelled.get("prevstate")) == (200, "running"), cancelled
            wait_until(lambda: _job_finished(port, job["jobid"], auth), 90, "the job to finish")
            logs = list((home / "logs").rglob("*.log"))
            assert logs
            log = logs[0].read_text(errors="replace")
            assert "Distributed worker: waiting for requests" in log
            assert "Received SIGINT, shutting down gracefully" in log
            assert password not in log
            assert auth[1] not in log
            assert "Telnet console listening" not in log
        finally:
            scrapyd.terminate()
            scrapyd.wait(timeout=30)


# scrapyd-deploy from this interpreter's scripts, where pip puts it: found on PATH it may be
# a version manager's shim (pyenv's: a shell and `pyenv exec` before it, 0.1 CPU s a call).
SCRAPYD_DEPLOY = shutil.which("scrapyd-deploy", path=sysconfig.get_path("scripts")) or (
    "scrapyd-deploy"
)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _scrapyd_call(
    port: int,
    endpoint: str,
    data: dict[str, str] | None,
    auth: tuple[str, str] | None,
    egg: Path | None = None,
) -> tuple[int, dict[str, object]]:
    """(HTTP status, JSON answer or {}) of one scrapyd API call: GET without ``data``,
    else a form POST (multipart, with the egg, when ``egg`` is given)."""
    headers = {}
    body = None
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    if egg is not None and data is not None:
        boundary = "zeroarchive-" + os.urandom(8).hex()

        def part(disposition: str, content: bytes) -> bytes:
            head = f"--{boundary}\r\nContent-Disposition: form-data; {disposition}\r\n\r\n"
            return head.encode() + content + b"\r\n"

        parts = [part(f'name="{name}"', value.encode()) for name, value in data.items()]
        parts.append(part('name="egg"; filename="project.egg"', egg.read_bytes()))
        body = b"".join(parts) + f"--{boundary}--\r\n".encode()
        headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
    elif data is not None:
        body = urllib.parse.urlencode(data).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/{endpoint}", data=body, headers=headers
    )
    try:
        # schedule.json lists the spiders with a new `scrapy list` from the egg: on a busy
        # machine that took more than 30 s.
        with urllib.request.urlopen(request, timeout=120) as reply:
            return reply.status, dict(json.loads(reply.read()))
    except urllib.error.HTTPError as refused:
        refused.close()
        return refused.code, {}


def _job_finished(port: int, job_id: object, auth: tuple[str, str]) -> bool:
    _, jobs = _scrapyd_call(port, "listjobs.json?project=zeroarchive", None, auth)
    finished = jobs.get("finished", [])
    assert isinstance(finished, list)
    return any(job["id"] == job_id for job in finished)


class _QueueSpider(Spider):
    name = "poll"


@pytest.mark.parametrize("poll", [0.25, 1.5])
def test_an_idle_worker_looks_at_the_queue_every_poll_interval(redis_url: str, poll: float) -> None:
    """Scrapy's engine asks an empty scheduler again only on its heartbeat (5 s); the
    shared queue's scheduler sets this engine's heartbeat to the poll interval."""
    crawler = get_crawler(
        _QueueSpider,
        project_settings(
            REDIS_URL=redis_url,
            DUPEFILTER_CLASS="scrapy.dupefilters.BaseDupeFilter",
            ZEROARCHIVE_QUEUE_POLL_SECONDS=poll,
        ),
    )
    crawler.spider = crawler._create_spider()
    crawler.engine = crawler._create_engine()
    scheduler = RedisScheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    heartbeat = crawler.engine._SLOT_HEARTBEAT_INTERVAL
    assert heartbeat == poll
    assert ExecutionEngine._SLOT_HEARTBEAT_INTERVAL == 5.0, "only this engine changes"
    assert scheduler.next_request() is None
    scheduler.close("finished")


def test_schedule_queues_rendered_and_facebook_sites(
    mariadb_url: str, redis_url: str, tmp_path: Path
) -> None:
    """Their request builders read settings (the browser's user agent): the scheduler's
    spiders have no crawler, and must still have them."""
    sites = [
        {
            "name": "scripted",
            "url": "https://news.example/",
            "type": "news",
            "config": {"article": r"/a/\d+$", "render": True, "discover": False},
        },
        {"name": "mohw", "url": "https://www.facebook.com/MOHW.Taiwan/", "type": "facebook"},
    ]
    load_sites(mariadb_url, tmp_path, sites)
    output = schedule_once(mariadb_url, redis_url, tmp_path)
    assert "generic: 1 list request(s) for 1 site(s)" in output, output
    assert "facebook: 1 list request(s) for 1 site(s)" in output, output
    assert "Traceback" not in output


def test_the_pauses_between_tries_come_from_the_settings() -> None:
    """ZEROARCHIVE_RETRY_PAUSE_SECONDS and _MAX_SECONDS (what the tests above shorten): the
    first pause, doubled after each failed try up to the longest; the defaults unchanged."""
    from zeroarchive.core.services import first_pause, next_pause, pauses, set_pauses_from

    def course(**overrides: object) -> list[float]:
        set_pauses_from(Settings(project_settings(**overrides)))
        pause, seen = first_pause(), []
        for _ in range(8):
            seen.append(pause)
            pause = next_pause(pause)
        return seen

    try:
        assert course() == [1, 2, 4, 8, 16, 32, 60, 60]
        quick = dict(setting.split("=") for setting in QUICK_RETRIES)
        assert course(**quick) == [0.25, 0.5, 1, 1, 1, 1, 1, 1]
        for first, longest in (("0", "1"), ("2", "1")):
            with pytest.raises(ValueError, match="ZEROARCHIVE_RETRY_PAUSE_SECONDS"):
                course(
                    ZEROARCHIVE_RETRY_PAUSE_SECONDS=first,
                    ZEROARCHIVE_RETRY_PAUSE_MAX_SECONDS=longest,
                )
    finally:
        set_pauses_from(Settings(project_settings()))
    assert pauses() == (1.0, 60.0)
