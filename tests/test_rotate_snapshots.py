"""`scrapy rotate_snapshots`: old months exported, verified, then dropped; bytes that kept
snapshots repeat survive; nothing dropped when the export cannot be written."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path

from sqlalchemy import create_engine, func, select, text

from tests.conftest import scrapy
from tests.replay import tw_news_pages, tw_news_routes
from zeroarchive.core.items import FetchedPage
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import close_archives, open_archive
from zeroarchive.storage.rotation import Month, record_bytes, rotate
from zeroarchive.storage.schema import article, article_snapshot
from zeroarchive.storage.snapshots import (
    content_hash,
    iter_snapshots,
    read_snapshot,
    snapshot_record,
)


def ts(day: str) -> int:
    return int(dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC).timestamp())


def bodies() -> dict[str, bytes]:
    """Real pages: two UTF-8 ones, and a Big5 one cut after a lead byte (as a dropped
    connection leaves it), whose decoded text cannot give the original bytes back."""
    routes = tw_news_routes()
    pages = tw_news_pages()
    utf8 = [p for p in pages if p.charset.lower() == "utf-8"]
    big5 = next(p for p in pages if p.charset.lower() == "big5")
    return {
        "v1": routes[utf8[0].path].body,
        "v2": routes[utf8[1].path].body,
        "big5": routes[big5.path].body + b"\xa4",
    }


# (article, when, body): A repeats January's bytes in February and March; B repeats
# February's in March; C lives in January only.
TIMELINE = [
    ("a", "2025-01-10T08:00:00", "v1"),
    ("a", "2025-01-20T08:00:00", "v1"),
    ("a", "2025-02-05T08:00:00", "v1"),
    ("a", "2025-03-03T08:00:00", "v1"),
    ("a", "2025-03-10T08:00:00", "v2"),
    ("b", "2025-02-01T23:59:59", "big5"),
    ("b", "2025-03-02T00:00:00", "big5"),
    ("c", "2025-01-31T23:59:59", "v2"),
]


def fill(db_url: str) -> dict[str, int]:
    archive = open_archive(url=db_url)
    site_id, _ = archive.sites.upsert(
        parse_spec({"name": "s", "url": "https://news.example/", "config": {"article": "/a/"}}),
        ts("2025-01-01T00:00:00"),
    )
    urls = {name: f"https://news.example/a/{name}" for name in ("a", "b", "c")}
    archive.articles.add(site_id, "Article", list(urls.values()), ts("2025-01-01T00:00:00"))
    with archive.engine.connect() as conn:
        ids = {
            name: conn.execute(
                select(article.c.article_id).where(article.c.url == url)
            ).scalar_one()
            for name, url in urls.items()
        }
    pages = bodies()
    for name, when, version in TIMELINE:
        archive.snapshots.save(
            [
                FetchedPage(
                    article_id=ids[name],
                    site_id=site_id,
                    article_type="Article",
                    fetched_at=ts(when),
                    status=200,
                    final_url=urls[name],
                    headers={"Content-Type": ["text/html"]},
                    encoding="cp950" if version == "big5" else "utf-8",
                    body=pages[version],
                )
            ]
        )
    return ids


def counts(db_url: str) -> tuple[int, int]:
    engine = create_engine(db_url)
    with engine.connect() as conn:
        articles = conn.execute(select(func.count()).select_from(article)).scalar_one()
        snapshots = conn.execute(select(func.count()).select_from(article_snapshot)).scalar_one()
    engine.dispose()
    return articles, snapshots


def test_rotation_exports_verifies_and_drops_old_months(db_url: str, tmp_path: Path) -> None:
    ids = fill(db_url)
    archive = open_archive(url=db_url)
    before = {
        Month.of(dt.datetime.fromtimestamp(e.snapshot.snapshot_at, dt.UTC).date()).label: []
        for e in iter_snapshots(archive.engine)
    }
    for exported in iter_snapshots(archive.engine):
        day = dt.datetime.fromtimestamp(exported.snapshot.snapshot_at, dt.UTC).date()
        before[Month.of(day).label].append(snapshot_record(exported))
    close_archives()
    out = tmp_path / "exports"

    listed = scrapy("rotate_snapshots", "--before", "2025-03", db_url=db_url, cwd=tmp_path)
    assert listed.returncode == 0, listed.output
    assert "Would rotate: 2025-01, 2025-02" in listed.output
    assert counts(db_url) == (3, 8)

    run = scrapy(
        "rotate_snapshots", "--before", "2025-03", "--export", str(out), db_url=db_url, cwd=tmp_path
    )
    assert run.returncode == 0, run.output
    assert "2025-01: 3 snapshot(s)" in run.output and "2025-02: 2 snapshot(s)" in run.output
    assert "rotate_snapshots: 2 months done in" in run.output
    # Articles are kept forever; only March's snapshots remain.
    assert counts(db_url) == (3, 3)
    for label in ("2025-01", "2025-02"):
        with gzip.open(out / f"snapshots-{label}.jsonl.gz", "rt", encoding="utf-8") as handle:
            lines = [json.loads(line) for line in handle]
        # export_snapshots' records, plus the raw bytes where the text cannot give them back
        assert [{k: v for k, v in r.items() if k != "raw_base64"} for r in lines] == before[label]
        for record in lines:
            assert content_hash(record_bytes(record) or b"").hex() == record["content_hash"]
    big5 = [r for r in before["2025-02"] if r["article_id"] == ids["b"]]
    assert big5 and all(
        "raw_base64" in r for r in _lines(out / "snapshots-2025-02.jsonl.gz", ids["b"])
    )

    # The kept unchanged snapshots still read back: their bytes were carried forward.
    engine = create_engine(db_url)
    pages = bodies()
    for name, when, version in TIMELINE:
        if when >= "2025-03":
            assert read_snapshot(engine, ids[name], ts(when)).raw == pages[version]
    if engine.dialect.name != "sqlite":
        with engine.connect() as conn:
            names = conn.execute(
                text(
                    "SELECT PARTITION_NAME FROM information_schema.PARTITIONS WHERE "
                    "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'ArticleSnapshot'"
                )
            ).scalars()
            parts = set(names)
        assert "p202501" not in parts and "p202502" not in parts and "pmax" in parts
        today = dt.datetime.now(dt.UTC).date()
        assert Month.of(today).partition in parts and Month.of(today).next.partition in parts
    engine.dispose()

    # Nothing left to rotate: a second run changes nothing.
    again = scrapy(
        "rotate_snapshots", "--before", "2025-03", "--export", str(out), db_url=db_url, cwd=tmp_path
    )
    assert again.returncode == 0 and "0 month(s) rotated" in again.output, again.output
    assert counts(db_url) == (3, 3)


def _lines(path: Path, article_id: int) -> list[dict[str, object]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [r for r in map(json.loads, handle) if r["article_id"] == article_id]


def test_nothing_is_dropped_when_the_export_cannot_be_written(db_url: str, tmp_path: Path) -> None:
    fill(db_url)
    close_archives()
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the export directory should be")
    run = scrapy(
        "rotate_snapshots",
        "--before",
        "2025-03",
        "--export",
        str(blocker / "exports"),
        db_url=db_url,
        cwd=tmp_path,
    )
    assert run.returncode == 1, run.output
    assert "nothing of this month was dropped" in run.output
    assert counts(db_url) == (3, 8)


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    bad = scrapy("rotate_snapshots", "--before", "2025-13", db_url=db_url, cwd=tmp_path)
    assert bad.returncode == 2 and "not a month" in bad.output
    future = scrapy("rotate_snapshots", "--before", "2999-01", db_url=db_url, cwd=tmp_path)
    assert future.returncode == 2 and "future" in future.output


def stamped(body: bytes, n: int) -> bytes:
    """``body`` with a few bytes in its middle changed, as an ad id or a clock changes."""
    middle = len(body) // 2
    return body[:middle] + b"<!-- ad %06d -->" % n + body[middle:]


# (when, stamp, codec written): zstd-ref frames refer to a stand-alone frame of their month;
# March 1st repeats February 2nd's bytes, a zstd-ref frame of a month that is dropped.
REFERENCE_TIMELINE = [
    ("2025-01-10T08:00:00", 0, "zstd"),
    ("2025-01-11T08:00:00", 1, "zstd-ref"),
    ("2025-02-01T08:00:00", 2, "zstd"),
    ("2025-02-02T08:00:00", 1, "zstd-ref"),
    ("2025-03-01T08:00:00", 1, None),
    ("2025-03-02T08:00:00", 3, "zstd"),
    ("2025-03-03T08:00:00", 4, "zstd-ref"),
]


def test_reference_frames_read_back_after_their_months_rotate(db_url: str, tmp_path: Path) -> None:
    archive = open_archive(url=db_url)
    site_id, _ = archive.sites.upsert(
        parse_spec({"name": "s", "url": "https://news.example/", "config": {"article": "/a/"}}),
        ts("2025-01-01T00:00:00"),
    )
    url = "https://news.example/a/d"
    archive.articles.add(site_id, "Article", [url], ts("2025-01-01T00:00:00"))
    with archive.engine.connect() as conn:
        aid = conn.execute(select(article.c.article_id)).scalar_one()
    body = bodies()["v1"]

    def save(when: str, stamp: int) -> None:
        page = FetchedPage(
            article_id=aid,
            site_id=site_id,
            article_type="Article",
            fetched_at=ts(when),
            status=200,
            final_url=url,
            headers={"Content-Type": ["text/html"]},
            encoding="utf-8",
            body=stamped(body, stamp),
        )
        archive.snapshots.save([page])

    for when, stamp, _ in REFERENCE_TIMELINE:
        save(when, stamp)
    with archive.engine.connect() as conn:
        rows = conn.execute(select(article_snapshot).order_by(article_snapshot.c.snapshot_at)).all()
    assert [row.codec for row in rows] == [codec for _, _, codec in REFERENCE_TIMELINE]
    for row in rows:
        if row.reference_at is not None:
            assert Month.of(row.snapshot_at_date) == Month.of(
                dt.datetime.fromtimestamp(row.reference_at, dt.UTC).date()
            )

    results = rotate(archive.engine, Month.parse("2025-03"), tmp_path / "exports")
    assert [(r.month, r.snapshots, r.bytes_carried) for r in results] == [
        ("2025-01", 2, 0),
        ("2025-02", 2, 1),
    ]
    kept = [(when, stamp) for when, stamp, _ in REFERENCE_TIMELINE if when >= "2025-03"]
    for when, stamp in kept:
        assert read_snapshot(archive.engine, aid, ts(when)).raw == stamped(body, stamp)
    # The carried bytes stand alone; a new page of March may refer to them or a later one.
    save("2025-03-20T08:00:00", 5)
    assert read_snapshot(archive.engine, aid, ts("2025-03-20T08:00:00")).raw == stamped(body, 5)
    exported = [(e.snapshot.snapshot_at, e.snapshot.raw) for e in iter_snapshots(archive.engine)]
    assert exported == [(ts(w), stamped(body, n)) for w, n in [*kept, ("2025-03-20T08:00:00", 5)]]
    with archive.engine.connect() as conn:
        codecs = conn.execute(
            select(article_snapshot.c.codec).order_by(article_snapshot.c.snapshot_at)
        ).scalars()
        assert list(codecs) == ["zstd", "zstd", "zstd-ref", "zstd-ref"]
    for label, stamps in (("2025-01", [0, 1]), ("2025-02", [2, 1])):
        with gzip.open(tmp_path / "exports" / f"snapshots-{label}.jsonl.gz", "rt") as handle:
            lines = [json.loads(line) for line in handle]
        assert [record_bytes(r) for r in lines] == [stamped(body, n) for n in stamps]
    close_archives()
