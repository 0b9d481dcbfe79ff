"""What every output shows of stored text (zeroarchive/core/shown.py): over an archive of
hostile names, URLs, titles and evidence (tests/monitor_archive.py ``build_hostile``),
the monitor's pages show no password and isolate every right-to-left override, the Atom
feeds parse with a strict XML parser, GraphQL answers mask, the commands print no password
and no raw control character, and a crawl of a URL with a password logs none."""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import feedparser
import lxml.etree
import lxml.html
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.conftest import Run, scrapy
from tests.monitor_archive import (
    ADHOC_NAME,
    CONTROLS,
    HOSTILE_NAME,
    SECRET,
    SECRET_URL,
    Hostile,
    build_hostile,
)
from tests.replay import ReplayServer, Route
from tests.test_generic import write_sites
from tests.test_monitor import make_client
from tests.test_save_page import monitor as save_monitor
from zeroarchive.core.shown import (
    MaskedLogRecord,
    json_line,
    logged,
    mask_logs,
    masked_url,
    printable,
)
from zeroarchive.sites.record import ADHOC_PREFIX

RLO = "\u202e"
#: Elements whose text is one line of its own or no text on the page at all.
ISOLATING = {"bdi", "title", "option", "textarea"}
HTML = (("Content-Type", "text/html; charset=utf-8"),)
STORY = "<p>行政院今日召開記者會，說明明年度的交通預算編列方式與各縣市的分配。</p>" * 3


# --- The rules -------------------------------------------------------------------------

_USER = "abcXYZ019-._~!$&'()*+,;=%林"
_users = st.text(st.sampled_from(_USER), min_size=1, max_size=12)
_passwords = st.text(st.sampled_from(_USER + "@:/?#"), min_size=1, max_size=12)


@given(user=_users, password=_passwords, tail=st.sampled_from(["", "/a?b=@c#d"]))
def test_masked_url_leaves_nothing_of_the_userinfo(user: str, password: str, tail: str) -> None:
    # "http://host:8080/@someone" has no userinfo: a password of digits then "/" reads so.
    assume(not re.match(r"[0-9]*(?:[/?#]|$)", password))
    # "user:***@" is what core.services.safe_url prints: masked already.
    assume(password != "***" and re.sub("[/?#]", "", password) != "***")
    url = f"https://{user}:{password}@news.example:8443{tail}"
    # An ad-hoc site's name held a netloc, which ends at the first "/", "?" or "#".
    in_name = re.sub("[/?#]", "", password) or "x"
    masked = masked_url(f"see {url} and {ADHOC_PREFIX}{user}:{in_name}@farm.example")
    assert f"{user}:{password}" not in masked and f"{user}:{in_name}" not in masked
    assert masked.startswith("see https://***@")
    assert masked.endswith(" and saved:***@farm.example")
    if "@" not in tail:  # else the userinfo may run to the query's "@": more is hidden
        assert masked == "see https://***@news.example:8443 and saved:***@farm.example"


def test_masked_url_names_the_prefix_the_ad_hoc_sites_had() -> None:
    # core may not import sites: its pattern spells the prefix out.
    assert masked_url(f"{ADHOC_PREFIX}u:pw@h.example") == f"{ADHOC_PREFIX}***@h.example"


def _acting(text: str) -> list[str]:
    """Characters that act on a terminal, a feed or a layout instead of being read."""
    return [
        ch
        for ch in text
        if unicodedata.category(ch) in ("Cc", "Cs")
        or ch in "\u2028\u2029\ufffe\uffff"
        or "\u202a" <= ch <= "\u202e"
        or "\u2066" <= ch <= "\u2069"
    ]


@given(st.text())
def test_printable_and_json_lines_leave_nothing_that_acts(text: str) -> None:
    assert _acting(printable(text)) == []
    line = json_line({"name": text})
    assert _acting(line) == [] and json.loads(line) == {"name": masked_url(text)}


def test_masking_costs_linear_time_on_hostile_text() -> None:
    # Without the cut at a word's last "@", each "//" scanned to the end: 100 KB took 3 s.
    import time

    started = time.process_time()
    for text in ("x@" + "//a:b" * 40_000, "//a:b" * 40_000 + "@", "//a:" * 50_000):
        masked_url(text)
    assert time.process_time() - started < 0.5


def test_log_records_are_masked_whatever_writes_them(caplog: pytest.LogCaptureFixture) -> None:
    before = logging.getLogRecordFactory()
    logging.setLogRecordFactory(logging.LogRecord)
    try:
        mask_logs()
        assert logging.getLogRecordFactory() is MaskedLogRecord
        log = logging.getLogger("scrapy.core.engine")
        with caplog.at_level(logging.DEBUG):
            log.debug("Crawled (%d) %s (referer: None)", 200, f"<GET {SECRET_URL}>")
            try:
                raise ValueError(f"bad URL {SECRET_URL}\x1b[2J")
            except ValueError:
                log.exception("Error downloading %s", f"<GET {SECRET_URL}>")
        text = logging.Formatter().format(caplog.records[1])
    finally:
        logging.setLogRecordFactory(before)
    assert SECRET not in caplog.text and SECRET not in text
    assert "https://***@news.ltn.com.tw" in caplog.messages[0]
    assert "bad URL https://***@news.ltn.com.tw" in text and "\\x1b[2J" in text
    assert logged("a\n\tb\r") == "a\n\tb\\r"


# --- The monitor -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(module_db_url: str) -> Hostile:
    """Built once per engine: the monitor's tests here only read (a refused save writes
    nothing)."""
    return build_hostile(module_db_url)


@pytest.fixture
def client(module_db_url: str, hostile: Hostile) -> Iterator[TestClient]:
    with make_client(module_db_url) as client:
        yield client


def unisolated(html: str) -> list[str]:
    """Texts on a page holding a right-to-left override outside any element that keeps it
    to itself."""
    found = []
    for element in lxml.html.fromstring(html).iter():
        if not isinstance(element.tag, str):
            continue
        for text, parent in ((element.text, element), (element.tail, element.getparent())):
            if not text or RLO not in text:
                continue
            tags = {parent.tag} | {up.tag for up in parent.iterancestors()}
            if not tags & ISOLATING:
                found.append(text)
    return found


def pages(client: TestClient, hostile: Hostile) -> list[str]:
    built = hostile.built
    article_ids = sorted(
        {int(i) for i in re.findall(r'href="/articles/(\d+)"', client.get("/events").text)}
        | {built.article_id}
    )
    paths = ["/", "/sites", "/events", "/search?q=禁食", "/save"]
    paths += [f"/sites/{site_id}" for site_id in built.sites.values()]
    paths += [f"/articles/{article_id}" for article_id in article_ids]
    paths += [f"/articles/{built.article_id}/snapshots/{at}" for at in built.snapshots]
    paths += [f"/events/{event_id}" for event_id in hostile.event_ids]
    paths += [f"/events?site={site_id}" for site_id in built.sites.values()]
    return paths


def test_every_monitor_page_masks_escapes_and_isolates(
    client: TestClient, hostile: Hostile
) -> None:
    shown_names = 0
    for path in pages(client, hostile):
        answer = client.get(path)
        assert answer.status_code == 200, path
        html = answer.text
        assert SECRET not in html, path
        assert [c for c in CONTROLS if c in html] == [], path
        assert unisolated(html) == [], path
        shown_names += html.count("<bdi>自由\\x01時報\\x0b\\x1b[31m\u202egpj.exe</bdi>")
    assert shown_names >= 6
    dashboard = client.get("/").text
    assert "<bdi>saved:***@farm.example</bdi>" in dashboard
    assert '<bdi dir="ltr">https://***@farm.example/</bdi>' in dashboard
    article = client.get(f"/articles/{hostile.built.article_id}").text
    assert '<dd class="url"><bdi dir="ltr">https://***@news.ltn.com.tw/news/' in article
    assert "<bdi>停止禁食\\x1b[2J\u202e!kcilc\\x85</bdi>" in article


def test_the_save_form_echoes_no_password(module_db_url: str, hostile: Hostile) -> None:
    # Saving is open without a login to this machine alone (tests/test_save_page.py).
    client, _ = save_monitor(module_db_url)
    token = re.search(r'name="token" value="([^"]+)"', client.get("/save").text)
    assert token is not None
    secret_url = f"ftp://reader:{SECRET}@farm.example/\x1b[31m"
    answer = client.post(
        "/save",
        data={"urls": secret_url, "token": token.group(1)},
        headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"},
    )
    assert answer.status_code == 400 and 'id="save-error"' in answer.text
    assert SECRET not in answer.text and "\x1b" not in answer.text
    assert "ftp://***@farm.example" in answer.text


def test_atom_feeds_are_valid_xml_and_mask(client: TestClient, hostile: Hostile) -> None:
    sites = hostile.built.sites
    for path in ("/events.atom", f"/sites/{sites['ltn']}/events.atom"):
        body = client.get(path).content
        assert SECRET.encode() not in body
        root = lxml.etree.fromstring(body)  # strict: one bad character and it raises
        parsed = feedparser.parse(body)
        assert not parsed.bozo, parsed.get("bozo_exception")
        summaries = [entry.summary for entry in parsed.entries]
        assert any(
            s.startswith("自由\\x01時報\\x0b\\x1b[31m\\u202egpj.exe: deleted") for s in summaries
        )
        assert all("redirect:https://***@farm.example/\\x01\\u202e" in s for s in summaries)
        assert root.findtext("{http://www.w3.org/2005/Atom}title").startswith("zeroarchive events")
    site_feed = feedparser.parse(client.get(f"/sites/{sites['farm']}/events.atom").content)
    assert site_feed.feed.title == "zeroarchive events of saved:***@farm.example"


def test_graphql_answers_mask(client: TestClient, hostile: Hostile) -> None:
    query = (
        "{ sites { items { name url } } events { items { site url evidence } }"
        f" article(id: {hostile.built.article_id}) {{ url }}"
        f" snapshots(articleId: {hostile.built.article_id}) {{ finalUrl }}"
        ' search(query: "禁食") { edges { node { site url title } } } }'
    )
    answer = client.post("/graphql", json={"query": query})
    assert answer.status_code == 200 and "errors" not in answer.json(), answer.text
    assert SECRET not in answer.text
    data = answer.json()["data"]
    assert "saved:***@farm.example" in [site["name"] for site in data["sites"]["items"]]
    assert HOSTILE_NAME in [site["name"] for site in data["sites"]["items"]]  # JSON escapes
    assert data["article"]["url"] == SECRET_URL.replace(f"reader:{SECRET}", "***")
    assert data["search"]["edges"][0]["node"]["url"].startswith("https://***@news.ltn")


# --- Commands and the crawl's log ------------------------------------------------------


def test_commands_print_no_password_nor_control_characters(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'archive.db'}"
    hostile = build_hostile(db_url)
    runs: dict[str, Run] = {}
    for command in (
        ["sites"],
        ["site_stats"],
        ["site_stats", "--json"],
        ["events"],
        ["events", "--json"],
        ["search", "禁食"],
        ["search", "禁食", "--json"],
    ):
        run = scrapy(*command, db_url=db_url, cwd=tmp_path)
        assert run.returncode == 0, run.output
        runs[" ".join(command)] = run
    # A URL that cannot be saved is named in the refusal, masked and escaped.
    refused = scrapy(
        "save", f"ftp://reader:{SECRET}@farm.example/\x1b[2J", db_url=db_url, cwd=tmp_path
    )
    assert refused.returncode == 2 and "ftp://***@farm.example/" in refused.output, refused.output
    runs["save"] = refused
    for name, run in runs.items():
        assert SECRET not in run.output, name
        assert _acting(run.output.replace("\n", "")) == [], (name, run.output)
    assert "saved:***@farm.example  https://***@farm.example/" in runs["sites"].stdout
    assert "自由\\x01時報\\x0b\\x1b[31m\\u202egpj.exe" in runs["site_stats"].stdout
    events = [json.loads(line) for line in runs["events --json"].stdout.splitlines()]
    assert {event["site"] for event in events} == {
        HOSTILE_NAME,
        ADHOC_NAME.replace(f"reader:{SECRET}", "***"),
    }
    (hit,) = [json.loads(line) for line in runs["search 禁食 --json"].stdout.splitlines()]
    assert hit["url"] == SECRET_URL.replace(f"reader:{SECRET}", "***")
    assert hostile.built.article_id == hit["article_id"]


def test_a_crawl_of_a_url_with_a_password_logs_none(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'archive.db'}"
    with ReplayServer({}) as server:
        base = server.base_url
        secret_base = base.replace("http://", f"http://reader:{SECRET}@")
        links = (
            f"<a href='/news/1'>1</a><a href='/news/2'>2</a><a href='{secret_base}/news/3'>3</a>"
        )
        server.routes.update(
            {
                "/": Route(200, HTML, f"<html><body>{links}</body></html>".encode()),
                "/news/1": Route(
                    200, HTML, f"<html><body><h1>一</h1>{STORY}</body></html>".encode()
                ),
                # Scrapy logs where a redirect goes before anyone can refuse it.
                "/news/2": Route(301, (("Location", f"{secret_base}/news/1?from=2"),), b""),
            }
        )
        site = {
            "name": "walled",
            "url": server.url("/"),
            "type": "news",
            "config": {"article": "/news/", "delay": 0},
        }
        loaded = scrapy(
            "load_sites", str(write_sites(tmp_path / "s.yaml", [site])), db_url=db_url, cwd=tmp_path
        )
        assert loaded.returncode == 0, loaded.output
        run = scrapy("crawl", "generic", "-s", "LOG_LEVEL=DEBUG", db_url=db_url, cwd=tmp_path)
    assert server.hits["/news/1"] == 1 and server.hits["/news/2"] == 1
    assert SECRET not in run.output
    masked = secret_base.replace(f"reader:{SECRET}", "***")
    assert f"Crawled (200) <GET {base + '/news/1'}>" in run.output
    redirect = f"Redirecting (301) to <GET {masked}/news/1?from=2> from <GET {base + '/news/2'}>"
    assert redirect in run.output, run.output
    # Scrapy cannot fetch a URL with userinfo; its error names the host with it.
    assert f"{masked}/news/3" in run.output and "***@127.0.0.1)" in run.output
