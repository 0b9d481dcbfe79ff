"""No request leaves the machine but to the sites archived (docs/operators/offline.md).

The crawls here run as a new user's first run would: empty HOME, XDG cache and tldextract
cache, no TLDEXTRACT_* variable, and a network guard (a ``sitecustomize`` module on the
subprocess's path) that refuses and records every name lookup and connection that is not
to this machine. A site on an unresolvable name stands for a site the machine cannot reach.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest
from playwright.sync_api import sync_playwright
from scrapy.settings import Settings

from middlewares.cookies import CookiesDownloaderMiddleware, public_suffix_list
from tests.conftest import REPO, Run, project_settings
from tests.replay import ReplayServer, Route, site_routes
from zeroarchive.crawl.browser import BrowserConfig
from zeroarchive.parser import ParseError, parse_snapshot

GUARD = '''
"""The test's network guard: refuse and record what is not for this machine."""
import os
import socket

_LOG = os.environ["NETGUARD_LOG"]
_LOCAL = ("localhost", "ip6-localhost", "::1")


def _local(host):
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    return host in (None, "", *_LOCAL) or str(host).startswith("127.")


def _note(what):
    with open(_LOG, "a", encoding="utf-8") as log:
        log.write(what + "\\n")


_getaddrinfo = socket.getaddrinfo


def getaddrinfo(host, *args, **kwargs):
    if not _local(host):
        _note(f"resolve {host}")
        raise socket.gaierror(socket.EAI_NONAME, "refused by the test's network guard")
    return _getaddrinfo(host, *args, **kwargs)


def gethostbyname(host):
    return getaddrinfo(host, None, socket.AF_INET)[0][4][0]


class GuardedSocket(socket.socket):
    def _check(self, address):
        if isinstance(address, tuple) and not _local(address[0]):
            _note(f"connect {address[0]}:{address[1]}")
            raise ConnectionRefusedError(111, "refused by the test's network guard")

    def connect(self, address):
        self._check(address)
        return super().connect(address)

    def connect_ex(self, address):
        self._check(address)
        return super().connect_ex(address)


socket.getaddrinfo = getaddrinfo
socket.gethostbyname = gethostbyname
socket.socket = GuardedSocket
'''

UNREACHABLE = "www.nowhere.invalid"


def offline_scrapy(tmp_path: Path, *args: str) -> tuple[Run, list[str], Path]:
    """``scrapy ARGS`` as on a fresh machine with the network refused: the run, the
    refused attempts, and the fresh home (to look for caches in)."""
    guard = tmp_path / "guard"
    guard.mkdir(exist_ok=True)
    (guard / "sitecustomize.py").write_text(GUARD, encoding="utf-8")
    log = tmp_path / "refused.log"
    log.write_text("", encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TLDEXTRACT_") and not k.lower().endswith("_proxy")
    }
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        NETGUARD_LOG=str(log),
        PYTHONPATH=f"{guard}{os.pathsep}{REPO}",
        SCRAPY_SETTINGS_MODULE="settings.base",
        ZEROARCHIVE_DB_URL=f"sqlite:///{tmp_path / 'first.db'}",
    )
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    refused = log.read_text(encoding="utf-8").splitlines()
    return Run(done.returncode, done.stdout, done.stderr), refused, home


def stat(run: Run, key: str) -> int:
    found = re.search(rf"'{re.escape(key)}': (\d+)", run.output)
    return int(found.group(1)) if found else 0


def test_the_guard_refuses_what_is_not_local(tmp_path: Path) -> None:
    run, refused, _ = offline_scrapy(tmp_path, "version")
    assert run.returncode == 0
    assert refused == []
    guard = tmp_path / "guard"
    probe = (
        "import socket\n"
        "try:\n    socket.getaddrinfo('publicsuffix.org', 443)\n"
        "except OSError as e:\n    print('refused', e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(guard), "NETGUARD_LOG": str(tmp_path / "p.log")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "refused" in done.stdout
    assert (tmp_path / "p.log").read_text() == "resolve publicsuffix.org\n"


def test_a_first_crawl_with_cookies_asks_nothing_of_the_internet(tmp_path: Path) -> None:
    routes = site_routes()
    # Cookies make Scrapy's cookie rules ask whether "localhost" is a public suffix.
    for path in ("/", "/news"):
        page = routes[path]
        routes[path] = Route(
            page.status, (*page.headers, ("Set-Cookie", "visit=1; Path=/")), page.body
        )
    routes["/robots.txt"] = Route(
        200, (("Content-Type", "text/plain"),), b"User-agent: *\nDisallow: /about.html\n"
    )
    with ReplayServer(routes) as server:
        # "localhost", not 127.0.0.1: tldextract answers an IP address without its list.
        base = server.base_url.replace("127.0.0.1", "localhost")
        run, refused, home = offline_scrapy(
            tmp_path,
            "crawl",
            "generic",
            "-a",
            f"url={base}/",
            "-a",
            "article=/news/",
            "-a",
            r"following=^http://localhost:\d+/(news)?$",
            "-s",
            "DOWNLOAD_DELAY=0",
        )
        robots_hits = server.hits["/robots.txt"]
    assert run.returncode == 0, run.output
    assert "Traceback" not in run.output, run.output
    assert refused == []
    assert stat(run, "zeroarchive/snapshots_saved") >= 6
    # Fetched once for its rules; the spider's own request (its Sitemap: lines) reuses it.
    assert robots_hits == 1
    assert stat(run, "robotstxt/served_from_run") == 1
    # Nothing cached: tldextract wrote no list anywhere.
    assert not [p for p in home.rglob("*") if "tldextract" in str(p)]


def test_a_site_that_cannot_be_reached_is_one_line_and_a_failed_run(tmp_path: Path) -> None:
    """README command 1 on a machine that cannot reach the site: a few lines, the reason
    among them, and no retry of a name that did not resolve (they took 14 s)."""
    run, refused, _ = offline_scrapy(
        tmp_path,
        "crawl",
        "generic",
        "-a",
        f"url=https://{UNREACHABLE}/list/aall.aspx",
        "-a",
        r"article=/news/[a-z]+/\d+\.aspx",
    )
    assert run.returncode == 4, run.output
    lines = run.output.splitlines()
    assert len(lines) <= 10, run.output
    assert lines[-1].startswith("error: every request of this run failed")
    assert "Running upgrade" not in run.output and "Enabled downloader" not in run.output
    assert stat(run, "retry/count") == 0 and stat(run, "dns_failures/hosts") == 1
    assert "Traceback" not in run.output, run.output
    about_site = [
        line for line in run.stderr.splitlines() if UNREACHABLE in line and "WARNING" in line
    ]
    assert len(about_site) == 1, run.output
    assert "cannot be reached (dns" in about_site[0]
    assert " ERROR: " not in run.output, run.output
    assert "error: every request of this run failed" in run.stderr
    assert stat(run, "robotstxt/request_count") == 1
    assert stat(run, "zeroarchive/errors/dns") == 1
    # The one host tried is the site's (its robots.txt and retries); nothing else.
    assert refused and {line.split()[1] for line in refused} == {UNREACHABLE}


# tldextract reads a file:// list through requests-file's FileAdapter, which leaves the file
# to the garbage collector (once per crawl, at start-up).
@pytest.mark.filterwarnings("ignore:unclosed file:ResourceWarning")
def test_a_public_suffix_list_file_is_read_and_a_bad_one_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    listed = tmp_path / "psl.dat"
    listed.write_text("// a private list\nexample\n*.hosting.test\n", encoding="utf-8")
    extract, source = public_suffix_list(str(listed))
    assert source == str(listed)
    assert extract("www.shop.example").suffix == "example"
    assert extract("a.b.hosting.test").domain == "a"
    # A cookie for a public suffix is refused (Scrapy's rule).
    assert extract("shop.hosting.test").domain == ""

    caplog.set_level("ERROR")
    extract, source = public_suffix_list(str(tmp_path / "missing.dat"))
    assert source == "bundled"
    assert extract("www.bbc.co.uk").suffix == "co.uk"
    assert len(caplog.records) == 1
    assert "cannot be read" in caplog.records[0].getMessage()


def test_the_cookie_middleware_replaces_scrapys() -> None:
    middlewares = project_settings()["DOWNLOADER_MIDDLEWARES"]
    assert middlewares["scrapy.downloadermiddlewares.cookies.CookiesMiddleware"] is None
    assert middlewares["middlewares.cookies.CookiesDownloaderMiddleware"] == 700
    assert CookiesDownloaderMiddleware().extract("x.blogspot.com").domain == "x"


def test_a_snapshot_that_is_only_a_url_is_not_downloaded_by_the_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """htmldate takes a string that looks like a URL for one to download."""
    import htmldate.utils

    asked: list[str] = []
    monkeypatch.setattr(htmldate.utils, "fetch_url", lambda url, *a, **k: asked.append(url))
    with contextlib.suppress(ParseError):
        parse_snapshot("Article", b"https://www.nowhere.invalid/x", "utf-8", "https://a.tw/1")
    assert asked == []


def test_a_feed_that_names_a_local_file_is_not_read_from_disk(tmp_path: Path) -> None:
    """feedparser reads a file whose name it is given as bytes."""
    from spiders.youtube import feed_videos
    from zeroarchive.crawl.feeds import BadListDocument, parse_feed

    local = tmp_path / "feed.xml"
    local.write_text(
        '<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
        "<item><link>https://a.tw/news/1</link></item></channel></rss>",
        encoding="utf-8",
    )
    # The bytes are what they are, a path and no feed; before, the file's link came back.
    with pytest.raises(BadListDocument):
        parse_feed(str(local).encode(), "https://a.tw/feed")
    assert feed_videos(str(local).encode()) == []


def resolved_names(net_log: Path) -> set[str]:
    """The host names Chromium's resolver was asked for, from its net log."""
    log = json.loads(net_log.read_text(encoding="utf-8"))
    asked = log["constants"]["logEventTypes"]["HOST_RESOLVER_MANAGER_REQUEST"]
    names = set()
    for event in log["events"]:
        host = event.get("params", {}).get("host")
        if event["type"] == asked and host:
            names.add(re.sub(r"^\w+://|:\d+$", "", host))
    return names


def test_the_browser_asks_for_nothing_but_the_pages_hosts(tmp_path: Path) -> None:
    """Chromium's own services (its account check, on-demand components) ask Google within
    a second of starting whatever its flags say; the launch options make those names
    unresolvable. The page's picture on another host shows the log sees what is asked."""
    page = b'<html><body><p>\xe4\xb8\xad\xe6\x96\x87</p><img src="http://pictures.invalid/a.png"></body></html>'
    routes = {"/": Route(200, (("Content-Type", "text/html; charset=utf-8"),), page)}
    options = BrowserConfig.from_settings(Settings(project_settings())).launch_options()
    net_log = tmp_path / "net-log.json"
    options["args"] = [*cast(list[str], options["args"]), f"--log-net-log={net_log}"]
    with ReplayServer(routes) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(**options)  # type: ignore[arg-type]
        tab = browser.new_page()
        tab.goto(f"{server.base_url}/")
        tab.wait_for_timeout(2000)
        browser.close()
    names = resolved_names(net_log)
    assert "pictures.invalid" in names
    assert names <= {"127.0.0.1", "pictures.invalid", "~notfound"}, names
