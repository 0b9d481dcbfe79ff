"""Sites behind a login form (0archive's ``login_url``): the generic spider logs in before
it walks, with credentials from the environment, and archives what members see. The
members' articles are real saved news pages (tests/fixtures/tw-news-2014)."""

from __future__ import annotations

import gzip
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conftest import Run, scrapy
from tests.emulator import NOT_FOUND, EmulatorServer, Incoming, Reply, html
from tests.test_generic import stat, write_sites
from zeroarchive.crawl.login import credential_names
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.snapshots import iter_snapshots

PAGES = Path(__file__).parent / "fixtures" / "tw-news-2014" / "html"
ARTICLES = {"/news/1": "cna_s1", "/news/2": "udn_s1"}
USER, PASSWORD = "reporter@example.tw", "s3cret"
LOGIN_FORM = """<!doctype html><html><body><h1>會員登入</h1>
<form action="/session" method="post"><input type="hidden" name="csrf" value="t0k">
<input type="email" name="account"><input type="password" name="pw">
<button type="submit">登入</button></form></body></html>"""


class MembersSite:
    """Everything but /login asks for the session cookie a correct login sets."""

    def handle(self, request: Incoming) -> Reply:
        path = request.path
        if path == "/login":
            return html(200, LOGIN_FORM)
        if path == "/session" and request.method == "POST":
            form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
            if (form.get("account"), form.get("pw"), form.get("csrf")) == (USER, PASSWORD, "t0k"):
                return html(302, "", ("Location", "/welcome"), ("Set-Cookie", "sid=ok; Path=/"))
            return html(200, LOGIN_FORM)
        if request.cookies.get("sid") != "ok":
            return html(200, LOGIN_FORM) if path in ("/list", "/welcome", *ARTICLES) else NOT_FOUND
        if path == "/welcome":
            return html(200, "<p>歡迎回來</p>")
        if path == "/list":
            links = "".join(f'<a href="{p}">{p}</a>' for p in ARTICLES)
            return html(200, f"<html><body>{links}</body></html>")
        if path in ARTICLES:
            body = gzip.decompress((PAGES / f"{ARTICLES[path]}.html.gz").read_bytes())
            return Reply(200, (("Content-Type", "text/html"),), body)
        return NOT_FOUND


def crawl(db_url: str, tmp_path: Path, server: EmulatorServer, **env: str) -> Run:
    site = {
        "name": "members",
        "url": server.url("/list"),
        "type": "news",
        "config": {"article": "/news/\\d+", "login_url": server.url("/login"), "delay": 0},
    }
    loaded = scrapy(
        "load_sites", str(write_sites(tmp_path / "s.yaml", [site])), db_url=db_url, cwd=tmp_path
    )
    assert loaded.returncode == 0, loaded.output
    run = scrapy("crawl", "generic", db_url=db_url, cwd=tmp_path, extra_env=env)
    assert run.returncode == 0 and "Traceback" not in run.output, run.output
    return run


def test_the_spider_logs_in_then_archives_what_members_see(db_url: str, tmp_path: Path) -> None:
    with EmulatorServer(MembersSite()) as server:
        user_var, password_var = credential_names(server.url("/login"))
        run = crawl(db_url, tmp_path, server, **{user_var: USER, password_var: PASSWORD})
        assert server.hits["POST /session"] == 1
    assert stat(run, "zeroarchive/logins") == 1
    assert stat(run, "zeroarchive/snapshots_saved") == 2
    engine = open_archive(url=db_url).engine
    stored = {urlsplit(s.url).path: s.snapshot.raw for s in iter_snapshots(engine)}
    assert stored == {
        path: gzip.decompress((PAGES / f"{name}.html.gz").read_bytes())
        for path, name in ARTICLES.items()
    }
    assert PASSWORD not in run.output


@pytest.mark.parametrize(
    ("password", "kind", "says"),
    [
        (None, "login_credentials_missing", "set ZEROARCHIVE_LOGIN_127_0_0_1_USERNAME"),
        ("wrong", "login_failed", "still asked to log in"),
    ],
)
def test_a_site_that_cannot_log_in_is_walked_anyway_with_an_error(
    db_url: str, tmp_path: Path, password: str | None, kind: str, says: str
) -> None:
    with EmulatorServer(MembersSite()) as server:
        user_var, password_var = credential_names(server.url("/login"))
        env = {user_var: USER, password_var: password} if password else {}
        run = crawl(db_url, tmp_path, server, **env)
        assert server.hits["GET /list"] == 1
    assert stat(run, f"zeroarchive/errors/{kind}") == 1
    assert says in run.output
    assert stat(run, "zeroarchive/snapshots_saved") == 0
