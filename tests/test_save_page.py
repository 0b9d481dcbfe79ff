"""Who may save pages from the monitor, how often, with which token, and which pages
(zeroarchive/monitor/save_page.py, clients.py): the review's requests, each refused."""

from __future__ import annotations

import base64
import json
import re
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.monitor_archive import NOW
from tests.test_monitor import config
from tests.test_monitor_browser import free_port
from zeroarchive.core.clock import FAKE_NOW_ENV
from zeroarchive.monitor.app import create_app
from zeroarchive.monitor.save_page import Saver
from zeroarchive.monitor.serve import make_server
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.site_stats import SiteStatsConfig

SAVE = "mutation($u: [String!]!) { save(url: $u) { url site } }"
T0 = 1_800_000_000
TOKEN = "t0ken-of-the-operator"
LOCAL = ("127.0.0.1", 50000)


def public(host: str) -> list[str]:
    return ["93.184.215.14"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('monitor') / 'archive.db'}"
    open_archive(url=url)
    return url


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAKE_NOW_ENV, str(T0))


def monitor(
    db: str,
    peer: tuple[str, int] = LOCAL,
    pages_per_hour: int = 60,
    **changes: Any,
) -> tuple[TestClient, list[list[str]]]:
    """A monitor whose `scrapy save` is a no-op process (the URLs it got recorded)."""
    calls: list[list[str]] = []

    def command(urls: list[str], watch: bool) -> list[str]:
        calls.append(urls)
        return [sys.executable, "-c", "pass"]

    cfg = config(**changes)
    engine = open_archive(url=db).engine
    saver = Saver(
        engine, cfg.requires_auth, command, pages_per_hour=pages_per_hour, resolver=public
    )
    app = create_app(engine, cfg, SiteStatsConfig(3, 3600), clock=lambda: NOW, saver=saver)
    return TestClient(app, base_url="http://127.0.0.1", client=peer), calls


def save(client: TestClient, *urls: str, **headers: str) -> Any:
    """The answer of the save mutation, once the no-op `scrapy save` processes of earlier
    saves have ended (at most two run at once)."""
    deadline = time.monotonic() + 30
    while True:
        answer = client.post(
            "/graphql", json={"query": SAVE, "variables": {"u": list(urls)}}, headers=headers
        )
        if not error(answer).startswith("busy") or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def error(answer: Any) -> str:
    if not answer.headers.get("content-type", "").startswith("application/json"):
        return answer.text
    errors = answer.json().get("errors") or [{"message": ""}]
    return str(errors[0]["message"])


@pytest.mark.parametrize(
    "forwarding",
    [
        {"X-Forwarded-For": "127.0.0.1"},
        {"X-Forwarded-For": "203.0.113.9"},
        {"Forwarded": "for=127.0.0.1"},
        {"X-Real-IP": "127.0.0.1"},
        {"Via": "1.1 proxy"},
    ],
)
def test_without_a_login_a_request_through_a_proxy_may_not_save(
    db: str, forwarding: dict[str, str]
) -> None:
    client, calls = monitor(db)
    answer = save(client, "https://news.example/proxied", **forwarding)
    assert "without a login is only for a browser on this machine" in error(answer)
    page = client.get("/save", headers=forwarding)
    assert "Saving is off for you" in page.text and 'id="save-form"' not in page.text
    assert calls == []


def test_without_a_login_only_this_machine_saves(db: str) -> None:
    elsewhere, calls = monitor(db, peer=("192.0.2.7", 50000))
    assert "without a login" in error(save(elsewhere, "https://news.example/far"))
    here, calls = monitor(db)
    answer = save(here, "https://news.example/near")
    assert answer.json()["data"]["save"] == [
        {"url": "https://news.example/near", "site": "saved:news.example"}
    ]
    assert calls == [["https://news.example/near"]]
    # Behind a login, any client that has it may.
    logged_in, calls = monitor(db, peer=("192.0.2.7", 50000), token=TOKEN)
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert save(logged_in, "https://news.example/login", **bearer).json()["data"]["save"]
    assert save(logged_in, "https://news.example/login").status_code == 401


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://2130706433/", "2130706433 is 127.0.0.1, a loopback address"),
        ("http://0x7f.1:6379/", "0x7f.1 is 127.0.0.1, a loopback address"),
        ("http://[::ffff:7f00:1]/", "a loopback address"),
        ("http://admin:hunter2@10.0.0.8/", "10.0.0.8 is a private address"),
    ],
)
def test_a_save_of_a_private_target_is_refused_with_a_clear_message(
    db: str, url: str, said: str
) -> None:
    client, calls = monitor(db)
    message = error(save(client, url))
    assert said in message and "public hosts" in message and "hunter2" not in message
    assert calls == []


def form_token(client: TestClient, **headers: str) -> str:
    found = re.search(r'name="token" value="([^"]+)"', client.get("/save", headers=headers).text)
    assert found is not None
    return found.group(1)


def test_a_form_token_is_good_once_and_for_its_login_only(db: str) -> None:
    basic = "Basic " + base64.b64encode(b"ann:pw").decode()
    client, calls = monitor(db, token=TOKEN, username="ann", password="pw")
    as_ann, as_script = {"Authorization": basic}, {"Authorization": f"Bearer {TOKEN}"}
    token = form_token(client, **as_ann)
    form = {"urls": "https://news.example/form", "token": token}
    # Another login (the bearer token) cannot use ann's token.
    assert client.post("/save", data=form, headers=as_script).status_code == 403
    assert client.post("/save", data=form, headers=as_ann).status_code == 200
    replayed = client.post("/save", data=form, headers=as_ann)
    assert replayed.status_code == 403 and calls == [["https://news.example/form"]]
    # Stale after an hour, on the archive's clock.
    old = form_token(client, **as_ann)
    with pytest.MonkeyPatch.context() as later:
        later.setenv(FAKE_NOW_ENV, str(T0 + 3601))
        stale = client.post("/save", data={**form, "token": old}, headers=as_ann)
    assert stale.status_code == 403 and "used or stale" in stale.text
    # Not tokens at all: a 400 (tests/test_monitor_hostile.py); missing or forged: the 403.
    for bad in ("².x", "9" * 5000):
        assert client.post("/save", data={**form, "token": bad}, headers=as_ann).status_code == 400
    for bad in (f"{T0}.{'0' * 32}.{'0' * 64}", ""):
        assert client.post("/save", data={**form, "token": bad}, headers=as_ann).status_code == 403


def test_saves_are_limited_per_client_per_hour(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    client, calls = monitor(db, pages_per_hour=3)
    assert save(client, "https://news.example/q1", "https://news.example/q2").json()["data"]
    over = save(client, "https://news.example/q3", "https://news.example/q4")
    assert "too many saves: 2 of 3 pages this hour" in error(over)
    token = form_token(client)
    page = client.post(
        "/save", data={"urls": "https://news.example/q5 https://news.example/q6", "token": token}
    )
    assert page.status_code == 429 and page.headers["Retry-After"] == "3600"
    too_big = save(client, *(f"https://news.example/b{n}" for n in range(4)))
    assert "4 pages are more than one client may save in an hour (3" in error(too_big)
    # One more page is still within the hour's three.
    assert save(client, "https://news.example/q7").json()["data"]
    monkeypatch.setenv(FAKE_NOW_ENV, str(T0 + 3600))
    assert save(client, "https://news.example/q8", "https://news.example/q9").json()["data"]
    assert len(calls) == 3


@pytest.fixture
def behind_a_proxy(db: str) -> Iterator[tuple[str, list[list[str]], Any]]:
    """A monitor with a login and one save an hour per client, on uvicorn as `scrapy
    monitor` runs it, its trusted proxies settable."""
    calls: list[list[str]] = []

    def command(urls: list[str], watch: bool) -> list[str]:
        calls.append(urls)
        return [sys.executable, "-c", "pass"]

    holder: dict[str, Any] = {}

    def start(trusted: list[str]) -> str:
        from zeroarchive.monitor.clients import trusted_networks

        cfg = config(port=free_port(), token=TOKEN, trusted_proxies=trusted_networks(trusted))
        engine = open_archive(url=db).engine
        saver = Saver(engine, True, command, pages_per_hour=1, resolver=public)
        app = create_app(engine, cfg, SiteStatsConfig(3, 3600), clock=lambda: NOW, saver=saver)
        server = make_server(app, cfg)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline
            time.sleep(0.02)
        holder.setdefault("servers", []).append((server, thread))
        return f"http://127.0.0.1:{cfg.port}"

    try:
        yield "", calls, start
    finally:
        for server, thread in holder.get("servers", []):
            server.should_exit = True
            thread.join(30)


def test_forwarded_headers_are_believed_only_from_named_proxies(
    behind_a_proxy: tuple[str, list[list[str]], Any],
) -> None:
    _, calls, start = behind_a_proxy
    bearer = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}

    def ask(base: str, url: str, client: str) -> str:
        body = json.dumps({"query": SAVE, "variables": {"u": [url]}}).encode()
        request = urllib.request.Request(
            f"{base}/graphql", body, headers={**bearer, "X-Forwarded-For": client}
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:
                    found = json.loads(answer.read())
            except urllib.error.HTTPError as refused:
                found = json.loads(refused.read())
            said = str((found.get("errors") or [{"message": "saved"}])[0]["message"])
            if not said.startswith("busy") or time.monotonic() > deadline:
                return said
            time.sleep(0.05)

    # No proxy named: X-Forwarded-For is the client's own word, so both asks are one
    # client's (this machine's), whatever they claim: the second is over the limit.
    untrusting = start([])
    assert ask(untrusting, "https://news.example/p1", "198.51.100.1") == "saved"
    assert "too many saves" in ask(untrusting, "https://news.example/p2", "198.51.100.2")
    assert "from 127.0.0.1" in ask(untrusting, "https://news.example/p3", "198.51.100.3")
    # 127.0.0.1 named as the proxy: each client behind it has its own hour.
    trusting = start(["127.0.0.1"])
    assert ask(trusting, "https://news.example/p4", "198.51.100.1") == "saved"
    assert ask(trusting, "https://news.example/p5", "198.51.100.2") == "saved"
    limited = ask(trusting, "https://news.example/p6", "198.51.100.2")
    assert "from 198.51.100.2" in limited
    # A client cannot pass as another by writing the header itself: the proxy appends.
    spoofed = ask(trusting, "https://news.example/p7", "198.51.100.9, 198.51.100.2")
    assert "from 198.51.100.2" in spoofed
    assert len(calls) == 3


def test_saving_off_when_the_hourly_limit_is_zero(db: str) -> None:
    client, calls = monitor(db, pages_per_hour=0)
    assert "saving is off in this monitor" in error(save(client, "https://news.example/z"))
    assert calls == []
