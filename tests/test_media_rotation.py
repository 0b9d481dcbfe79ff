"""`scrapy rotate_snapshots` exports and drops media with their snapshots: the month's
records and the bytes of items no kept snapshot shows go to the export, the records a kept
unchanged snapshot shows move to it, the rest leave the store; shared bytes stay."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.conftest import scrapy
from tests.test_media import PNG, PNG2
from tests.test_media_stats import put_records
from tests.test_rotate_snapshots import fill, ts
from zeroarchive.media.rotation import MediaRotation
from zeroarchive.media.store import MediaStore, blobs_for, media_records
from zeroarchive.storage.archive import close_archives, open_archive
from zeroarchive.storage.rotation import Month, RotationError, rotate
from zeroarchive.storage.schema import media_chunk, media_item

LOGO, PHOTO_A, PHOTO_B, PHOTO_C, PHOTO_A2 = PNG, PNG2, PNG + b"b", PNG + b"c", PNG2 + b"a2"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def with_media(db_url: str, directory: str = "") -> tuple[dict[str, int], MediaStore]:
    """fill()'s timeline (A: January's bytes repeated in February and March, then changed;
    B: February's repeated in March; C: January only), with the media of each snapshot
    that has bytes: the logo on all, a photo of each, a missing image on C."""
    ids = fill(db_url)
    store = MediaStore(open_archive(url=db_url).engine, blobs_for(directory))
    logo = ("https://cdn.example/logo.png", LOGO)
    put_records(
        store, ids["a"], ts("2025-01-10T08:00:00"), [logo, ("https://cdn.example/a.png", PHOTO_A)]
    )
    put_records(
        store,
        ids["c"],
        ts("2025-01-31T23:59:59"),
        [
            logo,
            ("https://cdn.example/c.png", PHOTO_C),
            ("https://cdn.example/gone.png", "failed:404"),
        ],
    )
    put_records(
        store, ids["b"], ts("2025-02-01T23:59:59"), [logo, ("https://cdn.example/b.png", PHOTO_B)]
    )
    put_records(
        store, ids["a"], ts("2025-03-10T08:00:00"), [logo, ("https://cdn.example/a2.png", PHOTO_A2)]
    )
    return ids, store


def shown(store: MediaStore) -> set[tuple[int, int, str]]:
    return {
        (r.article_id, r.snapshot_at, r.url.rsplit("/", 1)[-1]) for r in media_records(store.engine)
    }


def held(store: MediaStore) -> set[str]:
    with store.engine.connect() as conn:
        return {bytes(d).hex() for d in conn.execute(select(media_item.c.sha256)).scalars()}


def check_rotated(ids: dict[str, int], store: MediaStore, out: Path) -> None:
    a, b = ids["a"], ids["b"]
    # The kept unchanged snapshots show what they showed: A's January set, now on its first
    # March snapshot; B's February set on its March one. C's records are gone.
    assert shown(store) == {
        (a, ts("2025-03-03T08:00:00"), "logo.png"),
        (a, ts("2025-03-03T08:00:00"), "a.png"),
        (b, ts("2025-03-02T00:00:00"), "logo.png"),
        (b, ts("2025-03-02T00:00:00"), "b.png"),
        (a, ts("2025-03-10T08:00:00"), "logo.png"),
        (a, ts("2025-03-10T08:00:00"), "a2.png"),
    }
    # C's photo left the store (exported first); the logo, shared with kept ones, stayed.
    assert held(store) == {digest(x) for x in (LOGO, PHOTO_A, PHOTO_B, PHOTO_A2)}
    for gone in (PHOTO_C,):
        with pytest.raises(LookupError):
            list(store.read(bytes.fromhex(digest(gone))))
    with gzip.open(out / "media-2025-01.jsonl.gz", "rt", encoding="utf-8") as handle:
        january = [json.loads(line) for line in handle]
    assert len(january) == 5
    assert {(r["url"].rsplit("/", 1)[-1], r["carried_to"]) for r in january} == {
        ("logo.png", ts("2025-02-05T08:00:00")),
        ("a.png", ts("2025-02-05T08:00:00")),
        ("logo.png", None),
        ("c.png", None),
        ("gone.png", None),
    }
    missing = next(r for r in january if r["url"].endswith("gone.png"))
    assert (missing["stored"], missing["reason"], missing["sha256"]) == (False, "failed:404", None)
    exported = sorted(p for p in (out / "media-2025-01").rglob("*") if p.is_file())
    name = digest(PHOTO_C)
    assert exported == [out / "media-2025-01" / name[:2] / name[2:4] / name]
    assert exported[0].read_bytes() == PHOTO_C
    with gzip.open(out / "media-2025-02.jsonl.gz", "rt", encoding="utf-8") as handle:
        february = [json.loads(line) for line in handle]
    assert {r["carried_to"] for r in february} == {
        ts("2025-03-03T08:00:00"),
        ts("2025-03-02T00:00:00"),
    }
    assert len(february) == 4 and not list((out / "media-2025-02").rglob("*.*"))


def test_rotation_exports_and_drops_media_with_their_snapshots(db_url: str, tmp_path: Path) -> None:
    ids, store = with_media(db_url)
    close_archives()
    out = tmp_path / "exports"
    run = scrapy(
        "rotate_snapshots", "--before", "2025-03", "--export", str(out), db_url=db_url, cwd=tmp_path
    )
    assert run.returncode == 0, run.output
    assert (
        "2025-01: 5 media record(s) exported and dropped (2 carried forward to kept snapshots); "
        f"1 item(s) ({len(PHOTO_C):,} bytes) exported, 1 ({len(PHOTO_C):,} bytes) removed"
    ) in run.output
    store = MediaStore(open_archive(url=db_url).engine, blobs_for(""))
    check_rotated(ids, store, out)
    with store.engine.connect() as conn:
        # The database backend's chunks went with the item.
        chunks = {
            bytes(d).hex() for d in conn.execute(select(media_chunk.c.sha256).distinct()).scalars()
        }
    assert chunks == held(store)


def test_the_directory_backend_loses_the_files_of_removed_items(
    db_url: str, tmp_path: Path
) -> None:
    ids, store = with_media(db_url, str(tmp_path / "media"))
    out = tmp_path / "exports"
    companion = MediaRotation(store)
    rotate(store.engine, Month.parse("2025-03"), out, companions=[companion])
    check_rotated(ids, store, out)
    files = {p.name for p in (tmp_path / "media").rglob("*") if p.is_file()}
    assert files == held(store)
    assert [m.removed_items for m in companion.results] == [1, 0]


def test_nothing_is_dropped_when_an_item_cannot_be_exported(db_url: str, tmp_path: Path) -> None:
    ids, store = with_media(db_url, str(tmp_path / "media"))
    name = digest(PHOTO_C)
    (tmp_path / "media" / name[:2] / name[2:4] / name).unlink()  # its bytes lost
    before = shown(store)
    with pytest.raises(RotationError, match=name):
        rotate(
            store.engine,
            Month.parse("2025-03"),
            tmp_path / "exports",
            companions=[MediaRotation(store)],
        )
    assert shown(store) == before and ids


def test_an_expired_video_record_is_exported_without_bytes(db_url: str, tmp_path: Path) -> None:
    """A record whose bytes the video expiry removed keeps its digest: the rotation exports
    the record and looks for no bytes (there are none to copy out)."""
    from sqlalchemy import delete, update

    from zeroarchive.storage.schema import snapshot_media

    _ids, store = with_media(db_url)
    gone = bytes.fromhex(digest(PHOTO_C))
    with store.engine.begin() as conn:
        conn.execute(
            update(snapshot_media)
            .where(snapshot_media.c.sha256 == gone)
            .values(stored=False, reason="expired", expired_at=ts("2025-02-20T00:00:00"))
        )
        conn.execute(delete(media_item).where(media_item.c.sha256 == gone))
        store.blobs.remove(conn, gone)
    close_archives()
    out = tmp_path / "exports"
    run = scrapy(
        "rotate_snapshots", "--before", "2025-03", "--export", str(out), db_url=db_url, cwd=tmp_path
    )
    assert run.returncode == 0, run.output
    with gzip.open(out / "media-2025-01.jsonl.gz", "rt", encoding="utf-8") as handle:
        january = [json.loads(line) for line in handle]
    expired = [r for r in january if r["reason"] == "expired"]
    assert [(r["sha256"], r["stored"], r["expired_at"]) for r in expired] == [
        (digest(PHOTO_C), False, ts("2025-02-20T00:00:00"))
    ]
    assert not [p for p in (out / "media-2025-01").rglob("*") if p.is_file()]
