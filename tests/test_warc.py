"""`scrapy export_warc` / `import_warc` / `rotate_snapshots --format warc`: exports that warcio
reads with every digest checked and pywb replays at every snapshot time; imports of our own
exports (round trip) and of foreign WARCs; old captures that leave the schedule alone."""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import gzip
import io
import json
import re
import subprocess
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests import pywb_env
from tests.conftest import require_service, scrapy
from tests.test_rotate_snapshots import bodies as rotation_bodies
from tests.test_rotate_snapshots import ts
from zeroarchive.core.items import FetchedPage
from zeroarchive.publish.warc.records import ARTICLE_ID, parse_warc_date, warc_date
from zeroarchive.publish.warc.rotation import WarcMonthExport
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import close_archives, open_archive
from zeroarchive.storage.rotation import Month, RotationError
from zeroarchive.storage.schema import article
from zeroarchive.storage.snapshots import content_hash, iter_snapshots, read_snapshot

FIXTURES = Path(__file__).parent / "fixtures" / "warc"
SITES = [
    {"name": "news", "url": "https://news.example/", "config": {"article": "/a/"}},
    {"name": "fb", "url": "https://m.facebook.example/page/", "type": "facebook", "config": {}},
    {"name": "ex", "url": "http://example.com/", "config": {"article": "/"}},
    {"name": "iana", "url": "https://www.iana.org/", "config": {"article": "/"}},
]


def bodies() -> dict[str, bytes]:
    """The rotation test's real pages (two UTF-8, a cut Big5 one) and a rendered DOM."""
    pages = rotation_bodies()
    pages["dom"] = pages["v1"].replace(b"</body>", b"<div>rendered</div></body>")
    return pages


# (site, article path, when, body, final path): `a` comes back to v1 after v2 (a revisit
# of its first snapshot), `c` was redirected, fb's post is a rendered DOM taken twice.
TIMELINE = [
    ("news", "/a/a", "2025-01-10T08:00:00", "v1", None),
    ("news", "/a/a", "2025-01-20T08:00:00", "v1", None),
    ("news", "/a/a", "2025-02-05T08:00:00", "v2", None),
    ("news", "/a/a", "2025-03-03T08:00:00", "v1", None),
    ("news", "/a/b", "2025-02-01T23:59:59", "big5", None),
    ("news", "/a/b", "2025-03-02T00:00:00", "big5", None),
    ("news", "/a/c", "2025-01-31T23:59:59", "v2", "/a/c-moved?page=1"),
    ("fb", "/123", "2025-01-15T10:00:00", "dom", None),
    ("fb", "/123", "2025-01-16T10:00:00", "dom", None),
]
HOSTS = {"news": "https://news.example", "fb": "https://m.facebook.example"}
SERVED_HEADERS = {
    "Content-Type": ["text/html"],
    # What Scrapy leaves of a chunked, gzipped answer: the body is decoded, these are not.
    "Transfer-Encoding": ["chunked"],
    "Content-Length": ["1234"],
    "Set-Cookie": ["a=1; Path=/", "b=2; Path=/"],
}


def add_sites(db_url: str) -> dict[str, int]:
    archive = open_archive(url=db_url)
    return {
        spec["name"]: archive.sites.upsert(parse_spec(spec), ts("2025-01-01T00:00:00"))[0]
        for spec in SITES
    }


def fill(db_url: str) -> dict[str, int]:
    """The TIMELINE's snapshots, saved as the crawl saves them; returns {url: article id}."""
    archive = open_archive(url=db_url)
    site_ids = add_sites(db_url)
    pages = bodies()
    ids: dict[str, int] = {}
    for site, path, when, version, final in TIMELINE:
        url = HOSTS[site] + path
        if url not in ids:
            kind = "FBPost" if site == "fb" else "Article"
            archive.articles.add(site_ids[site], kind, [url], ts("2025-01-01T00:00:00"))
            with archive.engine.connect() as conn:
                ids[url] = conn.execute(
                    select(article.c.article_id).where(article.c.url == url)
                ).scalar_one()
        rendered = site == "fb"
        archive.snapshots.save(
            [
                FetchedPage(
                    article_id=ids[url],
                    site_id=site_ids[site],
                    article_type="FBPost" if rendered else "Article",
                    fetched_at=ts(when),
                    status=200,
                    final_url=HOSTS[site] + (final or path),
                    headers={"Content-Type": ["text/html"]} if rendered else SERVED_HEADERS,
                    encoding="cp950" if version == "big5" else "utf-8",
                    body=pages[version],
                    rendered=rendered,
                )
            ]
        )
    return ids


@dataclass(frozen=True)
class Record:
    type: str
    fields: StatusAndHeaders
    http: StatusAndHeaders | None
    payload: bytes
    file: str

    def field(self, name: str) -> str:
        value = self.fields.get_header(name)
        assert value is not None, name
        return value


def read_records(files: list[Path]) -> list[Record]:
    """Every record of the files, read to the end with warcio checking every digest."""
    records = []
    for path in files:
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle, check_digests="raise"):
                records.append(
                    Record(
                        record.rec_type,
                        record.rec_headers,
                        record.http_headers,
                        record.raw_stream.read(),
                        path.name,
                    )
                )
    return records


def snapshot_records(records: list[Record]) -> list[Record]:
    return [r for r in records if r.type in ("response", "revisit", "resource")]


def export(db_url: str, tmp_path: Path, *extra: str, name: str = "out") -> Path:
    out = tmp_path / name
    run = scrapy("export_warc", "--out", str(out), *extra, db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    exported = re.search(r"(\d+) snapshot\(s\) exported", run.output)
    assert exported is not None, run.output
    assert f"export_warc: {int(exported[1]):,} snapshots done in" in run.output
    return out


def test_export_reads_back_with_every_digest_and_rolls(db_url: str, tmp_path: Path) -> None:
    ids = fill(db_url)
    close_archives()
    out = export(db_url, tmp_path, "--wacz", "-s", "WARC_EXPORT_ROLL_BYTES=40000")
    files = sorted(out.glob("*.warc.gz"))
    assert len(files) > 1
    for path in files:
        with path.open("rb") as handle:
            first = next(iter(ArchiveIterator(handle)))
            assert first.rec_type == "warcinfo" and first.rec_headers.protocol == "WARC/1.1"
    records = read_records(files)
    snaps = snapshot_records(records)
    engine = create_engine(db_url)
    stored = list(iter_snapshots(engine))
    assert len(snaps) == len(stored) == len(TIMELINE)
    firsts: dict[tuple[int, bytes], Record] = {}
    for record, exported in zip(snaps, stored, strict=True):
        snapshot = exported.snapshot
        assert record.field("WARC-Date") == warc_date(snapshot.snapshot_at)
        assert record.field("WARC-Target-URI") == snapshot.final_url
        assert record.field("Zeroarchive-Article-URL") == exported.url
        assert int(record.field(ARTICLE_ID)) == snapshot.article_id
        key = (snapshot.article_id, snapshot.content_hash)
        if key in firsts:
            assert record.type == "revisit"
            original = firsts[key]
            assert record.field("WARC-Profile").endswith("/revisit/identical-payload-digest")
            assert record.field("WARC-Refers-To-Target-URI") == original.field("WARC-Target-URI")
            assert record.field("WARC-Refers-To-Date") == original.field("WARC-Date")
            assert record.field("WARC-Payload-Digest") == original.field("WARC-Payload-Digest")
            assert record.payload == b""
            continue
        firsts[key] = record
        assert (
            record.payload == read_snapshot(engine, snapshot.article_id, snapshot.snapshot_at).raw
        )
        if snapshot.rendered:
            assert record.type == "resource"
            assert record.field("Content-Type") == "text/html; charset=utf-8"
        else:
            assert record.type == "response" and record.http is not None
            assert record.http.protocol == "HTTP/1.1" and record.http.statusline == "200 OK"
            assert record.http.get_header("Transfer-Encoding") is None
            assert record.http.get_header("Content-Length") == str(len(record.payload))
            assert [v for k, v in record.http.headers if k == "Set-Cookie"] == [
                "a=1; Path=/",
                "b=2; Path=/",
            ]
    kinds = [r.type for r in snaps]
    assert kinds.count("revisit") == 4 and kinds.count("resource") == 1
    # `a`'s last snapshot went back to v1: a revisit of its first one, not of v2.
    last_a = [r for r in snaps if r.field(ARTICLE_ID) == str(ids["https://news.example/a/a"])][-1]
    assert last_a.field("WARC-Refers-To-Date") == "2025-01-10T08:00:00Z"

    with (out / "index.cdxj").open(encoding="utf-8") as index:
        lines = [json.loads(line.split(" ", 2)[2]) for line in index]
    assert len(lines) == len(snaps)
    assert {line["filename"] for line in lines} <= {path.name for path in files}
    (wacz,) = out.glob("*.wacz")
    assert wacz_validation(wacz).endswith("Validation succeeded, the passed WACZ is valid\n")
    engine.dispose()


def wacz_validation(path: Path) -> str:
    """What ``wacz validate`` prints of the file. In this process (a process of its own
    cost 1.8 CPU s of imports each time): the validator leaves files and its temporary
    directory for the garbage collector, which is done here, their warnings unheard."""
    from wacz.main import main as wacz_main

    printed = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        with contextlib.redirect_stdout(printed):
            code = wacz_main(["validate", "-f", str(path)])
        gc.collect()
    assert code == 0, printed.getvalue()
    return printed.getvalue()


@pytest.fixture(scope="module")
def wayback(tmp_path_factory: pytest.TempPathFactory) -> pywb_env.Wayback:
    """pywb's server, its virtualenv built on first use (from the package registry); one
    for every module of the test process that replays (``pywb_env.shared``)."""
    error = None
    try:
        pywb_env.ensure()
    except (OSError, subprocess.CalledProcessError) as exc:
        error = f"cannot build its virtualenv: {exc}"
    script = pywb_env.wayback()
    require_service("pywb", error if script is None else None)
    return pywb_env.shared(lambda: tmp_path_factory.mktemp("pywb"))


def fetch(url: str) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=60) as answer:
        return bytes(answer.read())


def test_pywb_replays_every_snapshot_at_its_time(
    db_url: str, tmp_path: Path, wayback: pywb_env.Wayback
) -> None:
    fill(db_url)
    close_archives()
    out = export(db_url, tmp_path)
    engine = create_engine(db_url)
    stored = list(iter_snapshots(engine))
    engine.dispose()
    files = sorted(out.glob("*.warc.gz"))
    collection = wayback.collection(files, out / "index.cdxj")
    for exported in stored:
        snapshot = exported.snapshot
        stamp = dt.datetime.fromtimestamp(snapshot.snapshot_at, dt.UTC)
        url = f"{wayback.url}/{collection}/{stamp:%Y%m%d%H%M%S}id_/{snapshot.final_url}"
        assert fetch(url) == snapshot.raw, url


def snapshot_facts(db_url: str) -> list[tuple[object, ...]]:
    engine = create_engine(db_url)
    framing = {"content-length", "transfer-encoding"}
    facts = [
        (
            e.url,
            e.snapshot.snapshot_at,
            e.snapshot.final_url,
            e.snapshot.status,
            e.snapshot.encoding,
            e.snapshot.rendered,
            e.snapshot.raw,
            {k: v for k, v in e.snapshot.headers.items() if k.lower() not in framing}
            if not e.snapshot.rendered
            else None,
        )
        for e in iter_snapshots(engine)
    ]
    engine.dispose()
    return facts


def article_rows(db_url: str) -> list[dict[str, object]]:
    engine = create_engine(db_url)
    with engine.connect() as conn:
        query = select(article).order_by(article.c.url)
        rows = [dict(row._mapping) for row in conn.execute(query)]
    engine.dispose()
    return rows


def test_import_of_an_export_round_trips_bytes_and_times(db_url: str, tmp_path: Path) -> None:
    source = f"sqlite:///{tmp_path / 'source.db'}"
    fill(source)
    close_archives()
    first = export(source, tmp_path, name="first")
    add_sites(db_url)
    close_archives()
    files = [str(p) for p in sorted(first.glob("*.warc.gz"))]
    size = sum(Path(file).stat().st_size for file in files)
    for site in ("news", "fb"):
        run = scrapy("import_warc", *files, "--site", site, db_url=db_url, cwd=tmp_path)
        assert run.returncode == 0, run.output
        # The progress counts every byte of the files, each once.
        assert f"import_warc: {size:,} bytes done in" in run.output

    assert snapshot_facts(db_url) == snapshot_facts(source)
    # Bytes are stored once per article and content, as the crawl stores them.
    engine = create_engine(db_url)
    with engine.connect() as conn:
        stored = conn.exec_driver_sql(
            "SELECT COUNT(*) FROM ArticleSnapshot WHERE raw_data IS NOT NULL"
        ).scalar_one()
    engine.dispose()
    assert stored == 5

    # Importing the same files again adds nothing and changes no article.
    before = article_rows(db_url)
    again = scrapy("import_warc", *files, "--site", "news", db_url=db_url, cwd=tmp_path)
    assert again.returncode == 0, again.output
    assert "0 snapshot(s) added, 0 unchanged (bytes stored once), 7 already stored" in again.output
    assert article_rows(db_url) == before

    second = export(db_url, tmp_path, name="second")

    def replayed(out: Path) -> list[tuple[str, str, str, bytes]]:
        return [
            (r.type, r.field("WARC-Target-URI"), r.field("WARC-Date"), r.payload)
            for r in snapshot_records(read_records(sorted(out.glob("*.warc.gz"))))
        ]

    assert replayed(second) == replayed(first)


def test_old_captures_do_not_move_the_schedule(db_url: str, tmp_path: Path) -> None:
    """An import older than the crawl's snapshots adds history; the article's last hash,
    last time and next time stay the crawl's, and the next crawl still sees 'unchanged'."""
    ids = fill(db_url)
    url = "https://news.example/a/b"
    old_page = b"<!doctype html><html><body>before the crawl</body></html>"
    warc = tmp_path / "old.warc.gz"
    write_warc(warc, [("response", url, "2024-12-01T00:00:00Z", "200 OK", "text/html", old_page)])
    before = {row["article_id"]: row for row in article_rows(db_url)}[ids[url]]
    close_archives()
    run = scrapy("import_warc", str(warc), "--site", "news", db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0 and "1 snapshot(s) added" in run.output, run.output
    engine = create_engine(db_url)
    with engine.connect() as conn:
        row = conn.execute(select(article).where(article.c.article_id == ids[url])).one()
    assert row.last_snapshot_at == before["last_snapshot_at"] == ts("2025-03-02T00:00:00")
    assert row.next_snapshot_at == before["next_snapshot_at"]
    assert bytes(row.last_content_hash) == content_hash(bodies()["big5"])
    assert row.first_snapshot_at == ts("2024-12-01T00:00:00")
    assert row.snapshot_count == before["snapshot_count"] + 1
    assert read_snapshot(engine, ids[url], ts("2024-12-01T00:00:00")).raw == old_page
    engine.dispose()

    archive = open_archive(url=db_url)
    site = archive.sites.get("news")
    assert site is not None
    (result,) = archive.snapshots.save(
        [
            FetchedPage(
                ids[url],
                site.site_id,
                "Article",
                ts("2025-03-03T00:00:00"),
                200,
                url,
                {},
                "cp950",
                bodies()["big5"],
            )
        ]
    )
    assert result.outcome == "unchanged"


def write_warc(path: Path, records: list[tuple[str, str, str, str, str, bytes]]) -> None:
    """A foreign WARC (WARC/1.0, as Heritrix writes): (type, uri, date, status, type, body)."""
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for kind, uri, date, status, content_type, body in records:
            head = StatusAndHeaders(status, [("Content-Type", content_type)], protocol="HTTP/1.1")
            writer.write_record(
                writer.create_warc_record(
                    uri,
                    kind,
                    payload=io.BytesIO(body),
                    length=len(body),
                    http_headers=head,
                    warc_headers_dict={"WARC-Date": date},
                )
            )


def test_foreign_warcs_import(db_url: str, tmp_path: Path) -> None:
    add_sites(db_url)
    close_archives()
    page = b"<html><body>a page</body></html>"
    made = tmp_path / "mixed.warc.gz"
    write_warc(
        made,
        [
            (
                "response",
                "http://example.com/a?utm_source=x",
                "2020-01-01T00:00:00Z",
                "200 OK",
                "text/html",
                page,
            ),
            (
                "response",
                "http://example.com/logo.png",
                "2020-01-01T00:00:01Z",
                "200 OK",
                "image/png",
                b"\x89PNG",
            ),
            (
                "response",
                "http://example.com/gone",
                "2020-01-01T00:00:02Z",
                "404 Not Found",
                "text/html",
                page,
            ),
            (
                "response",
                "http://other.example/a",
                "2020-01-01T00:00:03Z",
                "200 OK",
                "text/html",
                page,
            ),
        ],
    )
    files = [
        FIXTURES / "example.warc.gz",
        FIXTURES / "example-wget-bad-target-uri.warc.gz",
        FIXTURES / "example-resource.warc.gz",
        FIXTURES / "example-iana.org-chunked.warc",
        FIXTURES / "example-wrong-chunks.warc.gz",
        made,
    ]
    run = scrapy("import_warc", *map(str, files), "--site", "ex", db_url=db_url, cwd=tmp_path)
    # The broken file is reported and counted; everything else is imported.
    assert run.returncode == 1, run.output
    assert "example-wrong-chunks.warc.gz" in run.output and "1 malformed" in run.output
    stats = dict(
        line.split(": ", 1) for line in run.stderr.splitlines() if line.startswith("warc_import/")
    )
    assert stats["warc_import/skipped/other_host"] == "2"  # iana.org, other.example
    assert stats["warc_import/skipped/not_html"] == "1"
    assert stats["warc_import/skipped/status_4xx"] == "1"
    assert stats["warc_import/skipped/resource"] == "3"  # wget's two, example-resource's
    # example.com: the gzip response, its revisit, wget's capture (same bytes), /a.
    assert stats["warc_import/snapshots_added"] == "2"
    assert stats["warc_import/snapshots_unchanged"] == "2"

    engine = create_engine(db_url)
    by_url: dict[str, list[tuple[int, bytes]]] = {}
    for exported in iter_snapshots(engine):
        by_url.setdefault(exported.url, []).append(
            (exported.snapshot.snapshot_at, exported.snapshot.raw)
        )
    home = by_url["http://example.com/"]
    assert [at for at, _ in home] == [
        parse_warc_date("2017-03-06T04:02:06Z"),
        parse_warc_date("2017-03-06T04:03:48Z"),
        parse_warc_date("2018-02-09T15:12:11Z"),
    ]
    # Content-Encoding gzip undone: the page as a browser (and Scrapy) gets it.
    assert all(raw.startswith(b"<!doctype html>") and len(raw) == 1270 for _, raw in home)
    assert by_url["http://example.com/a"] == [(ts("2020-01-01T00:00:00"), page)]
    with engine.connect() as conn:
        row = conn.execute(select(article).where(article.c.url == "http://example.com/")).one()
    # Captures from 2017: the article exists, its plan long finished, nothing to fetch.
    assert row.next_snapshot_at == 0 and row.stop_reason == "plan_complete"
    assert row.created_at == parse_warc_date("2017-03-06T04:02:06Z")
    engine.dispose()

    chunked = scrapy(
        "import_warc",
        str(FIXTURES / "example-iana.org-chunked.warc"),
        "--site",
        "iana",
        db_url=db_url,
        cwd=tmp_path,
    )
    assert chunked.returncode == 0 and "1 snapshot(s) added" in chunked.output, chunked.output
    engine = create_engine(db_url)
    (iana,) = [e for e in iter_snapshots(engine) if e.url == "http://www.iana.org/"]
    engine.dispose()
    # Chunked transfer coding undone: one HTML document, no chunk sizes in it.
    assert iana.snapshot.raw.startswith(b"<!doctype html>") and len(iana.snapshot.raw) == 7223
    assert iana.snapshot.raw.rstrip().endswith(b"</html>")


def test_rotation_as_warc_is_verified_then_dropped(db_url: str, tmp_path: Path) -> None:
    ids = fill(db_url)
    close_archives()
    out = tmp_path / "rotated"
    run = scrapy(
        "rotate_snapshots",
        "--before",
        "2025-03",
        "--export",
        str(out),
        "--format",
        "warc",
        db_url=db_url,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.output
    assert "2025-01: 5 snapshot(s)" in run.output and "2025-02: 2 snapshot(s)" in run.output
    january = sorted((out / "snapshots-2025-01").glob("*.warc.gz"))
    kinds = [r.type for r in snapshot_records(read_records(january))]
    assert kinds == ["response", "revisit", "response", "resource", "revisit"]
    # March's snapshots are kept and still read back (bytes carried forward).
    engine = create_engine(db_url)
    assert read_snapshot(engine, ids["https://news.example/a/a"], ts("2025-03-03T08:00:00")).raw
    engine.dispose()


def test_a_damaged_warc_export_fails_verification(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    fill(db_url)
    engine = open_archive(url=db_url).engine
    month = Month.parse("2025-01")
    exporter = WarcMonthExport(roll_bytes=1 << 30)
    path = exporter.export(engine, month, tmp_path / "out")
    assert exporter.verify(engine, month, path) == 5
    (warc,) = path.glob("*.warc.gz")
    # One byte of the first page changed (left uncompressed: warcio reads either).
    records = gzip.decompress(warc.read_bytes())
    at = records.index(b"<html", records.index(b"WARC-Type: response"))
    warc.write_bytes(records[:at] + b"<HTML" + records[at + 5 :])
    with pytest.raises(RotationError):
        exporter.verify(engine, month, path)
    close_archives()


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    add_sites(db_url)
    close_archives()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "index.cdxj").write_text("")
    cases = [
        (("export_warc", "--out", str(tmp_path / "full")), "already holds an export"),
        (("export_warc", "--out", "x", "--since", "5", "--until", "5"), "is not before"),
        (("export_warc", "--out", "x", "--site", "nope"), "no site 'nope'"),
        (("import_warc", "--site", "news"), "give one or more WARC files"),
        (("import_warc", "missing.warc.gz", "--site", "news"), "no such file"),
        (("import_warc", str(FIXTURES / "example.warc.gz"), "--site", "nope"), "no site"),
    ]
    for args, message in cases:
        run = scrapy(*args, db_url=db_url, cwd=tmp_path)
        assert run.returncode == 2 and message in run.output, (args, run.output)


DCARD_FIXTURES = Path(__file__).parent / "fixtures" / "dcard"
DCARD_SITE = {"name": "funny", "url": "https://www.dcard.tw/f/funny", "type": "dcard"}


def resource_timeline(db_url: str) -> dict[str, int]:
    """A Dcard post taken twice (the second time unchanged), as the dcard spider stores it
    (one JSON of the post and its comments, real API answers), and a rendered page that
    came with status 203 and headers of its own. Returns {url: article id}."""
    from spiders.dcard import snapshot_document

    archive = open_archive(url=db_url)
    site_ids = {
        spec["name"]: archive.sites.upsert(parse_spec(spec), ts("2025-01-01T00:00:00"))[0]
        for spec in [DCARD_SITE, SITES[1]]
    }
    post = json.loads((DCARD_FIXTURES / "single_post_content.json").read_text(encoding="utf-8"))
    comments = json.loads(
        (DCARD_FIXTURES / "single_post_comments.json").read_text(encoding="utf-8")
    )
    document = snapshot_document(post, comments)
    dcard_url = "https://www.dcard.tw/f/funny/p/224341009"
    fb_url = "https://m.facebook.example/page/9"
    pages = [
        ("funny", "Dcard", dcard_url, "2025-01-10T08:00:00", document, False, 200),
        ("funny", "Dcard", dcard_url, "2025-01-11T08:00:00", document, False, 200),
        ("fb", "FBPost", fb_url, "2025-01-12T08:00:00", bodies()["dom"], True, 203),
    ]
    ids: dict[str, int] = {}
    for site, kind, url, when, body, rendered, status in pages:
        if url not in ids:
            archive.articles.add(site_ids[site], kind, [url], ts("2025-01-01T00:00:00"))
            with archive.engine.connect() as conn:
                ids[url] = conn.execute(
                    select(article.c.article_id).where(article.c.url == url)
                ).scalar_one()
        final = "https://www.dcard.tw/_api/posts/224341009" if kind == "Dcard" else url
        content_type = "text/html" if rendered else "application/json; charset=utf-8"
        archive.snapshots.save(
            [
                FetchedPage(
                    article_id=ids[url],
                    site_id=site_ids[site],
                    article_type=kind,
                    fetched_at=ts(when),
                    status=status,
                    final_url=final,
                    headers={
                        "Content-Type": [content_type],
                        "X-Request-Id": [f"{kind}-{when}"],
                        "Set-Cookie": ["a=1; Path=/", "b=2; Path=/"],
                    },
                    encoding="utf-8",
                    body=body,
                    rendered=rendered,
                )
            ]
        )
    return ids


def test_assembled_and_rendered_snapshots_are_resources_with_their_heads(
    db_url: str, tmp_path: Path, wayback: pywb_env.Wayback
) -> None:
    from zeroarchive.publish.warc.records import read_head

    resource_timeline(db_url)
    close_archives()
    out = export(db_url, tmp_path)
    files = sorted(out.glob("*.warc.gz"))
    records = [r for r in read_records(files) if r.type != "warcinfo"]
    engine = create_engine(db_url)
    stored = list(iter_snapshots(engine))
    engine.dispose()
    # Each snapshot's record, then the metadata record of its answer's head.
    kinds = ["resource", "metadata", "revisit", "metadata", "resource", "metadata"]
    assert [r.type for r in records] == kinds
    for (record, head), exported in zip(
        zip(records[::2], records[1::2], strict=True), stored, strict=True
    ):
        snapshot = exported.snapshot
        assert head.field("WARC-Concurrent-To") == record.field("WARC-Record-ID")
        assert head.field("WARC-Target-URI") == record.field("WARC-Target-URI")
        assert head.field("Content-Type") == "application/warc-fields"
        assert record.http is None
        assert read_head(head.payload) == (snapshot.status, snapshot.headers)
    dcard = records[0]
    assert dcard.field("Content-Type") == "application/json; charset=utf-8"
    assert json.loads(dcard.payload)["post"]["id"] == 224341009
    assert records[4].field("Content-Type") == "text/html; charset=utf-8"
    # The index has a line per snapshot record, none for the heads (rotation's check).
    assert len((out / "index.cdxj").read_text().splitlines()) == len(stored) == 3
    rotation = WarcMonthExport(roll_bytes=1 << 30)
    month = Month.of(dt.datetime.fromtimestamp(stored[0].snapshot.snapshot_at, dt.UTC).date())
    engine = create_engine(db_url)
    try:
        exported_month = rotation.export(engine, month, tmp_path / "rotation")
        assert rotation.verify(engine, month, exported_month) > 0
    finally:
        engine.dispose()

    # pywb replays every one, the Dcard JSON included, at its time.
    collection = wayback.collection(files, out / "index.cdxj")
    for exported in stored:
        snapshot = exported.snapshot
        stamp = dt.datetime.fromtimestamp(snapshot.snapshot_at, dt.UTC)
        url = f"{wayback.url}/{collection}/{stamp:%Y%m%d%H%M%S}id_/{snapshot.final_url}"
        assert fetch(url) == snapshot.raw, url

    # An import gives every snapshot back, its status and headers included.
    again = f"sqlite:///{tmp_path / 'again.db'}"
    archive = open_archive(url=again)
    for spec in [
        {"name": "funny", "url": "https://www.dcard.tw/f/funny", "type": "dcard"},
        SITES[1],
    ]:
        archive.sites.upsert(parse_spec(spec), ts("2025-01-01T00:00:00"))
    close_archives()
    for site in ("funny", "fb"):
        run = scrapy("import_warc", *map(str, files), "--site", site, db_url=again, cwd=tmp_path)
        assert run.returncode == 0, run.output
    engine = create_engine(again)
    imported = list(iter_snapshots(engine))
    engine.dispose()

    def facts(snapshots: list[Any]) -> list[tuple[object, ...]]:
        return [
            (
                e.url,
                e.snapshot.snapshot_at,
                e.snapshot.status,
                e.snapshot.headers,
                e.snapshot.rendered,
                e.snapshot.raw,
            )
            for e in snapshots
        ]

    assert facts(imported) == facts(stored)
