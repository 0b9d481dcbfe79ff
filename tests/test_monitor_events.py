"""The monitor's events: GraphQL ``events``, the Atom feeds and the events pages with the
diff view, over events written by the events store (the crawl and the parser's hook)."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from sqlalchemy import select

from tests.test_events_watch import T0, archive_with
from tests.test_monitor import make_client
from zeroarchive.core.items import Parsed
from zeroarchive.events.edits import edit_hook
from zeroarchive.events.store import GoneAnswer, record_gone
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.publications import ArticleInfo, PublicationStore
from zeroarchive.storage.schema import article_event
from zeroarchive.storage.site_stats import SiteStatsConfig, site_stats

ATOM = "{http://www.w3.org/2005/Atom}"


def with_events(db_url: str) -> tuple[int, int]:
    archive, (edited, gone) = archive_with(db_url, 2)
    record_gone(archive.engine, [GoneAnswer(gone, 1, T0 + 100, "410")])
    record_gone(archive.engine, [GoneAnswer(gone, 1, T0 + 800, "410")])
    store = PublicationStore(archive.engine, "test")
    info = ArticleInfo(edited, 1, "Article", "https://farm.example/news/0")
    for at, text in ((T0, "市長今天宣布調漲票價"), (T0 + 900, "市長今天宣布調降票價")):
        parsed = Parsed("https://farm.example/news/0", "票價", text)
        store.add_version(info, at, parsed, parsed.digest(), at, hooks=[edit_hook])
    with archive.engine.connect() as conn:
        kinds = [row.kind for row in conn.execute(select(article_event.c.kind))]
    assert sorted(kinds) == ["deleted", "edited"]
    return edited, gone


def test_graphql_events_pages_newest_first_with_a_cursor(db_url: str) -> None:
    with_events(db_url)
    client = make_client(db_url)
    query = (
        "query($after: String) "
        "{ events(first: 1, after: $after) { items { kind evidence diff } endCursor } }"
    )
    first = client.post("/graphql", json={"query": query}).json()["data"]["events"]
    assert [e["kind"] for e in first["items"]] == ["edited"]
    assert '"-", "漲"' in first["items"][0]["diff"]
    second = client.post(
        "/graphql", json={"query": query, "variables": {"after": first["endCursor"]}}
    ).json()["data"]["events"]
    assert [(e["kind"], e["evidence"]) for e in second["items"]] == [("deleted", "410")]
    assert second["endCursor"] is None
    bad = client.post("/graphql", json={"query": '{ events(kind: ["gone"]) { endCursor } }'})
    assert "kind: gone" in bad.json()["errors"][0]["message"]


def test_atom_feeds_and_the_diff_view(db_url: str) -> None:
    with_events(db_url)
    client = make_client(db_url)
    for path in ("/events.atom", "/sites/1/events.atom"):
        answer = client.get(path)
        assert answer.headers["content-type"].startswith("application/atom+xml")
        feed = ET.fromstring(answer.content)
        titles = [e.findtext(f"{ATOM}title") for e in feed.findall(f"{ATOM}entry")]
        assert [t.split(":")[0] for t in titles] == ["edited", "deleted"]
    assert ET.fromstring(client.get("/sites/2/events.atom").content).findall(f"{ATOM}entry") == []
    page = client.get("/events")
    assert page.status_code == 200 and "<td>1</td><td>1</td><td>0</td>" in page.text
    event_id = next(
        int(href.split('"')[0])
        for href in page.text.split('href="/events/')[1:]
        if href.split('"')[0].isdigit()
    )
    edit = client.get(f"/events/{event_id}")
    assert "<del>漲</del><ins>降</ins>" in edit.text
    assert client.get("/events/99999").status_code == 404


def test_site_stats_count_events_per_site_and_month(db_url: str) -> None:
    with_events(db_url)
    engine = open_archive(url=db_url).engine
    (row,) = site_stats(engine, T0 + 1000, SiteStatsConfig(3, 3600))
    assert row.events == {"2027-01": {"deleted": 1, "edited": 1, "restored": 0}}
    assert row.events_this_month(T0 + 1000) == {"deleted": 1, "edited": 1, "restored": 0}
    assert row.as_json()["events"] == row.events
    assert "deleted / edited" in make_client(db_url).get("/").text
