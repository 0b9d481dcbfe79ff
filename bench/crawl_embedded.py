"""Embedded crawl throughput and storage cost on the replayed corpora.

Serves the saved real pages (tw-news, the extraction benchmark, iana.org) on 127.0.0.1,
each under several copies, behind generated list pages; then, side by side in one run:

- zeroarchive: `scrapy crawl generic` (discover + snapshot) into a fresh SQLite file;
- the limit: a plain Scrapy spider fetching the same article URLs and keeping nothing.

Prints pages/s of both, their ratio (best against best, and the median of the rounds'
ratios), the same ratio between each crawl's first and last request (start-up and the
last batch's write left out), CPU seconds per page of both (whole process: on a shared
machine a steadier reading than wall clock), and bytes stored per snapshot against raw
bytes.

Both crawls run from compiled bytecode, as an installed project does: the repository's
modules are compiled first, and PYTHONDONTWRITEBYTECODE (set on some machines) is not
passed on, or every crawl would compile zeroarchive's sources again (about 0.07 s).

    python bench/crawl_embedded.py [--copies 5] [--rounds 2]
"""

from __future__ import annotations

import argparse
import compileall
import gzip
import json
import os
import re
import resource
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
# The saved pages name their images on the live sites: media stay off, so the crawl is
# compared with fetch-only on the same requests (media's own cost: bench/README.md).
os.environ["ZEROARCHIVE_MEDIA_ENABLED"] = "0"

from sqlalchemy import create_engine, func, select  # noqa: E402

from bench.corpora import CORPORA  # noqa: E402
from tests.replay import ReplayServer, Route, html_pages, tw_news_routes, warc_routes  # noqa: E402
from zeroarchive.storage.schema import article_snapshot  # noqa: E402

BENCH_SETTINGS = [
    "-s",
    "CONCURRENT_REQUESTS=16",
    "-s",
    "DOWNLOAD_DELAY=0",
    "-s",
    "LOG_LEVEL=INFO",
    "-s",
    "ROBOTSTXT_OBEY=False",
]


def corpus_pages() -> dict[str, Route]:
    """Article pages by path: tw-news, the extraction benchmark, iana.org html pages."""
    pages: dict[str, Route] = {}
    news = tw_news_routes()
    for path, route in news.items():
        if not path.startswith("/news/"):
            pages[path] = route
    for html in sorted((CORPORA / "extraction-benchmark-dev" / "html").glob("*.html.gz")):
        pages[f"/bench/{html.name[:16]}.html"] = Route(
            200, (("Content-Type", "text/html; charset=utf-8"),), gzip.decompress(html.read_bytes())
        )
    iana = warc_routes(CORPORA / "warc" / "pywb__iana.warc.gz", "www.iana.org")
    for path in html_pages(iana):
        pages[f"/iana{path}"] = iana[path]
    return pages


def build_site(copies: int, per_list: int = 50) -> tuple[dict[str, Route], list[str]]:
    """Routes with every page under ``copies`` prefixes plus list pages; article paths."""
    pages = corpus_pages()
    routes: dict[str, Route] = {}
    articles = []
    for copy in range(copies):
        for path, route in pages.items():
            routes[f"/c{copy}{path}"] = route
            articles.append(f"/c{copy}{path}")
    lists = [articles[i : i + per_list] for i in range(0, len(articles), per_list)]
    for number, chunk in enumerate(lists, start=1):
        links = "".join(f'<li><a href="{p.replace("&", "&amp;")}">{p}</a></li>' for p in chunk)
        if number < len(lists):
            links += f'<a href="/list/{number + 1}.html">next</a>'
        body = f"<html><body><ul>{links}</ul></body></html>".encode()
        routes[f"/list/{number}.html"] = Route(
            200, (("Content-Type", "text/html; charset=utf-8"),), body
        )
    return routes, articles


#: CPU seconds (user + system) of each finished run, by the order they ran.
CPU: list[float] = []
#: The repository's own packages, compiled before the rounds (see the module's docstring).
PACKAGES = ("zeroarchive", "spiders", "pipelines", "middlewares", "settings", "bench")


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment for a crawl, without PYTHONDONTWRITEBYTECODE."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **extra}


def run(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{args} failed:\n{done.stderr[-3000:]}")
    return elapsed, done.stderr


def print_ratios(label: str, rates: dict[str, list[float]]) -> None:
    """zeroarchive's rate over fetch-only's, round by round, and their median."""
    ratios = [
        ours / limit for ours, limit in zip(rates["zeroarchive"], rates["fetch_only"], strict=True)
    ]
    print(
        f"{label}: median {statistics.median(ratios):.2f} "
        f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})"
    )


def hits_span(server: ReplayServer) -> float:
    """Seconds between the first and the last request the server answered."""
    if server.first_hit_at is None or server.last_hit_at is None:
        raise SystemExit("the crawl made no request")
    return server.last_hit_at - server.first_hit_at


def stat(log: str, key: str) -> int:
    found = re.search(rf"'{re.escape(key)}': (\d+)", log)
    return int(found.group(1)) if found else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()

    for package in PACKAGES:
        compileall.compile_dir(REPO / package, quiet=1)
    routes, articles = build_site(options.copies)
    results: dict[str, list[float]] = {"zeroarchive": [], "fetch_only": []}
    # Pages per second between a crawl's first and last request, by the server's clock.
    steady: dict[str, list[float]] = {"zeroarchive": [], "fetch_only": []}
    cpu: dict[str, list[float]] = {"zeroarchive": [], "fetch_only": []}
    raw_bytes = stored_bytes = snapshots = 0
    with ReplayServer(routes) as server, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        urls_file = work / "urls.txt"
        urls_file.write_text("\n".join(server.url(p) for p in articles))
        for round_number in range(options.rounds):
            db = work / f"bench-{round_number}.db"
            env = child_env(PYTHONPATH=str(REPO), ZEROARCHIVE_DB_URL=f"sqlite:///{db}")
            sites = work / "sites.json"
            site = {
                "name": "corpus",
                "url": server.url("/list/1.html"),
                "type": "news",
                "config": {
                    "article": r"/c\d+/",
                    "following": r"/list/\d+\.html$",
                    "depth": 50,
                    "delay": 0,
                },
            }
            sites.write_text(json.dumps([site]))
            run([sys.executable, "-m", "scrapy", "load_sites", str(sites)], REPO, env)
            crawl = [sys.executable, "-m", "scrapy", "crawl", "generic"]
            server.reset_hits()
            elapsed, log = run(
                [*crawl, "-s", "SITE_POLICY_CONCURRENCY=16", *BENCH_SETTINGS], REPO, env
            )
            saved = stat(log, "zeroarchive/snapshots_saved")
            if saved != len(articles):
                raise SystemExit(
                    f"zeroarchive saved {saved} of {len(articles)} pages:\n{log[-3000:]}"
                )
            results["zeroarchive"].append(saved / elapsed)
            steady["zeroarchive"].append(saved / hits_span(server))
            cpu["zeroarchive"].append(CPU[-1] / saved)
            engine = create_engine(f"sqlite:///{db}")
            with engine.connect() as conn:
                raw, stored, count = conn.execute(
                    select(
                        func.sum(article_snapshot.c.raw_size),
                        func.sum(func.length(article_snapshot.c.raw_data)),
                        func.count(),
                    )
                ).one()
            engine.dispose()
            raw_bytes, stored_bytes, snapshots = raw, stored, count

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
                    f"urls_file={urls_file}",
                    "-s",
                    "CONCURRENT_REQUESTS_PER_DOMAIN=16",
                    *BENCH_SETTINGS,
                ],
                work,
                plain_env,
            )
            fetched = stat(log, "fetch_only/pages")
            results["fetch_only"].append(fetched / elapsed)
            steady["fetch_only"].append(fetched / hits_span(server))
            cpu["fetch_only"].append(CPU[-1] / fetched)

    best = {name: max(values) for name, values in results.items()}
    print(json.dumps({"articles": len(articles), "rounds": options.rounds, "pages_per_s": results}))
    print(
        f"snapshots: {snapshots}, raw {raw_bytes / snapshots / 1024:.1f} KiB/snapshot, "
        f"stored {stored_bytes / snapshots / 1024:.1f} KiB/snapshot"
    )
    print(f"zeroarchive embedded crawl: {best['zeroarchive']:.1f} pages/s")
    print(f"plain Scrapy fetch-only:    {best['fetch_only']:.1f} pages/s")
    print(f"ratio zeroarchive / fetch-only: {best['zeroarchive'] / best['fetch_only']:.2f}")
    # Each round runs both crawls back to back, so a round's ratio holds the machine's state
    # of that moment; the best/best ratio above pairs rates of different moments.
    print_ratios("ratio per round", results)
    # Start-up (imports, opening the archive) and the last batch's write weigh on a short
    # crawl; real crawls run for hours. The same ratio without them:
    print_ratios("ratio per round, first to last request", steady)
    # On a shared machine wall-clock rates follow the other load; CPU per page much less.
    cpu_ratio = [
        limit / ours for ours, limit in zip(cpu["zeroarchive"], cpu["fetch_only"], strict=True)
    ]
    print(
        "CPU ms per page: zeroarchive "
        + ", ".join(f"{1000 * c:.2f}" for c in cpu["zeroarchive"])
        + "; fetch-only "
        + ", ".join(f"{1000 * c:.2f}" for c in cpu["fetch_only"])
    )
    print(
        f"ratio fetch-only CPU / zeroarchive CPU per page: median "
        f"{statistics.median(cpu_ratio):.2f} (rounds: {', '.join(f'{r:.2f}' for r in cpu_ratio)})"
    )
    print(
        f"ratio stored / raw bytes: {stored_bytes / raw_bytes:.3f} "
        f"({raw_bytes / stored_bytes:.1f}x smaller)"
    )


if __name__ == "__main__":
    main()
