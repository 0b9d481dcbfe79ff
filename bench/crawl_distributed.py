"""Distributed throughput on the replayed corpora, side by side in one run:

- zeroarchive: `scrapy schedule` + 2 workers (redis queue, Bloom dupefilter, batched
  MariaDB snapshot writes), from the first list page to the last snapshot stored;
- the limit: a plain Scrapy spider fetching the same article URLs and keeping nothing;
- stock scrapy-redis: 2 RedisSpider workers with its set dupefilter and one INSERT per
  item (bench/stock_redis_spider.py), walking the same list pages.

Workers and the scheduler are long-running services, so every crawl is timed from the
first request the replay server sees to the last page stored (fetch-only: to the last
request), with every process already started; the totals with process start-up are
printed too.

    python bench/crawl_distributed.py [--copies 20] [--rounds 5] [--profile DIR]
        [--media] [--site-concurrency N]

``--profile DIR`` samples the scheduler and each worker (its writer process too) with
py-spy while zeroarchive crawls, into DIR as collapsed stacks (one file a process and
round; `py-spy` must be installed): where a worker's CPU goes. ``--site-concurrency N``
(16 unless given) is each crawl's concurrency per site (zeroarchive's
SITE_POLICY_CONCURRENCY, the others' CONCURRENT_REQUESTS_PER_DOMAIN): below
CONCURRENT_REQUESTS (16) a queue forms in the site's download slot, as on a fleet's
sites (2 by default).

Needs MariaDB at 127.0.0.1:3306 (root) and Redis at 127.0.0.1:6379 (uses database 1 and
flushes it); BENCH_REDIS_URL and BENCH_DB name others.
"""

from __future__ import annotations

import argparse
import compileall
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# Its pages are served on 127.0.0.1, which the archive refuses unless allowed
# (docs/operators/private-targets.md): every crawl it starts inherits this.
os.environ["ZEROARCHIVE_ALLOW_PRIVATE_TARGETS"] = "1"
# The saved pages name their images on the live sites: media stay off, so the crawl is
# compared with fetch-only on the same requests (media's own cost: bench/README.md).
os.environ["ZEROARCHIVE_MEDIA_ENABLED"] = "0"

import pymysql  # noqa: E402
import redis  # noqa: E402

from bench.crawl_embedded import (  # noqa: E402
    BENCH_SETTINGS,
    CPU,
    PACKAGES,
    build_site,
    child_env,
    run,
    stat,
)
from tests.replay import ReplayServer, Route  # noqa: E402

# Another Redis or database name from the environment, for a machine others share.
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/1")
DB = os.environ.get("BENCH_DB", "zeroarchive_bench")
# Requests at once per site, each crawl (--site-concurrency).
SITE_CONCURRENCY = 16
# A site config walks at most 50 list pages deep; bigger runs get longer list pages.
MAX_DEPTH = 50
LIST_LINKS = 50


def fresh_database() -> None:
    conn = pymysql.connect(host="127.0.0.1", user="root", autocommit=True)
    with conn.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {DB}")
        cursor.execute(f"CREATE DATABASE {DB} CHARACTER SET utf8mb4")
        cursor.execute(
            f"CREATE TABLE {DB}.stock_snapshot (id BIGINT AUTO_INCREMENT PRIMARY KEY,"
            " url VARCHAR(2048), raw LONGBLOB, fetched_at DATETIME)"
        )
    conn.close()
    redis.Redis.from_url(REDIS_URL).flushdb()


def wait_for(condition_sql: str, target: int, timeout: float = 600) -> float:
    """Poll until the query counts ``target`` rows; return when (perf_counter).

    One connection for the whole wait: a new one per poll cost the machine about a fifth
    of a core, taken from the crawl being measured."""
    started = time.perf_counter()
    conn = pymysql.connect(host="127.0.0.1", user="root", database=DB, autocommit=True)
    try:
        with conn.cursor() as cursor:
            while True:
                cursor.execute(condition_sql)
                (found,) = cursor.fetchone()
                if int(found) >= target:
                    return time.perf_counter()
                if time.perf_counter() - started > timeout:
                    raise SystemExit(f"timed out: {condition_sql}")
                time.sleep(0.05)
    finally:
        conn.close()


def wait_until_settled(count_sql: str, least: int, quiet: float = 3.0) -> float:
    """Poll until the query counts at least ``least`` and has not grown for ``quiet``
    seconds; return when it last grew (perf_counter). For a crawl whose number of rows
    is not known ahead (a page's media items)."""
    conn = pymysql.connect(host="127.0.0.1", user="root", database=DB, autocommit=True)
    last, grew_at = -1, time.perf_counter()
    try:
        with conn.cursor() as cursor:
            while True:
                cursor.execute(count_sql)
                (found,) = cursor.fetchone()
                now = time.perf_counter()
                if int(found) != last:
                    last, grew_at = int(found), now
                elif last >= least and now - grew_at >= quiet:
                    return grew_at
                if now - grew_at > 600:
                    raise SystemExit(f"stuck at {last}: {count_sql}")
                time.sleep(0.05)
    finally:
        conn.close()


def wait_for_log(log: Path, text: str, timeout: float = 120) -> None:
    started = time.perf_counter()
    while text not in log.read_text(errors="replace"):
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"{log} never said {text!r}:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)


def start(args: list[str], cwd: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb")
    )


def sample(processes: dict[str, subprocess.Popen[bytes]], into: Path | None, round_number: int):
    """py-spy recorders of ``processes`` (by name) into ``into``, or none."""
    if into is None:
        return []
    into.mkdir(parents=True, exist_ok=True)
    return [
        subprocess.Popen(
            [
                "py-spy",
                "record",
                "--pid",
                str(process.pid),
                "--subprocesses",
                "--nonblocking",
                "--rate",
                "200",
                "--format",
                "raw",
                "-o",
                str(into / f"{name}-{round_number}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name, process in processes.items()
    ]


def stop_sampling(recorders: list[subprocess.Popen[bytes]]) -> None:
    for recorder in recorders:
        recorder.send_signal(signal.SIGINT)  # py-spy writes what it sampled on SIGINT
    for recorder in recorders:
        recorder.wait(timeout=120)


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        process.wait(timeout=120)


@dataclass(frozen=True)
class Timing:
    crawl_s: float  # first request served -> last page stored
    total_s: float  # processes launched -> last page stored
    cpu_s: float  # CPU (user + system) of the crawl's processes over crawl_s (see tree_cpu)
    #: zeroarchive's CPU seconds by process: the scheduler, the workers, their writers.
    cpu_parts: tuple[tuple[str, float], ...] = ()


TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu(pids: list[int], descendants: bool = True) -> float:
    """CPU seconds (user + system) so far of these processes and all their descendants
    alive now (a worker's writer process included), from /proc."""
    total = 0.0
    todo = list(pids)
    while todo:
        pid = todo.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / TICK
            if not descendants:
                continue
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def zeroarchive_run(
    server: ReplayServer,
    articles: int,
    work: Path,
    profile: Path | None = None,
    round_number: int = 0,
    media: bool = False,
) -> Timing:
    fresh_database()
    env = {
        **child_env(),
        "PYTHONPATH": str(REPO),
        "ZEROARCHIVE_DB_URL": f"mysql+pymysql://root@127.0.0.1:3306/{DB}",
        "REDIS_URL": REDIS_URL,
        "ZEROARCHIVE_MEDIA_ENABLED": "1" if media else "0",
    }
    site = {
        "name": "corpus",
        "url": server.url("/list/1.html"),
        "type": "news",
        "config": {
            "article": r"/c\d+/",
            "following": r"/list/\d+\.html$",
            "depth": MAX_DEPTH,
            "delay": 0,
        },
    }
    (work / "sites.json").write_text(json.dumps([site]))
    scrapy = [sys.executable, "-m", "scrapy"]
    run([*scrapy, "migrate"], REPO, env)
    worker_args = [
        *scrapy,
        "crawl",
        "generic",
        "-s",
        f"SITE_POLICY_CONCURRENCY={SITE_CONCURRENCY}",
        *BENCH_SETTINGS,
    ]
    server.reset_hits()
    launched = time.perf_counter()
    processes = [start([*scrapy, "schedule", "--interval", "0.5"], REPO, env, work / "sched.log")]
    logs = [work / f"worker{i}.log" for i in range(2)]
    processes += [start(worker_args, REPO, env, log) for log in logs]
    recorders = []
    try:
        wait_for_log(work / "sched.log", "generic:")
        for log in logs:
            wait_for_log(log, "Distributed worker: waiting for requests")
        named = {"schedule": processes[0], "worker0": processes[1], "worker1": processes[2]}
        recorders = sample(named, profile, round_number)
        pids = [process.pid for process in processes]
        cpu_before = tree_cpu(pids)
        parts_before = cpu_by_part(pids)
        # The scheduler's next round finds the new site due at once.
        run([*scrapy, "load_sites", str(work / "sites.json")], REPO, env)
        if media:
            # Snapshots and their items' records (its default kinds: images, stylesheets).
            finished = wait_until_settled(
                "SELECT (SELECT COUNT(DISTINCT article_id) FROM ArticleSnapshot)"
                " + (SELECT COUNT(*) FROM SnapshotMedia)",
                articles,
            )
        else:
            finished = wait_for("SELECT COUNT(DISTINCT article_id) FROM ArticleSnapshot", articles)
        cpu = tree_cpu(pids) - cpu_before
        parts = tuple(
            (name, seconds - parts_before[name]) for name, seconds in cpu_by_part(pids).items()
        )
    finally:
        stop_sampling(recorders)
        stop(processes)
    assert server.first_hit_at is not None
    return Timing(finished - server.first_hit_at, finished - launched, cpu, parts)


def cpu_by_part(pids: list[int]) -> dict[str, float]:
    """The scheduler's (``pids[0]``) CPU seconds so far, the workers' own and their
    writer processes'."""
    workers = tree_cpu(pids[1:], descendants=False)
    return {
        "schedule": tree_cpu(pids[:1]),
        "workers": workers,
        "writers": tree_cpu(pids[1:]) - workers,
    }


def stock_run(server: ReplayServer, articles: int, work: Path, media: bool = False) -> Timing:
    fresh_database()
    env = child_env(STOCK_DB=DB, PYTHONPATH=str(REPO / "bench"), STOCK_MEDIA="1" if media else "")
    args = [
        sys.executable,
        "-m",
        "scrapy",
        "runspider",
        str(REPO / "bench" / "stock_redis_spider.py"),
        "-s",
        "SCHEDULER=scrapy_redis.scheduler.Scheduler",
        "-s",
        "DUPEFILTER_CLASS=scrapy_redis.dupefilter.RFPDupeFilter",
        "-s",
        f"REDIS_URL={REDIS_URL}",
        "-s",
        'ITEM_PIPELINES={"stock_redis_spider.StockPipeline": 300}',
        "-s",
        f"CONCURRENT_REQUESTS_PER_DOMAIN={SITE_CONCURRENCY}",
        *BENCH_SETTINGS,
    ]
    server.reset_hits()
    launched = time.perf_counter()
    logs = [work / f"stock{i}.log" for i in range(2)]
    with tempfile.TemporaryDirectory() as outside_project:
        workers = [start(args, Path(outside_project), env, log) for log in logs]
        try:
            for log in logs:
                wait_for_log(log, "Spider opened")
            pids = [worker.pid for worker in workers]
            cpu_before = tree_cpu(pids)
            redis.Redis.from_url(REDIS_URL).lpush("stock:start_urls", server.url("/list/1.html"))
            if media:
                finished = wait_until_settled("SELECT COUNT(*) FROM stock_snapshot", articles)
            else:
                finished = wait_for("SELECT COUNT(*) FROM stock_snapshot", articles)
            cpu = tree_cpu(pids) - cpu_before
        finally:
            stop(workers)
    assert server.first_hit_at is not None
    return Timing(finished - server.first_hit_at, finished - launched, cpu)


def fetch_only_run(server: ReplayServer, paths: list[str], work: Path) -> Timing:
    urls = work / "urls.txt"
    urls.write_text("\n".join(server.url(p) for p in paths))
    plain_env = {k: v for k, v in child_env().items() if k != "PYTHONPATH"}
    server.reset_hits()
    elapsed, log = run(
        [
            sys.executable,
            "-m",
            "scrapy",
            "runspider",
            str(REPO / "bench" / "fetch_only_spider.py"),
            "-a",
            f"urls_file={urls}",
            "-s",
            f"CONCURRENT_REQUESTS_PER_DOMAIN={SITE_CONCURRENCY}",
            *BENCH_SETTINGS,
        ],
        work,
        plain_env,
    )
    if stat(log, "fetch_only/pages") != len(paths):
        raise SystemExit(f"fetch-only fetched {stat(log, 'fetch_only/pages')} of {len(paths)}")
    assert server.first_hit_at is not None and server.last_hit_at is not None
    # Its whole process, start-up included (about 1.5 CPU s).
    return Timing(server.last_hit_at - server.first_hit_at, elapsed, CPU[-1])


def main() -> None:
    global SITE_CONCURRENCY  # the crawls read it
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", type=Path, help="py-spy samples of zeroarchive's processes")
    parser.add_argument(
        "--media", action="store_true", help="pages with their images and stylesheets served"
    )
    parser.add_argument(
        "--site-concurrency",
        type=int,
        default=SITE_CONCURRENCY,
        help="requests at once per site (below 16, a queue forms in the site's slot)",
    )
    options = parser.parse_args()
    SITE_CONCURRENCY = options.site_concurrency
    # From compiled bytecode, as an installed project runs (bench/crawl_embedded.py): a
    # writer process starts inside the timed crawl, and compiled each module it imports.
    for package in PACKAGES:
        compileall.compile_dir(REPO / package, quiet=1)
    rounds: list[dict[str, Timing]] = []
    routes: dict[str, Route]
    with ReplayServer({}) as server, tempfile.TemporaryDirectory() as tmp:
        if options.media:
            # Keep-alive item answers, as image servers give (bench/media.py).
            from bench.media import build

            routes, paths = build(server.base_url, options.copies)
        else:
            routes, paths = build_site(options.copies, LIST_LINKS)
            per_list = math.ceil(len(paths) / MAX_DEPTH)
            if per_list > LIST_LINKS:
                routes, paths = build_site(options.copies, per_list)
        server.routes = routes
        n = len(paths)
        work = Path(tmp)
        for round_number in range(options.rounds):
            ours = zeroarchive_run(server, n, work, options.profile, round_number, options.media)
            # With media, the limit fetches every page and item the archive asked for.
            asked = [p for p in server.hits if not p.startswith(("/list/", "/robots.txt"))]
            rounds.append(
                {
                    "zeroarchive_2_workers": ours,
                    "fetch_only": fetch_only_run(server, asked if options.media else paths, work),
                    "stock_scrapy_redis_2_workers": stock_run(server, n, work, options.media),
                }
            )
            rate = {name: round(n / t.crawl_s, 1) for name, t in rounds[-1].items()}
            total = {name: round(n / t.total_s, 1) for name, t in rounds[-1].items()}
            print(
                json.dumps(
                    {
                        "articles": n,
                        "media": options.media,
                        "items_asked": len(server.hits) if options.media else 0,
                        "pages_per_s": rate,
                        "pages_per_s_with_process_start_up": total,
                        "cpu_ms_per_page": {
                            name: round(1000 * t.cpu_s / n, 2) for name, t in rounds[-1].items()
                        },
                        "zeroarchive_cpu_ms_per_page": {
                            name: round(1000 * seconds / n, 2)
                            for name, seconds in rounds[-1]["zeroarchive_2_workers"].cpu_parts
                        },
                        "load": round(os.getloadavg()[0], 1),
                        "site_concurrency": SITE_CONCURRENCY,
                    }
                ),
                flush=True,
            )

    def ratios(other: str) -> list[float]:
        return sorted(r[other].crawl_s / r["zeroarchive_2_workers"].crawl_s for r in rounds)

    # Each round runs the three side by side; the machine's noise moves whole rounds, so
    # the ratio is taken per round and the median of the rounds is printed. Stock
    # scrapy-redis is bimodal: its second worker joins at its engine's next 5 s heartbeat,
    # which falls anywhere in the crawl; five rounds keep one draw from deciding the median.
    for other, label in (
        ("fetch_only", "fetch-only limit"),
        ("stock_scrapy_redis_2_workers", "stock scrapy-redis"),
    ):
        per_round = ratios(other)
        print(
            f"ratio zeroarchive / {label}: {statistics.median(per_round):.2f} "
            f"(rounds: {', '.join(f'{x:.2f}' for x in per_round)})"
        )


if __name__ == "__main__":
    main()
