"""End-to-end crawls of the PTT emulator (real saved pages) through the real CLI."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, update

from tests.conftest import Run, scrapy
from tests.emulator import EmulatorServer
from tests.ptt_server import ptt_app
from tests.test_generic import articles_by_url, list_ok_at, stat, table_counts, write_sites
from zeroarchive.storage.schema import site
from zeroarchive.storage.snapshots import iter_snapshots

PUSH = b'<div class="push">'


def crawl_ptt(db_url: str, tmp_path: Path, *args: str) -> Run:
    run = scrapy("crawl", "ptt", *args, db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    assert "Traceback" not in run.output, run.output
    assert stat(run, "zeroarchive/snapshot_failures") == 0, run.output
    assert stat(run, "zeroarchive/list_page_failures") == 0, run.output
    return run


def test_ptt_archives_every_post_with_its_pushes(db_url: str, tmp_path: Path) -> None:
    app = ptt_app()
    lol, gossiping = app.boards["LoL"], app.boards["Gossiping"]
    with EmulatorServer(app) as server:
        sites = [
            {
                "name": board.name.lower(),
                "url": server.url(f"/bbs/{board.name}/index.html"),
                "type": "ptt",
                "config": {"depth": 10, "delay": 0},
            }
            for board in (lol, gossiping)
        ]
        loaded = scrapy(
            "load_sites",
            str(write_sites(tmp_path / "sites.yaml", sites)),
            db_url=db_url,
            cwd=tmp_path,
        )
        assert loaded.returncode == 0, loaded.output
        first = crawl_ptt(db_url, tmp_path)
        # The monitor sees every board's list pages answering.
        assert all(list_ok_at(db_url).values()) and len(list_ok_at(db_url)) == 2

        posts = {server.url(p): (board, p) for board in (lol, gossiping) for p in board.posts}
        stored = articles_by_url(db_url)
        assert set(stored) == set(posts)
        assert {row["article_type"] for row in stored.values()} == {"PTT"}
        assert all(row["snapshot_count"] == 1 for row in stored.values())
        # Nothing fetched twice: every post and index page once; only the page that met the
        # form gate is fetched again, after the answer.
        for board in (lol, gossiping):
            for path in board.posts:
                assert server.hits[f"GET {path}"] == 1, path
            for path in board.pages:
                gated = board.gate == "form" and path.endswith("/index.html")
                assert server.hits[f"GET {path}"] == (2 if gated else 1), path
        gate_pages = [k for k in server.hits if k.startswith("GET /ask/over18")]
        assert gate_pages == ["GET /ask/over18?from=%2Fbbs%2FGossiping%2Findex.html"]
        assert server.hits["POST /ask/over18"] == 1
        assert app.refusals == 0
        assert stat(first, "zeroarchive/ptt/over18_answered") == 1
        assert (
            stat(first, "zeroarchive/ptt/deleted_rows") == lol.deleted_rows + gossiping.deleted_rows
        )
        # The real 2016 index page holds a fake row M.1457622048.A.Z80 (not hex).
        assert stat(first, "zeroarchive/ptt/bad_post_links") == 1
        assert stat(first, "zeroarchive/list_pages") == len(lol.pages) + len(gossiping.pages)
        assert stat(first, "zeroarchive/snapshots_saved") == len(posts)

        engine = create_engine(db_url)
        snapshots = list(iter_snapshots(engine))
        engine.dispose()
        assert len(snapshots) == len(posts)
        for exported in snapshots:
            board, path = posts[exported.url]
            body, pushes = board.posts[path]
            assert exported.snapshot.raw == body, path
            assert exported.snapshot.raw.count(PUSH) == pushes, path
            assert exported.snapshot.encoding == "utf-8"

        counts = table_counts(db_url)
        hits = server.hits.copy()
        again = crawl_ptt(db_url, tmp_path, "-a", "site=lol")
        assert stat(again, "zeroarchive/articles_new") == 0
        assert stat(again, "zeroarchive/snapshots_saved") == 0
        # Two pages in a row with nothing new end the walk (ZEROARCHIVE_STALE_LIST_PAGES).
        assert stat(again, "zeroarchive/list_pages") == 2
        assert table_counts(db_url) == counts
        assert {k: n - hits[k] for k, n in server.hits.items() if n != hits[k]} == {
            "GET /robots.txt": 1,
            "GET /bbs/LoL/index.html": 1,
            "GET /bbs/LoL/index5.html": 1,
        }


def test_ptt_depth_and_bad_site_url(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'archive.db'}"
    app = ptt_app()
    with EmulatorServer(app) as server:
        sites = [
            {
                "name": "lol",
                "url": server.url("/bbs/LoL/index.html"),
                "type": "ptt",
                "config": {"depth": 1, "delay": 0},
            },
            {"name": "board", "url": server.url("/bbs/Board/"), "type": "ptt"},
            {"name": "a-post", "url": server.url("/bbs/LoL/M.1.A.2.html"), "type": "ptt"},
        ]
        loaded = scrapy(
            "load_sites",
            str(write_sites(tmp_path / "sites.yaml", sites)),
            db_url=db_url,
            cwd=tmp_path,
        )
        # A board given without its index page is taken as the board; a post is no board.
        assert loaded.returncode == 1, loaded.output
        assert "#2 board (ptt)" in loaded.output
        assert "site 'a-post': url: bad URL" in loaded.output
        assert "not a PTT board" in loaded.output
        # A site stored before its URL was checked is refused by the spider, alone.
        engine = create_engine(db_url)
        with engine.begin() as conn:
            conn.execute(
                update(site).where(site.c.name == "board").values(url=server.url("/bbs/Board/"))
            )
        engine.dispose()
        run = crawl_ptt(db_url, tmp_path, "-a", "mode=discover")
        assert stat(run, "zeroarchive/list_pages") == 2
        assert stat(run, "zeroarchive/errors/bad_site_url") == 1
        assert "is not a board index" in run.output
        pages = list(app.boards["LoL"].pages)
        assert [p for p in pages if server.hits[f"GET {p}"]] == pages[:2]
        assert not [k for k in server.hits if "/M." in k]
