"""An archive in a known state for the monitor's tests: sites of several types and
categories (one quiet, one failing, one blocked, one inactive, one with proxy credentials
and a cookies file), articles found over the last weeks, and one real news page (LTN,
tests/fixtures/tw-news-2014) snapshotted three times, edited once, parsed into two
publication versions."""

from __future__ import annotations

import contextlib
import gzip
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock

import uvicorn
from scrapy.settings import Settings
from sqlalchemy import select, update
from starlette.applications import Starlette

from tests import parse_once
from tests.conftest import FIXTURES, project_settings
from zeroarchive.core.items import FetchedPage
from zeroarchive.core.schedule import DAY, HOUR
from zeroarchive.monitor.config import Limits
from zeroarchive.parser import run as parser_run
from zeroarchive.parser.run import ParseRunConfig, parse_pending
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.schema import article

NOW = 1_750_003_600  # 2025-06-15 16:06 UTC
#: The monitor's limits as settings/base.py sets them (tests change one with ``replace``).
LIMITS = Limits.from_settings(Settings(project_settings()))
URL = "https://news.ltn.com.tw/news/politics/breakingnews/994343"
PAGE = gzip.decompress(
    (FIXTURES / "tw-news-2014" / "html" / "liberty_times_news_s1.html.gz").read_bytes()
)
EDITED = PAGE.replace("停止禁食".encode(), "結束禁食".encode())
PROXY_PASSWORD = "pr0xy-s3cret"
COOKIES_FILE = "/private/sessions/ltn-cookies.txt"
# Articles found per day ago (0 = today) on the news site, besides the snapshotted one.
LTN_FOUND = {0: 2, 1: 1, 3: 4, 10: 1}


@dataclass(frozen=True)
class Built:
    sites: dict[str, int]
    article_id: int
    snapshots: tuple[int, ...]


def _site(
    archive: Archive,
    name: str,
    url: str,
    type_: str,
    active: bool,
    config: dict[str, Any],
    **extra: str,
) -> int:
    spec = parse_spec(
        {"name": name, "url": url, "type": type_, "active": active, "config": config, **extra}
    )
    return archive.sites.upsert(spec, NOW - 400 * DAY)[0]


def build(db_url: str) -> Built:
    archive = open_archive(url=db_url)
    sites = {
        "ltn": _site(
            archive,
            "ltn",
            "https://news.ltn.com.tw/",
            "news",
            True,
            {
                "article": "/news/",
                "proxy": f"http://archiver:{PROXY_PASSWORD}@proxy.example:3128",
                "cookies_file": COOKIES_FILE,
            },
            category="新聞網站",
            airtable_id="recLTN0001",
        ),
        "farm": _site(
            archive,
            "farm",
            "https://farm.example/",
            "content_farm",
            True,
            {"article": "/p/"},
            category="內容農場",
        ),
        "walled": _site(
            archive, "walled", "https://walled.example/", "news", True, {"article": "/a/"}
        ),
        "gov-off": _site(
            archive, "gov-off", "https://gov.example/", "gov", False, {"article": "/n/"}
        ),
    }
    number = 0
    for days_ago, found in LTN_FOUND.items():
        for _ in range(found):
            number += 1
            archive.articles.add(
                sites["ltn"], "Article", [f"{URL}-{number}"], NOW - days_ago * DAY - 60
            )
    # The farm went quiet a month ago.
    archive.articles.add(sites["farm"], "Article", ["https://farm.example/p/1"], NOW - 30 * DAY)
    archive.articles.add(sites["walled"], "Article", ["https://walled.example/a/1"], NOW - DAY)
    with archive.engine.begin() as conn:
        conn.execute(
            update(article)
            .where(article.c.site_id == sites["walled"])
            .values(failure_count=1, stop_reason="last_error:blocked", next_snapshot_at=NOW + HOUR)
        )
    archive.articles.add(sites["ltn"], "Article", [URL], NOW - 2 * DAY)
    with archive.engine.connect() as conn:
        article_id = conn.execute(
            select(article.c.article_id).where(article.c.url == URL)
        ).scalar_one()
    times = (NOW - 2 * DAY, NOW - 2 * DAY + HOUR, NOW - 2 * DAY + 2 * HOUR)
    for at, body in zip(times, (PAGE, PAGE, EDITED), strict=True):
        archive.snapshots.save(
            [
                FetchedPage(
                    article_id=article_id,
                    site_id=sites["ltn"],
                    article_type="news",
                    fetched_at=at,
                    status=200,
                    final_url=URL,
                    headers={"Content-Type": ["text/html; charset=utf-8"]},
                    encoding="utf-8",
                    body=body,
                )
            ]
        )
    # The same two pages in every test's archive: parsed once per process, not again by each
    # test's parse run (two thirds of its CPU); the run maps and stores as ever.
    with mock.patch.object(parser_run, "parse_snapshot", parse_once.parsed):
        parse_pending(archive.engine, ParseRunConfig(), now=NOW)
    return Built(sites=sites, article_id=article_id, snapshots=times)


@contextlib.contextmanager
def serving(app: Starlette, port: int) -> Iterator[str]:
    """``app`` on a real uvicorn server on 127.0.0.1:``port``, in a thread: its base URL."""
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the monitor did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


#: What a hostile archive holds (``build_hostile``): a password in URLs and in an ad-hoc
#: site's name as sites of saved pages were once named, and names, URLs, titles and
#: evidence with control characters, a terminal escape, a right-to-left override and CJK.
SECRET = "s3cret-pw"
HOSTILE_NAME = "自由\x01時報\x0b\x1b[31m\u202egpj.exe"
ADHOC_NAME = f"saved:reader:{SECRET}@farm.example"
SECRET_URL = f"https://reader:{SECRET}@news.ltn.com.tw/news/politics/breakingnews/994343"
HOSTILE_TITLE = "停止禁食\x1b[2J\u202e!kcilc\x85"
HOSTILE_EVIDENCE = f"redirect:https://reader:{SECRET}@farm.example/\x01\u202e"
#: Raw control characters no output may carry as themselves (tab and newline aside).
CONTROLS = ("\x01", "\x0b", "\x1b", "\x85")


@dataclass(frozen=True)
class Hostile:
    built: Built
    event_ids: tuple[int, ...]


def build_hostile(db_url: str) -> Hostile:
    """``build``'s archive made hostile, as stored data can be whatever wrote it (an old
    save, an import, a sync): the news site renamed ``HOSTILE_NAME``, its snapshotted
    article at ``SECRET_URL`` (snapshots and versions too, the versions titled
    ``HOSTILE_TITLE`` and indexed for search), the content farm the ad-hoc site
    ``ADHOC_NAME`` with a password in its URL, and a takedown event on each with
    ``HOSTILE_EVIDENCE``."""
    from zeroarchive.events.store import insert_event
    from zeroarchive.search import open_index
    from zeroarchive.search.reindex import reindex
    from zeroarchive.storage.publications import newest_parser_version
    from zeroarchive.storage.schema import article_event, article_snapshot, publication, site

    built = build(db_url)
    engine = open_archive(url=db_url).engine
    ltn, farm = built.sites["ltn"], built.sites["farm"]
    with engine.begin() as conn:
        conn.execute(
            update(site)
            .where(site.c.site_id == ltn)
            .values(name=HOSTILE_NAME, category="新聞\x01\u202e")
        )
        conn.execute(
            update(site)
            .where(site.c.site_id == farm)
            .values(name=ADHOC_NAME, url=f"https://reader:{SECRET}@farm.example/")
        )
        conn.execute(
            update(article).where(article.c.article_id == built.article_id).values(url=SECRET_URL)
        )
        conn.execute(
            update(article)
            .where(article.c.site_id == farm)
            .values(url=f"https://reader:{SECRET}@farm.example/p/1", stop_reason="gone")
        )
        conn.execute(
            update(article_snapshot)
            .where(article_snapshot.c.article_id == built.article_id)
            .values(final_url=SECRET_URL)
        )
        conn.execute(
            update(publication)
            .where(publication.c.article_id == built.article_id)
            .values(canonical_url=SECRET_URL, title=HOSTILE_TITLE, author="記者\x1b[0m\u202e")
        )
        farm_article = conn.execute(
            select(article.c.article_id).where(article.c.site_id == farm)
        ).scalar_one()
        for article_id, site_id in ((built.article_id, ltn), (farm_article, farm)):
            insert_event(
                conn, "deleted", article_id, site_id, NOW - HOUR, HOSTILE_EVIDENCE, None, NOW
            )
        event_ids = tuple(conn.execute(select(article_event.c.event_id)).scalars())
    reindex(engine, open_index(engine), newest_parser_version(engine) or "")
    return Hostile(built, event_ids)
