"""Realistic rows for a 0archive database built by tests/zeroscraper_db.py: the kinds of
rows a running 0archive held (its own migration's sites, duplicate URLs, stopped, due and
redirected articles, a rotated month table, pages that are not valid UTF-8), with real
news pages (tests/fixtures/tw-news-2014) as the snapshots' text."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from tests.conftest import FIXTURES

PAGES = FIXTURES / "tw-news-2014" / "html"
MARCH_2020 = 1583020800  # 2020-03-01 00:00 UTC: the rotated month
APRIL_2020 = 1585699200  # the live table's snapshots start here
NOW = 1600000000  # the clock of the import and of the schedule checks (2020-09-13)
FUTURE = NOW + 3 * 3600
PAST = NOW - 3600

# From 0archive's own migration da6f10c8ebf4 (its airtable_id_map): a Facebook search page,
# which no spider can crawl as a site.
FB_SEARCH = "https://www.facebook.com/search/top/?q=%E6%96%87%E5%B1%B1%E4%BC%AF&epa=SEARCH_BOX"


def page(name: str) -> bytes:
    return gzip.decompress((PAGES / f"{name}.html.gz").read_bytes())


@dataclass
class ZeroArchiveRows:
    """What was written, to compare the archive against."""

    #: (table, article_id, snapshot_at) -> the bytes 0archive held (None: NULL raw_data).
    snapshots: dict[tuple[str, int, int], bytes | None] = field(default_factory=dict)
    articles: dict[int, dict[str, Any]] = field(default_factory=dict)


def add_site(engine: Engine, site_id: int, **values: Any) -> None:
    row = {
        "site_id": site_id,
        "type": "news_website",
        "name": f"site {site_id}",
        "url": "https://news.example.tw/",
        "config": "{}",
        "is_active": 1,
        "airtable_id": f"rec{site_id:04d}",
        "site_info": "{}",
        "last_crawl_at": NOW - 600,
        **values,
    }
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO Site (site_id, type, name, url, config, is_active, airtable_id,"
                " site_info, last_crawl_at) VALUES (:site_id, :type, :name, :url, :config,"
                " :is_active, :airtable_id, :site_info, :last_crawl_at)"
            ),
            row,
        )


def add_article(engine: Engine, rows: ZeroArchiveRows, article_id: int, **values: Any) -> None:
    import zlib

    row = {
        "article_id": article_id,
        "site_id": 1,
        "url": f"https://news.example.tw/news/{article_id}",
        "first_snapshot_at": MARCH_2020,
        "last_snapshot_at": MARCH_2020,
        "next_snapshot_at": 0,
        "snapshot_count": 1,
        "redirect_to": None,
        "article_type": "Article",
        **values,
    }
    row["url_hash"] = str(zlib.crc32(row["url"].encode()))
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO Article (article_id, site_id, url, url_hash, first_snapshot_at,"
                " last_snapshot_at, next_snapshot_at, snapshot_count, redirect_to,"
                " article_type, redirect_to_hash) VALUES (:article_id, :site_id, :url,"
                " :url_hash, :first_snapshot_at, :last_snapshot_at, :next_snapshot_at,"
                " :snapshot_count, :redirect_to, :article_type,"
                " IF(:redirect_to IS NULL, NULL, UNHEX(MD5(:redirect_to))))"
            ),
            row,
        )
    rows.articles[article_id] = row


def add_snapshot(
    engine: Engine,
    rows: ZeroArchiveRows,
    article_id: int,
    at: int,
    raw: bytes | None,
    table: str = "ArticleSnapshot",
) -> None:
    # insert_snapshot.sql's statement; the live table is utf8mb4 and takes text, a rotated
    # copy may hold any bytes (below).
    value: bytes | str | None = raw
    if raw is not None and table == "ArticleSnapshot":
        value = raw.decode("utf-8")
    with engine.begin() as conn:
        conn.execute(
            text(
                f"INSERT INTO {table} (article_id, snapshot_at, raw_data, snapshot_at_date)"
                " VALUES (:article_id, :at, :raw, FROM_UNIXTIME(:at))"
            ),
            {"article_id": article_id, "at": at, "raw": value},
        )
    rows.snapshots[(table, article_id, at)] = raw


def add_snapshots(
    engine: Engine, rows: ZeroArchiveRows, snapshots: list[tuple[int, int, bytes]]
) -> None:
    """``add_snapshot`` into the live table for each (article_id, at, raw), in one
    transaction."""
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO ArticleSnapshot (article_id, snapshot_at, raw_data, snapshot_at_date)"
                " VALUES (:article_id, :at, :raw, FROM_UNIXTIME(:at))"
            ),
            [
                {"article_id": article_id, "at": at, "raw": raw.decode("utf-8")}
                for article_id, at, raw in snapshots
            ],
        )
    for article_id, at, raw in snapshots:
        rows.snapshots[("ArticleSnapshot", article_id, at)] = raw


def rotate_month(engine: Engine, table: str) -> None:
    """A rotated month table, as 0archive's rotation made them: a plain copy of the live
    table's structure. Its raw_data is latin1 here, as on a MySQL 5.7 with the server's
    latin1 default, where 0archive's bytes went in unchecked (how invalid UTF-8 got in)."""
    with engine.begin() as conn:
        conn.execute(text(f"CREATE TABLE {table} LIKE ArticleSnapshot"))
        conn.execute(text(f"ALTER TABLE {table} MODIFY raw_data MEDIUMTEXT CHARACTER SET latin1"))


def fill(engine: Engine) -> ZeroArchiveRows:
    """A small running 0archive: four sites, a dozen articles, snapshots in the live table
    and in ArticleSnapshot202003."""
    rows = ZeroArchiveRows()
    config = {"article": r"/news/\d+", "following": "/list", "depth": "2", "delay": 1.5}
    add_site(engine, 1, name="範例新聞", config=json.dumps(config))
    add_site(
        engine,
        2,
        type="discussion_board",
        name="PTT 八卦板",
        url="https://www.ptt.cc/bbs/Gossiping/index.html",
    )
    add_site(engine, 3, type="fb_page", name="文山伯 (search)", url=FB_SEARCH)
    farm = {"article": "/[0-9]+", "following": "", "selenium": True}
    add_site(
        engine,
        4,
        type="content_farm",
        name="琦琦看新聞",
        url="http://qiqi.today",
        config=json.dumps(farm),
        is_active=0,
    )
    Variable = "INSERT INTO Variable (`key`, value) VALUES ('last_dump', '2020-08-31')"
    with engine.begin() as conn:
        conn.execute(text(Variable))
        conn.execute(
            text("INSERT INTO SiteStats VALUES (1, '2020-03-01', 3, 1)"),
        )
    rotate_month(engine, "ArticleSnapshot202003")
    month = "ArticleSnapshot202003"

    # 1-3: one page, three rows (0archive's race inserted the URL twice; a tracking
    # parameter made a third): merged into one article with all their snapshots.
    add_article(
        engine,
        rows,
        1,
        snapshot_count=2,
        next_snapshot_at=FUTURE,
        last_snapshot_at=APRIL_2020 + 86400,
    )
    add_article(
        engine,
        rows,
        2,
        url="https://news.example.tw/news/1",
        snapshot_count=1,
        first_snapshot_at=MARCH_2020 - 60,
        last_snapshot_at=APRIL_2020,
        next_snapshot_at=0,
    )
    add_article(
        engine,
        rows,
        3,
        url="https://news.example.tw/news/1?utm_source=fb",
        snapshot_count=1,
        last_snapshot_at=APRIL_2020 + 7200,
        next_snapshot_at=0,
    )
    add_snapshot(engine, rows, 1, APRIL_2020 + 3600, page("cna_s1"))
    add_snapshot(engine, rows, 1, APRIL_2020 + 86400, page("cna_s2"))
    add_snapshot(engine, rows, 2, APRIL_2020, page("cna_s1"))
    add_snapshot(engine, rows, 3, APRIL_2020 + 7200, page("cna_s1"))
    # 4: stopped, its snapshots rotated, an unchanged repeat and a Big5 page among them.
    add_article(engine, rows, 4, snapshot_count=3, last_snapshot_at=MARCH_2020 + 7200)
    add_snapshot(engine, rows, 4, MARCH_2020, page("udn_s1"), month)
    add_snapshot(engine, rows, 4, MARCH_2020 + 3600, page("udn_s1"), month)
    add_snapshot(engine, rows, 4, MARCH_2020 + 7200, page("china_times_s1"), month)
    # 5: due (its time has come), snapshots in both tables.
    add_article(
        engine, rows, 5, snapshot_count=2, next_snapshot_at=PAST, last_snapshot_at=APRIL_2020 + 60
    )
    add_snapshot(engine, rows, 5, MARCH_2020 + 60, page("ettoday_s1"), month)
    add_snapshot(engine, rows, 5, APRIL_2020 + 60, page("ettoday_s2"))
    # 6 -> 7: a redirect to an article 0archive has; 8 -> a URL it never had.
    add_article(
        engine, rows, 6, redirect_to="https://news.example.tw/news/7", next_snapshot_at=FUTURE
    )
    add_article(engine, rows, 7, next_snapshot_at=FUTURE)
    add_article(engine, rows, 8, redirect_to="https://news.example.tw/news/80")
    add_snapshot(engine, rows, 6, APRIL_2020 + 120, page("tvbs_s1"))
    add_snapshot(engine, rows, 7, APRIL_2020 + 180, page("tvbs_s2"))
    # 9: next_snapshot_at -1 (0archive's own selection took it for due).
    add_article(engine, rows, 9, next_snapshot_at=-1)
    # A UTF-8 page cut inside a character (a MEDIUMTEXT-sized truncation).
    cut = page("now_news_s1")
    cut = cut[: cut.index("新聞".encode()) + 1]
    add_snapshot(engine, rows, 9, MARCH_2020 + 300, cut, month)
    # 10: a URL this archive refuses; 11: its site is gone; snapshot of no article.
    add_article(engine, rows, 10, url="ftp://news.example.tw/news/10")
    add_snapshot(engine, rows, 10, APRIL_2020 + 240, page("cts_s1"))
    add_article(engine, rows, 11, site_id=99)
    add_snapshot(engine, rows, 11, APRIL_2020 + 300, page("cts_s2"))
    add_snapshot(engine, rows, 999, APRIL_2020 + 360, page("apple_daily_s1"))
    # 12: a snapshot whose raw_data is NULL.
    add_article(engine, rows, 12, next_snapshot_at=FUTURE)
    add_snapshot(engine, rows, 12, APRIL_2020 + 420, None)
    add_snapshot(engine, rows, 12, APRIL_2020 + 480, page("apple_daily_s2"))
    # 20-21: a PTT post; 30: a post of the Facebook search; 40: a rendered content farm page.
    ptt = "https://www.ptt.cc/bbs/Gossiping/M.1585699200.A.123.html"
    add_article(engine, rows, 20, site_id=2, url=ptt, article_type="PTT", next_snapshot_at=FUTURE)
    add_snapshot(engine, rows, 20, APRIL_2020 + 500, page("liberty_times_news_s1"))
    add_article(
        engine,
        rows,
        30,
        site_id=3,
        url="https://www.facebook.com/100/posts/200",
        article_type="FBPost",
    )
    add_snapshot(engine, rows, 30, APRIL_2020 + 600, page("china_times_s2"))
    add_article(engine, rows, 40, site_id=4, url="http://qiqi.today/12345")
    add_snapshot(engine, rows, 40, APRIL_2020 + 700, page("now_news_s2"))
    return rows
