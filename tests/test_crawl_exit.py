"""`scrapy crawl`'s exit status on a run where the site answered but every article is
gone (docs/reference/stats.md#exit-codes): a takedown wave is what the events are for,
not a site that cannot be reached."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import Run, scrapy
from tests.replay import ReplayServer, Route
from tests.test_generic import write_sites
from zeroarchive.core.schedule import DAY

T0 = 1_800_000_000
HTML = (("Content-Type", "text/html; charset=utf-8"),)
STORY = "<p>行政院今日召開記者會，說明明年度的交通預算編列方式。</p>" * 3


def stat(run: Run, key: str) -> int:
    found = re.search(rf"'{re.escape(key)}': (\d+)", run.output)
    return int(found.group(1)) if found else 0


def test_a_run_where_every_article_is_gone_is_not_a_failed_run(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'archive.db'}"
    links = "".join(f"<a href='/news/{n}'>{n}</a>" for n in range(3))
    routes = {
        "/": Route(200, HTML, f"<html><body>{links}</body></html>".encode()),
        **{
            f"/news/{n}": Route(
                200, HTML, f"<html><body><h1>{n}</h1>{STORY}</body></html>".encode()
            )
            for n in range(3)
        },
    }

    def crawl(at: int, *settings: str) -> Run:
        env = {"ZEROARCHIVE_FAKE_NOW": str(at)}
        return scrapy("crawl", "generic", *settings, db_url=db_url, cwd=tmp_path, extra_env=env)

    gone = Route(404, HTML, b"<html><body>not found</body></html>")
    with ReplayServer(routes) as server:
        config = {"article": "/news/", "delay": 0}
        sites: list[dict[str, object]] = [
            {"name": "farm", "url": server.url("/"), "type": "news", "config": config}
        ]
        loaded = scrapy(
            "load_sites", str(write_sites(tmp_path / "s.yaml", sites)), db_url=db_url, cwd=tmp_path
        )
        assert loaded.returncode == 0, loaded.output

        first = crawl(T0)
        assert first.returncode == 0 and stat(first, "zeroarchive/snapshots_saved") == 3
        # A day on, the front page and every article answer 404.
        for path in list(routes):
            routes[path] = gone
        wave = crawl(T0 + DAY)
        assert stat(wave, "zeroarchive/list_page_failures") >= 1, wave.output
        assert stat(wave, "zeroarchive/snapshots_gone") == 3, wave.output
        assert wave.returncode == 0, wave.output
    # The same site when its server is gone (connections refused): the run failed, exit 4.
    # (No retries: the refused robots.txt would be asked again with pauses, 15 s in all.)
    down = crawl(T0 + 3 * DAY, "-s", "RETRY_TIMES=0")
    assert stat(down, "zeroarchive/snapshot_failures") >= 1, down.output
    assert down.returncode == 4, down.output
