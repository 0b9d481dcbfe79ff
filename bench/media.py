"""What media cost an embedded crawl: the same real article pages crawled with media off
and on, side by side.

Serves the extraction benchmark's saved article pages (real news and blog pages, their
images, lazy images, srcsets, og:images and stylesheets as published) under several
copies on 127.0.0.1, every absolute URL in them pointed at the same server
(``/h/<host>/<path>``), which answers each item URL with a real PNG made distinct by its
path (the same URL in every copy is the same bytes: what a site's logo on all its
articles is), over HTTP/1.1 keep-alive connections as image servers and CDNs answer.
Then, for each round, ``scrapy crawl generic`` into a fresh SQLite file with
``ZEROARCHIVE_MEDIA_ENABLED=0``, with ``=1`` and the site's ``media: [images]``, and with
``=1`` and the default kinds (images and styles), one after the other.

With ``--hosts``, each host a page names for its images or stylesheets (its site, its CDN,
a tracker's pixel: 2.7 hosts a page, 107 in all) is served on a port of its own, as on the
web: a page's items then take one media request per host (``BATCH_ITEMS`` a request at
most), where the default mode serves every host on one port and so puts all of a page's
items into one or two requests (kept runnable: its figures are the earlier sections').

Prints pages/s and CPU seconds (user + system, whole process and its writer process) per
stored page of each, their ratios to media off (median of rounds), and the media stored:
items, bytes fetched against bytes stored (what storing once saved).

    python bench/media.py [--copies 3] [--rounds 2] [--hosts]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ["ZEROARCHIVE_ALLOW_PRIVATE_TARGETS"] = "1"

from bench.corpora import CORPORA  # noqa: E402
from bench.crawl_embedded import BENCH_SETTINGS, CPU, child_env, run, stat  # noqa: E402
from tests.replay import ReplayServer, Route, _Handler  # noqa: E402

# Keep-alive, as image servers answer (the test server's HTTP/1.0 default opens a
# connection per item); this process's server only.
_Handler.protocol_version = "HTTP/1.1"

PNG = (REPO / "tests" / "fixtures" / "media" / "dashboard.png").read_bytes()
HTML = (("Content-Type", "text/html; charset=utf-8"),)
ABSOLUTE = re.compile(rb"(?:https?:)?//([a-z0-9.-]+\.[a-z]{2,})/", re.I)


class ItemRoutes(dict[str, Route]):
    """The site's pages, and a real PNG for any other path (distinct per path)."""

    def get(self, key: str, default: Route | None = None) -> Route | None:  # type: ignore[override]
        if key in self:
            return self[key]
        if key.startswith("/robots.txt"):
            return default
        tag = hashlib.sha256(key.encode()).digest()[:8]
        return Route(200, (("Content-Type", "image/png"),), PNG + tag)


def saved_pages() -> list[tuple[str, bytes]]:
    """The extraction benchmark's pages as saved: (name, bytes)."""
    found = sorted((CORPORA / "extraction-benchmark-dev" / "html").glob("*.html.gz"))
    return [(html.name[:16], gzip.decompress(html.read_bytes())) for html in found]


def item_hosts(pages: list[tuple[str, bytes]]) -> set[str]:
    """The hosts whose URLs the pages name for images or stylesheets (as the pages were
    published, before their URLs are pointed at the local servers)."""
    from zeroarchive.media.find import find_media

    hosts = set()
    for _, body in pages:
        url = "https://page.invalid/"
        for item in find_media(body, url, ["image", "style"]):
            host = urlsplit(item.url).hostname or ""
            if host and ABSOLUTE.match(f"//{host}/".encode()):
                hosts.add(host.lower())
    return hosts


def build(
    base: str, copies: int, per_list: int = 50, hosts: dict[str, str] | None = None
) -> tuple[ItemRoutes, list[str]]:
    """The routes of the pages (``copies`` times) and their list pages; every absolute URL
    pointed at ``base``, or at the base ``hosts`` gives its host."""
    served = hosts or {}

    def local(match: re.Match[bytes]) -> bytes:
        host = match.group(1)
        return f"{served.get(host.decode().lower(), base)}/h/".encode() + host + b"/"

    pages = [(name, ABSOLUTE.sub(local, body)) for name, body in saved_pages()]
    routes = ItemRoutes()
    articles = []
    for copy in range(copies):
        for name, body in pages:
            path = f"/c{copy}/{name}.html"
            routes[path] = Route(200, HTML, body)
            articles.append(path)
    lists = [articles[i : i + per_list] for i in range(0, len(articles), per_list)]
    for number, chunk in enumerate(lists, start=1):
        links = "".join(f'<li><a href="{p}">{p}</a></li>' for p in chunk)
        if number < len(lists):
            links += f'<a href="/list/{number + 1}.html">next</a>'
        routes[f"/list/{number}.html"] = Route(200, HTML, f"<ul>{links}</ul>".encode())
    return routes, articles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--hosts", action="store_true", help="each host of the pages' items on a port of its own"
    )
    options = parser.parse_args()
    arms = {"off": None, "images": ["images"], "on": None}
    rates: dict[str, list[float]] = {arm: [] for arm in arms}
    cpu: dict[str, list[float]] = {arm: [] for arm in arms}
    media: dict[str, int] = {}
    with (
        ReplayServer({}) as server,
        contextlib.ExitStack() as stack,
        tempfile.TemporaryDirectory() as tmp,
    ):
        servers = [server]
        hosts: dict[str, str] = {}
        if options.hosts:
            for host in sorted(item_hosts(saved_pages())):
                servers.append(stack.enter_context(ReplayServer({})))
                hosts[host] = servers[-1].base_url
        routes, articles = build(server.base_url, options.copies, hosts=hosts)
        for each in servers:
            each.routes = routes
        work = Path(tmp)
        for round_number in range(options.rounds):
            for arm, kinds in arms.items():
                db = work / f"{arm}-{round_number}.db"
                env = child_env(
                    PYTHONPATH=str(REPO),
                    ZEROARCHIVE_DB_URL=f"sqlite:///{db}",
                    ZEROARCHIVE_MEDIA_ENABLED="0" if arm == "off" else "1",
                )
                sites = work / "sites.json"
                site = {
                    "name": "corpus",
                    "url": server.url("/list/1.html"),
                    "config": {
                        "article": r"/c\d+/",
                        "following": r"/list/\d+\.html$",
                        "depth": 50,
                        "delay": 0,
                        **({"media": kinds} if kinds else {}),
                    },
                }
                sites.write_text(json.dumps([site]))
                run([sys.executable, "-m", "scrapy", "load_sites", str(sites)], REPO, env)
                elapsed, log = run(
                    [
                        sys.executable,
                        "-m",
                        "scrapy",
                        "crawl",
                        "generic",
                        "-s",
                        "SITE_POLICY_CONCURRENCY=16",
                        *BENCH_SETTINGS,
                    ],
                    REPO,
                    env,
                )
                saved = stat(log, "zeroarchive/snapshots_saved")
                if saved != len(articles):
                    raise SystemExit(f"saved {saved} of {len(articles)} pages:\n{log[-3000:]}")
                rates[arm].append(saved / elapsed)
                cpu[arm].append(CPU[-1] / saved)
                if arm == "on":
                    media = {
                        key: stat(log, f"zeroarchive/media/{key}")
                        for key in (
                            "pages",
                            "items",
                            "new",
                            "reused",
                            "batched",
                            "bytes_fetched",
                            "bytes_stored",
                        )
                    }
                    media["requests"] = stat(log, "downloader/request_count")
                    media["refused_too_many"] = stat(log, "zeroarchive/media/refused/too-many")
    print(
        json.dumps(
            {
                "articles": len(articles),
                "item_hosts": len(hosts) or 1,
                "pages_per_s": rates,
                "cpu_s_per_page": cpu,
            }
        )
    )
    print(f"media: {json.dumps(media)}")
    print(
        f"items per page: {media['items'] / len(articles):.1f} stored, "
        f"bytes stored/fetched {media['bytes_stored'] / max(media['bytes_fetched'], 1):.2f}"
    )
    for arm in ("images", "on"):
        speed = [on / off for on, off in zip(rates[arm], rates["off"], strict=True)]
        cost = [on / off for on, off in zip(cpu[arm], cpu["off"], strict=True)]
        rounds = ", ".join(f"{c:.2f}" for c in cost)
        print(f"pages/s {arm}/off: median {statistics.median(speed):.2f}")
        print(f"CPU per page {arm}/off: median {statistics.median(cost):.2f} ({rounds})")


if __name__ == "__main__":
    main()
