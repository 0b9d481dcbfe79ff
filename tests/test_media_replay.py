"""Media in WARC/WACZ (zeroarchive/publish/warc/media.py): a crawl of local pages with their
images and stylesheets (and a screenshot stored through the store's API) exported with
every item once by content, screenshots as browsertrix-crawler's ``urn:view:`` resources,
replayed by pywb with the stored bytes, and imported back, once."""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
import re
import tracemalloc
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from sqlalchemy import create_engine, select
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from tests import pywb_env
from tests.conftest import fresh_mariadb, scrapy
from tests.replay import ReplayServer
from tests.test_datasets import JSON_TYPES, doc_columns, parquet_type
from tests.test_media import PNG, load_and_crawl, media_json, media_routes, sites_of
from tests.test_warc import (
    Record,
    export,
    fetch,
    read_records,
    wacz_validation,
    wayback,  # noqa: F401  (the fixture, by name)
)
from zeroarchive.media.store import MediaRecord, MediaStore, media_store
from zeroarchive.publish.warc.media import (
    MEDIA_KIND,
    MEDIA_SHA256,
    PAGE_URL,
    MediaExport,
    media_in_record,
    read_chunks,
)
from zeroarchive.storage.archive import close_archives, open_archive
from zeroarchive.storage.schema import article, media_item, snapshot_media
from zeroarchive.storage.snapshots import ExportedSnapshot, StoredSnapshot

SCREENSHOT = (Path(__file__).parent / "fixtures" / "media_replay" / "screenshot.png").read_bytes()


def add_screenshots(db_url: str) -> None:
    """A screenshot for every snapshot of the first article, made as the screenshot taker
    makes one: the bytes through the store, a row of kind ``screenshot`` under the page URL."""
    archive = open_archive(url=db_url)
    store = media_store(archive.engine, "")
    with archive.engine.begin() as conn:
        first = conn.execute(select(article).order_by(article.c.article_id)).first()
        assert first is not None
        times = sorted(
            {
                row.snapshot_at
                for row in conn.execute(
                    select(snapshot_media.c.snapshot_at).where(
                        snapshot_media.c.article_id == first.article_id
                    )
                )
            }
        )
        for at in times:
            put = store.put(conn, [SCREENSHOT], "image/png", at)
            store.record(
                conn,
                [
                    MediaRecord(
                        first.article_id,
                        at,
                        "screenshot",
                        first.url,
                        put.sha256,
                        put.size,
                        "image/png",
                        at,
                        True,
                        None,
                    )
                ],
            )
    close_archives()


@pytest.fixture(scope="module")
def crawled(module_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An archive crawled once per engine: one site's two articles with their images (a
    shared logo, a photo each, refusals), their stylesheet, and a screenshot."""
    work = tmp_path_factory.mktemp("crawl")
    with ReplayServer(media_routes(sites=1)) as server:
        load_and_crawl(module_db_url, work, sites_of(server, one={}))
    add_screenshots(module_db_url)
    yield module_db_url


@pytest.fixture(scope="module")
def sites_file(crawled: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sites the crawl loaded, for an archive to import into."""
    return next(tmp_path_factory.getbasetemp().glob("crawl*/sites.yaml"))


@pytest.fixture(scope="module")
def crawled_rows(crawled: str, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    """``scrapy media --json`` of the crawled archive, asked once per engine: the tests only
    read the archive, and each forked command cost its test CPU."""
    return media_json(crawled, tmp_path_factory.mktemp("rows"))


@pytest.fixture(scope="module")
def exported(crawled: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The crawled archive's WARC export with its WACZ (``export_warc --wacz``), made once
    per engine for the tests that read it back, replay it and import it: the WARC files
    and their index are the same with or without the package."""
    return export(crawled, tmp_path_factory.mktemp("export"), "--wacz")


def stored_bytes(db_url: str) -> dict[str, bytes]:
    """Every stored item's bytes by hex digest, read through the store."""
    engine = create_engine(db_url)
    store = media_store(engine, "")
    with engine.connect() as conn:
        digests = [bytes(row.sha256) for row in conn.execute(select(media_item.c.sha256))]
    found = {digest.hex(): b"".join(store.read(digest)) for digest in digests}
    engine.dispose()
    return found


def media_of(records: list[Record]) -> list[Record]:
    return [r for r in records if r.fields.get_header(MEDIA_KIND) is not None]


def test_export_writes_each_payload_once_and_screenshots_as_urn_view(
    crawled: str, crawled_rows: list[dict[str, object]], exported: Path
) -> None:
    rows = crawled_rows
    stored = [row for row in rows if row["stored"]]
    refused = [row for row in rows if not row["stored"]]
    assert refused and {row["kind"] for row in stored} == {"image", "style", "screenshot"}
    out = exported
    files = sorted(out.glob("*.warc.gz"))
    records = media_of(read_records(files))  # every digest checked by warcio
    # One record per (snapshot, item) row, in the rows' order.
    assert [r.field(MEDIA_SHA256) if r.type != "metadata" else None for r in records] == [
        row["sha256"] if row["stored"] else None for row in rows
    ]
    kept = stored_bytes(crawled)
    payloads = [r for r in records if r.type in ("response", "resource")]
    # Each payload once: the first row of a digest; every later row a revisit of it.
    assert sorted(r.field(MEDIA_SHA256) for r in payloads) == sorted(
        {str(row["sha256"]) for row in stored}
    )
    assert sum(r.type == "revisit" for r in records) == len(stored) - len(payloads)
    for record in payloads:
        if record.type == "response":
            assert record.http is not None
            assert record.http.get_statuscode() == "200"
        assert record.payload == kept[record.field(MEDIA_SHA256)]
    for record in records:
        if record.type == "revisit":
            first = next(p for p in payloads if p.field(MEDIA_SHA256) == record.field(MEDIA_SHA256))
            assert record.field("WARC-Refers-To-Target-URI") == first.field("WARC-Target-URI")
            assert record.field("WARC-Payload-Digest") == first.field("WARC-Payload-Digest")
    # Screenshots: resource records under urn:view:<page URL> holding exactly the bytes.
    shots = [r for r in records if r.field(MEDIA_KIND) == "screenshot"]
    page = shots[0].field(PAGE_URL)
    assert shots[0].type == "resource"
    assert shots[0].field("WARC-Target-URI") == f"urn:view:{page}"
    assert shots[0].fields.get_header("Content-Type") == "image/png"
    assert shots[0].payload == SCREENSHOT
    assert all(r.type == "revisit" for r in shots[1:])
    # Items not stored: a metadata record each, with the reason.
    reasons = [r.field("Zeroarchive-Media-Reason") for r in records if r.type == "metadata"]
    assert reasons == [row["reason"] for row in refused]
    # The CDXJ index and the WACZ's index and pages name the items.
    index = (out / "index.cdxj").read_text()
    assert all(f'"{r.field("WARC-Target-URI")}"' in index for r in records if r.type != "metadata")
    assert "urn:view:" in index
    (wacz,) = out.glob("*.wacz")
    with zipfile.ZipFile(wacz) as package:
        lines = package.read("pages/pages.jsonl").splitlines()
        pages = [json.loads(line) for line in lines[1:]]  # after the header
        indexed = gzip.decompress(package.read("indexes/index.cdx.gz"))
    # Its pages are the archived pages, each replayed with its items from the index.
    assert page in [p["url"] for p in pages]
    assert not {r.field("WARC-Target-URI") for r in payloads} & {p["url"] for p in pages}
    assert all(r.field("WARC-Target-URI").encode() in indexed for r in payloads)
    assert wacz_validation(wacz).endswith("Validation succeeded, the passed WACZ is valid\n")


def test_pywb_replays_the_pages_images_with_the_stored_bytes(
    crawled: str,
    crawled_rows: list[dict[str, object]],
    exported: Path,
    wayback: pywb_env.Wayback,  # noqa: F811 (the fixture)
) -> None:
    rows = [row for row in crawled_rows if row["stored"]]
    kept = stored_bytes(crawled)
    engine = create_engine(crawled)
    with engine.connect() as conn:
        urls = {row.article_id: row.url for row in conn.execute(select(article))}
    engine.dispose()
    out = exported
    files = sorted(out.glob("*.warc.gz"))
    # The site's server is gone: whatever pywb gives back came from the WARC.
    name = wayback.collection(files, out / "index.cdxj")
    collection = f"{wayback.url}/{name}"
    for row in rows:
        stamp = dt.datetime.fromtimestamp(int(row["fetched_at"]), dt.UTC)
        uri = ("urn:view:" if row["kind"] == "screenshot" else "") + str(row["url"])
        got = fetch(f"{collection}/{stamp:%Y%m%d%H%M%S}id_/{uri}")
        assert got == kept[str(row["sha256"])], uri
        assert hashlib.sha256(got).hexdigest() == row["sha256"]
    # The page as pywb shows it: its <img>s point into the archive, at its time, and
    # each answers with the bytes the archive stored for that URL.
    by_url = {str(row["url"]): kept[str(row["sha256"])] for row in rows}
    for article_id, at in sorted({(r["article_id"], r["snapshot_at"]) for r in rows}):
        stamp = dt.datetime.fromtimestamp(int(str(at)), dt.UTC)
        page = fetch(f"{collection}/{stamp:%Y%m%d%H%M%S}mp_/{urls[int(str(article_id))]}")
        images = re.findall(rf'<img src="(/{name}/[0-9]+im_/([^"]+))"'.encode(), page)
        shown = [(path.decode(), url.decode()) for path, url in images]
        assert [url for _, url in shown if url in by_url], page[:2000]
        for path, url in shown:
            if url in by_url:
                assert fetch(wayback.url + path) == by_url[url], url
    assert PNG in kept.values() and SCREENSHOT in kept.values()


def page_facts(
    db_url: str, tmp_path: Path, rows: list[dict[str, object]] | None = None
) -> list[tuple[object, ...]]:
    """The media rows (``rows``, else ``scrapy media --json`` of ``db_url``) with the
    article's URL for its id (ids differ between archives)."""
    engine = create_engine(db_url)
    with engine.connect() as conn:
        urls = {row.article_id: row.url for row in conn.execute(select(article))}
    engine.dispose()
    return sorted(
        (urls[row["article_id"]], *(v for k, v in row.items() if k != "article_id"))
        for row in (media_json(db_url, tmp_path) if rows is None else rows)
    )


@pytest.fixture
def target(module_db_url: str, tmp_path: Path) -> Iterator[str]:
    """An empty archive of the same engine as the crawled one."""
    if module_db_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'target.db'}"
        close_archives()
        return
    with fresh_mariadb() as url:
        yield url


def test_import_gives_every_item_back_to_its_snapshot_once(
    crawled: str,
    crawled_rows: list[dict[str, object]],
    exported: Path,
    sites_file: Path,
    target: str,
    tmp_path: Path,
) -> None:
    files = [str(p) for p in sorted(exported.glob("*.warc.gz"))]
    loaded = scrapy("load_sites", str(sites_file), db_url=target, cwd=tmp_path)
    assert loaded.returncode == 0, loaded.output
    run = scrapy("import_warc", *files, "--site", "one", db_url=target, cwd=tmp_path)
    assert run.returncode == 0, run.output
    source = page_facts(crawled, tmp_path, crawled_rows)
    assert page_facts(target, tmp_path) == source
    assert f"{len(source)} media item(s) added (0 already there)" in run.output
    assert stored_bytes(target) == stored_bytes(crawled)
    # A second import adds no row and no item.
    again = scrapy("import_warc", *files, "--site", "one", db_url=target, cwd=tmp_path)
    assert again.returncode == 0, again.output
    assert f"0 media item(s) added ({len(source)} already there)" in again.output
    assert page_facts(target, tmp_path) == source


def test_a_browsertrix_screenshot_joins_its_pages_nearest_snapshot(
    db_url: str, tmp_path: Path
) -> None:
    """A foreign WARC's page and its urn:view: screenshot, dated a few seconds apart (as
    browsertrix-crawler writes them): the screenshot becomes the snapshot's."""
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    page = b"<!doctype html><html><body><p>A page with a screenshot.</p></body></html>"
    path = tmp_path / "crawl.warc.gz"
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True, warc_version="1.1")
        head = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(
            writer.create_warc_record(
                "https://news.example/a/1",
                "response",
                payload=io.BytesIO(page),
                length=len(page),
                http_headers=head,
                warc_headers_dict={"WARC-Date": "2025-01-10T08:00:03Z"},
            )
        )
        writer.write_record(
            writer.create_warc_record(
                "urn:view:https://news.example/a/1",
                "resource",
                payload=io.BytesIO(SCREENSHOT),
                length=len(SCREENSHOT),
                warc_content_type="image/png",
                warc_headers_dict={"WARC-Date": "2025-01-10T08:00:00Z"},
            )
        )
    sites = tmp_path / "sites.yaml"
    sites.write_text('- {name: news, url: "https://news.example/", config: {article: /a/}}\n')
    assert scrapy("load_sites", str(sites), db_url=db_url, cwd=tmp_path).returncode == 0
    for _ in range(2):
        run = scrapy("import_warc", str(path), "--site", "news", db_url=db_url, cwd=tmp_path)
        assert run.returncode == 0, run.output
    rows = media_json(db_url, tmp_path)
    assert [(r["kind"], r["url"], r["sha256"], r["snapshot_at"]) for r in rows] == [
        (
            "screenshot",
            "https://news.example/a/1",
            hashlib.sha256(SCREENSHOT).hexdigest(),
            int(dt.datetime(2025, 1, 10, 8, 0, 3, tzinfo=dt.UTC).timestamp()),
        )
    ]
    assert stored_bytes(db_url) == {hashlib.sha256(SCREENSHOT).hexdigest(): SCREENSHOT}


def test_media_json_parquet_and_the_docs_name_the_same_columns(
    crawled: str, crawled_rows: list[dict[str, object]], tmp_path: Path
) -> None:
    rows = crawled_rows
    folder = tmp_path / "media"
    run = scrapy("media", "--parquet", str(folder), db_url=crawled, cwd=tmp_path)
    assert run.returncode == 0, run.output
    assert f"{len(rows)} record(s) written to {folder}" in run.output
    documented = doc_columns("Media")
    in_json = [name for name, _, kind in documented if kind != "—"]
    # A key of some lines only (expired_at: an expired video's; tests/test_video.py).
    some = {name for name, _, kind in documented if kind.endswith(" only)")}
    assert some == {"expired_at"}
    assert rows and all(list(row) == [n for n in in_json if n not in some] for row in rows)
    for name, _, kind in documented:
        if kind != "—" and name not in some:
            assert all(isinstance(row[name], JSON_TYPES[kind]) or row[name] is None for row in rows)
    part = next(folder.rglob("*.parquet"))
    in_files = [(f.name, parquet_type(f.type)) for f in pq.read_schema(part)]
    assert in_files == [
        (name, kind) for name, kind, _ in documented if kind not in ("—", "from the path")
    ]
    frame = pd.read_parquet(folder)
    assert list(frame.columns) == [n for n, _ in in_files] + ["site_id", "month"]
    # The same rows, whichever the format.
    assert sorted(zip(frame["url"], frame["sha256"].fillna(""), strict=True)) == sorted(
        (row["url"], row["sha256"] or "") for row in rows
    )
    assert set(frame["snapshot_at"].astype("int64") // 1000) == {r["snapshot_at"] for r in rows}
    assert scrapy("media", "--parquet", str(folder), db_url=crawled, cwd=tmp_path).returncode


def noise(size: int) -> Iterator[bytes]:
    """Bytes that do not compress, as a video's: a WARC's gzip keeps them their size (a
    repeated block would inflate a few KiB of gzip into megabytes in one read)."""
    for number in range(size // 65536):
        yield hashlib.shake_256(number.to_bytes(4, "big")).digest(65536)


@pytest.fixture(params=["database", "directory"])
def backend(request: pytest.FixtureRequest, db_url: str, tmp_path: Path) -> MediaStore:
    directory = str(tmp_path / "media") if request.param == "directory" else ""
    return media_store(open_archive(url=db_url).engine, directory)


def test_a_large_item_is_exported_and_imported_with_memory_bounded(
    backend: MediaStore, tmp_path: Path
) -> None:
    """Both backends: the item goes into the WARC and back into the store through spooled
    files and chunks, never whole in memory."""
    size = 12 * 2**20
    with backend.engine.begin() as conn:
        put = backend.put(conn, noise(size), "video/mp4", 1)
    url = "https://v.example/a.mp4"
    row = MediaRecord(1, 1, "video", url, put.sha256, size, "video/mp4", 1, True, None)
    stored = StoredSnapshot(1, 1, 200, "https://v.example/a", {}, "utf-8", b"", b"")
    page = ExportedSnapshot(1, "https://v.example/a", stored)
    path = tmp_path / "v.warc.gz"
    export = MediaExport(backend)
    tracemalloc.start()
    try:
        with path.open("wb") as handle:
            export.write_row(WARCWriter(handle, gzip=True, warc_version="1.1"), page, row)
        written = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        with path.open("rb") as handle:
            record = next(iter(ArchiveIterator(handle)))
            item = media_in_record(record)
            with backend.engine.begin() as conn:
                again = backend.put(conn, read_chunks(record.content_stream()), "video/mp4", 2)
        read = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert item is not None and item.sha256 == put.sha256 and item.kind == "video"
    assert export.counts.responses == 1 and export.counts.payload_bytes == size
    assert again.sha256 == put.sha256 and again.size == size and not again.new
    # Bounded by chunks (the spool keeps 1 MiB in memory), not by the item (12 MiB):
    # 3.2 MB measured for the export.
    assert written < size // 2 and read < size // 2, (written, read)
