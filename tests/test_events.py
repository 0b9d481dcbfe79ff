"""Events end to end: a site served on 127.0.0.1 whose articles change between crawls over
a fake clock (ZEROARCHIVE_FAKE_NOW), crawled and parsed through the `scrapy` command line;
`scrapy events --json` must list every takedown, restoration and silent edit that
happened, and nothing else."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from tests.conftest import Run, scrapy
from tests.replay import ReplayServer, Route
from tests.test_generic import write_sites
from zeroarchive.core.schedule import DAY, HOUR, MINUTE
from zeroarchive.storage.schema import article

T0 = 1_800_000_000
HTML = (("Content-Type", "text/html; charset=utf-8"),)
PARAGRAPHS = (
    "行政院今日召開記者會，說明明年度的交通預算編列方式，並回應外界對票價調整的疑慮。",
    "發言人表示，相關單位已完成評估，將在下個月提出完整報告，供立法院審議參考。",
    "多位學者指出，票價政策牽動通勤族生計，政府應公開資料並舉辦公聽會廣納意見。",
)
ARTICLES = ("a404", "a410", "aredir", "asoft", "anotice", "aedit", "anoise", "a503")
LATE = ("alate", "alateedit")
SOFT_404 = (
    "<!doctype html><html><head><title>Oops</title></head><body><h1>Oops</h1>"
    "<p>We looked everywhere for %s and found nothing.</p><a href='/'>Home</a></body></html>"
)


def article_page(name: str, *, lead: str = "票價將調漲百分之十", noise: str = "1") -> Route:
    body = "".join(f"<p>{p}</p>" for p in PARAGRAPHS)
    html = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{name} 交通新聞</title>"
        f"<meta name='csrf-token' content='tok{noise}'></head><body>"
        f"<article><h1>{name} 交通新聞</h1><p>{lead}。</p>{body}</article>"
        f"<script>var views = {noise};</script></body></html>"
    )
    etag = f'"{name}-{abs(hash((lead, noise))) % 10**8}"'
    return Route(200, (*HTML, ("ETag", etag)), html.encode("utf-8"))


def front_page(names: tuple[str, ...] = ARTICLES + LATE) -> Route:
    links = "".join(f"<li><a href='/news/{n}'>{n}</a></li>" for n in names)
    html = f"<!doctype html><html><head><title>Front</title></head><body><ul>{links}</ul>"
    return Route(200, HTML, html.encode("utf-8"))


def status_page(status: int) -> Route:
    return Route(status, HTML, f"<html><body><h1>{status}</h1></body></html>".encode())


def run(*args: str, db_url: str, tmp_path: Path, at: int) -> Run:
    done = scrapy(*args, db_url=db_url, cwd=tmp_path, extra_env={"ZEROARCHIVE_FAKE_NOW": str(at)})
    assert done.returncode == 0, done.output
    assert "Traceback" not in done.output, done.output
    return done


def events(db_url: str, tmp_path: Path, at: int) -> list[dict[str, object]]:
    out = run("events", "--json", db_url=db_url, tmp_path=tmp_path, at=at).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def found(listed: list[dict[str, object]], base: str) -> set[tuple[object, str, object]]:
    return {(e["kind"], str(e["url"]).removeprefix(base), e["evidence"]) for e in listed}


def test_every_takedown_edit_and_restoration_is_an_event_and_nothing_else(
    db_url: str, tmp_path: Path
) -> None:
    routes = {"/": front_page(), **{f"/news/{n}": article_page(n) for n in ARTICLES + LATE}}
    with ReplayServer(routes) as server:
        server.fallback = Route(200, HTML, (SOFT_404 % "that page").encode())
        base = server.url("/news/")
        config = {"article": "/news/", "following": r"^http://127\.0\.0\.1:\d+/$", "delay": 0}
        sites = [{"name": "farm", "url": server.url("/"), "type": "news", "config": config}]
        loaded = scrapy(
            "load_sites", str(write_sites(tmp_path / "s.yaml", sites)), db_url=db_url, cwd=tmp_path
        )
        assert loaded.returncode == 0, loaded.output

        def crawl(at: int) -> Run:
            # Scrapy retries the 503 three times; the pauses between (2, 4 and 8 s by
            # default) are not what this test is about.
            quick = ("-s", "RETRY_BACKOFF_BASE=0.05")
            return run("crawl", "generic", *quick, db_url=db_url, tmp_path=tmp_path, at=at)

        first = crawl(T0)
        assert "'zeroarchive/events/probes': 1" in first.output

        # Two hours on: takedowns of every kind, an edit, a noise-only change, a 503.
        t1 = T0 + 2 * HOUR
        routes["/news/a404"] = status_page(404)
        routes["/news/a410"] = status_page(410)
        routes["/news/aredir"] = Route(302, (*HTML, ("Location", server.url("/"))), b"")
        routes["/news/asoft"] = Route(200, HTML, (SOFT_404 % "/news/asoft").encode())
        routes["/news/anotice"] = Route(
            200,
            HTML,
            "<html><body><h1>此文章已被刪除</h1><a href='/'>回首頁</a></body></html>".encode(),
        )
        routes["/news/aedit"] = article_page("aedit", lead="票價將調漲百分之五")
        routes["/news/anoise"] = article_page("anoise", noise="2")
        routes["/news/a503"] = status_page(503)
        crawl(t1)
        assert events(db_url, tmp_path, t1) == []  # nothing confirmed yet
        engine = create_engine(db_url)
        with engine.connect() as conn:
            rows = {
                r.url.removeprefix(base): r
                for r in conn.execute(
                    select(article.c.url, article.c.next_snapshot_at, article.c.gone_evidence)
                )
            }
        assert rows["a404"].next_snapshot_at == t1 + 10 * MINUTE  # not stopped
        assert rows["aredir"].gone_evidence.startswith("redirect:")

        # Eleven minutes later the 503 has passed; the takedowns are confirmed.
        t2 = t1 + 11 * MINUTE
        routes["/news/a503"] = article_page("a503")
        crawl(t2)
        run("parse_snapshots", db_url=db_url, tmp_path=tmp_path, at=t2)
        early = {
            ("deleted", "a404", "404"),
            ("deleted", "a410", "410"),
            ("deleted", "aredir", f"redirect:{server.url('/')}"),
            ("deleted", "asoft", "soft-404"),
            ("deleted", "anotice", "removed-notice"),
            ("edited", "aedit", "text"),
        }
        assert found(events(db_url, tmp_path, t2), base) == early

        # The plan (news: a day) ends; a week after the first snapshot the watch looks again.
        crawl(T0 + DAY + HOUR)
        t3 = T0 + 7 * DAY + HOUR
        routes["/news/alate"] = status_page(404)
        routes["/news/alateedit"] = article_page("alateedit", lead="票價不調整")
        routes["/news/a404"] = article_page("a404")
        server.reset_hits()
        watched = crawl(t3)
        # Unchanged pages answered the conditional request with 304: nothing stored.
        assert "'zeroarchive/watch/not_modified'" in watched.output
        assert server.hits["/news/anoise"] == 1
        crawl(t3 + 11 * MINUTE)
        run("parse_snapshots", db_url=db_url, tmp_path=tmp_path, at=t3 + 12 * MINUTE)
        listed = events(db_url, tmp_path, t3 + 12 * MINUTE)
        late = {
            ("deleted", "alate", "404"),
            ("edited", "alateedit", "text"),
            ("restored", "a404", "answered:200"),
        }
        assert found(listed, base) == early | late
        assert len(listed) == len(early | late)
        assert [e["detected_at"] for e in listed] == sorted(e["detected_at"] for e in listed)
        restored = next(e for e in listed if e["kind"] == "restored")
        deleted = next(e for e in listed if e["kind"] == "deleted" and e["url"] == base + "a404")
        assert restored["before_snapshot_at"] == deleted["before_snapshot_at"] == T0
        assert set(listed[0]) == {
            "kind",
            "article_id",
            "site",
            "url",
            "detected_at",
            "evidence",
            "before_snapshot_at",
            "after_snapshot_at",
        }

        # Crawling, parsing and listing again add nothing.
        crawl(t3 + 30 * MINUTE)
        run("parse_snapshots", db_url=db_url, tmp_path=tmp_path, at=t3 + 31 * MINUTE)
        assert events(db_url, tmp_path, t3 + 31 * MINUTE) == listed
        engine.dispose()


@pytest.mark.parametrize("kind", ["nonsense"])
def test_events_rejects_an_unknown_kind_in_one_line(kind: str, tmp_path: Path) -> None:
    done = scrapy("events", "--kind", kind, db_url=f"sqlite:///{tmp_path}/a.db", cwd=tmp_path)
    assert done.returncode != 0
    assert "Traceback" not in done.output
    assert "--kind takes deleted, edited, restored" in done.output


def test_a_soft_404_met_in_the_sites_first_crawl_is_caught(db_url: str, tmp_path: Path) -> None:
    """The first crawl asks the probe and the articles at once, so a soft 404 may be
    stored before the site's not-found page is known: the next fetch catches it."""
    gone = Route(200, HTML, (SOFT_404 % "/news/afirst").encode())
    routes = {"/": front_page(("afirst", "alive")), "/news/afirst": gone}
    routes["/news/alive"] = article_page("alive")
    # Not the slow fallback below: each run asks for robots.txt before anything else.
    routes["/robots.txt"] = status_page(404)
    with ReplayServer(routes) as server:
        # The probe answers slowly, after the articles' pages were sorted and stored.
        server.fallback = Route(200, HTML, (SOFT_404 % "that page").encode(), delay=3)
        config = {"article": "/news/", "following": r"^http://127\.0\.0\.1:\d+/$", "delay": 0}
        sites = [{"name": "farm", "url": server.url("/"), "type": "news", "config": config}]
        loaded = scrapy(
            "load_sites", str(write_sites(tmp_path / "s.yaml", sites)), db_url=db_url, cwd=tmp_path
        )
        assert loaded.returncode == 0, loaded.output
        at_once = ("-s", "ZEROARCHIVE_SNAPSHOT_BATCH=1", "-s", "SITE_POLICY_CONCURRENCY=4")
        first = run("crawl", "generic", *at_once, db_url=db_url, tmp_path=tmp_path, at=T0)
        assert "'zeroarchive/events/probes': 1" in first.output
        assert "zeroarchive/events/suspected" not in first.output  # stored as a snapshot
        server.fallback = replace(server.fallback, delay=0)  # the later runs are not about it
        for at in (T0 + 2 * HOUR, T0 + 2 * HOUR + 11 * MINUTE):
            run("crawl", "generic", db_url=db_url, tmp_path=tmp_path, at=at)
        base = server.url("/news/")
        listed = events(db_url, tmp_path, T0 + 3 * HOUR)
    assert found(listed, base) == {("deleted", "afirst", "soft-404")}
