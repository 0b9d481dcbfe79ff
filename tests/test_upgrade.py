"""A rolling upgrade of a running fleet, as docs/operators/upgrades.md says to do it.

The previous release's code (its commit, taken from this repository's history with `git
archive`) runs a scheduler and two workers on its own schema in MariaDB and Redis; mid-crawl
the scheduler is stopped, this code migrates the database and takes the scheduler's place,
then each worker in turn is stopped and replaced, the other one still working on the new
schema with the old code. Nothing may be lost and no process may fail. A previous release
that cannot run on a newer schema (before ``FORWARD_COMPATIBLE``) has its workers stopped
for the migration instead, as the docs say for it.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import yaml
from sqlalchemy import create_engine, text

from tests.conftest import REPO, Process, scrapy, start_scrapy
from tests.forked_cli import BackgroundServer
from tests.replay import ReplayServer, tw_news_pages, tw_news_routes
from tests.test_distributed import (
    ARTICLES,
    counts,
    env_for,
    news_site,
    start_worker,
    stop_once_stored,
    wait_until,
)
from zeroarchive.storage.engine import head_revision

# The commit main stood at when this release's work began (the previous release as it ran
# on the fleets): move it forward when a release is made.
PREVIOUS_RELEASE = "999e6dd09a9afb57c2d4cf3c58458bf11ae3f8f5"


def previous_release() -> Path:
    """The previous release's tree, extracted from the repository's history once per
    machine into a folder named by its commit, where its compiled modules stay too (the
    extraction and the compiling cost every run 3-4 CPU s). The tests only read it."""
    tree = Path(tempfile.gettempdir()) / f"zeroarchive-release-{PREVIOUS_RELEASE}"
    if (tree / "scrapy.cfg").exists():
        return tree
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", PREVIOUS_RELEASE],
        capture_output=True,
        check=True,
    ).stdout
    # Extracted beside it and renamed: a run never sees half a tree.
    partial = Path(tempfile.mkdtemp(prefix=f"{tree.name}-", dir=tree.parent))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(partial, filter="data")
    try:
        partial.rename(tree)
    except OSError:  # another test process was first
        shutil.rmtree(partial, ignore_errors=True)
    return tree


@contextlib.contextmanager
def old_release_server(tree: Path) -> Iterator[BackgroundServer | None]:
    """A warm interpreter of the previous release's code that forks its commands (the
    tests' own warm ones have this release's modules loaded): five new interpreters cost
    the test 8-10 CPU s. None when forking is switched off (ZEROARCHIVE_TEST_FORK=0)."""
    if os.environ.get("ZEROARCHIVE_TEST_FORK", "1") == "0":
        yield None
        return
    server = BackgroundServer(tree)
    try:
        yield server
    finally:
        server.close()


def old_scrapy(
    server: BackgroundServer | None, tree: Path, args: list[str], env: dict[str, str], log: Path
) -> Process:
    """``scrapy ARGS`` run by the previous release's code at ``tree``: forked by its
    ``server``, or a new interpreter."""
    env = {**env, "PYTHONPATH": str(tree)}
    if server is not None:
        return server.start(args, env, tree, log, log)
    with open(log, "wb") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "scrapy", *args],
            cwd=tree,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )


def stop(process: Process, log: Path) -> str:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=120)
    output = log.read_text(errors="replace")
    assert process.returncode == 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    return output


def revision(db_url: str) -> str:
    engine = create_engine(db_url)
    with engine.connect() as conn:
        found = conn.execute(text("SELECT version_num FROM alembic_version")).scalars()
        value = "+".join(sorted(found))
    engine.dispose()
    return value


def test_a_running_scheduler_and_two_workers_upgrade_one_by_one(
    mariadb_url: str, redis_url: str, tmp_path: Path
) -> None:
    old_tree = previous_release()
    pages = tw_news_pages(ARTICLES)
    env = env_for(mariadb_url, redis_url)
    logs = tmp_path / "logs"
    logs.mkdir()
    with (
        ReplayServer(tw_news_routes(count=ARTICLES)) as server,
        old_release_server(old_tree) as old,
    ):
        sites = tmp_path / "sites.yaml"
        # Slow enough that the upgrade lands mid-crawl (the first snapshots are waited
        # for, then the check that not all are stored). At 1 s, an old worker stopped with
        # the rest of the site in its downloader spent 9-10 s draining it.
        sites.write_text(yaml.safe_dump([news_site(server, delay=0.5)]), encoding="utf-8")
        migrate = old_scrapy(old, old_tree, ["migrate"], env, logs / "old-migrate.log")
        assert migrate.wait(timeout=120) == 0, (logs / "old-migrate.log").read_text()
        loaded = old_scrapy(old, old_tree, ["load_sites", str(sites)], env, logs / "old-load.log")
        assert loaded.wait(timeout=120) == 0, (logs / "old-load.log").read_text()

        worker_args = ["crawl", "generic", "-s", "ZEROARCHIVE_SNAPSHOT_FLUSH_SECONDS=0.5"]
        scheduler = old_scrapy(
            old, old_tree, ["schedule", "--interval", "1"], env, logs / "old-schedule.log"
        )
        workers = [
            old_scrapy(old, old_tree, worker_args, env, logs / f"old-worker-{n}.log")
            for n in (1, 2)
        ]
        wait_until(lambda: counts(mariadb_url)[1] >= 3, 120, "the first snapshots")
        assert counts(mariadb_url)[2] < len(pages), "the upgrade must land mid-crawl"

        # 1. The scheduler stops (its round finishes); 2. this release migrates.
        stop(scheduler, logs / "old-schedule.log")
        engine_code = (old_tree / "zeroarchive/storage/engine.py").read_text()
        rolling = "FORWARD_COMPATIBLE = True" in engine_code
        if not rolling:
            for n, old in enumerate(workers, start=1):
                stop(old, logs / f"old-worker-{n}.log")
        run = scrapy("migrate", db_url=mariadb_url, cwd=tmp_path)
        assert run.returncode == 0, run.output
        assert revision(mariadb_url) == head_revision()
        # 3. The new scheduler; 4. each worker in turn, the other working meanwhile.
        new_scheduler = start_scrapy(
            ["schedule", "--interval", "1"], env, tmp_path, logs / "new-schedule.log"
        )
        new_workers = []
        try:
            for n, old in enumerate(workers, start=1):
                if rolling:
                    stop(old, logs / f"old-worker-{n}.log")
                new_workers.append(
                    start_worker(
                        mariadb_url,
                        redis_url,
                        tmp_path,
                        logs / f"new-worker-{n}.log",
                        "ZEROARCHIVE_IDLE_LIMIT=60",
                    )
                )
            # Done, they are stopped as an operator stops them (their idle limit cost 8 s).
            for n, worker in enumerate(new_workers, start=1):
                log = logs / f"new-worker-{n}.log"
                stop_once_stored(worker, log, mariadb_url, len(pages), timeout=180)
            stop(new_scheduler, logs / "new-schedule.log")
        finally:
            for process in [new_scheduler, *new_workers, *workers]:
                if process.poll() is None:
                    process.kill()
    articles, _, covered = counts(mariadb_url)
    assert articles == covered == len(pages)
    # The old code stored snapshots on its schema before the upgrade (which of the two
    # workers took them depends on the machine's load).
    old_outputs = [(logs / f"old-worker-{n}.log").read_text(errors="replace") for n in (1, 2)]
    assert any("zeroarchive/snapshots_saved" in output for output in old_outputs)
