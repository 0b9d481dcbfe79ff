"""`scrapy monitor` against the hostile GraphQL requests of issue 26, side by side in one
run: how long the monitor takes to answer each (over HTTP, on uvicorn in a thread, over a
small SQLite archive), beside how long graphql-core alone takes to validate the same
document (the quadratic overlapping-fields rule the limits keep queries away from).

    python bench/monitor_limits.py [--repeat 3] [--lifted]

``--lifted`` raises the body and query size limits to 10 MB, so that the repeated fields
reach the field and token limits (the size limits refuse them first by default).
"""

from __future__ import annotations

import argparse
import json
import logging
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import uvicorn  # noqa: E402
from graphql import parse, validate  # noqa: E402

from tests.monitor_archive import LIMITS, NOW, build  # noqa: E402
from zeroarchive.monitor.app import create_app  # noqa: E402
from zeroarchive.monitor.config import MonitorConfig  # noqa: E402
from zeroarchive.monitor.sites_api import build_schema  # noqa: E402
from zeroarchive.storage.archive import open_archive  # noqa: E402
from zeroarchive.storage.site_stats import SiteStatsConfig  # noqa: E402

HIST = "sites { items { articles { hist(days: 3660) { count } } } }"
CASES = {
    "4,000 x count": "{ sites { " + " ".join(["count"] * 4_000) + " } }",
    "40,000 x count": "{ sites { " + " ".join(["count"] * 40_000) + " } }",
    "8 aliases of hist(3660)": "{ " + " ".join(f"a{n}: {HIST}" for n in range(8)) + " }",
    "5,000 failing aliases": "{ "
    + " ".join(f'a{n}: sites(id: "x") {{ count }}' for n in range(5_000))
    + " }",
    "fragment bomb (2^20)": " ".join(
        ["query { ...F0 }"]
        + [f"fragment F{n} on Query {{ ...F{n + 1} ...F{n + 1} }}" for n in range(20)]
        + ["fragment F20 on Query { sites { count } }"]
    ),
    "fragment bomb (2^14, 15 frags)": " ".join(
        ["query { ...F0 }"]
        + [f"fragment F{n} on Query {{ ...F{n + 1} ...F{n + 1} }}" for n in range(14)]
        + ["fragment F14 on Query { sites { count } }"]
    ),
    "330 fragments in one set": "{ sites { "
    + " ".join(f"...F{n}" for n in range(330))
    + " } } "
    + " ".join(f"fragment F{n} on SitesResult {{ x{n} }}" for n in range(330)),
    "honest: sites, hist(7)": "{ sites { count items { id name articles { count"
    " hist(days: 7) { startAt count } } } } }",
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def ask(base: str, query: str) -> tuple[float, int]:
    body = json.dumps({"query": query}).encode()
    request = urllib.request.Request(
        f"{base}/graphql", data=body, headers={"Content-Type": "application/json"}
    )
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as refused:
        refused.read()
        status = refused.code
    return time.perf_counter() - start, status


def validation_seconds(query: str) -> str:
    """Seconds of graphql-core's own validation of the document (parsed beforehand)."""
    schema = build_schema()
    try:
        document = parse(query)
    except RecursionError:
        return "parser recursion"
    start = time.perf_counter()
    validate(schema, document)
    return f"{time.perf_counter() - start:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lifted", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'archive.db'}"
        build(url)
        limits = LIMITS
        if args.lifted:
            limits = replace(limits, body_bytes=10_000_000, query_chars=10_000_000)
        config = MonitorConfig(
            "127.0.0.1", free_port(), 3600, 28, 100, None, None, None, limits=limits
        )
        app = create_app(
            open_archive(url=url).engine, config, SiteStatsConfig(3, 3600), lambda: NOW
        )
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=config.port, log_config=None)
        )
        logging.getLogger("zeroarchive.monitor").setLevel(logging.ERROR)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        base = f"http://127.0.0.1:{config.port}"
        print(
            f"{'request':<31} {'bytes':>8} {'status':>6} {'monitor s (median)':>19}"
            "  graphql-core validate s"
        )
        for name, query in CASES.items():
            times, status = [], 0
            for _ in range(args.repeat):
                seconds, status = ask(base, query)
                times.append(seconds)
            # Only the 4,000 copies are validated directly: 40,000 would take about 30 min.
            direct = validation_seconds(query) if name != "40,000 x count" else "(~100x the 4,000)"
            print(
                f"{name:<31} {len(query):>8} {status:>6} {statistics.median(times):>19.4f}"
                f"  {direct}"
            )
        server.should_exit = True
        thread.join(30)


if __name__ == "__main__":
    main()
