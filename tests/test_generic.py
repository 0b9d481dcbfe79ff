"""End-to-end crawls of replayed real sites through the real `scrapy` command line."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import yaml
from sqlalchemy import create_engine, func, select

from tests.conftest import Run, scrapy
from tests.replay import ReplayServer, Route, site_routes, tw_news_pages, tw_news_routes
from zeroarchive.core.urls import canonicalize_url
from zeroarchive.crawl.runlock import SiteRunLocks, default_lock_dir
from zeroarchive.storage.schema import article, article_snapshot, site
from zeroarchive.storage.snapshots import read_snapshot

HREF = re.compile(rb'href="([^"]+)"')
# news.example (tests/replay.py): list pages "/" and "/news", articles under "/news/".
# A gov site's default budget is one walk a day per list page, which the first crawl spends;
# the tests walk it again by name the same minute: beyond the budget, as a person asked.
SITE_CONFIG = {"article": "/news/", "following": r"^http://127\.0\.0\.1:\d+/(news)?$", "delay": 0}
NEWS_ARTICLE = r"^http://127\.0\.0\.1:\d+/[\w.-]+\.(com|net|tw)[\w.]*/"


def write_sites(path: Path, sites: list[dict[str, object]]) -> Path:
    path.write_text(yaml.safe_dump(sites, allow_unicode=True), encoding="utf-8")
    return path


def load_and_crawl(
    db_url: str, tmp_path: Path, sites: list[dict[str, object]], *crawl_args: str
) -> Run:
    loaded = scrapy(
        "load_sites", str(write_sites(tmp_path / "sites.yaml", sites)), db_url=db_url, cwd=tmp_path
    )
    assert loaded.returncode == 0, loaded.output
    return crawl(db_url, tmp_path, *crawl_args)


def crawl(db_url: str, tmp_path: Path, *args: str) -> Run:
    run = scrapy("crawl", "generic", *args, db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    assert "Traceback" not in run.output, run.output
    return run


def stat(run: Run, key: str) -> int:
    """A counter from the stats dump at the end of a crawl log (0 when absent)."""
    found = re.search(rf"'{re.escape(key)}': (\d+)", run.output)
    return int(found.group(1)) if found else 0


def table_counts(db_url: str) -> tuple[int, int]:
    engine = create_engine(db_url)
    with engine.connect() as conn:
        articles = conn.execute(select(func.count()).select_from(article)).scalar_one()
        snapshots = conn.execute(select(func.count()).select_from(article_snapshot)).scalar_one()
    engine.dispose()
    return articles, snapshots


def list_ok_at(db_url: str) -> dict[str, int]:
    """When each site's list pages last answered (Site.last_list_ok_at), by site name."""
    engine = create_engine(db_url)
    with engine.connect() as conn:
        rows = conn.execute(select(site.c.name, site.c.last_list_ok_at)).all()
    engine.dispose()
    return {row.name: row.last_list_ok_at for row in rows}


def articles_by_url(db_url: str) -> dict[str, dict[str, object]]:
    engine = create_engine(db_url)
    with engine.connect() as conn:
        rows = conn.execute(select(article)).mappings().all()
    engine.dispose()
    return {row["url"]: dict(row) for row in rows}


def export(db_url: str, tmp_path: Path, *args: str) -> list[dict[str, object]]:
    out = tmp_path / "export.jsonl.gz"
    run = scrapy("export_snapshots", "--out", str(out), *args, db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    with gzip.open(out, "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    assert f"export_snapshots: {len(records):,} snapshots done in" in run.output
    return records


def linked_articles(server: ReplayServer, list_paths: list[str], pattern: str) -> set[str]:
    """What a reader finds by hand: links on the given list pages that match ``pattern``."""
    found = set()
    for path in list_paths:
        page_url = server.url(path)
        body = re.sub(rb"<!--.*?-->", b"", server.routes[path].body, flags=re.DOTALL)
        for href in HREF.findall(body):
            url = urljoin(page_url, href.decode())
            if urlsplit(url).netloc == urlsplit(page_url).netloc and re.search(pattern, url):
                found.add(canonicalize_url(url))
    return found


def test_site_crawl_archives_every_article_once(db_url: str, tmp_path: Path) -> None:
    with ReplayServer(site_routes()) as server:
        site = {"name": "example", "url": server.url("/"), "type": "gov", "config": SITE_CONFIG}
        first = load_and_crawl(db_url, tmp_path, [site])

        expected = linked_articles(server, ["/", "/news"], "/news/")
        # 5 pages and a PDF, a short link that redirects, a recorded 404 and 2 never captured.
        assert len(expected) == 10
        stored = articles_by_url(db_url)
        assert expected <= set(stored)
        saved = moved = gone = 0
        targets = set()
        for url in expected:
            path = urlsplit(url).path
            assert server.hits[path] == 1, (path, server.hits[path])
            row = stored[url]
            route = server.routes.get(path)
            if route is None or route.status == 404:
                gone += 1
                # A first 404 is a suspect, checked again 10 minutes later (events).
                assert row["gone_evidence"] == "404"
                assert row["next_snapshot_at"] == row["gone_at"] + 600
            elif route.status == 200:
                saved += 1
                assert row["snapshot_count"] == 1, url
                # gov pages are archived once.
                assert row["next_snapshot_at"] == 0
            else:
                moved += 1
                target_path = route.header("Location") or ""
                targets.add(target_path)
                target = stored[server.url(target_path)]
                assert server.hits[target_path] == 1
                assert row["redirect_to"] == target["article_id"]
                assert row["stop_reason"] == "moved"
                assert target["snapshot_count"] == 1
        assert (saved, moved, gone) == (6, 1, 3)
        assert stat(first, "zeroarchive/snapshots_saved") == saved + moved
        assert stat(first, "zeroarchive/errors/http_404") == gone
        # Nothing else is fetched: not the about page, nor what pages embed (style, logo);
        # but one made-up URL, the soft-404 probe (zeroarchive/events/probe.py).
        articles = {urlsplit(url).path for url in expected} | targets
        probes = {path for path in server.hits if path.startswith("/zeroarchive-probe-")}
        assert len(probes) == 1
        assert set(server.hits) - probes == {"/robots.txt", "/", "/news"} | articles
        assert "Site example (#1):" in first.output

        counts = table_counts(db_url)
        hits = server.hits.copy()
        again = crawl(db_url, tmp_path)
        assert "none due" in again.output
        walked = crawl(db_url, tmp_path, "-a", "site=example")
        assert stat(walked, "zeroarchive/list_pages") == 2
        # Its budget (one walk a day per tracked page) went to the first crawl: a person's
        # walk is made all the same, and says so in one line and a stat.
        assert stat(walked, "zeroarchive/list_pages/over_budget") == 2
        assert "2 list request(s) beyond its budget of 2 a day (2 used today)" in walked.output
        assert stat(walked, "zeroarchive/articles_new") == 0
        assert table_counts(db_url) == counts
        assert {p: n for p, n in server.hits.items() if "/news/" in p} == {
            p: n for p, n in hits.items() if "/news/" in p
        }

    records = {
        str(r["url"]).split("/", 3)[3]: r for r in export(db_url, tmp_path, "--site", "example")
    }
    assert len(records) == counts[1] == saved + moved
    drill = records["news/2019/08/20/north-korea-drill.html"]
    assert "N. Korea slams S. Korea for joint military drill" in str(drill["html"])
    report = server.routes["/news/2024/05/01/annual-report"].body
    assert records["news/2024/05/01/annual-report"]["content_hash"] == (
        hashlib.sha256(report).hexdigest()
    )
    pages = [r for path, r in records.items() if path.endswith(".html")]
    assert {r["encoding"] for r in pages} == {"utf-8"}


def test_tw_news_crawl_decodes_every_page(db_url: str, tmp_path: Path) -> None:
    pages = tw_news_pages()
    with ReplayServer(tw_news_routes()) as server:
        site = {
            "name": "tw-news",
            "url": server.url("/news/"),
            "type": "news",
            "config": {
                "article": NEWS_ARTICLE,
                "following": r"/news/list-\d+\.html$",
                "depth": 5,
                "delay": 0,
            },
        }
        first = load_and_crawl(db_url, tmp_path, [site])
        assert stat(first, "zeroarchive/list_pages") == 4
        assert stat(first, "zeroarchive/articles_new") == len(pages)
        assert stat(first, "zeroarchive/snapshots_saved") == len(pages)
        for page in pages:
            assert server.hits[server.route_key(page.path)] == 1, page.name
        assert table_counts(db_url) == (len(pages), len(pages))

        again = crawl(db_url, tmp_path, "-a", "site=tw-news")
        assert stat(again, "zeroarchive/articles_new") == 0
        assert stat(again, "zeroarchive/snapshots_saved") == 0
        assert table_counts(db_url) == (len(pages), len(pages))

    records = {}
    for record in export(db_url, tmp_path):
        parts = urlsplit(str(record["url"]))
        records[server.route_key(parts.path + (f"?{parts.query}" if parts.query else ""))] = record
    for page in pages:
        record = records[page.path]
        html = str(record["html"])
        assert page.title in html, page.name
        for snippet in page.body_snippets:
            assert snippet in html, (page.name, snippet)
        assert record["status"] == 200


def test_run_lock_refuses_a_second_run_of_a_site(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'archive.db'}"
    with ReplayServer(site_routes()) as server:
        site = {"name": "example", "url": server.url("/"), "type": "gov", "config": SITE_CONFIG}
        loaded = scrapy(
            "load_sites", str(write_sites(tmp_path / "s.yaml", [site])), db_url=db_url, cwd=tmp_path
        )
        assert loaded.returncode == 0
        locks = SiteRunLocks(default_lock_dir(db_url))
        assert locks.acquire(1)
        try:
            refused = scrapy("crawl", "generic", "-a", "site=example", db_url=db_url, cwd=tmp_path)
            assert refused.returncode == 2
            assert "is already being crawled" in refused.output
            skipped = crawl(db_url, tmp_path)
            assert "Skipping site example (#1): another run" in skipped.output
        finally:
            locks.release_all()
        assert sum(server.hits.values()) == 0
        crawl(db_url, tmp_path, "-a", "site=example")
        assert server.hits["/news"] == 1


def test_bad_arguments_exit_non_zero(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'archive.db'}"
    unknown = scrapy("crawl", "generic", "-a", "site=nowhere", db_url=db_url, cwd=tmp_path)
    assert unknown.returncode == 2
    assert "No news/content_farm/gov/organization site 'nowhere'" in unknown.output
    bad_regex = scrapy(
        "crawl",
        "generic",
        "-a",
        "url=http://127.0.0.1:9/",
        "-a",
        "article=(unclosed",
        db_url=db_url,
        cwd=tmp_path,
    )
    assert bad_regex.returncode == 2
    assert "article: bad regex '(unclosed'" in bad_regex.output
    bad_mode = scrapy("crawl", "generic", "-a", "mode=everything", db_url=db_url, cwd=tmp_path)
    assert bad_mode.returncode == 2
    assert "Unknown mode 'everything'" in bad_mode.output


def stamped(body: bytes, n: int) -> bytes:
    """``body`` with a few bytes in its middle changed, as an ad id or a clock changes."""
    middle = len(body) // 2
    return body[:middle] + b"<!-- ad %06d -->" % n + body[middle:]


CHANGING_PAGES = 12


def test_changed_resnapshots_are_stored_against_the_first(db_url: str, tmp_path: Path) -> None:
    """A news site whose pages change a few bytes on every fetch, re-snapshotted an hour
    apart on the fake clock: the re-snapshots are zstd-ref frames, a small fraction of the
    first, and every snapshot reads and exports back as served. Twelve of the 34 pages,
    both sources and their encodings (every page decoding is the test above's): each
    page more cost its three crawls CPU."""
    pages = tw_news_pages(CHANGING_PAGES)
    routes = tw_news_routes(count=CHANGING_PAGES)
    originals = {page.path: routes[page.path].body for page in pages}
    served: dict[tuple[str, int], bytes] = {}
    t0 = 1_700_000_000
    with ReplayServer(routes) as server:
        site = {
            "name": "tw-news",
            "url": server.url("/news/"),
            "type": "news",
            "config": {
                "article": NEWS_ARTICLE,
                "following": r"/news/list-\d+\.html$",
                "depth": 5,
                "delay": 0,
            },
        }
        loaded = scrapy(
            "load_sites",
            str(write_sites(tmp_path / "sites.yaml", [site])),
            db_url=db_url,
            cwd=tmp_path,
        )
        assert loaded.returncode == 0, loaded.output
        runs = []
        for hour in range(3):
            now = t0 + hour * 3600
            for path, body in originals.items():
                route = server.routes[path]
                served[(path, now)] = stamped(body, hour)
                server.routes[path] = Route(route.status, route.headers, stamped(body, hour))
            mode = "all" if hour == 0 else "snapshot"
            run = scrapy(
                "crawl",
                "generic",
                "-a",
                f"mode={mode}",
                db_url=db_url,
                cwd=tmp_path,
                extra_env={"ZEROARCHIVE_FAKE_NOW": str(now)},
            )
            assert run.returncode == 0 and "Traceback" not in run.output, run.output
            runs.append(run)
    assert [stat(run, "zeroarchive/snapshots_saved") for run in runs] == [len(pages)] * 3
    assert [stat(run, "zeroarchive/snapshots_referenced") for run in runs] == [
        0,
        len(pages),
        len(pages),
    ]
    stored = [stat(run, "zeroarchive/snapshot_bytes_stored") for run in runs]
    raw = [stat(run, "zeroarchive/snapshot_bytes_raw") for run in runs]
    assert stored[1] < stored[0] / 20 and stored[2] < stored[0] / 20
    assert stored[0] < raw[0] / 2

    engine = create_engine(db_url)
    with engine.connect() as conn:
        rows = conn.execute(
            select(article_snapshot.c.article_id, article_snapshot.c.snapshot_at).order_by(
                article_snapshot.c.article_id, article_snapshot.c.snapshot_at
            )
        ).all()
    assert len(rows) == 3 * len(pages)
    for row in rows:
        snapshot = read_snapshot(engine, row.article_id, row.snapshot_at)
        assert snapshot.raw in {body for (_, at), body in served.items() if at == row.snapshot_at}
    engine.dispose()
    records = export(db_url, tmp_path)
    assert len(records) == len(rows)
    assert {str(r["content_hash"]) for r in records} == {
        hashlib.sha256(body).hexdigest() for body in served.values()
    }
