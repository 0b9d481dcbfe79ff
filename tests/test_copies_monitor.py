"""Copies in the monitor: an article page's "also published by", a site page's "copies
from" / "copied by", GraphQL ``copies`` and ``clusters`` (cursor pages, bad arguments
refused) and the /search page's collapse, over the small archive of
tests/test_copy_network.py, on SQLite and MariaDB."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.test_copies import NOW
from tests.test_copy_network import Archived, build
from tests.test_monitor import config, graphql
from zeroarchive.monitor.app import create_app
from zeroarchive.parser import PARSER_VERSION
from zeroarchive.search import open_index
from zeroarchive.search.reindex import reindex
from zeroarchive.storage.site_stats import SiteStatsConfig

CLUSTERS = """query($site: ID, $since: Int, $first: Int, $after: String) {
  clusters(site: $site, since: $since, first: $first, after: $after) {
    items { id first { articleId site } members { articleId delaySeconds } }
    endCursor
  }
}"""
COPIES = """query($id: ID!) {
  copies(articleId: $id) {
    id
    first { articleId siteId site url firstSeenAt delaySeconds similarity script }
    members { articleId site firstSeenAt publishedAt delaySeconds similarity script }
  }
}"""


@dataclass(frozen=True)
class Served:
    client: TestClient
    archived: Archived


@pytest.fixture(scope="module")
def served(module_db_url: str) -> Iterator[Served]:
    archived = build(module_db_url)
    engine = archived.archive.engine
    reindex(engine, open_index(engine), PARSER_VERSION)
    app = create_app(engine, config(), SiteStatsConfig(3, 3600), clock=lambda: NOW)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield Served(client, archived)


def cna(archived: Archived) -> list[int]:
    """The five articles of the cna story, as published (a, a, b, c, b)."""
    cluster = archived.cluster(1)
    assert cluster is not None
    return [member.article_id for member in cluster.members]


def test_the_article_page_shows_who_else_published_it(served: Served) -> None:
    client, archived = served.client, served.archived
    first, _, b, c, _ = cna(archived)
    page = client.get(f"/articles/{c}").text
    section = page[page.index('id="copies"') : page.index("<h2>Timeline")]
    members = re.findall(r'class="copy[^"]*" data-article-id="(\d+)"', section)
    assert [int(found) for found in members] == cna(archived)
    assert f'href="/articles/{first}"' in section and f'href="/articles/{b}"' in section
    assert f'href="/articles/{c}"' not in section  # this article is not a link to itself
    assert "this article" in section and "5 min later" in section  # c: 300 s after a
    assert "1 min later" in section and "other script" in section
    assert "https://c.example/a/" in section and "<bdi" in section
    alone = client.get(f"/articles/{archived.count}").text  # now_news: on c alone
    assert 'id="copies"' not in alone


def test_the_site_page_tables(served: Served) -> None:
    client, archived = served.client, served.archived
    page = client.get(f"/sites/{archived.sites['a']}").text
    copied_by = page[
        page.index('id="copied-by"') : page.index("</table>", page.index('id="copied-by"'))
    ]
    rows = re.findall(
        r'href="/sites/(\d+)"><bdi>(\w)</bdi></a></td>'
        r'<td class="n">(\d+)</td><td class="n">([^<]+)<',
        copied_by,
    )
    assert rows == [
        (str(archived.sites["b"]), "b", "2", "2 min"),
        (str(archived.sites["c"]), "c", "2", "8 min"),
    ]
    copies_from = page[page.index('id="copies-from"') : page.index('id="copied-by"')]
    assert ">1</td>" in copies_from and "16 min" in copies_from  # b→a: cts, 1000 s
    quiet = client.get(f"/sites/{archived.sites['c']}").text
    assert "none known" in quiet[quiet.index('id="copied-by"') :]


def test_graphql_copies_and_clusters(served: Served) -> None:
    client, archived = served.client, served.archived
    first, _, _, c, _ = cna(archived)
    found = graphql(client, COPIES, id=str(c))["copies"]
    assert found["first"]["articleId"] == str(first) and found["first"]["site"] == "a"
    assert found["first"]["delaySeconds"] == 0 and found["first"]["similarity"] == 1.0
    assert found["first"]["siteId"] == str(archived.sites["a"])
    assert found["first"]["url"] == f"https://a.example/a/{first}"
    assert [m["delaySeconds"] for m in found["members"]] == [0, 10, 100, 300, 500]
    assert [m["script"] for m in found["members"]] == [
        "same",
        "converted",
        "same",
        "converted",
        "same",
    ]
    assert graphql(client, COPIES, id=str(archived.count))["copies"] is None
    assert graphql(client, COPIES, id="-3")["copies"] is None
    every = graphql(client, CLUSTERS)["clusters"]
    assert len(every["items"]) == 4 and every["endCursor"] is None
    ids = [item["id"] for item in every["items"]]
    assert ids == sorted(ids, key=int)
    pages, after = [], None
    while True:
        page = graphql(client, CLUSTERS, first=3, after=after)["clusters"]
        pages.append([item["id"] for item in page["items"]])
        after = page["endCursor"]
        if after is None:
            break
    assert pages == [ids[:3], ids[3:]]
    on_c = graphql(client, CLUSTERS, site=str(archived.sites["c"]))["clusters"]["items"]
    assert [item["first"]["site"] for item in on_c] == ["a", "a"]
    later = graphql(client, CLUSTERS, since=NOW + 600)["clusters"]["items"]
    # cts (a had it at 1000 s) and ettoday (c at 750 s); not cna's or tvbs's.
    assert [item["first"]["site"] for item in later] == ["b", "a"]


@pytest.mark.parametrize(
    ("variables", "said"),
    [
        ({"first": 0}, "first must be between 1 and 200"),
        ({"first": 201}, "first must be between 1 and 200"),
        ({"site": "²"}, "site must be a site id"),
        ({"after": "!!!"}, "after: not a cursor from this API"),
        ({"after": "b2Zmc2V0OjE5"}, "after: not a cursor from this API"),
    ],
)
def test_graphql_clusters_refuses_bad_arguments(
    served: Served, variables: dict[str, Any], said: str
) -> None:
    answer = served.client.post("/graphql", json={"query": CLUSTERS, "variables": variables})
    assert answer.status_code == 400
    assert answer.json()["errors"][0]["message"].startswith(said)


def hit_ids(html: str) -> list[int]:
    return [int(found) for found in re.findall(r'class="hit" data-article-id="(\d+)"', html)]


def test_search_collapses_the_copies_of_a_story(served: Served) -> None:
    client, archived = served.client, served.archived
    first, _, b, _, b_again = cna(archived)
    params = {"q": "中華代表隊"}
    every = client.get("/search", params=params).text
    assert sorted(hit_ids(every)) == [first, b, b_again]
    assert "copies</a>" not in every
    one = client.get("/search", params={**params, "collapse": "1"}).text
    [shown] = hit_ids(one)
    assert shown in (first, b, b_again)
    assert f'<a href="/articles/{shown}#copies">and 4 copies</a>' in one
    assert 'name="collapse" value="1" checked' in one
