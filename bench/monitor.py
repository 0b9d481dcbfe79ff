"""`scrapy monitor` on a large archive: how long each page and the /graphql sites query
take on N articles, beside the background count of site stats they no longer wait for.

Fills a fresh database (SQLite file, or a new MariaDB database) with ``--sites`` sites and
``--articles`` articles by bulk inserts (bench/site_stats.py's fill), adds one real news
page (tests/fixtures/tw-news-2014) snapshotted three times and parsed into two versions,
serves the monitor on uvicorn in a thread, and times each page over HTTP ``--repeat``
times, side by side in one run.

    python bench/monitor.py [--articles 1000000] [--sites 200] [--backend sqlite|mariadb|both]
"""

from __future__ import annotations

import argparse
import gzip
import json
import secrets
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import uvicorn  # noqa: E402
from site_stats import MARIADB, fill  # noqa: E402
from sqlalchemy import create_engine, select, text  # noqa: E402

from tests.monitor_archive import LIMITS  # noqa: E402
from zeroarchive.core.items import FetchedPage  # noqa: E402
from zeroarchive.core.schedule import HOUR  # noqa: E402
from zeroarchive.monitor.app import create_app  # noqa: E402
from zeroarchive.monitor.config import MonitorConfig  # noqa: E402
from zeroarchive.parser.run import ParseRunConfig, parse_pending  # noqa: E402
from zeroarchive.storage.engine import make_engine  # noqa: E402
from zeroarchive.storage.schema import article  # noqa: E402
from zeroarchive.storage.site_stats import SiteStatsConfig  # noqa: E402
from zeroarchive.storage.snapshots import SnapshotStore  # noqa: E402

PAGE = gzip.decompress(
    (REPO / "tests/fixtures/tw-news-2014/html/liberty_times_news_s1.html.gz").read_bytes()
)
EDITED = PAGE.replace("停止禁食".encode(), "結束禁食".encode())
SITES_QUERY = (
    "{ sites { count items { id name url type airtableId isActive"
    " articles { count hist(days: 7) { startAt days count } } } } }"
)
LONG_HIST_QUERY = "{ sites { count items { id articles { hist(days: 90) { count } } } } }"


def add_snapshotted_article(url: str, now: int) -> tuple[int, int]:
    """One article of site 1 with three snapshots (the last edited), parsed."""
    engine = make_engine(url)
    with engine.connect() as conn:
        article_id = conn.execute(
            select(article.c.article_id).where(article.c.site_id == 1).limit(1)
        ).scalar_one()
    store = SnapshotStore(engine)
    times = (now - 3 * HOUR, now - 2 * HOUR, now - HOUR)
    for at, body in zip(times, (PAGE, PAGE, EDITED), strict=True):
        store.save(
            [
                FetchedPage(
                    article_id=article_id,
                    site_id=1,
                    article_type="news",
                    fetched_at=at,
                    status=200,
                    final_url=f"https://example/a/{article_id}",
                    headers={"Content-Type": ["text/html; charset=utf-8"]},
                    encoding="utf-8",
                    body=body,
                )
            ]
        )
    parse_pending(engine, ParseRunConfig(site_id=1), now=now)
    engine.dispose()
    return article_id, times[0]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def fetch(url: str, body: bytes | None = None) -> bytes:
    headers = {"Content-Type": "application/json"} if body is not None else {}
    request = urllib.request.Request(url, data=body, headers=headers)
    with urllib.request.urlopen(request, timeout=600) as response:
        return response.read()


def measure(url: str, now: int, repeat: int) -> dict[str, list[float]]:
    article_id, first_at = add_snapshotted_article(url, now)
    engine = make_engine(url)
    config = MonitorConfig("127.0.0.1", free_port(), 3600, 28, 100, None, None, None, LIMITS)
    app = create_app(engine, config, SiteStatsConfig(3, 3600), lambda: now)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=config.port, log_config=None, access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    base = f"http://127.0.0.1:{config.port}"
    snapshot = f"/articles/{article_id}/snapshots/{first_at}"
    pages: dict[str, tuple[str, bytes | None]] = {
        "/": ("/", None),
        "/?type=news&active=yes": ("/?type=news&active=yes", None),
        "/sites/1": ("/sites/1", None),
        "/articles/<id>": (f"/articles/{article_id}", None),
        "/articles/<id>?a=&b= (diff)": (f"/articles/{article_id}?a=1&b=2", None),
        "snapshot page": (snapshot, None),
        "archived page (cleaned)": (f"{snapshot}/page", None),
        "/graphql sites, hist(days: 7)": ("/graphql", json.dumps({"query": SITES_QUERY}).encode()),
        "/graphql sites, hist(days: 90)": (
            "/graphql",
            json.dumps({"query": LONG_HIST_QUERY}).encode(),
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in pages}
    times["background count (site_stats + per day + charts)"] = []
    try:
        fetch(f"{base}/")  # the first page waits for the first count
        for _ in range(repeat):
            for name, (path, body) in pages.items():
                started = time.perf_counter()
                answer = fetch(base + path, body)
                times[name].append(time.perf_counter() - started)
                assert answer and b'"errors"' not in answer, answer[:300]
            # What the background task does: count, then draw every site's chart.
            started = time.perf_counter()
            app.state.charts.draw_all(app.state.stats.refresh())
            times["background count (site_stats + per day + charts)"].append(
                time.perf_counter() - started
            )
    finally:
        server.should_exit = True
        thread.join(30)
        engine.dispose()
    return times


def run(backend: str, sites: int, articles: int, repeat: int) -> None:
    now = int(time.time())
    if backend == "sqlite":
        tmp = tempfile.TemporaryDirectory()
        url = f"sqlite:///{Path(tmp.name) / 'bench.db'}"
        cleanup = tmp.cleanup
    else:
        name = f"zeroarchive_bench_{secrets.token_hex(4)}"
        admin = create_engine(f"{MARIADB}/test")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
        url = f"{MARIADB}/{name}"

        def cleanup() -> None:
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE {name}"))
            admin.dispose()

    try:
        filled = fill(url, sites, articles, now)
        times = measure(url, now, repeat)
    finally:
        cleanup()
    counting = statistics.median(times["background count (site_stats + per day + charts)"])
    print(
        f"{backend}: {articles} articles, {sites} sites (filled in {filled:.1f} s); "
        f"seconds over {repeat} runs, and each page's median against the background count's:"
    )
    print(f"  {'what':50} {'best':>7} {'median':>7} {'worst':>7} {'/count':>7}")
    for name, measured in times.items():
        median = statistics.median(measured)
        print(
            f"  {name:50} {min(measured):7.3f} {median:7.3f} {max(measured):7.3f} "
            f"{median / counting:7.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=1_000_000)
    parser.add_argument("--sites", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--backend", choices=("sqlite", "mariadb", "both"), default="both")
    args = parser.parse_args()
    for backend in ("sqlite", "mariadb") if args.backend == "both" else (args.backend,):
        run(backend, args.sites, args.articles, args.repeat)


if __name__ == "__main__":
    main()
