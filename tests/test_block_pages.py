"""Block pages (bot challenges, captchas, login walls, a site's own block text): failures
of kind blocked, never snapshots. Detected on real Cloudflare pages (tests/fixtures/
block_pages) and never on any real page the tests keep."""

from __future__ import annotations

import gzip
import json
import lzma
import re
import time
from pathlib import Path

import pytest

from tests.conftest import scrapy
from tests.emulator import NOT_FOUND, EmulatorServer, Incoming, Reply, html
from tests.test_generic import articles_by_url, stat, write_sites
from zeroarchive.crawl.blocks import block_reason

FIXTURES = Path(__file__).parent / "fixtures"
CHALLENGES = {
    "js_challenge_11_12_2019.html.gz": "cloudflare_challenge",
    "js_challenge1_16_05_2020.html.gz": "cloudflare_challenge",
    "js_challenge-27-05-2020.html.gz": "cloudflare_challenge",
    "reCaptcha_challenge_12_12_2019.html.gz": "cloudflare_captcha",
    "bfm_07_01_2021.html.gz": "cloudflare_bot_fight",
}
ARTICLE = FIXTURES / "tw-news-2014" / "html" / "cna_s1.html.gz"
WALL = "<!doctype html><html><body><h1>會員專區</h1><p>請登入會員以繼續閱讀全文</p></body></html>"


def challenge(name: str) -> bytes:
    return gzip.decompress((FIXTURES / "block_pages" / name).read_bytes())


@pytest.mark.parametrize(("name", "reason"), list(CHALLENGES.items()))
def test_real_challenge_pages_are_block_pages(name: str, reason: str) -> None:
    assert block_reason({}, challenge(name)) == reason


def test_cloudflares_challenge_header_is_enough() -> None:
    assert block_reason({"cf-mitigated": "challenge"}, b"") == "cloudflare_challenge"


def every_saved_page() -> list[Path]:
    skip = ("block_pages", "SOURCE.txt", ".py", ".json", ".tsv")
    return [
        path
        for path in sorted(FIXTURES.rglob("*"))
        if path.is_file() and not any(part in str(path) for part in skip)
    ]


def test_no_real_page_the_tests_keep_is_taken_for_a_block_page() -> None:
    pages = every_saved_page()
    assert len(pages) > 150
    for path in pages:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        elif path.suffix == ".xz":
            data = lzma.decompress(data)
        assert block_reason({}, data) is None, path


def test_a_sites_own_block_text() -> None:
    assert block_reason({}, WALL.encode(), [re.compile("請登入會員")]) == "site_pattern"
    assert block_reason({}, WALL.encode(), [re.compile("請登出")]) is None


class ChallengedSite:
    """A list page of four articles: one real page, a real Cloudflare challenge served
    with 200, Bot Fight Mode's page with the cf-mitigated header, and a members' wall."""

    def handle(self, request: Incoming) -> Reply:
        if request.path == "/list":
            links = "".join(f'<a href="/news/{n}">{n}</a>' for n in range(1, 5))
            return html(200, f"<html><body>{links}</body></html>")
        page = (("Content-Type", "text/html; charset=utf-8"),)
        if request.path == "/news/1":
            body = gzip.decompress(ARTICLE.read_bytes())
            return Reply(200, (("Content-Type", "text/html"),), body)
        if request.path == "/news/2":
            return Reply(200, page, challenge("js_challenge_11_12_2019.html.gz"))
        if request.path == "/news/3":
            headers = (*page, ("cf-mitigated", "challenge"))
            return Reply(200, headers, challenge("bfm_07_01_2021.html.gz"))
        if request.path == "/news/4":
            return html(200, WALL)
        return NOT_FOUND


def test_block_pages_are_failures_that_back_off_never_snapshots(
    db_url: str, tmp_path: Path
) -> None:
    app = ChallengedSite()
    with EmulatorServer(app) as server:
        site = {
            "name": "challenged",
            "url": server.url("/list"),
            "type": "news",
            "config": {"article": r"/news/\d+$", "blocked": "請登入會員", "delay": 0},
        }
        loaded = scrapy(
            "load_sites", str(write_sites(tmp_path / "s.yaml", [site])), db_url=db_url, cwd=tmp_path
        )
        assert loaded.returncode == 0, loaded.output
        started = int(time.time())
        run = scrapy("crawl", "generic", db_url=db_url, cwd=tmp_path)
        assert run.returncode == 0 and "Traceback" not in run.output, run.output
        # Each block page was asked for once: no retry hammers a challenge.
        assert all(server.hits[f"GET /news/{n}"] == 1 for n in range(2, 5))
        base = server.base_url
    assert stat(run, "zeroarchive/snapshots_saved") == 1
    assert stat(run, "zeroarchive/errors/blocked") == 3
    assert stat(run, "zeroarchive/blocked/cloudflare_challenge") == 2
    assert stat(run, "zeroarchive/blocked/site_pattern") == 1
    rows = articles_by_url(db_url)
    for n in range(2, 5):
        row = rows[f"{base}/news/{n}"]
        assert (row["snapshot_count"], row["stop_reason"]) == (0, "last_error:blocked")
        assert row["next_snapshot_at"] >= started + 300  # backed off, not stopped
    stats = scrapy("site_stats", "--json", db_url=db_url, cwd=tmp_path)
    (line,) = stats.stdout.splitlines()
    assert json.loads(line)["blocked"] == 3


def test_a_challenged_list_page_is_a_failed_list_page(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    with EmulatorServer(ChallengedSite()) as server:
        site = {
            "name": "c",
            "url": server.url("/news/2"),
            "type": "news",
            "config": {"article": r"/news/\d+$", "delay": 0},
        }
        scrapy(
            "load_sites", str(write_sites(tmp_path / "s.yaml", [site])), db_url=db_url, cwd=tmp_path
        )
        run = scrapy("crawl", "generic", db_url=db_url, cwd=tmp_path)
    assert stat(run, "zeroarchive/list_page_failures") == 1
    assert stat(run, "zeroarchive/errors/blocked") == 1
    assert "Block page (cloudflare_challenge)" in run.output
