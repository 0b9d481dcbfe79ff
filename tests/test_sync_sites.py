"""`scrapy sync_sites` end to end: the real CLI against a local fake Airtable API
(tests/fake_airtable.py) on SQLite and MariaDB, plus the pure row mapping and planning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests
from scrapy.settings import Settings
from sqlalchemy import create_engine, select
from urllib3.response import HTTPResponse

from tests.conftest import Run, project_settings, scrapy
from tests.fake_airtable import FakeAirtable
from tests.tcp_forwarder import free_port
from zeroarchive.sites.airtable import (
    AirtableConfig,
    AirtableError,
    fetch_records,
    rate_limit_retry,
)
from zeroarchive.sites.airtable_rows import AirtableRowError, row_spec, type_label
from zeroarchive.sites.record import SiteSpec, parse_config
from zeroarchive.sites.sync import plan_sync
from zeroarchive.sources import label_types, source_for_type
from zeroarchive.storage.schema import site

PROJECT = Settings(project_settings())
KEY = "patZA0Test1234.0123456789abcdef0123456789abcdef"
VIEW = "Approved sites"
CNA = {
    "name": "cna",
    "url": "https://www.cna.com.tw/list/aall.aspx",
    "type": "新聞網站",
    "approved": True,
    "article": r"/news/[a-z]+/\d+\.aspx",
    "following": r"/list/aall\.aspx\?page=\d+",
    "depth": 2,
    "delay": "1.5",
    "ua": "Mozilla/5.0 (X11; Linux x86_64) zeroarchive",
    "Notes": "中央社 即時新聞",
}
LTN = {
    "name": "ltn",
    "url": "https://news.ltn.com.tw/list/breakingnews",
    "type": "新聞網站",
    "approved": True,
    "article": "/news/\\w+/breakingnews/\\d+\n/news/\\w+/paper/\\d+",
}
KKNEWS = {
    "name": "kknews",
    "url": "https://kknews.cc/",
    "type": "內容農場",
    "approved": True,
    "article": r"/\w+/\w+\.html",
    "render": True,
}
EY = {
    "name": "ey",
    "url": "https://www.ey.gov.tw/Page/6485009ABEC1CB9C",
    "type": "政府網站",
    "approved": True,
    "article": "/Page/9277F759E41CCD91/",
}
PTT = {
    "name": "ptt-gossiping",
    "url": "https://www.ptt.cc/bbs/Gossiping/index.html",
    "type": "PTT",
    "approved": True,
}
MOHW = {
    "name": "mohw-fb",
    "url": "https://www.facebook.com/MOHW.Taiwan/",
    "type": "FB粉專",
    "approved": False,
}


def sync(fake: FakeAirtable, db_url: str, cwd: Path, *args: str, **env: str) -> Run:
    settings = {
        "AIRTABLE_API_KEY": KEY,
        "AIRTABLE_BASE_ID": fake.base_id,
        "AIRTABLE_TABLE": fake.table,
        "AIRTABLE_VIEW": VIEW,
        "AIRTABLE_ENDPOINT_URL": fake.endpoint_url,
        "AIRTABLE_PAGE_SIZE": "2",
        "AIRTABLE_RATE_LIMIT_WAIT": "0.1",
        "AIRTABLE_TIMEOUT": "10",
        **env,
    }
    run = scrapy("sync_sites", *args, db_url=db_url, cwd=cwd, extra_env=settings)
    assert KEY not in run.output
    assert KEY[10:30] not in run.output
    return run


def all_sites(db_url: str) -> list[dict[str, Any]]:
    """Every Site row, by id, with its config decoded."""
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(site).order_by(site.c.site_id)).mappings().all()
    finally:
        engine.dispose()
    return [{**row, "config": json.loads(row["config"])} for row in rows]


def sites(db_url: str) -> dict[str, dict[str, Any]]:
    """Every Site row, by name, with its config decoded."""
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(site)).mappings().all()
    finally:
        engine.dispose()
    return {row["name"]: {**row, "config": json.loads(row["config"])} for row in rows}


def fake_airtable() -> FakeAirtable:
    return FakeAirtable(api_key=KEY, views={VIEW: lambda fields: True, "Empty": lambda f: False})


def change_lines(run: Run) -> list[str]:
    actions = ("add ", "update ", "reactivate ", "deactivate ")
    return [line for line in run.stdout.splitlines() if line.startswith(actions)]


def line_for(run: Run, name: str) -> str:
    """The one change line the sync printed for site ``name``."""
    (line,) = [line for line in change_lines(run) if f" {name} (" in line]
    return line


# --- end to end ---------------------------------------------------------------------------


def test_sync_adds_updates_deactivates_and_reactivates(db_url: str, tmp_path: Path) -> None:
    # A site loaded from a file before Airtable was used: the Airtable row adopts it and
    # keeps the config keys Airtable has no column for.
    (tmp_path / "sites.yaml").write_text(
        "- name: ltn\n  url: https://news.ltn.com.tw/list/breakingnews\n  type: news\n"
        "  config: {article: /news/, robots: false, cookies: {over18: '1'}}\n",
        encoding="utf-8",
    )
    assert scrapy("load_sites", "sites.yaml", db_url=db_url, cwd=tmp_path).returncode == 0
    ltn_id = sites(db_url)["ltn"]["site_id"]
    with fake_airtable() as fake:
        ids = {row["name"]: fake.add(**row) for row in (CNA, LTN, KKNEWS, EY, PTT, MOHW)}

        first = sync(fake, db_url, tmp_path)
        assert first.returncode == 0, first.output
        assert first.stdout.splitlines()[-1] == (
            "6 rows: 4 added, 1 updated, 0 reactivated, 0 deactivated, 0 unchanged, "
            "1 not approved, 0 invalid, 0 warning(s)"
        )
        assert "sync_sites: reading Airtable: 6 rows done in" in first.stderr
        # Six rows, two a page: three requests chained by the iterator offsets, view kept.
        pages = fake.list_requests()
        assert [seen.status for seen in pages] == [200, 200, 200]
        assert [seen.params.get("view") for seen in pages] == [VIEW] * 3
        assert [seen.params["pageSize"] for seen in pages] == ["2"] * 3
        assert "offset" not in pages[0].params
        assert pages[1].params["offset"].endswith("/" + ids["kknews"])
        assert pages[2].params["offset"].endswith("/" + ids["ptt-gossiping"])

        stored = sites(db_url)
        assert sorted(stored) == ["cna", "ey", "kknews", "ltn", "ptt-gossiping"]
        cna = stored["cna"]
        assert (cna["type"], cna["url"], cna["airtable_id"], cna["is_active"]) == (
            "news",
            CNA["url"],
            ids["cna"],
            True,
        )
        assert cna["config"] == {
            "article": CNA["article"],
            "following": CNA["following"],
            "depth": 2,
            "delay": 1.5,
            "ua": CNA["ua"],
        }
        assert stored["kknews"]["type"] == "content_farm"
        assert stored["kknews"]["config"]["render"] is True
        assert stored["ey"]["type"] == "gov"
        assert (stored["ptt-gossiping"]["type"], stored["ptt-gossiping"]["config"]) == ("ptt", {})
        ltn = stored["ltn"]
        assert (ltn["site_id"], ltn["airtable_id"]) == (ltn_id, ids["ltn"])
        assert ltn["config"] == {
            "article": ["/news/\\w+/breakingnews/\\d+", "/news/\\w+/paper/\\d+"],
            "robots": False,
            "cookies": {"over18": "1"},
        }
        patterns = ["/news/\\w+/breakingnews/\\d+", "/news/\\w+/paper/\\d+"]
        assert " ".join(line_for(first, "ltn").split()) == (
            f"update #{ltn_id} ltn (news, 新聞網站) {LTN['url']} [{ids['ltn']}]: "
            f"category None -> 新聞網站; article /news/ -> {patterns}; "
            f"linked to Airtable row {ids['ltn']}"
        )

        fake.update(ids["cna"], depth=3, delay=None)
        fake.update(ids["kknews"], approved=False)
        fake.remove(ids["ey"])
        fake.update(ids["mohw-fb"], approved=True)
        second = sync(fake, db_url, tmp_path)
        assert second.returncode == 0, second.output
        assert second.stdout.splitlines()[-1] == (
            "5 rows: 1 added, 1 updated, 0 reactivated, 2 deactivated, 2 unchanged, "
            "0 not approved, 0 invalid, 0 warning(s)"
        )
        after = sites(db_url)
        assert after["cna"]["config"]["depth"] == 3 and "delay" not in after["cna"]["config"]
        assert line_for(second, "cna").endswith(
            f"#{cna['site_id']} cna (news, 新聞網站) {CNA['url']} [{ids['cna']}]: "
            "delay 1.5 -> (unset); depth 2 -> 3"
        )
        assert line_for(second, "kknews").startswith("deactivate")
        assert line_for(second, "kknews").endswith(": not approved")
        assert line_for(second, "ey").startswith("deactivate")
        assert line_for(second, "ey").endswith(": gone from Airtable")
        assert line_for(second, "mohw-fb").split()[:6] == [
            "add",
            "new",
            "mohw-fb",
            "(facebook,",
            "FB粉專)",
            "https://m.facebook.com/MOHW.Taiwan/posts/",
        ]
        # Deactivated, never deleted: same rows, same ids, config kept.
        assert (after["kknews"]["is_active"], after["ey"]["is_active"]) == (False, False)
        assert after["kknews"]["site_id"] == stored["kknews"]["site_id"]
        assert after["ey"]["config"] == stored["ey"]["config"]
        assert (after["mohw-fb"]["type"], after["mohw-fb"]["is_active"]) == ("facebook", True)

        fake.update(ids["kknews"], approved=True)
        fake.update(ids["ltn"], name="ltn-breaking")
        third = sync(fake, db_url, tmp_path)
        assert third.returncode == 0, third.output
        assert third.stdout.splitlines()[-1] == (
            "5 rows: 0 added, 1 updated, 1 reactivated, 0 deactivated, 3 unchanged, "
            "0 not approved, 0 invalid, 0 warning(s)"
        )
        assert line_for(third, "kknews").startswith("reactivate")
        assert line_for(third, "kknews").endswith(": active no -> yes")
        assert line_for(third, "ltn-breaking").endswith(": name ltn -> ltn-breaking")
        final = sites(db_url)
        assert final["kknews"]["is_active"] is True
        assert final["ltn-breaking"]["site_id"] == ltn_id and "ltn" not in final
        assert final["ey"]["is_active"] is False

        fourth = sync(fake, db_url, tmp_path)
        assert fourth.stdout.splitlines()[-1] == (
            "5 rows: 0 added, 0 updated, 0 reactivated, 0 deactivated, 5 unchanged, "
            "0 not approved, 0 invalid, 0 warning(s)"
        )
        assert change_lines(fourth) == []
        assert sites(db_url) == final

    listing = scrapy("sites", db_url=db_url, cwd=tmp_path)
    assert "6 site(s)" in listing.stdout
    assert ["gov", "政府網站", "no", "0", "never", "ey", EY["url"]] in [
        line.split()[1:] for line in listing.stdout.splitlines()
    ]


def test_dry_run_prints_the_changes_and_writes_nothing(db_url: str, tmp_path: Path) -> None:
    with fake_airtable() as fake:
        ids = {row["name"]: fake.add(**row) for row in (CNA, KKNEWS, EY)}
        assert sync(fake, db_url, tmp_path).returncode == 0
        before = sites(db_url)
        fake.update(ids["cna"], article=r"/news/\w+/\d+\.aspx")
        fake.update(ids["kknews"], approved=False)
        fake.remove(ids["ey"])
        fake.add(**PTT)

        dry = sync(fake, db_url, tmp_path, "--dry-run")
        assert dry.returncode == 0, dry.output
        assert dry.stdout.splitlines()[-1] == (
            "dry run, nothing written: 3 rows; would be 1 added, 1 updated, 0 reactivated, "
            "2 deactivated, 0 unchanged, 0 not approved, 0 invalid, 0 warning(s)"
        )
        assert sites(db_url) == before

        real = sync(fake, db_url, tmp_path)
        assert real.returncode == 0, real.output
        assert change_lines(real) == change_lines(dry)
        assert len(change_lines(real)) == 4
        assert sites(db_url) != before


def test_failures_change_nothing(db_url: str, tmp_path: Path) -> None:
    with fake_airtable() as fake:
        ids = {row["name"]: fake.add(**row) for row in (CNA, LTN, KKNEWS, EY, PTT)}
        assert sync(fake, db_url, tmp_path).returncode == 0
        before = sites(db_url)
        # A sync that got through would deactivate two sites and update one.
        fake.update(ids["cna"], approved=False)
        fake.remove(ids["ey"])
        fake.update(ids["ptt-gossiping"], url="https://www.ptt.cc/bbs/HatePolitics/index.html")

        def fails(says: str, *args: str, **env: str) -> None:
            run = sync(fake, db_url, tmp_path, *args, **env)
            assert run.returncode == 2, run.output
            assert says in run.stderr and "nothing changed" in run.stderr
            assert sites(db_url) == before

        fails("HTTP 401 Unauthorized", AIRTABLE_API_KEY="patWrongKey.000")
        # The second page fails after the first one arrived: still nothing.
        fake.fail_next(None, 503)
        fails("HTTP 503")
        fake.slow_seconds = 5
        fails("timed out", AIRTABLE_TIMEOUT="0.5")
        fake.slow_seconds = 0
        fails("returned no rows", "--dry-run", AIRTABLE_VIEW="Empty")
        fails("returned no rows", AIRTABLE_VIEW="Empty")
        fails("AIRTABLE_API_KEY is not set in the environment", AIRTABLE_API_KEY="")
        answered = len(fake.list_requests())

        in_settings = sync(fake, db_url, tmp_path, "-s", f"AIRTABLE_API_KEY={KEY}")
        assert in_settings.returncode == 2
        assert "must come from the environment" in in_settings.stderr
        assert len(fake.list_requests()) == answered
        assert sites(db_url) == before

        fixed = sync(fake, db_url, tmp_path)
        assert fixed.returncode == 0, fixed.output
        assert "1 updated, 0 reactivated, 2 deactivated" in fixed.stdout


def test_invalid_rows_are_reported_by_name_and_field_and_skipped(
    db_url: str, tmp_path: Path
) -> None:
    with fake_airtable() as fake:
        ids = {row["name"]: fake.add(**row) for row in (CNA, LTN)}
        assert sync(fake, db_url, tmp_path).returncode == 0
        before = sites(db_url)
        # A typo in a synced row leaves its site as it was, active.
        fake.update(ids["ltn"], depth="three")
        bad = {
            "depth": fake.add(**{**KKNEWS, "depth": "3 pages"}),
            "regex": fake.add(**{**EY, "article": "/Page/(unclosed"}),
            "type": fake.add(name="blog", url="https://blog.example.tw/", type="部落格"),
            "name": fake.add(url="https://noname.example.tw/", type="新聞網站", approved=True),
            "url": fake.add(name="nourl", type="新聞網站", approved=True, article="/a/"),
            "scheme": fake.add(**{**EY, "name": "ey2", "url": "javascript:alert(1)"}),
            "approved": fake.add(**{**PTT, "approved": "yes"}),
            "facebook_search": fake.add(
                name="search", url="https://www.facebook.com/search/top?q=x", type="Fb 專頁"
            ),
        }
        fake.update(bad["facebook_search"], approved=True)
        # A name may repeat: it is another site of the same name, not an error.
        namesake = fake.add(**{**CNA, "url": "https://www.cna.com.tw/list/aipl.aspx"})
        fake.update(bad["type"], approved=True)
        good = fake.add(**{**MOHW, "approved": True})

        run = sync(fake, db_url, tmp_path)
        assert run.returncode == 1, run.output
        errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
        expected = [
            f"error: row {ids['ltn']} ('ltn'): depth: must be a number, got 'three'",
            f"error: row {bad['depth']} ('kknews'): depth: must be a number, got '3 pages'",
            f"error: row {bad['regex']} ('ey'): article: bad regex '/Page/(unclosed'",
            f"error: row {bad['type']} ('blog'): type: unknown type '部落格' (known: ",
            f"error: row {bad['name']}: name: missing or empty",
            f"error: row {bad['url']} ('nourl'): url: missing",
            f"error: row {bad['scheme']} ('ey2'): url: bad URL 'javascript:alert(1)'",
            f"error: row {bad['approved']} ('ptt-gossiping'): approved: must be a checkbox",
            f"error: row {bad['facebook_search']} ('search'): url: bad URL "
            "'https://www.facebook.com/search/top?q=x': not a Facebook page or group",
        ]
        assert len(errors) == len(expected)
        for line, start in zip(errors, expected, strict=True):
            assert line.startswith(start), (line, start)
        assert run.stdout.splitlines()[-1] == (
            "12 rows: 2 added, 0 updated, 0 reactivated, 0 deactivated, 1 unchanged, "
            "0 not approved, 9 invalid, 0 warning(s)"
        )
        after = sites(db_url)
        assert sorted(after) == ["cna", "ltn", "mohw-fb"]
        assert after["ltn"] == before["ltn"]
        assert after["mohw-fb"]["airtable_id"] == good
        assert [row["airtable_id"] for row in all_sites(db_url) if row["name"] == "cna"] == [
            ids["cna"],
            namesake,
        ]


def test_rate_limited_requests_are_retried(db_url: str, tmp_path: Path) -> None:
    with fake_airtable() as fake:
        for row in (CNA, LTN, KKNEWS, EY, PTT):
            fake.add(**row)
        fake.fail_next(429, None, 429, 429)
        run = sync(fake, db_url, tmp_path)
        assert run.returncode == 0, run.output
        assert [seen.status for seen in fake.list_requests()] == [429, 200, 429, 429, 200, 200]
        assert len(sites(db_url)) == 5


@pytest.mark.parametrize(
    ("failures", "env", "says"),
    [
        ((500,), {}, "HTTP 500 Internal Server Error {'type': 'SERVER_ERROR'"),
        ((None, None, 503), {}, "HTTP 503"),
        ((429, 429, 429), {"AIRTABLE_MAX_RETRIES": "2"}, "still rate limited (429)"),
        ((), {"AIRTABLE_VIEW": "Deleted view"}, "HTTP 422 Unprocessable Entity"),
        ((), {"AIRTABLE_TABLE": "Sties"}, "INVALID_PERMISSIONS_OR_MODEL_NOT_FOUND"),
        ((), {"AIRTABLE_BASE_ID": "appOther"}, "HTTP 403 Forbidden"),
        ((), {"AIRTABLE_API_KEY": "patOther.1"}, "AUTHENTICATION_REQUIRED"),
    ],
)
def test_fetch_fails_whole(
    failures: tuple[int | None, ...], env: dict[str, str], says: str
) -> None:
    with fake_airtable() as fake:
        for row in (CNA, LTN, KKNEWS, EY, PTT):
            fake.add(**row)
        fake.fail_next(*failures)
        settings = {
            "AIRTABLE_API_KEY": KEY,
            "AIRTABLE_BASE_ID": fake.base_id,
            "AIRTABLE_VIEW": VIEW,
            "AIRTABLE_ENDPOINT_URL": fake.endpoint_url,
            "AIRTABLE_PAGE_SIZE": "2",
            "AIRTABLE_RATE_LIMIT_WAIT": "0.05",
            **env,
        }
        with pytest.raises(AirtableError) as caught:
            fetch_records(AirtableConfig.from_settings(PROJECT, settings))
    assert says in str(caught.value)
    assert KEY not in str(caught.value) and caught.value.__cause__ is None
    assert str(caught.value).startswith("cannot read Airtable table ")


def test_fetch_reads_every_page() -> None:
    with fake_airtable() as fake:
        ids = [fake.add(name=f"site{n}", url=f"https://s{n}.tw/", approved=True) for n in range(7)]
        settings = {
            "AIRTABLE_API_KEY": KEY,
            "AIRTABLE_BASE_ID": fake.base_id,
            "AIRTABLE_ENDPOINT_URL": fake.endpoint_url,
            "AIRTABLE_PAGE_SIZE": "3",
        }
        records = fetch_records(
            AirtableConfig.from_settings(Settings(project_settings()), settings)
        )
        seen = fake.list_requests()
    assert [record["id"] for record in records] == ids
    assert records[0]["fields"] == {"name": "site0", "url": "https://s0.tw/", "approved": True}
    assert [sorted(request.params) for request in seen] == [
        ["pageSize"],
        ["offset", "pageSize"],
        ["offset", "pageSize"],
    ]
    assert {request.authorization for request in seen} == {f"Bearer {KEY}"}


def test_the_fake_answers_the_post_form_pyairtable_uses_for_long_urls() -> None:
    with fake_airtable() as fake:
        first = fake.add(**CNA)
        fake.add(**LTN)
        url = f"{fake.endpoint_url}/v0/{fake.base_id}/{fake.table_id}/listRecords"
        headers = {"Authorization": f"Bearer {KEY}"}
        with requests.Session() as session:
            page = session.post(url, json={"pageSize": 1, "view": VIEW}, headers=headers).json()
            rest = session.post(
                url, json={"pageSize": 1, "offset": page["offset"]}, headers=headers
            )
            denied = session.post(url, json={}, headers={"Authorization": "Bearer nope"})
    assert [record["id"] for record in page["records"]] == [first]
    assert "offset" not in rest.json() and len(rest.json()["records"]) == 1
    assert page["records"][0]["fields"] == CNA
    assert denied.status_code == 401


# --- pieces -------------------------------------------------------------------------------


def record(record_id: str = "recA", **fields: Any) -> Any:
    return {"id": record_id, "createdTime": "2024-03-01T08:00:00.000Z", "fields": fields}


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("新聞網站", "news"),
        ("官媒", "news"),
        ("內容農場", "content_farm"),
        ("組織官網", "organization"),
        ("政府網站", "gov"),
        ("Fb 專頁", "facebook"),
        ("Fb 公開社團", "facebook"),
        ("FB粉專", "facebook"),
        (" fb粉專 ", "facebook"),
        ("Ptt 看板", "ptt"),
        ("討論區看板", "ptt"),
        ("PTT", "ptt"),
        ("Dcard", "dcard"),
        ("YouTube 頻道", "youtube"),
        ("YouTube 帳號", "youtube"),
        ("YouTube", "youtube"),
        ("content_farm", "content_farm"),
        ("news_website", "news"),
        ("official_media", "news"),
        ("organization_website", "organization"),
        ("fb_page", "facebook"),
        ("fb_public_group", "facebook"),
        ("ptt_board", "ptt"),
        ("discussion_board", "ptt"),
        ("youtube_channel", "youtube"),
        ("youtube_user", "youtube"),
    ],
)
def test_0archive_labels_and_type_names(label: str, expected: str) -> None:
    assert label_types()[label.replace(" ", "").casefold()] == expected


@pytest.mark.parametrize(
    ("value", "label"), [(["內容農場"], "內容農場"), (None, "news"), ("", "news")]
)
def test_type_labels_as_airtable_gives_them(value: Any, label: str) -> None:
    assert type_label(value) == label


@pytest.mark.parametrize("value", [["PTT", "Dcard"], 3, True])
def test_a_row_has_one_type(value: Any) -> None:
    with pytest.raises(ValueError, match="one type"):
        type_label(value)


def test_unknown_labels_are_refused_and_the_type_map_adds_them() -> None:
    row = record(name="blog", url="https://blog.example.tw/", type="部落格", article="/p/")
    with pytest.raises(AirtableRowError, match="unknown type '部落格'"):
        row_spec(row)
    spec = row_spec(row, labels=label_types({"部落格": "content_farm"}))
    assert (spec.type, spec.category) == ("content_farm", "部落格")
    with pytest.raises(ValueError, match="AIRTABLE_TYPE_MAP: label '部落格'"):
        label_types({"部落格": "blog"})


def test_row_fields_are_read_case_insensitively_and_extra_columns_ignored() -> None:
    spec = row_spec(
        record(
            "recX",
            Name=" cna ",
            URL="https://www.cna.com.tw/list/aall.aspx",
            Type="新聞網站",
            Approved=True,
            Article="/news/",
            Depth="4",
            Delay=0.5,
            Render=False,
            Notes="ignored",
        )
    )
    assert spec == SiteSpec(
        name="cna",
        url="https://www.cna.com.tw/list/aall.aspx",
        type="news",
        config={"article": "/news/", "depth": 4, "delay": 0.5, "render": False},
        is_active=True,
        airtable_id="recX",
        category="新聞網站",
    )


def test_rows_keep_the_config_airtable_does_not_manage() -> None:
    kept = {"robots": False, "depth": 9, "cookies": {"over18": "1"}, "article": "/old/"}
    spec = row_spec(record(name="x", url="https://x.tw/", article="/new/"), kept)
    assert spec.config == {"robots": False, "cookies": {"over18": "1"}, "article": "/new/"}


def _spec(name: str, record_id: str | None, active: bool = True) -> SiteSpec:
    return SiteSpec(name, f"https://{name}.tw/", "news", {"article": "/a/"}, active, record_id)


def test_names_repeat_and_sites_are_known_by_their_record_id() -> None:
    stored = [(1, _spec("a", "recA")), (2, _spec("b", None)), (3, _spec("b", None))]
    rows = [
        record("recA", name="b", url="https://a.tw/", article="/a/", approved=True),
        record("recB", name="a", url="https://b.tw/", article="/a/", approved=True),
        record("recC", name="b", url="https://c.tw/", article="/a/", approved=True),
    ]
    plan = plan_sync(rows, stored)
    assert plan.errors == ()
    # recA renames its site; a new row named like a synced site is a new site; two sites
    # from files share the name b, so recC cannot tell which to adopt: a new site too.
    assert [(c.action, c.site_id, c.spec.name) for c in plan.changes] == [
        ("update", 1, "b"),
        ("add", None, "a"),
        ("add", None, "b"),
    ]


def test_plan_leaves_inactive_sites_of_unapproved_rows_alone() -> None:
    stored = [(1, _spec("a", "recA", active=False)), (2, _spec("b", "recB", active=False))]
    plan = plan_sync([record("recA", name="a")], stored)
    # b's row is gone and its site stays inactive: no row, so not counted.
    assert (plan.changes, plan.unchanged, plan.not_approved, plan.errors) == ((), 0, 1, ())


def test_config_comes_from_settings_and_environment() -> None:
    settings = Settings(project_settings(AIRTABLE_BASE_ID="appFromSettings", AIRTABLE_PAGE_SIZE=50))
    env = {"AIRTABLE_API_KEY": KEY, "AIRTABLE_VIEW": "Approved", "AIRTABLE_TIMEOUT": "5"}
    config = AirtableConfig.from_settings(settings, env)
    assert (config.base_id, config.view, config.page_size, config.timeout) == (
        "appFromSettings",
        "Approved",
        50,
        5.0,
    )
    assert (config.table, config.rate_limit_wait, config.requests_per_second) == ("Sites", 30, 5)
    assert config.labels["官媒"] == "news"
    mapped = AirtableConfig.from_settings(settings, {**env, "AIRTABLE_TYPE_MAP": '{"官媒": "gov"}'})
    assert (mapped.labels["官媒"], mapped.labels["新聞網站"]) == ("gov", "news")
    assert KEY not in repr(config)
    for bad, says in [
        ({"AIRTABLE_PAGE_SIZE": "101"}, "AIRTABLE_PAGE_SIZE must be between"),
        ({"AIRTABLE_REQUESTS_PER_SECOND": "10"}, "AIRTABLE_REQUESTS_PER_SECOND must be"),
        ({"AIRTABLE_ENDPOINT_URL": "api.airtable.com"}, "must be an http(s) URL"),
        ({"AIRTABLE_TIMEOUT": "soon"}, "AIRTABLE_TIMEOUT must be a number"),
        ({"AIRTABLE_API_KEY": ""}, "AIRTABLE_API_KEY is not set"),
        ({"AIRTABLE_TYPE_MAP": "[1]"}, "AIRTABLE_TYPE_MAP must map labels"),
        ({"AIRTABLE_TYPE_MAP": '{"x": "blog"}'}, "AIRTABLE_TYPE_MAP: label 'x'"),
    ]:
        with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
            AirtableConfig.from_settings(settings, {**env, **bad})
    with pytest.raises(ValueError, match="AIRTABLE_BASE_ID is not set"):
        AirtableConfig.from_settings(Settings(project_settings()), env)


def test_a_429_waits_the_rate_limit_pause_before_retrying() -> None:
    retry = rate_limit_retry(max_retries=3, rate_limit_wait=30.0)
    assert retry.get_backoff_time() == 0
    retry = retry.increment("GET", "/v0/app/Sites", response=HTTPResponse(status=429))
    assert retry.get_backoff_time() == 30.0
    retry = retry.increment("GET", "/v0/app/Sites", response=HTTPResponse(status=429))
    assert (retry.get_backoff_time(), retry.total) == (30.0, 1)
    assert retry.is_retry("GET", 429) and not retry.is_retry("GET", 500)


# --- 0archive's own table ------------------------------------------------------------------

TABLE = Path(__file__).parent / "fixtures" / "airtable" / "sites_0archive.json"


def test_a_table_shaped_like_0archives_syncs_every_crawlable_row(
    db_url: str, tmp_path: Path
) -> None:
    rows = json.loads(TABLE.read_text(encoding="utf-8"))
    assert len(rows) == 113
    with fake_airtable() as fake:
        expect = {fake.add(**row): row for row in rows}
        run = sync(fake, db_url, tmp_path, AIRTABLE_PAGE_SIZE="100")
        again = sync(fake, db_url, tmp_path, AIRTABLE_PAGE_SIZE="100")
    assert run.returncode == 1, run.output
    outcome = {rid: row["zeroarchive_expect"] for rid, row in expect.items()}
    invalid = {
        rid: kind.split(":")[1] for rid, kind in outcome.items() if kind.startswith("invalid:")
    }
    errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == len(invalid) == 5
    for record_id, field in invalid.items():
        (line,) = [line for line in errors if line.startswith(f"error: row {record_id} ")]
        assert f": {field}: " in line, line
    warned = {rid for rid, kind in outcome.items() if kind.endswith(":warning")}
    warnings = [line for line in run.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == len(warned) == 2
    assert all(any(f"row {rid}:" in line for line in warnings) for rid in warned)
    assert "archived as facebook" in run.stderr and "archived as ptt" in run.stderr

    stored = {row["airtable_id"]: row for row in all_sites(db_url)}
    synced = {
        rid: expect[rid]
        for rid, kind in outcome.items()
        if rid not in invalid and kind != "not_approved"
    }
    assert set(stored) == set(synced)
    for record_id, row in synced.items():
        spider, _, kind = row["zeroarchive_expect"].partition(":")
        site_row = stored[record_id]
        assert source_for_type(site_row["type"]).name == spider, (row, site_row)
        if kind and kind != "warning":
            assert site_row["type"] == kind
        assert site_row["category"] == (row.get("type") or "news")
        assert site_row["is_active"] is row.get("is_active", False)
    assert run.stdout.splitlines()[-1] == (
        f"113 rows: {len(synced)} added, 0 updated, 0 reactivated, 0 deactivated, "
        "0 unchanged, 1 not approved, 5 invalid, 2 warning(s)"
    )
    assert again.stdout.splitlines()[-1] == (
        "113 rows: 0 added, 0 updated, 0 reactivated, 0 deactivated, "
        f"{len(synced)} unchanged, 1 not approved, 5 invalid, 2 warning(s)"
    )
    # Platform URLs lost their tracking junk and point where the spiders read them.
    urls = {row["url"] for row in stored.values()}
    assert {
        "https://m.facebook.com/cna.nownews/posts/",
        "https://m.facebook.com/gwytb/posts/",
        "https://m.facebook.com/123456789012345/posts/",
        "https://m.facebook.com/profile.php?id=100064729451234",
        "https://m.facebook.com/groups/2214298025494779/",
        "https://www.ptt.cc/bbs/WomenTalk/index.html",
        "https://www.ptt.cc/bbs/Military/index.html",
        "https://www.dcard.tw/f/talk",
    } <= urls
    assert not [url for url in urls if "__tn__" in url or "ref=" in url or "/pg/" in url]
    # One name, six sites; 0archive's selenium is our render; numbers typed as text.
    names = [row["name"] for row in stored.values()]
    assert (names.count("中天"), names.count("琦琦看新聞")) == (6, 5)
    by_name = {(row["name"], row["type"]): row for row in stored.values()}
    assert by_name["央視網", "news"]["config"]["render"] is True
    cna = by_name["中央社", "news"]["config"]
    assert (cna["depth"], cna["delay"]) == (2, 1.5)
    assert by_name["中央社", "facebook"]["url"] == "https://m.facebook.com/cna.nownews/posts/"

    listing = scrapy("sites", db_url=db_url, cwd=tmp_path)
    assert f"{len(synced)} site(s)" in listing.stdout
    ambiguous = scrapy("crawl", "generic", "-a", "site=琦琦看新聞", db_url=db_url, cwd=tmp_path)
    assert ambiguous.returncode == 2, ambiguous.output
    farms = [row for row in stored.values() if row["name"] == "琦琦看新聞"]
    assert "5 sites are named '琦琦看新聞'" in ambiguous.output
    for farm in farms:
        assert f"#{farm['site_id']} {farm['url']}" in ambiguous.output


def test_a_database_that_does_not_answer_is_one_line(tmp_path: Path) -> None:
    with fake_airtable() as fake:
        fake.add(**CNA)
        away = f"mysql+pymysql://root:pw-s3cret@127.0.0.1:{free_port()}/test"
        run = sync(fake, away, tmp_path)
    assert run.returncode == 3, run.output
    assert (
        run.stderr.strip()
        .splitlines()[-1]
        .startswith("error: cannot reach the database at mysql+pymysql://root:***@127.0.0.1:")
    )
    assert "Traceback" not in run.output and "pw-s3cret" not in run.output


@pytest.mark.parametrize("article", ["", "\n", None])
def test_a_row_with_an_empty_regex_has_its_article_links_learnt(article: Any) -> None:
    fields: dict[str, Any] = {"name": "farm", "url": "https://farm.example/", "type": "內容農場"}
    if article is not None:
        fields["article"] = article
    spec = row_spec(record(**fields))
    assert (spec.name, spec.type) == ("farm", "content_farm")
    assert parse_config(spec.config, spec.name).article == ()
