"""`scrapy monitor`: the GraphQL sites API (0archive's schema), the dashboard's pages,
archived pages made safe, auth, and the command's refusals, on both backends."""

from __future__ import annotations

import base64
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from graphql import print_type
from sqlalchemy import select, update
from starlette.testclient import TestClient

from tests.conftest import REPO, scrapy
from tests.monitor_archive import (
    COOKIES_FILE,
    LIMITS,
    NOW,
    PAGE,
    PROXY_PASSWORD,
    URL,
    Built,
    build,
)
from zeroarchive.core.schedule import DAY, STOP
from zeroarchive.monitor.app import create_app
from zeroarchive.monitor.config import MonitorConfig
from zeroarchive.monitor.pages import when
from zeroarchive.monitor.sites_api import build_schema
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.schema import article
from zeroarchive.storage.schema import site as site_table
from zeroarchive.storage.site_stats import SiteStatsConfig

# 0archive's technical spec, "GraphQL schema", as published.
SPEC_TYPES = {
    "SitesResult": "type SitesResult {\n  count: Int\n  items: [Site]!\n}",
    "Site": (
        "type Site {\n  id: ID!\n  name: String\n  url: String\n  type: String\n"
        "  airtableId: String\n  isActive: Boolean\n  articles: ArticlesResult!\n}"
    ),
    "ArticleHistory": "type ArticleHistory {\n  startAt: Date\n  days: Int\n  count: Int\n}",
}


def config(**changes: Any) -> MonitorConfig:
    values: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": 8080,
        "refresh_seconds": 60,
        "chart_days": 28,
        "site_articles": 100,
        "token": None,
        "username": None,
        "password": None,
        "limits": LIMITS,
        **changes,
    }
    return MonitorConfig(**values)


def make_client(db_url: str, **changes: Any) -> TestClient:
    engine = open_archive(url=db_url).engine
    app = create_app(engine, config(**changes), SiteStatsConfig(3, 3600), clock=lambda: NOW)
    # The Host allow-list admits loopback names only (TestClient's default is "testserver").
    return TestClient(app, base_url="http://127.0.0.1")


@pytest.fixture
def built(db_url: str) -> Built:
    return build(db_url)


@pytest.fixture
def client(db_url: str, built: Built) -> Iterator[TestClient]:
    with make_client(db_url) as client:
        yield client


def graphql(client: TestClient, query: str, **variables: Any) -> dict[str, Any]:
    answer = client.post("/graphql", json={"query": query, "variables": variables})
    body = answer.json()
    assert answer.status_code == 200 and "errors" not in body, body
    return body["data"]


def site_ids(html: str) -> list[int]:
    return [int(found) for found in re.findall(r'data-site-id="(\d+)"', html)]


def test_schema_is_0archive_spec() -> None:
    schema = build_schema()
    for name, printed in SPEC_TYPES.items():
        assert print_type(schema.type_map[name]) == printed
    articles = print_type(schema.type_map["ArticlesResult"])
    assert "  count: Int\n" in articles
    assert "hist(days: Int = 7): [ArticleHistory]!" in articles
    sites = schema.query_type.fields["sites"]  # type: ignore[union-attr]
    assert str(sites.type) == "SitesResult!"
    assert {name: str(arg.type) for name, arg in sites.args.items()} == {
        "id": "ID",
        "isActive": "Boolean",
    }


def test_sites_query(client: TestClient, built: Built) -> None:
    data = graphql(
        client,
        "{ sites { count items { id name url type airtableId isActive"
        " articles { count hist(days: 3) { startAt days count } } } } }",
    )
    assert data["sites"]["count"] == 4
    by_name = {item["name"]: item for item in data["sites"]["items"]}
    ltn = by_name["ltn"]
    assert ltn["id"] == str(built.sites["ltn"])
    assert (ltn["type"], ltn["airtableId"], ltn["isActive"]) == ("news", "recLTN0001", True)
    assert ltn["articles"]["count"] == 9
    # NOW is 2025-06-15: two found today, one yesterday, the snapshotted one two days ago.
    assert ltn["articles"]["hist"] == [
        {"startAt": "2025-06-13", "days": 1, "count": 1},
        {"startAt": "2025-06-14", "days": 1, "count": 1},
        {"startAt": "2025-06-15", "days": 1, "count": 2},
    ]
    assert by_name["farm"]["articles"]["count"] == 1
    assert sum(day["count"] for day in by_name["farm"]["articles"]["hist"]) == 0
    # Past the charts' 28 days, hist counts again: the farm's one article is 30 days old.
    longer = graphql(
        client,
        "query($id: ID) { sites(id: $id) { items { articles { hist(days: 40) { count } } } } }",
        id=str(built.sites["farm"]),
    )
    [farm] = longer["sites"]["items"]
    assert len(farm["articles"]["hist"]) == 40
    assert sum(day["count"] for day in farm["articles"]["hist"]) == 1


def test_sites_filters(client: TestClient, built: Built) -> None:
    inactive = graphql(client, "{ sites(isActive: false) { count items { name } } }")
    assert inactive["sites"] == {"count": 1, "items": [{"name": "gov-off"}]}
    one = graphql(
        client, "query($id: ID) { sites(id: $id) { count items { name } } }", id=built.sites["farm"]
    )
    assert one["sites"] == {"count": 1, "items": [{"name": "farm"}]}
    none = graphql(client, '{ sites(id: "999") { count items { name } } }')
    assert none["sites"] == {"count": 0, "items": []}
    bad = client.post("/graphql", json={"query": '{ sites(id: "ltn") { count } }'})
    assert "id must be a number" in bad.json()["errors"][0]["message"]
    json_type = {"Content-Type": "application/json"}
    assert client.post("/graphql", content=b"{not json", headers=json_type).status_code == 400
    # Only a POST of JSON: a cross-site GET or a form post cannot reach it.
    got = client.get("/graphql", params={"query": "{ sites { count } }"})
    assert got.status_code == 405 and got.headers["allow"] == "POST"


def test_article_queries(client: TestClient, built: Built) -> None:
    data = graphql(
        client,
        "query($site: ID!, $id: ID!) { articles(siteId: $site, limit: 2) { id url foundAt }"
        " article(id: $id) { url siteId snapshotCount }"
        " snapshots(articleId: $id) { snapshotAt storesBytes contentHash }"
        " publications(articleId: $id) { version title text } }",
        site=built.sites["ltn"],
        id=built.article_id,
    )
    assert [a["foundAt"] for a in data["articles"]] == [NOW - 60, NOW - 60]
    assert data["article"] == {
        "url": URL,
        "siteId": str(built.sites["ltn"]),
        "snapshotCount": 3,
    }
    assert [s["snapshotAt"] for s in data["snapshots"]] == list(built.snapshots)
    # The second snapshot repeated the first: no bytes of its own.
    assert [s["storesBytes"] for s in data["snapshots"]] == [True, False, True]
    assert [p["version"] for p in data["publications"]] == [1, 2]
    assert "停止禁食" in data["publications"][0]["title"]
    assert "結束禁食" in data["publications"][1]["title"]
    too_many = client.post(
        "/graphql", json={"query": "{ articles(siteId: 1, limit: 9999) { id } }"}
    )
    assert "limit must be" in too_many.json()["errors"][0]["message"]


def test_counts_are_reused_until_counted_again(
    client: TestClient, built: Built, db_url: str
) -> None:
    query = "query($id: ID) { sites(id: $id) { items { articles { count } } } }"
    count_of = {"id": built.sites["farm"]}
    assert graphql(client, query, **count_of)["sites"]["items"][0]["articles"]["count"] == 1
    open_archive(url=db_url).articles.add(
        built.sites["farm"], "Article", ["https://farm.example/p/2"], NOW
    )
    assert graphql(client, query, **count_of)["sites"]["items"][0]["articles"]["count"] == 1
    client.app.state.stats.refresh()  # type: ignore[attr-defined]
    assert graphql(client, query, **count_of)["sites"]["items"][0]["articles"]["count"] == 2
    assert "flag-quiet" not in client.get("/?type=content_farm").text


def test_the_dashboard_says_how_long_counting_took_only_when_it_was_slow(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The count's time as the clock reads it (a loaded machine took 2.6 s for the real one).
    for took, shown in ((0.2, False), (2.5, True)):
        ticks = iter([100.0, 100.0 + took])
        with monkeypatch.context() as clock:
            clock.setattr("zeroarchive.monitor.stats_cache.time.perf_counter", ticks.__next__)
            client.app.state.stats.refresh()  # type: ignore[attr-defined]
        text = client.get("/").text
        assert ("4 of 4 site(s); counting them took 2.5 s." in text) is shown, took
        assert ("counting them took" in text) is shown, took


def test_dashboard(client: TestClient, built: Built) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert "script-src" not in page.headers["content-security-policy"]  # none at all
    assert "default-src 'none'" in page.headers["content-security-policy"]
    html = page.text
    assert site_ids(html) == sorted(built.sites.values())
    # The columns that matter first; the rest folded into each row's "more".
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", html)
    assert heads[:5] == ["site", "flags", "articles", "new 3d", "new 7d"]
    assert {"last new article", "last list ok", "more"} <= set(heads)
    for folded in ("new 360d", "snapshots", "overdue", "blocked", "last list crawl"):
        assert f"<dt>{folded}</dt>" in html and folded not in heads
    # The site's name links to its page, its URL beside it.
    # Each isolated (bidi), so a right-to-left name or override reorders nothing beside it.
    assert re.search(
        r'<a href="/sites/\d+"><bdi>ltn</bdi></a> <span class="site-url"><bdi dir="ltr">https://news\.ltn',
        html,
    )
    assert client.get("/sites").text.count('<tr class="site') == 4
    assert '<a href="/search">Search</a>' in html and '<a href="/events">Events</a>' in html
    assert '<a href="/sites" aria-current="page">Sites</a>' in html
    row_of = {
        int(found.group(1)): found.group(0)
        for found in re.finditer(r'data-site-id="(\d+)">.*?</tr>', html, re.S)
    }
    assert "flag-quiet" in row_of[built.sites["farm"]]
    assert "flag-failing" in row_of[built.sites["walled"]]
    assert "flag-blocked" in row_of[built.sites["walled"]]
    assert "flag-" not in row_of[built.sites["ltn"]]
    # Each site's chart: one bar per day, the busiest (3 days ago: 4) full height.
    bars = re.findall(r'<rect [^>]*height="([\d.]+)"', row_of[built.sites["ltn"]])
    assert len(bars) == 28
    assert [float(bar) for bar in bars[-4:]] == [24.0, 6.0, 6.0, 12.0]
    # The filters: type (from the source registry), category, active.
    assert '<option value="youtube">' in html and '<option value="內容農場">' in html
    assert site_ids(client.get("/?type=content_farm").text) == [built.sites["farm"]]
    assert site_ids(client.get("/", params={"category": "新聞網站"}).text) == [built.sites["ltn"]]
    assert site_ids(client.get("/?active=no").text) == [built.sites["gov-off"]]
    assert len(site_ids(client.get("/?active=yes&type=news").text)) == 2


def test_site_page_hides_credentials(client: TestClient, built: Built) -> None:
    page = client.get(f"/sites/{built.sites['ltn']}")
    assert page.status_code == 200
    assert PROXY_PASSWORD not in page.text and "archiver" not in page.text
    assert COOKIES_FILE not in page.text and "ltn-cookies" not in page.text
    assert "http://***@proxy.example:3128" in page.text
    articles = re.findall(r'data-label="id"><a href="/articles/(\d+)">', page.text)
    # The most recently found first: today's two, yesterday's, then the one of 2 days ago.
    assert len(articles) == 9 and int(articles[3]) == built.article_id
    # A parsed article shows its latest title, its URL under it.
    assert re.search(rf'<a href="/articles/{built.article_id}"><bdi>[^<]*結束禁食', page.text)
    assert client.get("/sites/999").status_code == 404
    graph = graphql(client, "{ sites { items { url } } }")
    assert PROXY_PASSWORD not in str(graph)


def test_site_page_shows_the_sites_recoveries(db_url: str, built: Built) -> None:
    ltn = built.sites["ltn"]
    engine = open_archive(url=db_url).engine
    with engine.begin() as conn:
        conn.execute(
            update(site_table)
            .where(site_table.c.site_id == ltn)
            .values(recoveries=3, last_recovery_at=NOW - 60, walk_owner="w" + "1" * 15)
        )
    with make_client(db_url) as client:
        page = client.get(f"/sites/{ltn}").text
        quiet = client.get(f"/sites/{built.sites['farm']}").text
    assert re.search(r"<dt>recoveries</dt><dd>3, the last [^<]*\d", page)
    assert "a walk is begun" in page
    assert "<dt>recoveries</dt><dd>0</dd>" in quiet and "a walk is" not in quiet


def test_article_page_and_diff(client: TestClient, built: Built) -> None:
    page = client.get(f"/articles/{built.article_id}")
    assert page.status_code == 200
    links = re.findall(rf'href="/articles/{built.article_id}/snapshots/(\d+)"', page.text)
    assert [int(at) for at in links] == list(built.snapshots)
    # The latest version's title and text, read first.
    assert re.search(r'<h1 id="title"><bdi>[^<]*結束禁食', page.text)
    latest = re.search(r'<article id="latest".*?</article>', page.text, re.S)
    assert latest and "結束禁食" in latest.group(0) and "停止禁食" not in latest.group(0)
    # One timeline: snapshot, version 1, the unchanged snapshot, the edit, version 2.
    kinds = re.findall(r'<li class="(snapshot|version)">', page.text)
    assert kinds == ["snapshot", "version", "snapshot", "snapshot", "version"]
    # Up to the site.
    assert f'<a href="/sites/{built.sites["ltn"]}"><bdi>ltn</bdi></a>' in page.text
    assert len(re.findall(r"<tr class=\"version\" id=\"v\d+\">", page.text)) == 2
    assert 'id="diff"' not in page.text  # until two versions are chosen
    ids = [int(found) for found in re.findall(r'<option value="(\d+)"', page.text)][:2]
    compared = client.get(f"/articles/{built.article_id}", params={"a": ids[0], "b": ids[1]})
    changed = re.findall(
        r'<tr class="replace">.*?<td class="old">(.*?)</td>.*?<td class="new">(.*?)</td>',
        compared.text,
        re.S,
    )
    assert changed and all("停止禁食" not in old for old, _ in changed)
    # The lines differ in two characters: those are marked, the rest is not.
    assert all("<mark>停止</mark>禁食" in old for old, _ in changed)
    assert all("<mark>結束</mark>禁食" in new for _, new in changed)
    assert '<tr class="equal">' in compared.text  # unchanged lines face each other
    assert client.get("/articles/99999").status_code == 404


def test_pages_say_when_an_article_is_looked_at_next_and_which_sites_do_not_answer(
    db_url: str, built: Built
) -> None:
    engine = open_archive(url=db_url).engine
    with engine.begin() as conn:
        # The news article awaits the check that confirms a first 404.
        conn.execute(
            update(article)
            .where(article.c.article_id == built.article_id)
            .values(gone_at=NOW - 60, gone_evidence="404", next_snapshot_at=NOW + 540)
        )
        # The farm's article finished its plan; the long-tail watch looks again in a week.
        conn.execute(
            update(article)
            .where(article.c.site_id == built.sites["farm"])
            .values(next_snapshot_at=STOP, stop_reason="plan_complete", watch_at=NOW + 7 * DAY)
        )
        # Walks ran on the walled site; not one of its list pages ever answered.
        conn.execute(
            update(site_table)
            .where(site_table.c.site_id == built.sites["walled"])
            .values(last_crawl_at=NOW - 600)
        )
        farm_article = conn.execute(
            select(article.c.article_id).where(article.c.site_id == built.sites["farm"])
        ).scalar_one()
    with make_client(db_url) as client:
        suspected = client.get(f"/articles/{built.article_id}").text
        status = re.search(r'<p id="status"[^>]*>(.*?)</p>', suspected, re.S)
        assert status is not None
        assert status.group(1) == (
            # The evidence isolated: it may be a redirect's URL or a notice's words.
            f"Suspected gone (<bdi>404</bdi>) since {when(NOW - 60)} UTC; checking again at "
            f"{when(NOW + 540)} UTC to confirm."
        )
        check = re.search(r'<dd id="next-check">(.*?)</dd>', suspected)
        assert check is not None and "(deletion check: looks gone (404)" in check.group(1)
        watched = client.get(f"/articles/{farm_article}").text
        check = re.search(r'<dd id="next-check">(.*?)</dd>', watched)
        assert check is not None
        assert check.group(1) == f"{when(NOW + 7 * DAY)} UTC (the long-tail watch)"
        assert "never again" not in watched and 'id="status"' not in watched
        site_page = client.get(f"/sites/{built.sites['farm']}").text
        assert f"{when(NOW + 7 * DAY)} UTC (the long-tail watch)" in site_page
        dashboard = client.get("/").text
        row_of = {
            int(found.group(1)): found.group(0)
            for found in re.finditer(r'data-site-id="(\d+)">.*?</tr>', dashboard, re.S)
        }
        assert "flag-never-answered" in row_of[built.sites["walled"]]
        assert "never-answered" not in row_of[built.sites["ltn"]]


def test_archived_page_is_safe(client: TestClient, built: Built) -> None:
    at = built.snapshots[1]  # an unchanged snapshot: its bytes come from the first
    frame = client.get(f"/articles/{built.article_id}/snapshots/{at}")
    # No allow-scripts: the frame keeps the monitor's origin only to load the archive's
    # copies of its pictures as same-origin requests (tests/test_media_monitor.py).
    assert '<iframe id="archived" class="archived" sandbox="allow-same-origin"' in frame.text
    page = client.get(f"/articles/{built.article_id}/snapshots/{at}/page")
    assert page.status_code == 200
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "sandbox" in policy
    assert "allow-scripts" not in policy and "script-src" not in policy
    assert "林義雄宣布停止禁食" in page.text
    lowered = page.text.lower()
    assert "<script" not in lowered and " onload=" not in lowered and "<base" not in lowered
    assert not re.search(r'\ssrc="(https?:)?//', page.text)
    assert 'data-archived-src="http://www.ltn.com.tw/' in page.text
    assert b"<script" in PAGE.lower()
    missing = client.get(f"/articles/{built.article_id}/snapshots/{at + 1}/page")
    assert missing.status_code == 404
    assert client.get(f"/articles/{built.article_id}/snapshots/{at + 1}").status_code == 404


def test_token_and_basic_auth(db_url: str, built: Built) -> None:
    with make_client(db_url, token="t0ken", username="ann", password="pw") as client:
        refused = client.get("/")
        assert refused.status_code == 401 and "Basic" in refused.headers["www-authenticate"]
        assert client.post("/graphql", json={"query": "{ sites { count } }"}).status_code == 401
        bearer = {"Authorization": "Bearer t0ken"}
        assert client.get("/", headers=bearer).status_code == 200
        assert client.get("/static/monitor.css", headers=bearer).status_code == 200
        assert client.get("/", headers={"Authorization": "Bearer nope"}).status_code == 401
        basic = base64.b64encode(b"ann:pw").decode()
        assert client.get("/", headers={"Authorization": f"Basic {basic}"}).status_code == 200
        wrong = base64.b64encode(b"ann:no").decode()
        assert client.get("/", headers={"Authorization": f"Basic {wrong}"}).status_code == 401


def test_config_refuses_open_addresses() -> None:
    with pytest.raises(ValueError, match=r"refusing to serve 0\.0\.0\.0 without auth"):
        config(host="0.0.0.0").check()
    with pytest.raises(ValueError, match="needs MONITOR_ALLOWED_HOSTS"):
        config(host="0.0.0.0", token="t").check()
    config(host="0.0.0.0", token="t", allowed_hosts=("monitor.example",)).check()
    config(host="10.0.0.5", username="ann", password="pw").check()
    with pytest.raises(ValueError, match="needs both"):
        config(username="ann").check()
    with pytest.raises(ValueError, match="port"):
        config(port=0).check()


def test_command_refusals(tmp_path: Path) -> None:
    missing = scrapy("monitor", db_url=f"sqlite:///{tmp_path / 'none.db'}", cwd=REPO)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"monitor: no SQLite database at {tmp_path / 'none.db'}"
    ]
    assert not (tmp_path / "none.db").exists()
    empty = tmp_path / "empty.db"
    empty.touch()
    unmigrated = scrapy("monitor", db_url=f"sqlite:///{empty}", cwd=REPO)
    assert unmigrated.returncode == 2 and "run `scrapy migrate`" in unmigrated.stderr
    assert len(unmigrated.stderr.strip().splitlines()) == 1
    unreachable = scrapy("monitor", db_url="mysql+pymysql://u:pw@127.0.0.1:1/x", cwd=REPO)
    assert unreachable.returncode == 3
    [line] = unreachable.stderr.strip().splitlines()
    assert line.startswith("error: cannot reach the database at mysql+pymysql://u:***@")
    db = tmp_path / "archive.db"
    open_archive(url=f"sqlite:///{db}")
    for host in ("0.0.0.0", "192.0.2.7"):
        run = scrapy("monitor", "--host", host, db_url=f"sqlite:///{db}", cwd=REPO)
        assert run.returncode == 2
        assert run.stderr.strip().splitlines() == [
            f"monitor: refusing to serve {host} without auth: set MONITOR_TOKEN, or "
            "MONITOR_USERNAME and MONITOR_PASSWORD, in the environment (or bind 127.0.0.1)"
        ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_command_serves(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'archive.db'}"
    build(url)
    port = free_port()
    env = {
        "ZEROARCHIVE_DB_URL": url,
        "PYTHONPATH": str(REPO),
        "SCRAPY_SETTINGS_MODULE": "settings.base",
        "MONITOR_TOKEN": "s3cret-token",
        "PATH": "/usr/bin:/bin",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "monitor", "--host", "127.0.0.1", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/graphql",
            data=b'{"query": "{sites{count}}"}',
            headers={"Authorization": "Bearer s3cret-token", "Content-Type": "application/json"},
        )
        answer = None
        for _ in range(300):
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    answer = response.read()
                break
            except (ConnectionError, urllib.error.URLError):
                assert server.poll() is None, server.stdout.read()  # type: ignore[union-attr]
                time.sleep(0.1)
        assert answer == b'{"data":{"sites":{"count":4}}}'
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
        assert refused.value.code == 401
        refused.value.close()
    finally:
        server.terminate()
        output = server.communicate(timeout=30)[0].decode()
    assert "Monitor on http://127.0.0.1" in output and "auth required" in output
    assert "Traceback" not in output
