"""Search in the monitor: the GraphQL ``search`` connection (both engines), the /search
page, and the page in a real browser (Debian's Chromium through Playwright), over the
monitor's test archive (a real Liberty Times page and its edit)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect, sync_playwright
from sqlalchemy import delete, update
from starlette.testclient import TestClient

from tests.conftest import scrapy
from tests.monitor_archive import NOW, URL, Built, build, serving
from tests.test_monitor import config, graphql
from tests.test_monitor_browser import (
    DESKTOP,
    browser_config,
    free_port,
    pictures_folder,
    shoot,
)
from zeroarchive.monitor.app import create_app
from zeroarchive.parser import PARSER_VERSION
from zeroarchive.search import open_index
from zeroarchive.search.reindex import reindex
from zeroarchive.storage.archive import close_archives, open_archive
from zeroarchive.storage.schema import parser_info, publication, publication_mapping
from zeroarchive.storage.site_stats import SiteStatsConfig

SEARCH = """
query($q: String!, $all: Boolean, $first: Int, $after: String, $site: [String!],
      $since: String, $until: String) {
  search(query: $q, allVersions: $all, first: $first, after: $after, site: $site,
         since: $since, until: $until) {
    totalCount totalCapped
    edges { cursor node { articleId version site url canonicalUrl title snippet score
                          versions { from to } } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}
"""


def indexed(db_url: str) -> Built:
    built = build(db_url)
    engine = open_archive(url=db_url).engine
    reindex(engine, open_index(engine), PARSER_VERSION)
    return built


@pytest.fixture(scope="module")
def client(module_db_url: str) -> Iterator[tuple[TestClient, Built]]:
    """The monitor over the indexed archive, built once per engine: its tests only read."""
    built = indexed(module_db_url)
    engine = open_archive(url=module_db_url).engine
    app = create_app(engine, config(), SiteStatsConfig(3, 3600), clock=lambda: NOW)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client, built


def search(client: TestClient, q: str, **variables: Any) -> dict[str, Any]:
    return graphql(client, SEARCH, q=q, **variables)["search"]


def test_graphql_search_connection(client: tuple[TestClient, Built]) -> None:
    http, built = client
    latest = search(http, "結束禁食")
    assert latest["totalCount"] == 1 and not latest["totalCapped"]
    [edge] = latest["edges"]
    assert edge["node"]["articleId"] == str(built.article_id)
    assert edge["node"]["site"] == "ltn" and edge["node"]["versions"] is None
    assert "«結束禁食»" in edge["node"]["snippet"]
    # The URL archived, and the other the page names as its own (the real page's, as saved).
    assert edge["node"]["url"] == URL
    assert (
        edge["node"]["canonicalUrl"] == "http://news.ltn.com.tw/news/politics/breakingnews/998126"
    )
    assert search(http, "停止禁食")["totalCount"] == 0
    edited = search(http, "停止禁食", all=True)
    spans = edited["edges"][0]["node"]["versions"]
    assert spans == [{"from": built.snapshots[0], "to": built.snapshots[2]}]
    assert search(http, "林義雄", site=["farm"])["totalCount"] == 0
    # Published 2014-04-30 (the page says so).
    window = {"since": "2014-04-30", "until": "2014-04-30"}
    assert search(http, "林義雄", site=["ltn"], **window)["totalCount"] == 1
    assert search(http, "林義雄", since="2014-05-01")["totalCount"] == 0


def test_graphql_search_pages(client: tuple[TestClient, Built]) -> None:
    http, _ = client
    both = search(http, "禁食", all=True, first=1)
    assert both["totalCount"] == 1 and both["pageInfo"]["hasNextPage"] is False
    first = search(http, "林義雄", first=1)
    assert first["pageInfo"] == {
        "hasNextPage": False,
        "hasPreviousPage": False,
        "startCursor": first["edges"][0]["cursor"],
        "endCursor": first["edges"][0]["cursor"],
    }
    after = search(http, "林義雄", first=1, after=first["pageInfo"]["endCursor"])
    assert after["edges"] == [] and after["pageInfo"]["hasPreviousPage"] is True


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"q": ""}, "query: the query is empty"),
        ({"q": "***"}, "query: the query has no letter"),
        ({"q": "x" * 10_240}, "query: the query is too long"),
        ({"q": "台", "first": 0}, "first: 1 to 100"),
        ({"q": "台", "after": "nonsense!"}, "after: not a cursor"),
        ({"q": "台", "since": "yesterday"}, "since: a day as YYYY-MM-DD"),
        ({"q": "台", "site": ["nowhere"]}, "site: no site 'nowhere'"),
    ],
)
def test_graphql_search_bad_input_is_one_error(
    client: tuple[TestClient, Built], variables: dict[str, Any], message: str
) -> None:
    http, _ = client
    answer = http.post("/graphql", json={"query": SEARCH, "variables": variables}).json()
    [error] = answer["errors"]
    assert error["message"].startswith(message) and "\n" not in error["message"]


def test_search_page(client: tuple[TestClient, Built]) -> None:
    http, built = client
    page = http.get("/search", params={"q": "禁食 -<script>", "all": "1"})
    assert page.status_code == 200
    assert "<mark>禁食</mark>" in page.text and "<script>" not in page.text
    assert f'href="/articles/{built.article_id}#versions"' in page.text
    assert "1 hits" in page.text
    bad = http.get("/search", params={"q": "(*)"})
    assert bad.status_code == 400 and "no letter, digit or CJK character" in bad.text
    assert http.get("/search").status_code == 200


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Built]]:
    url = f"sqlite:///{tmp_path / 'archive.db'}"
    built = indexed(url)
    monitor = config(port=free_port())
    app = create_app(open_archive(url=url).engine, monitor, SiteStatsConfig(3, 3600), lambda: NOW)
    try:
        with serving(app, monitor.port) as base:
            yield base, built
    finally:
        close_archives()


def test_search_page_in_chromium(served: tuple[str, Built], tmp_path: Path) -> None:
    base, _ = served
    chromium = browser_config()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium.chromium, args=list(chromium.chromium_args), headless=True
        )
        try:
            page = browser.new_page(viewport=DESKTOP)
            page.goto(f"{base}/")
            page.click('nav.main a[href="/search"]')
            page.fill("input[name=q]", "禁食")
            page.click("#search button")
            expect(page.locator("#hits li.hit")).to_have_count(1)
            expect(page.locator("#hits mark").first).to_have_text("禁食")
            expect(page.locator("#total")).to_have_text("1 hits")
            shoot(page, "search", pictures_folder(tmp_path))
            page.fill("input[name=q]", "停止禁食")
            page.click("#search button")
            expect(page.locator("#total")).to_have_text("0 hits")
            page.check("input[name=all]")
            page.click("#search button")
            expect(page.locator("#hits li.hit")).to_have_count(1)
            expect(page.locator("#hits .spans")).to_contain_text("held the query")
            shoot(page, "search-all-versions", pictures_folder(tmp_path))
            page.click("#hits a.versions")
            expect(page.locator("h1#title")).to_contain_text("結束禁食")
            expect(page.locator("#versions tr.version")).to_have_count(2)
        finally:
            browser.close()


def test_the_command_line_and_the_monitor_search_the_same_parser_version(
    db_url: str, tmp_path: Path
) -> None:
    # An archive parsed by an older parser than this code's: both read what it holds.
    built = build(db_url)
    engine = open_archive(url=db_url).engine
    with engine.begin() as conn:
        for table in (parser_info, publication, publication_mapping):
            conn.execute(update(table).values(parser_version="2000.1"))
    reindex(engine, open_index(engine), "2000.1")
    found = scrapy("search", "結束禁食", "--json", db_url=db_url, cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert [json.loads(line)["article_id"] for line in found.stdout.splitlines()] == [
        built.article_id
    ]
    app = create_app(engine, config(), SiteStatsConfig(3, 3600), clock=lambda: NOW)
    with TestClient(app, base_url="http://127.0.0.1") as http:
        [edge] = search(http, "結束禁食")["edges"]
    assert edge["node"]["articleId"] == str(built.article_id)
    with engine.begin() as conn:
        for table in (parser_info, publication, publication_mapping):
            conn.execute(delete(table))
    empty = scrapy("search", "結束禁食", db_url=db_url, cwd=tmp_path)
    assert empty.returncode == 1
    assert empty.stderr.strip().splitlines() == [
        "error: nothing is parsed yet: run scrapy parse_snapshots"
    ]
