"""The review's fault day, timed: a distributed crawl of the 34 saved tw-news articles (a
chain of four list pages) whose worker is SIGKILLed holding a page of the walk (``--page``
1, the front page, or 2, after it answered the front page and queued the next), whose
redis is flushed ``--flush-after`` seconds later while a second worker is ready, and whose
database is then cut for 30 s under `scrapy schedule --interval 1` and that worker. Each
run prints how many of the 34 articles had a snapshot 240 s after the kill, and when the
34th came.

    python bench/walk_faults.py [--runs 3] [--page 1|2] [--flush-after 4]
                                [--redis redis://127.0.0.1:6379/9]

Needs MariaDB at 127.0.0.1:3306 (root; ``ZEROARCHIVE_TEST_MARIADB``) and a redis whose
database it may flush.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("ZEROARCHIVE_TEST_FORK", "0")

import redis  # noqa: E402

from tests.conftest import fresh_mariadb, start_scrapy  # noqa: E402
from tests.replay import ReplayServer, list_page_paths, tw_news_pages, tw_news_routes  # noqa: E402
from tests.tcp_forwarder import TcpForwarder  # noqa: E402
from tests.test_distributed import (  # noqa: E402
    counts,
    env_for,
    load_sites,
    news_site,
    start_worker,
    wait_for_text,
)

HEARTBEAT = "ZEROARCHIVE_HEARTBEAT_SECONDS=2"
WINDOW = 240.0


def one_run(redis_url: str, work: Path, page: int, flush_after: float) -> tuple[int, float | None]:
    """(articles with a snapshot 240 s after the kill, seconds until the 34th, or None)."""
    total = len(tw_news_pages())
    routes = tw_news_routes()
    held = list_page_paths()[page - 1]
    answer = routes[held]
    routes[held] = replace(answer, delay=120)  # the doomed worker holds this page
    redis.Redis.from_url(redis_url).flushdb()
    with (
        fresh_mariadb() as mariadb_url,
        TcpForwarder(3306) as database,
        ReplayServer(routes) as server,
    ):
        db_via = database.via(mariadb_url)
        load_sites(mariadb_url, work, [news_site(server, delay=0.3)])
        schedule = start_scrapy(
            ["schedule", "--interval", "1", "-s", HEARTBEAT],
            env_for(db_via, redis_url),
            work,
            work / "schedule.log",
        )
        doomed = start_worker(db_via, redis_url, work, work / "doomed.log", HEARTBEAT)
        worker = None
        try:
            deadline = time.monotonic() + 90
            while not server.hits[held]:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the worker never asked for {held}")
                time.sleep(0.3)
            time.sleep(1)  # it recorded what it took
            worker = start_worker(
                db_via,
                redis_url,
                work,
                work / "worker.log",
                HEARTBEAT,
                "ZEROARCHIVE_IDLE_LIMIT=0",
            )
            wait_for_text(work / "worker.log", "heartbeat every", 60)
            doomed.send_signal(signal.SIGKILL)
            doomed.wait(timeout=10)
            killed = time.monotonic()
            server.routes[held] = answer
            time.sleep(flush_after)
            redis.Redis.from_url(redis_url).flushdb()
            database.cut()
            time.sleep(30)
            database.restore()
            done_after = None
            while time.monotonic() - killed < WINDOW:
                covered = counts(mariadb_url)[2]
                if covered >= total:
                    done_after = time.monotonic() - killed
                    break
                time.sleep(1)
            return counts(mariadb_url)[2], done_after
        finally:
            schedule.send_signal(signal.SIGTERM)
            schedule.wait(timeout=60)
            doomed.kill()
            if worker is not None:
                worker.send_signal(signal.SIGTERM)
                worker.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--page", type=int, choices=(1, 2), default=1)
    parser.add_argument("--flush-after", type=float, default=4.0)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/9")
    args = parser.parse_args()
    for n in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory() as tmp:
            covered, after = one_run(args.redis, Path(tmp), args.page, args.flush_after)
        when = f"all in {after:.0f} s" if after is not None else "not all"
        print(f"run {n}: {covered}/{len(tw_news_pages())} archived within {WINDOW:.0f} s ({when})")


if __name__ == "__main__":
    main()
