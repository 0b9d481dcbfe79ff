"""End-to-end crawls of the Dcard API emulator (real API JSON) through the real CLI."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

from sqlalchemy import create_engine, update

import spiders.dcard
from tests.conftest import Run, scrapy
from tests.dcard_server import DcardApp
from tests.emulator import EmulatorServer, Reply
from tests.test_generic import articles_by_url, list_ok_at, stat, table_counts, write_sites
from zeroarchive.storage.schema import article
from zeroarchive.storage.snapshots import iter_snapshots

MALFORMED_POST = 224362388
THROTTLE = ("-s", "THROTTLE_BASE=0.2")


def crawl_dcard(db_url: str, tmp_path: Path, *args: str) -> Run:
    run = scrapy("crawl", "dcard", *THROTTLE, *args, db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    assert "Traceback" not in run.output, run.output
    assert stat(run, "zeroarchive/list_page_failures") == 0, run.output
    return run


def posts_path(forum: str, before: int | None = None) -> str:
    tail = f"&before={before}" if before is not None else ""
    return f"/_api/forums/{forum}/posts?popular=false&limit=100{tail}"


def test_dcard_archives_every_post_with_all_comments(db_url: str, tmp_path: Path) -> None:
    app = DcardApp(page_size=10)
    funny = sorted(app.forum_posts("funny"), reverse=True)
    throttled_page = posts_path("funny", before=funny[9])
    app.faults[throttled_page].append(Reply(429, (("Retry-After", "1"),), b"Too Many Requests"))
    forbidden_page = "/_api/posts/224341009/comments?after=90"
    app.faults[forbidden_page].append(Reply(403, (), b"Forbidden"))
    malformed = f"/_api/posts/{MALFORMED_POST}"
    app.faults[malformed].append(
        Reply(200, (("Content-Type", "application/json"),), b'{"id": 224362388, "title": "')
    )
    with EmulatorServer(app) as server:
        sites = [
            {
                "name": forum,
                "url": server.url(f"/f/{forum}"),
                "type": "dcard",
                "config": {"depth": 5, "delay": 0},
            }
            for forum in ("funny", "girl")
        ]
        loaded = scrapy(
            "load_sites",
            str(write_sites(tmp_path / "sites.yaml", sites)),
            db_url=db_url,
            cwd=tmp_path,
        )
        assert loaded.returncode == 0, loaded.output
        first = crawl_dcard(db_url, tmp_path)

        posts = {
            server.url(f"/f/{forum}/p/{post_id}"): post_id
            for forum in ("funny", "girl")
            for post_id in app.forum_posts(forum)
        }
        stored = articles_by_url(db_url)
        assert set(stored) == set(posts)
        assert {row["article_type"] for row in stored.values()} == {"Dcard"}
        # 3 full pages of funny and its empty end, girl's one page and its empty end.
        assert stat(first, "zeroarchive/list_pages") == 6
        assert all(list_ok_at(db_url).values()) and len(list_ok_at(db_url)) == 2
        assert stat(first, "zeroarchive/throttled/http_429") == 1
        assert stat(first, "zeroarchive/throttled/http_403") == 1
        assert stat(first, "zeroarchive/dcard/malformed_json") == 1
        assert stat(first, "zeroarchive/snapshot_failures") == 1
        assert stat(first, "zeroarchive/snapshots_saved") == len(posts) - 1
        bad = stored[server.url(f"/f/funny/p/{MALFORMED_POST}")]
        assert bad["snapshot_count"] == 0
        assert bad["stop_reason"] == "last_error:malformed_json"
        assert bad["next_snapshot_at"] > 0

        # Nothing fetched twice, except what was refused or garbled once.
        repeated = {k: n for k, n in server.hits.items() if n > 1}
        assert repeated == {f"GET {throttled_page}": 2, f"GET {forbidden_page}": 2}
        for post_id in posts.values():
            assert server.hits[f"GET /_api/posts/{post_id}"] == 1
            if post_id != MALFORMED_POST:
                assert server.hits[f"GET /_api/posts/{post_id}/comments"] == 1

        # The garbled post is retried later: make it due now and take the due snapshots.
        engine = create_engine(db_url)
        with engine.begin() as conn:
            conn.execute(
                update(article)
                .where(article.c.article_id == bad["article_id"])
                .values(next_snapshot_at=1)
            )
        retried = crawl_dcard(db_url, tmp_path, "-a", "mode=snapshot")
        assert stat(retried, "zeroarchive/snapshots_saved") == 1
        assert server.hits[f"GET {malformed}"] == 2

        snapshots = list(iter_snapshots(engine))
        assert len(snapshots) == len(posts)
        for exported in snapshots:
            post_id = posts[exported.url]
            document = json.loads(exported.snapshot.raw.decode(exported.snapshot.encoding))
            assert document["post"] == app.posts[post_id]
            assert document["comments"] == app.comments[post_id], post_id
        assert sum(len(app.comments[p]) for p in posts.values()) == 445
        engine.dispose()

        counts = table_counts(db_url)
        hits = server.hits.copy()
        again = crawl_dcard(db_url, tmp_path, "-a", "site=funny")
        assert stat(again, "zeroarchive/articles_new") == 0
        assert stat(again, "zeroarchive/snapshots_saved") == 0
        # Two pages in a row with nothing new end the walk (ZEROARCHIVE_STALE_LIST_PAGES).
        assert stat(again, "zeroarchive/list_pages") == 2
        assert table_counts(db_url) == counts
        assert {k: n - hits[k] for k, n in server.hits.items() if n != hits[k]} == {
            "GET /robots.txt": 1,
            f"GET {posts_path('funny')}": 1,
            f"GET {posts_path('funny', before=funny[9])}": 1,
        }


def test_doctests() -> None:
    results = doctest.testmod(spiders.dcard)
    assert results.attempted > 0
    assert results.failed == 0
