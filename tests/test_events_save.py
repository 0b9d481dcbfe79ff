"""`scrapy save URL... [--watch]`: a page archived at once under an ad-hoc inactive site,
watched afterwards only when asked to."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import create_engine, select

from tests.conftest import scrapy
from tests.replay import ReplayServer
from tests.test_events import T0, article_page
from zeroarchive.storage.schema import article, site


def test_save_archives_a_page_now_and_watches_it_only_when_asked(
    db_url: str, tmp_path: Path
) -> None:
    routes = {"/story/1": article_page("s1"), "/story/2": article_page("s2")}
    with ReplayServer(routes) as server:
        env = {"ZEROARCHIVE_FAKE_NOW": str(T0)}
        saved = scrapy(
            "save",
            server.url("/story/1"),
            "--watch",
            "-s",
            "ROBOTSTXT_OBEY=False",
            db_url=db_url,
            cwd=tmp_path,
            extra_env=env,
        )
        assert saved.returncode == 0, saved.output
        assert "Traceback" not in saved.output
        assert server.hits["/story/1"] == 1
        engine = create_engine(db_url)
        with engine.connect() as conn:
            (row,) = conn.execute(select(site)).all()
            (saved_article,) = conn.execute(select(article)).all()
        assert row.name.startswith("saved:127.0.0.1") and not row.is_active
        assert "watch" not in json.loads(row.config)  # the default watch
        assert saved_article.snapshot_count == 1 and saved_article.first_snapshot_at == T0
        unwatched = scrapy(
            "save",
            server.url("/story/2"),
            "-s",
            "ROBOTSTXT_OBEY=False",
            db_url=db_url,
            cwd=tmp_path,
            extra_env=env,
        )
        assert unwatched.returncode == 0, unwatched.output
        with engine.connect() as conn:
            config = json.loads(conn.execute(select(site.c.config)).scalar_one())
        assert config["watch"] == []
        refused = scrapy(
            "save",
            "https://www.ptt.cc/bbs/Gossiping/M.1.A.ABC.html",
            db_url=db_url,
            cwd=tmp_path,
        )
        assert refused.returncode != 0 and "open-web pages only" in refused.output
        assert "Traceback" not in refused.output
        engine.dispose()
