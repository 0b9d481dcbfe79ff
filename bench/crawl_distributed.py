"""Distributed throughput on the replayed corpora, side by side in one run:

- zeroarchive: `scrapy schedule` + 2 workers (redis queue, Bloom dupefilter, batched
  MariaDB snapshot writes), from the first list page to the last snapshot stored;
- the limit: a plain Scrapy spider fetching the same article URLs and keeping nothing;
- stock scrapy-redis: 2 RedisSpider workers with its set dupefilter and one INSERT per
  item (bench/stock_redis_spider.py), walking the same list pages.

    python bench/crawl_distributed.py [--copies 5]

Needs MariaDB at 127.0.0.1:3306 (root) and Redis at 127.0.0.1:6379 (uses database 1 and
flushes it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pymysql  # noqa: E402
import redis  # noqa: E402

from bench.crawl_embedded import BENCH_SETTINGS, build_site, run, stat  # noqa: E402
from tests.replay import ReplayServer  # noqa: E402

REDIS_URL = "redis://127.0.0.1:6379/1"
DB = "zeroarchive_bench"


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


def count(sql: str) -> int:
    conn = pymysql.connect(host="127.0.0.1", user="root", database=DB)
    with conn.cursor() as cursor:
        cursor.execute(sql)
        (value,) = cursor.fetchone()
    conn.close()
    return int(value)


def wait_for(condition_sql: str, target: int, timeout: float = 600) -> float:
    started = time.perf_counter()
    while count(condition_sql) < target:
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"timed out: {condition_sql}")
        time.sleep(0.1)
    return time.perf_counter()


def zeroarchive_run(server: ReplayServer, articles: int, work: Path) -> float:
    fresh_database()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "ZEROARCHIVE_DB_URL": f"mysql+pymysql://root@127.0.0.1:3306/{DB}",
        "REDIS_URL": REDIS_URL,
    }
    site = {
        "name": "corpus",
        "url": server.url("/list/1.html"),
        "type": "news",
        "config": {"article": r"/c\d+/", "following": r"/list/\d+\.html$", "depth": 50, "delay": 0},
    }
    (work / "sites.json").write_text(json.dumps([site]))
    scrapy = [sys.executable, "-m", "scrapy"]
    run([*scrapy, "load_sites", str(work / "sites.json")], REPO, env)
    worker_args = [
        *scrapy,
        "crawl",
        "generic",
        "-s",
        "ZEROARCHIVE_IDLE_LIMIT=4",
        "-s",
        "SITE_POLICY_CONCURRENCY=16",
        *BENCH_SETTINGS,
    ]
    started = time.perf_counter()
    scheduler = subprocess.Popen(
        [*scrapy, "schedule", "--interval", "0.5"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers = [
        subprocess.Popen(
            worker_args, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for _ in range(2)
    ]
    finished = wait_for("SELECT COUNT(DISTINCT article_id) FROM ArticleSnapshot", articles)
    scheduler.terminate()
    for process in [scheduler, *workers]:
        process.wait(timeout=120)
    return articles / (finished - started)


def stock_run(server: ReplayServer, articles: int) -> float:
    fresh_database()
    env = {**os.environ, "STOCK_DB": DB, "PYTHONPATH": str(REPO / "bench")}
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
        "CONCURRENT_REQUESTS_PER_DOMAIN=16",
        "-s",
        "MAX_IDLE_TIME_BEFORE_CLOSE=4",
        *BENCH_SETTINGS,
    ]
    redis.Redis.from_url(REDIS_URL).lpush("stock:start_urls", server.url("/list/1.html"))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as outside_project:
        workers = [
            subprocess.Popen(
                args,
                cwd=outside_project,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(2)
        ]
        finished = wait_for("SELECT COUNT(*) FROM stock_snapshot", articles)
        for worker in workers:
            worker.wait(timeout=120)
    return articles / (finished - started)


def fetch_only_run(server: ReplayServer, paths: list[str], work: Path) -> float:
    urls = work / "urls.txt"
    urls.write_text("\n".join(server.url(p) for p in paths))
    plain_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
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
            "CONCURRENT_REQUESTS_PER_DOMAIN=16",
            *BENCH_SETTINGS,
        ],
        work,
        plain_env,
    )
    return stat(log, "fetch_only/pages") / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=5)
    options = parser.parse_args()
    routes, paths = build_site(options.copies)
    with ReplayServer(routes) as server, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ours = zeroarchive_run(server, len(paths), work)
        limit = fetch_only_run(server, paths, work)
        stock = stock_run(server, len(paths))
    print(
        json.dumps(
            {
                "articles": len(paths),
                "pages_per_s": {
                    "zeroarchive_2_workers": round(ours, 1),
                    "fetch_only": round(limit, 1),
                    "stock_scrapy_redis_2_workers": round(stock, 1),
                },
            }
        )
    )
    print(f"ratio zeroarchive / fetch-only limit: {ours / limit:.2f}")
    print(f"ratio zeroarchive / stock scrapy-redis: {ours / stock:.2f}")


if __name__ == "__main__":
    main()
