"""`scrapy move_media`: the items' bytes moved between the database and a media directory,
streamed, checked by digest before the old copy goes, and finished by running it again
after a move stopped halfway."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import IO

import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.engine import Connection

from tests.conftest import scrapy
from tests.test_media import PNG, PNG2
from tests.test_media_stats import put_records
from zeroarchive.media.move import move_items
from zeroarchive.media.store import CHUNK, DatabaseBlobs, DirectoryBlobs, MediaStore, blobs_for
from zeroarchive.storage.archive import close_archives, open_archive
from zeroarchive.storage.schema import media_chunk, media_item

# A photo of two and a half chunks: its chunks are moved one by one.
BIG = PNG + bytes(range(256)) * (CHUNK * 5 // 2 // 256)
ITEMS = [PNG, PNG2, BIG, PNG + b"4"]


def filled(db_url: str, directory: str = "") -> MediaStore:
    archive = open_archive(url=db_url)
    spec = {"name": "s", "url": "https://s.example/", "config": {"article": "/a/"}}
    from zeroarchive.sites.record import parse_spec

    site_id, _ = archive.sites.upsert(parse_spec(spec), 1)
    archive.articles.add(site_id, "Article", ["https://s.example/a/1"], 1)
    store = MediaStore(archive.engine, blobs_for(directory))
    items = [(f"https://cdn.example/{n}.png", data) for n, data in enumerate(ITEMS)]
    with archive.engine.connect() as conn:
        from zeroarchive.storage.schema import article

        article_id = conn.execute(select(article.c.article_id)).scalar_one()
    put_records(store, article_id, 100, items)
    return store


def chunk_digests(store: MediaStore) -> set[str]:
    with store.engine.connect() as conn:
        rows = conn.execute(select(media_chunk.c.sha256).distinct()).scalars()
        return {bytes(d).hex() for d in rows}


def files(directory: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in directory.rglob("*")
        if p.is_file() and p.parent.name != "tmp"
    }


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_move_to_a_directory_and_back(db_url: str, tmp_path: Path) -> None:
    store = filled(db_url)
    close_archives()
    folder = tmp_path / "media"
    run = scrapy(
        "move_media", "--to", "directory", "--dir", str(folder), db_url=db_url, cwd=tmp_path
    )
    assert run.returncode == 0, run.output
    assert (
        f"4 item(s) ({sum(map(len, ITEMS)):,} bytes) moved from the database to the directory"
        in run.output
    )
    assert "move_media: 4 items done in" in run.output  # the progress line's end
    assert files(folder) == {digest(data): data for data in ITEMS}
    assert chunk_digests(store) == set()
    moved = MediaStore(store.engine, blobs_for(str(folder)))
    assert b"".join(moved.read(bytes.fromhex(digest(BIG)))) == BIG
    # Nothing left to move: a second run only finds them there.
    again = scrapy(
        "move_media", "--to", "directory", "--dir", str(folder), db_url=db_url, cwd=tmp_path
    )
    assert again.returncode == 0 and "0 item(s) (0 bytes) moved" in again.output
    assert "4 already there" in again.output

    back = scrapy(
        "move_media",
        "--to",
        "database",
        "-s",
        f"ZEROARCHIVE_MEDIA_DIR={folder}",
        db_url=db_url,
        cwd=tmp_path,
    )
    assert back.returncode == 0, back.output
    assert "4 item(s)" in back.output and "from the directory to the database" in back.output
    assert files(folder) == {}
    assert chunk_digests(store) == {digest(data) for data in ITEMS}
    assert b"".join(store.read(bytes.fromhex(digest(BIG)))) == BIG


class Crashing(DirectoryBlobs):
    """A directory the process dies writing the second item into."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.kept = 0

    def keep(self, conn: Connection, digest: bytes, spooled: IO[bytes]) -> None:
        self.kept += 1
        if self.kept == 2:
            raise OSError("the machine went down")
        super().keep(conn, digest, spooled)


def test_a_move_stopped_halfway_loses_nothing_and_running_it_again_finishes(
    db_url: str, tmp_path: Path
) -> None:
    store = filled(db_url)
    folder = tmp_path / "media"
    with pytest.raises(OSError, match="went down"):
        move_items(store.engine, DatabaseBlobs(), Crashing(folder))
    order = sorted(digest(data) for data in ITEMS)
    # The first item moved; the second stayed in the database, the rest untouched.
    assert set(files(folder)) == {order[0]}
    assert chunk_digests(store) == set(order[1:])
    # Besides, a copy another stop left in both places, and one damaged on disk.
    target = DirectoryBlobs(folder)
    both, damaged = order[2], order[3]
    data = {digest(d): d for d in ITEMS}
    for name, bytes_ in ((both, data[both]), (damaged, data[damaged][:-1] + b"\x00")):
        path = target.path(bytes.fromhex(name))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes_)
    moved = move_items(store.engine, DatabaseBlobs(), target)
    # Moved: the one the stop left behind and the damaged one; already: the first and both.
    assert (moved.moved, moved.already, moved.missing, moved.damaged) == (2, 2, [], [])
    assert files(folder) == data
    assert chunk_digests(store) == set()
    assert not os.listdir(folder / "tmp")


def test_an_item_in_neither_backend_is_reported(db_url: str, tmp_path: Path) -> None:
    store = filled(db_url)
    lost = hashlib.sha256(b"lost").digest()
    with store.engine.begin() as conn:
        conn.execute(insert(media_item).values(sha256=lost, size=4, content_type=None, stored_at=1))
    close_archives()
    run = scrapy(
        "move_media", "--to", "directory", "--dir", str(tmp_path / "m"), db_url=db_url, cwd=tmp_path
    )
    assert run.returncode == 1, run.output
    assert "4 item(s)" in run.output and "1 missing in both" in run.output
    assert f"missing: {lost.hex()}" in run.output
    with store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(media_item)).scalar() == 5
    bad = scrapy("move_media", "--to", "database", db_url=db_url, cwd=tmp_path)
    assert bad.returncode == 2 and "--dir" in bad.output
