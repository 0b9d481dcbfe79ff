"""Hosts that are not on the public internet are refused: in every spelling, after DNS,
for `scrapy save` and the crawl's redirects and meta refreshes
(zeroarchive/core/targets.py, middlewares/private_targets.py, zeroarchive/events/saving.py).

The rest of the suite runs with ZEROARCHIVE_ALLOW_PRIVATE_TARGETS=1 (tests/conftest.py):
these tests take it away."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.conftest import Run, scrapy
from tests.replay import ReplayServer, Route
from tests.test_generic import write_sites
from zeroarchive.core.targets import (
    ALLOW_SETTING,
    TargetRefused,
    allow_private_targets,
    check_host,
    resolve,
)
from zeroarchive.events.saving import NotSavable, save_targets
from zeroarchive.sites.record import SiteSpec
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.schema import article

HTML = (("Content-Type", "text/html; charset=utf-8"),)
STORY = "<p>行政院今日召開記者會，說明明年度的交通預算編列方式與各縣市的補助。</p>" * 3
T0 = 1_800_000_000
OFF = {ALLOW_SETTING: "0"}

#: Every way to write a host that is not public, and what it is.
REFUSED = {
    "127.0.0.1": "loopback",
    "127.0.0.1.": "loopback",
    "127.1": "loopback",
    "2130706433": "loopback",
    "0x7f000001": "loopback",
    "0x7f.1": "loopback",
    "0X7F.0.0.1": "loopback",
    "0177.0.0.1": "loopback",
    "017700000001": "loopback",
    "127.255.255.254": "loopback",
    "[::1]": "loopback",
    "[0:0:0:0:0:0:0:1]": "loopback",
    "[::ffff:127.0.0.1]": "loopback",
    "[::ffff:7f00:1]": "loopback",
    "[2002:7f00:1::]": "loopback",
    "0": "unspecified",
    "0.0.0.0": "unspecified",
    "[::]": "unspecified",
    "10.0.0.1": "private",
    "012.0.0.1": "private",
    "172.16.5.4": "private",
    "192.168.1.1": "private",
    "0xc0a80101": "private",
    "[fc00::1]": "private",
    "[fd12:3456::1]": "private",
    "[::ffff:10.0.0.1]": "private",
    "169.254.169.254": "link-local",
    "2852039166": "link-local",
    "0xa9.0xfe.0xa9.0xfe": "link-local",
    "[fe80::1]": "link-local",
    "[fe80::1%25eth0]": "link-local",
    "[::ffff:169.254.169.254]": "link-local",
    "224.0.0.1": "multicast",
    "[ff02::1]": "multicast",
    "240.0.0.1": "reserved",
    "255.255.255.255": "reserved",
    "100.64.0.1": "not public",
}


@pytest.mark.parametrize("host", list(REFUSED))
def test_every_spelling_of_a_non_public_address_is_refused(host: str) -> None:
    with pytest.raises(TargetRefused) as refused:
        check_host(host, resolver=None)
    assert refused.value.kind == REFUSED[host]
    assert str(refused.value).startswith(host)


@pytest.mark.parametrize("host", ["93.184.215.14", "[2606:4700:4700::1111]", "1.1.1.1"])
def test_public_addresses_pass(host: str) -> None:
    check_host(host, resolver=None)


def test_names_are_judged_by_every_address_they_resolve_to() -> None:
    # The system's resolver: localhost is in /etc/hosts, no network needed.
    assert "127.0.0.1" in resolve("localhost")
    with pytest.raises(
        TargetRefused, match=re.escape("localhost resolves to 127.0.0.1, a loopback")
    ):
        check_host("localhost")
    # One private address among public ones is enough (a DNS rebinding name has both).
    with pytest.raises(TargetRefused, match=r"rebind\.example resolves to ::1, a loopback"):
        check_host("rebind.example", lambda host: ["93.184.215.14", "::1"])
    with pytest.raises(TargetRefused, match=re.escape("resolves to ::ffff:10.0.0.1, a private")):
        check_host("mapped.example", lambda host: ["::ffff:10.0.0.1"])
    check_host("news.example", lambda host: ["93.184.215.14", "2606:4700::1"])

    def nowhere(host: str) -> list[str]:
        raise OSError("no such name")

    # Its fetch fails on its own (dns), counted as such.
    check_host("gone.example", nowhere)


def test_the_archive_wide_switch_is_a_setting_the_environment_overrides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scrapy.settings import Settings

    monkeypatch.delenv(ALLOW_SETTING)
    assert not allow_private_targets(Settings({ALLOW_SETTING: False}))
    assert allow_private_targets(Settings({ALLOW_SETTING: True}))
    monkeypatch.setenv(ALLOW_SETTING, "0")
    assert not allow_private_targets(Settings({ALLOW_SETTING: True}))
    monkeypatch.setenv(ALLOW_SETTING, "1")
    assert allow_private_targets(Settings({ALLOW_SETTING: False}))


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Archive:
    return open_archive(url=f"sqlite:///{tmp_path_factory.mktemp('save') / 'archive.db'}")


def lab_resolver(host: str) -> list[str]:
    return {"intranet.example": ["10.1.2.3"], "news.example": ["93.184.215.14"]}[host]


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://127.0.0.1:6379/", "127.0.0.1 is a loopback address"),
        ("http://2130706433/admin", "2130706433 is 127.0.0.1, a loopback address"),
        ("http://0x7f.1/", "0x7f.1 is 127.0.0.1, a loopback address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://[::1]:8080/", "::1 is a loopback address"),
        ("http://[::ffff:127.0.0.1]/", "is ::ffff:127.0.0.1, a loopback address"),
        ("https://ann:s3cret@192.168.1.1/", "192.168.1.1 is a private address"),
        ("http://intranet.example/a", "intranet.example resolves to 10.1.2.3, a private"),
    ],
)
def test_a_save_of_a_non_public_host_is_refused_with_why(
    archive: Archive, url: str, said: str
) -> None:
    with pytest.raises(NotSavable) as refused:
        save_targets(archive, [url], T0, resolver=lab_resolver)
    message = str(refused.value)
    assert said in message and "ZEROARCHIVE_ALLOW_PRIVATE_TARGETS" in message
    assert "s3cret" not in message
    with archive.engine.connect() as conn:
        assert conn.execute(select(article.c.url)).all() == []


def test_a_save_of_a_public_host_or_an_allowed_one_is_filed(archive: Archive) -> None:
    (public,) = save_targets(archive, ["https://news.example/a"], T0, resolver=lab_resolver)
    assert public.site.name == "saved:news.example"
    # The archive allows them all.
    (lab,) = save_targets(archive, ["http://10.9.9.9/x"], T0, allow_private=True)
    assert lab.site.name == "saved:10.9.9.9"
    # A site allows its own host; a page of another private host is still refused.
    spec = SiteSpec(
        "lab", "http://intranet.example/", "news", {"allow_private_targets": True}, True
    )
    archive.sites.upsert(spec, T0)
    (held,) = save_targets(archive, ["http://intranet.example/b"], T0, resolver=lab_resolver)
    assert held.site.name == "lab"
    with pytest.raises(NotSavable, match=re.escape("127.0.0.1 is a loopback")):
        save_targets(archive, ["http://127.0.0.1/"], T0, resolver=lab_resolver)


def test_ad_hoc_site_names_and_urls_carry_no_credentials(archive: Archive) -> None:
    url = "https://reader:s3cret@news.example:8443/story?id=1"
    (target,) = save_targets(archive, [url], T0, resolver=lab_resolver)
    assert target.site.name == "saved:news.example:8443"
    assert target.site.url == "https://news.example:8443/"
    assert "s3cret" not in target.site.name + target.site.url
    # The article keeps them: the page is fetched with them.
    assert target.url == url


def stat(run: Run, key: str) -> int:
    found = re.search(rf"'{re.escape(key)}': (\d+)", run.output)
    return int(found.group(1)) if found else 0


def test_a_crawl_refuses_redirects_and_meta_refreshes_to_other_private_hosts(
    tmp_path: Path,
) -> None:
    """The site (on 127.0.0.1, as every test site) allows its own host; its articles that
    redirect or refresh to this machine under another name are refused, recorded as
    such, and the admin page they point to is never asked."""
    db_url = f"sqlite:///{tmp_path / 'archive.db'}"
    links = "".join(f"<a href='/news/{n}'>{n}</a>" for n in range(1, 5))
    routes = {"/": Route(200, HTML, f"<html><body>{links}</body></html>".encode())}
    with ReplayServer(routes) as server:
        port = server.url("/").split(":")[2].split("/")[0]
        admin = "/admin?secret=1"
        routes.update(
            {
                # A Location to this machine by name (DNS: /etc/hosts).
                "/news/1": Route(302, (("Location", f"http://localhost:{port}{admin}"),), b""),
                # A Location to the cloud's metadata; a meta refresh to 127.0.0.1 in hex.
                "/news/2": Route(302, (("Location", "http://169.254.169.254/latest/"),), b""),
                "/news/3": Route(
                    200,
                    HTML,
                    f'<html><head><meta http-equiv="refresh" content="0; '
                    f'url=http://0x7f.1:{port}{admin}"></head><body></body></html>'.encode(),
                ),
                # A redirect within the site is followed.
                "/news/4": Route(302, (("Location", "/news/5"),), b""),
                "/news/5": Route(
                    200, HTML, f"<html><body><h1>5</h1>{STORY}</body></html>".encode()
                ),
                admin: Route(200, HTML, b"<html><body>secret</body></html>"),
            }
        )
        config = {"article": "/news/", "delay": 0, "allow_private_targets": True}
        sites: list[dict[str, object]] = [
            {"name": "lab", "url": server.url("/"), "type": "news", "config": config}
        ]
        loaded = scrapy(
            "load_sites", str(write_sites(tmp_path / "s.yaml", sites)), db_url=db_url, cwd=tmp_path
        )
        assert loaded.returncode == 0, loaded.output
        env = {**OFF, "ZEROARCHIVE_FAKE_NOW": str(T0)}
        run = scrapy("crawl", "generic", db_url=db_url, cwd=tmp_path, extra_env=env)
        assert server.hits[admin] == 0, run.output
        assert server.hits["/news/5"] == 1, run.output
        assert stat(run, "zeroarchive/targets_refused/loopback") == 2, run.output
        assert stat(run, "zeroarchive/targets_refused/link-local") == 1, run.output
        assert stat(run, "zeroarchive/snapshots_saved") == 1, run.output
        assert f"Refusing http://localhost:{port}{admin}: localhost resolves to" in run.output
        assert f"Refusing http://0x7f.1:{port}{admin}: 0x7f.1 is 127.0.0.1" in run.output
        engine = open_archive(url=db_url).engine
        with engine.connect() as conn:
            rows = dict(conn.execute(select(article.c.url, article.c.stop_reason)).all())
        refused = {url.rsplit("/", 1)[1] for url, why in rows.items() if why and "private" in why}
        assert refused == {"1", "2", "3"}, rows
        assert rows[server.url("/news/1")] == "last_error:private_target"

        # The same site without the opt-in: not one request leaves, and it says why.
        server.reset_hits()
        config.pop("allow_private_targets")
        scrapy(
            "load_sites", str(write_sites(tmp_path / "s.yaml", sites)), db_url=db_url, cwd=tmp_path
        )
        later = {**OFF, "ZEROARCHIVE_FAKE_NOW": str(T0 + 2 * 86400)}
        closed = scrapy("crawl", "generic", db_url=db_url, cwd=tmp_path, extra_env=later)
        assert sum(server.hits.values()) == 0, closed.output
        assert f"Refusing {server.url('/')}" in closed.output


def test_scrapy_save_refuses_a_private_target_in_one_line(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'archive.db'}"
    run = scrapy(
        "save", "http://0xa9fea9fe/latest/meta-data/", db_url=db_url, cwd=tmp_path, extra_env=OFF
    )
    assert run.returncode == 2, run.output
    assert "0xa9fea9fe is 169.254.169.254, a link-local address" in run.output
    assert "Traceback" not in run.output
