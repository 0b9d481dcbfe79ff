"""Refusals of a crawl's media end to end: an image whose server never answers within the
download timeout is `failed:timeout`, one whose host cannot resolve is `failed:dns`; each
is a record of its snapshot, and the page's snapshot is stored regardless."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from tests.conftest import scrapy
from tests.replay import ReplayServer, Route
from tests.test_generic import write_sites
from tests.test_media import HTML, MEDIA_ON, PNG, media_json
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.schema import article_snapshot


@pytest.fixture
def silent() -> Iterator[str]:
    """A server that accepts connections and never answers: its URL base."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        server.close()


def test_timeout_and_dns_failures_are_recorded_and_the_page_kept(
    db_url: str, tmp_path: Path, silent: str
) -> None:
    slow, unknown = f"{silent}/slow.png", "http://media.invalid/photo.png"
    page = (
        f"<!doctype html><html><head><title>Refusals</title></head><body><h1>Refusals</h1>"
        f'<p>An article whose images do not come.</p><img src="/img/ok.png">'
        f'<img src="{slow}"><img src="{unknown}"></body></html>'
    ).encode()
    routes = {
        "/s/": Route(200, (("Content-Type", HTML),), b'<a href="/s/news/1">1</a>'),
        "/s/news/1": Route(200, (("Content-Type", HTML),), page),
        "/img/ok.png": Route(200, (("Content-Type", "image/png"),), PNG),
    }
    with ReplayServer(routes) as server:
        site = {
            "name": "refusals",
            "url": server.url("/s/"),
            "config": {"article": "/s/news/", "delay": 0, "media": ["images"]},
        }
        sites = write_sites(tmp_path / "sites.yaml", [site])
        assert scrapy("load_sites", str(sites), db_url=db_url, cwd=tmp_path).returncode == 0
        # The download timeout short, and no retries: the silent server is given one second.
        run = scrapy(
            "crawl",
            "generic",
            "-s",
            "DOWNLOAD_TIMEOUT=1",
            "-s",
            "RETRY_TIMES=0",
            db_url=db_url,
            cwd=tmp_path,
            extra_env=MEDIA_ON,
        )
        assert run.returncode == 0 and "Traceback" not in run.output, run.output
        ok = server.url("/img/ok.png")
    rows = {str(r["url"]): r for r in media_json(db_url, tmp_path)}
    assert set(rows) == {ok, slow, unknown}
    for url, reason in ((slow, "failed:timeout"), (unknown, "failed:dns")):
        row = rows[url]
        assert (row["stored"], row["reason"], row["sha256"], row["bytes"]) == (
            False,
            reason,
            None,
            None,
        )
    assert rows[ok]["stored"]
    engine = open_archive(url=db_url).engine
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(article_snapshot)).scalar() == 1
    assert {r["snapshot_at"] for r in rows.values()} == {rows[slow]["snapshot_at"]}
