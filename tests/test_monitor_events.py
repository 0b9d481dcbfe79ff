"""The monitor's events: GraphQL ``events``, the Atom feeds and the events pages with the
diff view, over events written by the events store (the crawl and the parser's hook); save
page now, as a form (in Chromium too, its `scrapy save` run for real) and as the GraphQL
mutation ``save``, refused to other origins."""

from __future__ import annotations

import base64
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from playwright.sync_api import expect, sync_playwright
from sqlalchemy import select
from starlette.testclient import TestClient

from tests.conftest import REPO, require_service
from tests.monitor_archive import NOW, serving
from tests.replay import ReplayServer
from tests.test_events import article_page
from tests.test_events_watch import T0, archive_with
from tests.test_monitor import config, make_client
from tests.test_monitor_browser import browser_config, free_port
from zeroarchive.core.items import Parsed
from zeroarchive.events.edits import edit_hook
from zeroarchive.events.store import GoneAnswer, record_gone
from zeroarchive.monitor.app import create_app
from zeroarchive.monitor.save_page import Saver
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.publications import ArticleInfo, PublicationStore
from zeroarchive.storage.schema import article, article_event
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
    assert "kind: 'gone'" in bad.json()["errors"][0]["message"]
    # Bad input is one clear error, never "internal error" (nor a traceback on the pages).
    huge = "9" * 23
    forged = base64.urlsafe_b64encode(f"{huge}:{huge}".encode()).decode()
    for arguments, said in (
        ("kind: [null]", "kind: None"),
        (f'site: "{huge}"', "site must be a site id"),
        (f'after: "{forged}"', "not a cursor from this API"),
    ):
        answer = client.post(
            "/graphql", json={"query": f"{{ events({arguments}) {{ endCursor }} }}"}
        )
        assert said in answer.json()["errors"][0]["message"], answer.text
    # A site filter no id can be is bad input (issue 37), not all sites.
    assert client.get(f"/events?site={huge}").status_code == 400
    for path in (f"/events/{huge}", f"/sites/{huge}/events.atom"):
        assert client.get(path).status_code == 404


def test_atom_feeds_and_the_diff_view(db_url: str) -> None:
    with_events(db_url)
    client = make_client(db_url)
    for path in ("/events.atom", "/sites/1/events.atom"):
        answer = client.get(path)
        assert answer.headers["content-type"].startswith("application/atom+xml")
        feed = ET.fromstring(answer.content)
        titles = [e.findtext(f"{ATOM}title") for e in feed.findall(f"{ATOM}entry")]
        summaries = [e.findtext(f"{ATOM}summary") for e in feed.findall(f"{ATOM}entry")]
        # The edited article by its headline, with the diff in short; the deleted one was
        # never parsed: its URL.
        assert titles[0] == "edited: 票價" and titles[1].startswith("deleted: https://")
        assert summaries[0].endswith("text: 市長今天宣布調[-漲-]{+降+}票價"), summaries[0]
        assert "(410)" in summaries[1]
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


def saving_client(db_url: str, allowed: bool = True) -> tuple[TestClient, list[tuple[Any, ...]]]:
    """A monitor without a login whose saves are filed for real and whose `scrapy save` is
    a no-op process (its arguments recorded); its client is on this machine (``allowed``)
    or on another one."""
    calls: list[tuple[Any, ...]] = []

    def command(urls: list[str], watch: bool) -> list[str]:
        calls.append((urls, watch))
        return [sys.executable, "-c", "pass"]

    engine = open_archive(url=db_url).engine
    # As the suite's every command (tests/conftest.py): no DNS look-up of its hosts.
    saver = Saver(engine, False, command, allow_private=True)
    app = create_app(engine, config(), SiteStatsConfig(3, 3600), clock=lambda: NOW, saver=saver)
    peer = ("127.0.0.1", 50000) if allowed else ("192.0.2.7", 50000)
    return TestClient(app, base_url="http://127.0.0.1", client=peer), calls


SAVE = "mutation($u: [String!]!, $w: Boolean) { save(url: $u, watch: $w) { url site source } }"


def test_the_save_mutation_files_pages_and_starts_scrapy_save_from_this_origin_only(
    db_url: str,
) -> None:
    archive_with(db_url, 1)
    client, calls = saving_client(db_url)
    urls = ["https://farm.example/news/9", "https://elsewhere.example/a?utm_source=x"]
    answer = client.post("/graphql", json={"query": SAVE, "variables": {"u": urls, "w": True}})
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"]["save"] == [
        {"url": "https://farm.example/news/9", "site": "farm", "source": "generic"},
        {
            "url": "https://elsewhere.example/a",
            "site": "saved:elsewhere.example",
            "source": "generic",
        },
    ]
    assert calls == [(["https://farm.example/news/9", "https://elsewhere.example/a"], True)]
    engine = open_archive(url=db_url).engine
    with engine.connect() as conn:
        due = dict(conn.execute(select(article.c.url, article.c.next_snapshot_at)).all())
    assert due["https://elsewhere.example/a"] > 0
    # Another site's page may not ask: the origin is not this monitor's.
    evil = client.post(
        "/graphql",
        json={"query": SAVE, "variables": {"u": ["https://x.example/"]}},
        headers={"Origin": "https://evil.example"},
    )
    assert evil.status_code == 403
    bad = client.post(
        "/graphql",
        json={"query": SAVE, "variables": {"u": ["https://www.ptt.cc/bbs/A/index.html"]}},
    )
    assert "not a PTT post" in bad.json()["errors"][0]["message"]
    off, off_calls = saving_client(db_url, allowed=False)
    refused = off.post("/graphql", json={"query": SAVE, "variables": {"u": ["https://x.example/"]}})
    assert "without a login" in refused.json()["errors"][0]["message"]
    assert len(calls) == 1 and off_calls == []


def test_the_save_form_needs_its_token_and_this_origin(db_url: str) -> None:
    archive_with(db_url, 1)
    client, calls = saving_client(db_url)
    page = client.get("/save")
    token = re.search(r'name="token" value="([^"]+)"', page.text)
    assert page.status_code == 200 and token is not None
    form = {"urls": "https://farm.example/news/7\nhttps://farm.example/news/8", "watch": "on"}
    assert client.post("/save", data=form).status_code == 403  # no token
    signed = {**form, "token": token.group(1)}
    evil = client.post("/save", data=signed, headers={"Origin": "https://evil.example"})
    assert evil.status_code == 403
    cross = client.post("/save", data=signed, headers={"Sec-Fetch-Site": "cross-site"})
    assert cross.status_code == 403
    # Its last digit changed (a token that ends in 0 would be left as it was).
    last = token.group(1)[-1]
    forged = {**form, "token": token.group(1)[:-1] + ("1" if last == "0" else "0")}
    assert client.post("/save", data=forged).status_code == 403
    assert calls == []
    # A browser's own form: Origin null (the pages send no referrer), same-origin fetch.
    own = {"Origin": "null", "Sec-Fetch-Site": "same-origin"}
    saved = client.post("/save", data=signed, headers=own)
    assert saved.status_code == 200 and "Saving 2 page(s), watched afterwards" in saved.text
    assert calls == [(["https://farm.example/news/7", "https://farm.example/news/8"], True)]
    off, _ = saving_client(db_url, allowed=False)
    assert "Saving is off" in off.get("/save").text


@pytest.fixture
def monitor_on_port(db_url: str) -> Iterator[str]:
    """The monitor on a real uvicorn server in a thread; its saves run `scrapy save`."""
    archive_with(db_url, 1)
    # The page it saves is served on 127.0.0.1, as every test site is.
    cfg = config(port=free_port(), allow_private_targets=True)
    app = create_app(open_archive(url=db_url).engine, cfg, SiteStatsConfig(3, 3600))
    with serving(app, cfg.port) as base:
        yield base


def test_a_page_is_saved_from_the_form_in_chromium(
    db_url: str, monitor_on_port: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium = browser_config()
    require_service("Chromium", None if Path(chromium.chromium).exists() else "no Chromium")
    # The `scrapy save` the monitor starts runs this project against this database.
    monkeypatch.setenv("SCRAPY_SETTINGS_MODULE", "settings.base")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    with ReplayServer({"/story/1": article_page("s1")}) as site, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium.chromium, args=list(chromium.chromium_args), headless=True
        )
        try:
            page = browser.new_page()
            page.goto(f"{monitor_on_port}/events")
            page.click("#save-link")
            expect(page.locator("h1")).to_have_text("Save pages now")
            page.fill("#urls", site.url("/story/1"))
            page.check("#watch")
            page.click("#save-button")
            expect(page.locator("#save-started")).to_contain_text("Saving 1 page(s)")
            expect(page.locator("#saved td").first).to_have_text(site.url("/story/1"))
        finally:
            browser.close()
        engine = open_archive(url=db_url).engine
        deadline = time.monotonic() + 120
        while True:
            with engine.connect() as conn:
                count = conn.execute(
                    select(article.c.snapshot_count).where(article.c.url == site.url("/story/1"))
                ).scalar()
            if count or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert count == 1, "the save process did not archive the page"
        assert site.hits["/story/1"] == 1


def test_article_urls_with_credentials_are_masked_on_every_page_and_api(db_url: str) -> None:
    _, gone = with_events(db_url)
    secret_url = "https://reader:s3cret@farm.example/news/1"
    engine = open_archive(url=db_url).engine
    with engine.begin() as conn:
        conn.execute(article.update().where(article.c.article_id == gone).values(url=secret_url))
        event_id = conn.execute(
            select(article_event.c.event_id).where(article_event.c.article_id == gone)
        ).scalar_one()
    client = make_client(db_url)
    answers = {
        path: client.get(path).text
        for path in ("/events", f"/events/{event_id}", "/events.atom", f"/articles/{gone}")
    }
    answers["graphql"] = client.post(
        "/graphql",
        json={"query": f"{{ events {{ items {{ url }} }} article(id: {gone}) {{ url }} }}"},
    ).text
    for where, text in answers.items():
        assert "s3cret" not in text, where
        assert "farm.example/news/1" in text, (where, text[:500])
