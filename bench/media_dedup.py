"""What media cost in bytes on real crawls: saved WARC crawls replayed with their page
requisites, crawled with media on, bytes fetched against bytes stored, and what that makes
per 1,000 articles.

The WARCs of ``../shared/corpora/warc`` that hold pages with their images and stylesheets
as a crawler really fetched them: www.iana.org (pywb's sample crawl, 2014: 20 pages, their
CSS, SVG, PNG and fonts), en.wikipedia.org's main page on the SOPA blackout day and after
it (2012, wget with every requisite, from upload/bits.wikimedia.org) and archive.org (wget,
2008-2013). Every host of a WARC is served by a server of its own on 127.0.0.1 (so a
page's root-relative URLs stay right), each absolute URL to a host of the WARC pointed at
its server, each URL answered with its first captured response (what the WARC lacks is a
404). One site per WARC: a list page linking its HTML pages, each an article. Then
``scrapy crawl generic`` into a fresh SQLite file, media on, as configured by default
(images and styles), twice: with the crawl's reuse of items it fetched
(``ZEROARCHIVE_MEDIA_REUSE_SECONDS``, the default) and without (every item of every
snapshot fetched; storing once is then the only saving).

Prints per site and in all: articles, item records, items stored, bytes fetched, bytes
stored (new bytes), stored/fetched, the bytes a site's first article added (its logo,
stylesheets, fonts: stored once for the site) and the mean new bytes of each later
article, and the sizing per 1,000 articles they make: first + 999 x later.

    python bench/media_dedup.py
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ["ZEROARCHIVE_ALLOW_PRIVATE_TARGETS"] = "1"

from sqlalchemy import create_engine, select  # noqa: E402
from warcio.archiveiterator import ArchiveIterator  # noqa: E402

from bench.corpora import CORPORA  # noqa: E402
from bench.crawl_embedded import BENCH_SETTINGS, child_env, run, stat  # noqa: E402
from tests.replay import ReplayServer, Route  # noqa: E402
from zeroarchive.storage.schema import article, media_item, site, snapshot_media  # noqa: E402

WARCS = {
    "iana": "pywb__iana.warc.gz",
    "wikipedia-blackout": "ukwa__wikipedia-post-blackout_main-page.warc.gz",
    "wikipedia-after": "ukwa__wikipedia-post-blackout_post-blackout.warc.gz",
    "archive-org": "ukwa__IAH-urls-wget.warc.gz",
}
TEXT = ("text/html", "text/css")
LIST = "/zz-bench-list.html"


def captures(warc: Path) -> dict[str, dict[str, Route]]:
    """host -> path+query -> the first captured response of that URL."""
    hosts: dict[str, dict[str, Route]] = defaultdict(dict)
    with warc.open("rb") as handle:
        for record in ArchiveIterator(handle):
            if record.rec_type != "response" or record.http_headers is None:
                continue
            url = urlsplit(record.rec_headers.get_header("WARC-Target-URI"))
            key = url.path + (f"?{url.query}" if url.query else "")
            if not url.hostname or key in hosts[url.hostname]:
                continue
            status = int(record.http_headers.get_statuscode() or 0)
            headers = []
            for name in ("Content-Type", "Location"):
                value = record.http_headers.get_header(name)
                if value:
                    headers.append((name, value))
            hosts[url.hostname][key] = Route(status, tuple(headers), record.content_stream().read())
    return hosts


def pointed(body: bytes, origins: dict[str, str]) -> bytes:
    """``body`` with its absolute URLs on the WARC's hosts pointed at their servers."""
    pattern = re.compile(
        rb"(?:https?:)?//(" + b"|".join(re.escape(h.encode()) for h in origins) + rb")(?=[/\"'):])"
    )
    return pattern.sub(lambda m: origins[m.group(1).decode()].encode(), body)


def main() -> None:
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        work = Path(tmp)
        sites = []
        pages_of: dict[str, list[str]] = {}
        for name, file in WARCS.items():
            hosts = captures(CORPORA / "warc" / file)
            servers = {host: stack.enter_context(ReplayServer({})) for host in hosts}
            origins = {host: server.base_url for host, server in servers.items()}
            pages = []
            for host, routes in hosts.items():
                for key, route in routes.items():
                    kind = (route.header("Content-Type") or "").split(";")[0].strip().lower()
                    if kind in TEXT:
                        route = Route(route.status, route.headers, pointed(route.body, origins))
                    routes[key] = route
                    if kind == "text/html" and route.status == 200 and "robots" not in key:
                        pages.append(servers[host].url(key))
                servers[host].routes = routes
            # The pages' own host: the one with the most of them.
            home = max(hosts, key=lambda h: sum(p.startswith(origins[h]) for p in pages))
            links = "".join(f'<a href="{p}">{p}</a>' for p in pages)
            servers[home].routes[LIST] = Route(
                200, (("Content-Type", "text/html"),), f"<html><body>{links}</body></html>".encode()
            )
            pages_of[name] = pages
            sites.append(
                {
                    "name": name,
                    "url": servers[home].url(LIST),
                    "config": {
                        "article": "^(" + "|".join(re.escape(p) for p in pages) + ")$",
                        "delay": 0,
                        "allow_private_targets": True,
                    },
                }
            )
        (work / "sites.json").write_text(json.dumps(sites))
        for arm, reuse in (("reuse", "86400"), ("no-reuse", "0")):
            db = work / f"{arm}.db"
            env = child_env(
                PYTHONPATH=str(REPO),
                ZEROARCHIVE_DB_URL=f"sqlite:///{db}",
                ZEROARCHIVE_MEDIA_ENABLED="1",
            )
            run([sys.executable, "-m", "scrapy", "load_sites", str(work / "sites.json")], REPO, env)
            _, log = run(
                [
                    sys.executable,
                    "-m",
                    "scrapy",
                    "crawl",
                    "generic",
                    "-s",
                    f"ZEROARCHIVE_MEDIA_REUSE_SECONDS={reuse}",
                    *BENCH_SETTINGS,
                ],
                REPO,
                env,
            )
            saved = stat(log, "zeroarchive/snapshots_saved")
            if saved != sum(len(p) for p in pages_of.values()):
                raise SystemExit(f"saved {saved} pages:\n{log[-3000:]}")
            results[arm] = measure(f"sqlite:///{db}", log)
    print(json.dumps(results, indent=1))
    for arm, by_site in results.items():
        print(f"== {arm}")
        for name, row in by_site.items():
            print(
                f"{name:20} articles {row['articles']:3.0f}  records {row['records']:4.0f}  "
                f"stored {row['stored']:4.0f}  fetched {row['bytes_fetched'] / 1e6:6.2f} MB  "
                f"stored {row['bytes_stored'] / 1e6:6.2f} MB  stored/fetched "
                f"{row['bytes_stored'] / max(row['bytes_fetched'], 1):.3f}  first article "
                f"{row['first_article'] / 1e3:7.1f} KB  each later "
                f"{row['later_mean'] / 1e3:6.1f} KB  per 1,000 articles "
                f"{row['per_1000'] / 1e6:7.1f} MB  reused {row['reused']:3.0f}  "
                f"pages stored {row['pages_stored'] / 1e3:6.1f} KB"
            )


def measure(url: str, log: str) -> dict[str, dict[str, float]]:
    """Per site: records, stored items, bytes fetched (from the crawl's counters) and
    stored, the new bytes of its first article and the mean of the later ones."""
    engine = create_engine(url)
    by_site: dict[str, dict[str, float]] = {}
    with engine.connect() as conn:
        sizes = {bytes(r.sha256): int(r.size) for r in conn.execute(select(media_item))}
        site_of = {
            int(r.article_id): int(r.site_id)
            for r in conn.execute(select(article.c.article_id, article.c.site_id))
        }
        rows = conn.execute(select(snapshot_media).order_by(snapshot_media.c.media_id)).all()
        names = {int(r.site_id): r.name for r in conn.execute(select(site))}
    seen: set[bytes] = set()
    new_by_article: dict[int, int] = defaultdict(int)
    articles_of: dict[int, list[int]] = defaultdict(list)
    records: dict[int, int] = defaultdict(int)
    stored: dict[int, int] = defaultdict(int)
    for row in rows:
        site_id = site_of[int(row.article_id)]
        if int(row.article_id) not in articles_of[site_id]:
            articles_of[site_id].append(int(row.article_id))
        records[site_id] += 1
        if row.sha256 is None:
            continue
        stored[site_id] += 1
        digest = bytes(row.sha256)
        if digest not in seen:
            seen.add(digest)
            new_by_article[int(row.article_id)] += sizes[digest]
    for site_id, name in names.items():
        order = articles_of.get(site_id, [])
        if not order:
            continue
        first = new_by_article[order[0]]
        later = [new_by_article[a] for a in order[1:]]
        later_mean = sum(later) / len(later) if later else 0.0
        by_site[name] = {
            "articles": len(order),
            "records": records[site_id],
            "stored": stored[site_id],
            "bytes_fetched": stat(log, f"zeroarchive/site/{site_id}/media/bytes_fetched"),
            "bytes_stored": stat(log, f"zeroarchive/site/{site_id}/media/bytes_stored"),
            "first_article": first,
            "later_mean": later_mean,
            "per_1000": first + 999 * later_mean,
            "reused": stat(log, f"zeroarchive/site/{site_id}/media/reused"),
            "pages_stored": stat(log, f"zeroarchive/site/{site_id}/snapshot_bytes_stored"),
        }
    return by_site


if __name__ == "__main__":
    main()
