"""Many sites, each polite, side by side in one run:

- zeroarchive: `scrapy schedule` + 2 workers on the shared redis queue, ``--sites`` sites
  of ``--articles`` articles each, every site with ``delay`` ``--delay`` (its own download
  slot), from the first request served to the last snapshot stored;
- plain Scrapy: one process walking the same sites (list page, then its articles), each
  site in a slot of its own with DOWNLOAD_DELAY ``--delay``, Scrapy's
  DownloaderAwarePriorityQueue choosing among the slots;
- the limit: plain Scrapy fetching every page with no delay and keeping nothing.

The ideal is the sum of the sites' rates (``--sites`` / ``--delay`` pages/s) capped by the
limit; each crawl is printed as pages/s and as a fraction of the ideal. The sites are served
on 127.0.0.1 by tests/replay.py (article bodies: the saved real pages of the corpora).

    python bench/many_sites.py [--sites 200] [--articles 20] [--delay 0.5] [--rounds 2]

Needs MariaDB at 127.0.0.1:3306 (root, database zeroarchive_bench_many_sites, dropped and
made again each round) and a redis at ``--redis`` (its database is flushed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# Its pages are served on 127.0.0.1, which the archive refuses unless allowed
# (docs/operators/private-targets.md): every crawl it starts inherits this.
os.environ["ZEROARCHIVE_ALLOW_PRIVATE_TARGETS"] = "1"
# Its saved pages name their images on the live sites: media stay off (never the internet).
os.environ["ZEROARCHIVE_MEDIA_ENABLED"] = "0"

import pymysql  # noqa: E402
import redis  # noqa: E402

from bench.crawl_embedded import BENCH_SETTINGS, corpus_pages, run, stat  # noqa: E402
from tests.replay import ReplayServer, Route  # noqa: E402

DB = "zeroarchive_bench_many_sites"


def build_sites(sites: int, articles: int) -> tuple[dict[str, Route], list[str], list[str]]:
    """Routes of every site (a list page linking its articles), list paths, all paths."""
    bodies = list(corpus_pages().values())
    routes: dict[str, Route] = {}
    lists, paths = [], []
    for site in range(sites):
        links = []
        for number in range(articles):
            path = f"/s{site}/a{number}.html"
            routes[path] = bodies[(site * articles + number) % len(bodies)]
            links.append(f'<li><a href="{path}">{number}</a></li>')
        body = f"<html><body><ul>{''.join(links)}</ul></body></html>".encode()
        routes[f"/s{site}/list.html"] = Route(
            200, (("Content-Type", "text/html; charset=utf-8"),), body
        )
        lists.append(f"/s{site}/list.html")
        paths += [f"/s{site}/list.html", *(f"/s{site}/a{n}.html" for n in range(articles))]
    return routes, lists, paths


def mariadb() -> pymysql.connections.Connection:
    return pymysql.connect(host="127.0.0.1", user="root", autocommit=True)


def wait_for_snapshots(target: int, timeout: float = 900) -> float:
    started = time.perf_counter()
    conn = mariadb()
    try:
        with conn.cursor() as cursor:
            while True:
                cursor.execute(f"SELECT COUNT(DISTINCT article_id) FROM {DB}.ArticleSnapshot")
                (found,) = cursor.fetchone()
                if int(found) >= target:
                    return time.perf_counter()
                if time.perf_counter() - started > timeout:
                    raise SystemExit(f"timed out with {found} of {target} snapshots")
                time.sleep(0.1)
    finally:
        conn.close()


def wait_for_log(log: Path, text: str, timeout: float = 180) -> None:
    started = time.perf_counter()
    while text not in log.read_text(errors="replace"):
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"{log} never said {text!r}:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)


def zeroarchive_run(
    server: ReplayServer, lists: list[str], articles: int, delay: float, redis_url: str, work: Path
) -> float:
    conn = mariadb()
    with conn.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {DB}")
        cursor.execute(f"CREATE DATABASE {DB} CHARACTER SET utf8mb4")
    conn.close()
    redis.Redis.from_url(redis_url).flushdb()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "ZEROARCHIVE_DB_URL": f"mysql+pymysql://root@127.0.0.1:3306/{DB}",
        "REDIS_URL": redis_url,
    }
    sites = [
        {
            "name": f"s{number}",
            "url": server.url(path),
            "type": "news",
            "config": {"article": r"/s\d+/a\d+\.html$", "depth": 1, "delay": delay},
        }
        for number, path in enumerate(lists)
    ]
    (work / "sites.json").write_text(json.dumps(sites))
    scrapy = [sys.executable, "-m", "scrapy"]
    run([*scrapy, "migrate"], REPO, env)
    logs = [work / f"worker{i}.log" for i in range(2)]
    processes = [
        subprocess.Popen(
            [*scrapy, "schedule", "--interval", "0.5"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(work / "sched.log").open("wb"),
        )
    ]
    processes += [
        subprocess.Popen(
            [*scrapy, "crawl", "generic", *BENCH_SETTINGS],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log.open("wb"),
        )
        for log in logs
    ]
    try:
        wait_for_log(work / "sched.log", "generic:")
        for log in logs:
            wait_for_log(log, "Distributed worker: waiting for requests")
        server.reset_hits()
        run([*scrapy, "load_sites", str(work / "sites.json")], REPO, env)
        finished = wait_for_snapshots(len(lists) * articles)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=120)
    assert server.first_hit_at is not None
    return finished - server.first_hit_at


def plain_run(server: ReplayServer, args: list[str], expected: int, key: str, work: Path) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    server.reset_hits()
    _, log = run([sys.executable, "-m", "scrapy", "runspider", *args, *BENCH_SETTINGS], work, env)
    if stat(log, key) != expected:
        raise SystemExit(f"{args[0]} fetched {stat(log, key)} of {expected}:\n{log[-3000:]}")
    assert server.first_hit_at is not None and server.last_hit_at is not None
    return server.last_hit_at - server.first_hit_at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=200)
    parser.add_argument("--articles", type=int, default=20)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/1")
    options = parser.parse_args()
    routes, lists, paths = build_sites(options.sites, options.articles)
    pages = len(paths)
    fractions: dict[str, list[float]] = {"zeroarchive": [], "plain_scrapy": []}
    with ReplayServer(routes) as server, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "lists.txt").write_text("\n".join(server.url(p) for p in lists))
        (work / "urls.txt").write_text("\n".join(server.url(p) for p in paths))
        for _ in range(options.rounds):
            limit = pages / plain_run(
                server,
                [
                    str(REPO / "bench" / "fetch_only_spider.py"),
                    "-a",
                    f"urls_file={work / 'urls.txt'}",
                    "-s",
                    "CONCURRENT_REQUESTS_PER_DOMAIN=16",
                ],
                pages,
                "fetch_only/pages",
                work,
            )
            plain = pages / plain_run(
                server,
                [
                    str(REPO / "bench" / "polite_scrapy_spider.py"),
                    "-a",
                    f"lists_file={work / 'lists.txt'}",
                    "-s",
                    f"DOWNLOAD_DELAY={options.delay}",
                    "-s",
                    "SCHEDULER_PRIORITY_QUEUE=scrapy.pqueues.DownloaderAwarePriorityQueue",
                ],
                len(lists) * options.articles,
                "polite/articles",
                work,
            )
            ours = pages / zeroarchive_run(
                server, lists, options.articles, options.delay, options.redis, work
            )
            ideal = min(options.sites / options.delay, limit)
            fractions["zeroarchive"].append(ours / ideal)
            fractions["plain_scrapy"].append(plain / ideal)
            print(
                json.dumps(
                    {
                        "pages": pages,
                        "pages_per_s": {
                            "zeroarchive_2_workers": round(ours, 1),
                            "plain_scrapy_downloader_aware": round(plain, 1),
                            "fetch_only_limit": round(limit, 1),
                            "ideal": round(ideal, 1),
                        },
                    }
                ),
                flush=True,
            )
    for name, values in fractions.items():
        print(
            f"{name} / ideal: {statistics.median(values):.2f} "
            f"(rounds: {', '.join(f'{v:.2f}' for v in values)})"
        )


if __name__ == "__main__":
    main()
