"""The copy network (zeroarchive/copies/network.py) on a small archive of real articles
published on three sites at known times: edges from each story's first site, weights and
median delays; `scrapy copy_network` (GEXF 1.3 and CSV) and `scrapy site_stats --json`'s
copies_from / copied_by, on SQLite and MariaDB."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import scrapy
from tests.test_copies import NOW, Archived, text, to_simplified
from zeroarchive.copies.network import CSV_COLUMNS, GEXF_NS, Edge, Network, gexf, network
from zeroarchive.parser import PARSER_VERSION
from zeroarchive.search import open_index
from zeroarchive.search.reindex import reindex

#: (story, [(site, seconds after NOW), ...]): when each site first had it.
PUBLISHED = (
    ("cna_s1", [("a", 0), ("a", 10), ("b", 100), ("c", 300), ("b", 500)]),
    ("tvbs_s1", [("a", 0), ("b", 200)]),
    ("cts_s1", [("b", 0), ("a", 1000)]),
    ("ettoday_s1", [("a", 50), ("c", 750)]),
    ("now_news_s1", [("c", 0)]),
)


def build(url: str) -> Archived:
    archived = Archived(url)
    for name in "abc":
        archived.site(name)
    for story, places in PUBLISHED:
        for number, (site, after) in enumerate(places):
            body = text(story) if number % 2 == 0 else to_simplified(text(story))
            archived.publish(site, body, NOW + after)
    return archived


@pytest.fixture
def archived(db_url: str) -> Archived:
    return build(db_url)


def test_edges_go_from_each_story_s_first_site_with_median_delays(archived: Archived) -> None:
    graph = network(archived.archive.engine)
    found = [
        (graph.names[e.source_id], graph.names[e.target_id], e.stories, e.median_delay)
        for e in graph.edges
    ]
    # a→b: cna 100 s (b's later republication at 500 s is not another story), tvbs 200 s;
    # a→c: cna 300 s, ettoday 700 s; b→a: cts. a's own republication of cna is no edge,
    # nor are b→c or c→b (neither had cna first).
    assert found == [("a", "b", 2, 150.0), ("a", "c", 2, 500.0), ("b", "a", 1, 1000.0)]
    a, b, c = (archived.sites[name] for name in "abc")
    assert graph.copies_from(a) == [
        {"site": "b", "site_id": b, "stories": 1, "median_delay_seconds": 1000}
    ]
    assert [row["site"] for row in graph.copied_by(a)] == ["b", "c"]
    assert graph.copied_by(c) == []
    later = network(archived.archive.engine, since=NOW + 250)
    assert [(e.source_id, e.target_id, e.delays) for e in later.edges] == [
        (a, c, [300, 700]),
        (b, a, [1000]),
    ]
    one = network(archived.archive.engine, site_id=c)
    assert [(e.source_id, e.target_id, e.stories) for e in one.edges] == [(a, c, 2), (a, b, 1)]


def test_the_gexf_is_gexf_1_3(archived: Archived) -> None:
    document = etree.fromstring(gexf(network(archived.archive.engine), NOW))
    ns = {"g": GEXF_NS}
    assert document.tag == f"{{{GEXF_NS}}}gexf" and document.get("version") == "1.3"
    assert [child.tag.split("}")[1] for child in document] == ["meta", "graph"]
    assert document.find("g:meta", ns).get("lastmodifieddate") == "2023-11-14"
    graph = document.find("g:graph", ns)
    assert graph.get("defaultedgetype") == "directed"
    assert [child.tag.split("}")[1] for child in graph] == [
        "attributes",
        "attributes",
        "nodes",
        "edges",
    ]
    titles = {
        attribute.get("class"): [a.get("title") for a in attribute]
        for attribute in graph.findall("g:attributes", ns)
    }
    assert titles == {"node": ["site_id"], "edge": ["stories", "median_delay_seconds"]}
    nodes = {node.get("id"): node.get("label") for node in graph.iterfind("g:nodes/g:node", ns)}
    assert nodes == {str(archived.sites[name]): name for name in "abc"}
    found = [
        (
            nodes[edge.get("source")],
            nodes[edge.get("target")],
            float(edge.get("weight")),
            {v.get("for"): v.get("value") for v in edge.iterfind("g:attvalues/g:attvalue", ns)},
        )
        for edge in graph.iterfind("g:edges/g:edge", ns)
    ]
    assert found == [
        ("a", "b", 2.0, {"stories": "2", "median_delay_seconds": "150.0"}),
        ("a", "c", 2.0, {"stories": "2", "median_delay_seconds": "500.0"}),
        ("b", "a", 1.0, {"stories": "1", "median_delay_seconds": "1000.0"}),
    ]


def test_copy_network_and_site_stats_commands(archived: Archived, tmp_path: Path) -> None:
    db_url = str(archived.archive.engine.url.render_as_string(hide_password=False))
    out = tmp_path / "net"
    run = scrapy(
        "copy_network", "--out", f"{out}.gexf", "--out", f"{out}.csv", db_url=db_url, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    assert "3 site(s), 3 edge(s), 5 copied stories" in run.stderr
    rows = list(csv.DictReader(io.StringIO(Path(f"{out}.csv").read_text(encoding="utf-8"))))
    a, b, c = (str(archived.sites[name]) for name in "abc")
    assert [tuple(row.values()) for row in rows] == [
        ("a", "b", "2", "150", a, b),
        ("a", "c", "2", "500", a, c),
        ("b", "a", "1", "1000", b, a),
    ]
    assert tuple(rows[0]) == CSV_COLUMNS
    etree.fromstring(Path(f"{out}.gexf").read_bytes())
    since = scrapy("copy_network", "--since", str(NOW + 250), db_url=db_url, cwd=tmp_path)
    assert since.returncode == 0, since.stderr
    assert since.stdout.splitlines()[1:] == [f"a,c,2,500,{a},{c}", f"b,a,1,1000,{b},{a}"]
    bad = scrapy("copy_network", "--out", f"{out}.xml", db_url=db_url, cwd=tmp_path)
    assert bad.returncode != 0 and ".gexf or .csv" in bad.stderr
    bad_time = scrapy("copy_network", "--since", "yesterday-ish", db_url=db_url, cwd=tmp_path)
    assert bad_time.returncode != 0 and "Traceback" not in bad_time.stderr
    stats = scrapy("site_stats", "--json", db_url=db_url, cwd=tmp_path)
    assert stats.returncode == 0, stats.stderr
    by_name = {row["name"]: row for row in map(json.loads, stats.stdout.splitlines())}
    assert by_name["a"]["copied_by"] == [
        {"site": "b", "site_id": int(b), "stories": 2, "median_delay_seconds": 150},
        {"site": "c", "site_id": int(c), "stories": 2, "median_delay_seconds": 500},
    ]
    assert by_name["a"]["copies_from"] == [
        {"site": "b", "site_id": int(b), "stories": 1, "median_delay_seconds": 1000}
    ]
    assert by_name["c"]["copied_by"] == [] and len(by_name["c"]["copies_from"]) == 1


def test_search_collapse_copies(archived: Archived, tmp_path: Path) -> None:
    engine = archived.archive.engine
    reindex(engine, open_index(engine), PARSER_VERSION)
    db_url = str(engine.url.render_as_string(hide_password=False))
    # The cna story as written in traditional script: on a, b and b again.
    query = ("search", "中華代表隊", "--json")
    every = scrapy(*query, db_url=db_url, cwd=tmp_path)
    assert every.returncode == 0, every.stderr
    assert len(every.stdout.splitlines()) == 3
    run = scrapy(*query, "--collapse-copies", db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    [hit] = map(json.loads, run.stdout.splitlines())
    cluster = archived.cluster(hit["article_id"])
    assert cluster is not None
    assert hit["cluster"] == cluster.cluster_id and hit["copies"] == 4
    readable = scrapy("search", "中華代表隊", "--collapse-copies", db_url=db_url, cwd=tmp_path)
    assert f"and 4 copies: scrapy copies --article {hit['article_id']}" in readable.stdout


def test_the_gexf_holds_any_site_name() -> None:
    """A name with markup, quotes and a control character (which XML 1.0 cannot hold even
    escaped) still makes a document Gephi can read."""
    names = {1: "farm<b>&\"'\x07", 2: "抄" * 3}
    graph = Network(names, (Edge(1, 2, [5, 8]),))
    document = etree.fromstring(gexf(graph, NOW))
    labels = [node.get("label") for node in document.iterfind(".//{*}node")]
    assert labels == ["farm<b>&\"'\ufffd", "抄抄抄"]
    [edge] = document.iterfind(".//{*}edge")
    assert (edge.get("source"), edge.get("target"), edge.get("weight")) == ("1", "2", "2")
