"""`scrapy verify`: every stored snapshot read back against its SHA-256; one line per
damaged one, exit 1; --site and --since; a stopped pass goes on where it stopped."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard
from sqlalchemy import create_engine, delete, select, text, update
from sqlalchemy.engine import make_url

from tests.conftest import ARCHIVE, fresh_mariadb, scrapy
from tests.replay import tw_news_pages, tw_news_routes
from tests.test_import_0archive import run_import, zeroscraper  # noqa: F401 (a fixture)
from tests.zeroscraper_rows import ZeroArchiveRows
from zeroarchive.commands.verify import stop_on_sigterm
from zeroarchive.core.items import FetchedPage
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import close_archives, open_archive
from zeroarchive.storage.compression import compress
from zeroarchive.storage.fixity import Damage, Item, begin, verify
from zeroarchive.storage.schema import article, article_snapshot, fixity_progress
from zeroarchive.storage.snapshot_fixity import SnapshotFixity


def ts(day: str) -> int:
    return int(dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC).timestamp())


def bodies() -> list[bytes]:
    routes = tw_news_routes()
    return [routes[page.path].body for page in tw_news_pages()[:5]]


# (site, article, when, body): "first" stands alone and nothing needs it; a's 2025-01-12
# page is compressed against its 01-10 frame (a changed page, same month), 01-11 and 02-02
# repeat earlier bytes (no bytes of their own); d is the other site's.
TIMELINE = [
    ("one", "first", "2025-01-05T08:00:00", 0),
    ("one", "a", "2025-01-10T08:00:00", 1),
    ("one", "a", "2025-01-11T08:00:00", 1),
    ("one", "a", "2025-01-12T08:00:00", "1+"),
    ("one", "a", "2025-02-02T08:00:00", "1+"),
    ("one", "b", "2025-01-10T09:00:00", 2),
    ("one", "c", "2025-02-05T08:00:00", 3),
    ("two", "d", "2025-01-15T08:00:00", 4),
    ("two", "d", "2025-02-15T08:00:00", 4),
]
ALL = len(TIMELINE)


def fill(db_url: str) -> dict[str, int]:
    archive = open_archive(url=db_url)
    sites = {}
    for name, url in (("one", "https://news.example/"), ("two", "https://other.example/")):
        spec = parse_spec({"name": name, "url": url, "config": {"article": "/a/"}})
        sites[name] = archive.sites.upsert(spec, ts("2025-01-01T00:00:00"))[0]
    ids = {}
    for site_name, name, _, _ in TIMELINE:
        if name not in ids:
            host = "user:s3cret@news.example" if name == "c" else "news.example"
            url = f"https://{host}/a/{name}"
            archive.articles.add(sites[site_name], "Article", [url], ts("2025-01-01T00:00:00"))
            with archive.engine.connect() as conn:
                ids[name] = conn.execute(
                    select(article.c.article_id).order_by(article.c.article_id.desc()).limit(1)
                ).scalar_one()
    pages = bodies()
    for site_name, name, when, version in TIMELINE:
        body = pages[1] + b"<!-- changed -->" if version == "1+" else pages[int(version)]
        page = FetchedPage(
            article_id=ids[name],
            site_id=sites[site_name],
            article_type="Article",
            fetched_at=ts(when),
            status=200,
            final_url=f"https://news.example/a/{name}",
            headers={"Content-Type": ["text/html"]},
            encoding="utf-8",
            body=body,
        )
        archive.snapshots.save([page])
    with archive.engine.connect() as conn:
        codecs = conn.execute(select(article_snapshot.c.codec)).scalars().all()
    assert sorted(map(str, codecs)) == ["None"] * 3 + ["zstd"] * 5 + ["zstd-ref"]
    close_archives()
    return ids


def stored(db_url: str, article_id: int, when: str) -> bytes:
    engine = create_engine(db_url)
    with engine.connect() as conn:
        data = conn.execute(
            select(article_snapshot.c.raw_data).where(
                article_snapshot.c.article_id == article_id,
                article_snapshot.c.snapshot_at == ts(when),
            )
        ).scalar_one()
    engine.dispose()
    return bytes(data)


def store(db_url: str, article_id: int, when: str, data: bytes) -> None:
    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(
            update(article_snapshot)
            .where(
                article_snapshot.c.article_id == article_id,
                article_snapshot.c.snapshot_at == ts(when),
            )
            .values(raw_data=data)
        )
    engine.dispose()


def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x55]) + data[at + 1 :]


def damaged(stdout: str) -> list[tuple[int, int, str]]:
    """(article_id, snapshot_at, problem) of each line of the text report."""
    found = []
    for line in stdout.splitlines():
        words = dict(w.split("=", 1) for w in line.split() if "=" in w)
        problem = line.split(" url=", 1)[1].split(" ", 1)[1].split(":", 1)[0]
        found.append((int(words["article_id"]), int(words["snapshot_at"]), problem))
    return found


def test_a_clean_archive_verifies_with_exit_0_and_progress_on_stderr(
    db_url: str, tmp_path: Path
) -> None:
    fill(db_url)
    run = scrapy("verify", db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    assert run.stdout == ""
    assert f"verify snapshots: {ALL} snapshots done in" in run.stderr
    assert f"verify: pass complete: {ALL} item(s) checked ({ALL} by this run), 0 damaged" in (
        run.stderr
    )


def test_one_flipped_byte_is_exactly_one_line_and_exit_1(db_url: str, tmp_path: Path) -> None:
    ids = fill(db_url)
    data = stored(db_url, ids["c"], "2025-02-05T08:00:00")
    store(db_url, ids["c"], "2025-02-05T08:00:00", flip(data, len(data) // 2))
    run = scrapy("verify", db_url=db_url, cwd=tmp_path)
    assert run.returncode == 1, run.output
    [(article_id, at, problem)] = damaged(run.stdout)
    assert (article_id, at) == (ids["c"], ts("2025-02-05T08:00:00"))
    assert problem in ("digest-mismatch", "undecompressable")
    # The article's URL, its password masked.
    assert "url=https://***@news.example/a/c " in run.stdout and "s3cret" not in run.output
    assert f"{ALL} item(s) checked ({ALL} by this run), 1 damaged" in run.stderr


def test_a_truncated_frame_and_other_bytes_under_the_same_hash(db_url: str, tmp_path: Path) -> None:
    ids = fill(db_url)
    data = stored(db_url, ids["b"], "2025-01-10T09:00:00")
    store(db_url, ids["b"], "2025-01-10T09:00:00", data[: len(data) - 40])
    # A whole frame, of a page that is not the one recorded (one byte of it changed).
    page = zstandard.ZstdDecompressor().decompress(stored(db_url, ids["d"], "2025-01-15T08:00:00"))
    store(db_url, ids["d"], "2025-01-15T08:00:00", compress(flip(page, 1000))[0])
    run = scrapy("verify", "--json", db_url=db_url, cwd=tmp_path)
    assert run.returncode == 1, run.output
    records = [json.loads(line) for line in run.stdout.splitlines()]
    assert [(r["article_id"], r["snapshot_at"], r["problem"]) for r in records] == [
        (ids["b"], ts("2025-01-10T09:00:00"), "undecompressable"),
        (ids["d"], ts("2025-01-15T08:00:00"), "digest-mismatch"),
        # The unchanged re-snapshot of February repeats those bytes.
        (ids["d"], ts("2025-02-15T08:00:00"), "depends-on-damaged"),
    ]
    assert records[0]["source"] == "snapshot" and records[0]["url"] == "https://news.example/a/b"
    assert f"{len(page):,} bytes" in records[1]["detail"]
    assert str(ts("2025-01-15T08:00:00")) in records[2]["detail"]


def test_what_a_frame_needs_damaged_or_missing(db_url: str, tmp_path: Path) -> None:
    ids = fill(db_url)
    a = ids["a"]
    data = stored(db_url, a, "2025-01-10T08:00:00")
    store(db_url, a, "2025-01-10T08:00:00", flip(data, len(data) // 3))
    run = scrapy("verify", db_url=db_url, cwd=tmp_path)
    assert run.returncode == 1, run.output
    jan10, jan11, jan12, feb02 = (
        ts(f"2025-{d}T08:00:00") for d in ("01-10", "01-11", "01-12", "02-02")
    )
    found = damaged(run.stdout)
    assert found[0][:2] == (a, jan10) and found[0][2] in ("digest-mismatch", "undecompressable")
    # The repeat of its bytes, the page compressed against it, and the repeat of that page.
    assert found[1:] == [
        (a, jan11, "depends-on-damaged"),
        (a, jan12, "depends-on-damaged"),
        (a, feb02, "depends-on-damaged"),
    ]
    assert f"its reference, the snapshot at {jan10}, is damaged" in run.stdout

    engine = create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(
            delete(article_snapshot).where(
                article_snapshot.c.article_id == a, article_snapshot.c.snapshot_at == jan10
            )
        )
    engine.dispose()
    run = scrapy("verify", "--site", "one", db_url=db_url, cwd=tmp_path)
    assert run.returncode == 1, run.output
    assert damaged(run.stdout) == [
        (a, jan11, "missing"),
        (a, jan12, "missing"),
        (a, feb02, "depends-on-damaged"),
    ]


def test_site_and_since_choose_what_is_read(db_url: str, tmp_path: Path) -> None:
    ids = fill(db_url)
    data = stored(db_url, ids["a"], "2025-01-12T08:00:00")
    store(db_url, ids["a"], "2025-01-12T08:00:00", flip(data, 5))
    two = scrapy("verify", "--site", "two", db_url=db_url, cwd=tmp_path)
    assert two.returncode == 0, two.output
    assert "2 item(s) checked" in two.stderr
    since = scrapy("verify", "--since", "2025-02-01", db_url=db_url, cwd=tmp_path)
    assert since.returncode == 1, since.output
    assert "3 item(s) checked" in since.stderr
    # The damaged frame is January's; February's repeat of it is what shows it.
    assert damaged(since.stdout) == [(ids["a"], ts("2025-02-02T08:00:00"), "depends-on-damaged")]
    later = scrapy("verify", "--site", "one", "--since", "2025-02-03", db_url=db_url, cwd=tmp_path)
    assert later.returncode == 0 and "1 item(s) checked" in later.stderr, later.output


def test_a_stopped_pass_goes_on_where_it_stopped(db_url: str, tmp_path: Path) -> None:
    ids = fill(db_url)
    first = scrapy("verify", "--limit", "2", db_url=db_url, cwd=tmp_path)
    assert first.returncode == 0, first.output
    assert "stopped at --limit (run again to go on): 2 item(s) checked (2 by this run)" in (
        first.stderr
    )
    # Damaged after it was checked: the rest of the pass does not read it again.
    data = stored(db_url, ids["first"], "2025-01-05T08:00:00")
    store(db_url, ids["first"], "2025-01-05T08:00:00", flip(data, len(data) // 2))
    rest = scrapy("verify", db_url=db_url, cwd=tmp_path)
    assert rest.returncode == 0, rest.output
    assert "going on with the pass begun" in rest.stderr and "2 item(s) checked, 0 damaged" in (
        rest.stderr
    )
    assert f"verify snapshots: {ALL - 2} snapshots done" in rest.stderr
    assert f"pass complete: {ALL} item(s) checked ({ALL - 2} by this run), 0 damaged" in (
        rest.stderr
    )
    # A finished pass leaves nothing: the next one reads everything, the damage too.
    again = scrapy("verify", db_url=db_url, cwd=tmp_path)
    assert again.returncode == 1, again.output
    assert [line[:2] for line in damaged(again.stdout)] == [
        (ids["first"], ts("2025-01-05T08:00:00"))
    ]


def test_damage_found_before_a_stop_is_reported_by_the_run_that_ends_the_pass(
    db_url: str, tmp_path: Path
) -> None:
    ids = fill(db_url)
    data = stored(db_url, ids["first"], "2025-01-05T08:00:00")
    store(db_url, ids["first"], "2025-01-05T08:00:00", flip(data, len(data) // 2))
    first = scrapy("verify", "--limit", "3", db_url=db_url, cwd=tmp_path)
    assert first.returncode == 1, first.output
    assert len(damaged(first.stdout)) == 1
    rest = scrapy("verify", db_url=db_url, cwd=tmp_path)
    assert rest.returncode == 1, rest.output
    assert rest.stdout == first.stdout
    assert f"({ALL - 3} by this run), 1 damaged" in rest.stderr
    # --restart drops a stopped pass.
    scrapy("verify", "--limit", "3", db_url=db_url, cwd=tmp_path)
    over = scrapy("verify", "--restart", db_url=db_url, cwd=tmp_path)
    assert "going on" not in over.stderr, over.output
    assert f"{ALL} item(s) checked ({ALL} by this run), 1 damaged" in over.stderr


class Interrupting:
    """The snapshots' source, stopped as its ``stop_at``-th item is read: by a Ctrl-C, or
    by a SIGTERM to this process (as a service manager stops it)."""

    def __init__(self, source: SnapshotFixity, stop_at: int, how: str) -> None:
        self.source, self.stop_at, self.how, self.read = source, stop_at, how, 0
        self.name = source.name

    def count(self, after: str | None) -> int:
        return self.source.count(after)

    def items(self, after: str | None) -> Iterator[Item]:
        for item in self.source.items(after):
            self.read += 1
            if self.read == self.stop_at:
                if self.how == "ctrl-c":
                    raise KeyboardInterrupt
                os.kill(os.getpid(), signal.SIGTERM)
            yield item

    def url(self, item: Item) -> str | None:
        return self.source.url(item)


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_a_stop_keeps_the_place_of_the_last_item_checked(db_url: str, how: str) -> None:
    ids = fill(db_url)
    engine = open_archive(url=db_url).engine
    run = begin(engine, "all", None, "snapshot")
    stream = io.StringIO()
    source = Interrupting(SnapshotFixity(engine, batch=3), stop_at=5, how=how)
    before = signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        with pytest.raises(SystemExit) as stopped:
            verify(engine, run, [source], lambda damage: None, stream=stream)
    finally:
        signal.signal(signal.SIGTERM, before)
    assert stopped.value.code == 130
    assert "after 4 snapshots; run the same scrapy verify again" in stream.getvalue()
    with engine.connect() as conn:
        row = conn.execute(select(fixity_progress)).one()
    # The fourth snapshot is a's third (first, then a's from January 10).
    assert (row.position, row.checked) == (f"{ids['a']}:{ts('2025-01-12T08:00:00')}", 4)
    resumed = begin(engine, "all", None, "snapshot")
    assert resumed.resumed and resumed.checked == 4
    rest = SnapshotFixity(engine)
    verify(engine, resumed, [rest], lambda damage: None, stream=io.StringIO())
    assert resumed.complete and (resumed.checked, resumed.checked_now) == (ALL, ALL - 4)
    with engine.connect() as conn:
        assert conn.execute(select(fixity_progress)).all() == []


class ContentAddressed:
    """Another kind of stored item, as a media store's directory backend keeps them: files
    named by the SHA-256 of their bytes, read in chunks."""

    name = "media"

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.opened: list[str] = []

    def _names(self, after: str | None) -> list[str]:
        return sorted(p.name for p in self.directory.iterdir() if after is None or p.name > after)

    def count(self, after: str | None) -> int:
        return len(self._names(after))

    def items(self, after: str | None) -> Iterator[Item]:
        for name in self._names(after):
            path = self.directory / name

            def read(path: Path = path) -> Iterator[bytes]:
                self.opened.append(path.name)
                with path.open("rb") as handle:
                    while chunk := handle.read(1000):
                        yield chunk

            yield Item(name, {"sha256": name}, bytes.fromhex(name), read, path.stat().st_size)

    def url(self, item: Item) -> str | None:
        return f"https://news.example/img/{str(item.ids['sha256'])[:8]}.jpg"


def test_more_sources_run_after_the_snapshots_and_a_pass_resumes_inside_them(
    db_url: str, tmp_path: Path
) -> None:
    fill(db_url)
    engine = open_archive(url=db_url).engine
    media = tmp_path / "media"
    media.mkdir()
    names = []
    for body in bodies()[:3]:
        names.append(hashlib.sha256(body).hexdigest())
        (media / names[-1]).write_bytes(body)
    (media / names[1]).write_bytes(bodies()[1][:-1])  # cut short by a byte
    found: list[Damage] = []
    run = begin(engine, "all", None, "snapshot")
    first = ContentAddressed(media)
    verify(engine, run, [SnapshotFixity(engine), first], found.append, limit=ALL + 1)
    assert (run.source, run.checked, run.stopped, found) == ("media", ALL + 1, "limit", [])
    run = begin(engine, "all", None, "snapshot")
    assert (run.source, run.position) == ("media", min(names))
    rest = ContentAddressed(media)
    verify(engine, run, [SnapshotFixity(engine), rest], found.append, stream=io.StringIO())
    assert run.complete and run.checked == ALL + 3
    assert rest.opened == sorted(names)[1:]
    [damage] = found
    assert (damage.source, damage.ids, damage.problem) == (
        "media",
        {"sha256": names[1]},
        "digest-mismatch",
    )
    assert damage.url is not None and damage.url.startswith("https://news.example/img/")


def restore_sql(title: str) -> str:
    """A SQL block of docs/operators/fixity.md, by its title."""
    page = (Path(__file__).parent.parent / "docs" / "operators" / "fixity.md").read_text()
    return page.split(f'```sql title="{title}"\n', 1)[1].split("```", 1)[0]


def test_the_documented_restore_brings_a_damaged_snapshot_back(db_url: str, tmp_path: Path) -> None:
    ids = fill(db_url)
    jan10 = "2025-01-10T08:00:00"
    data = stored(db_url, ids["a"], jan10)
    store(db_url, ids["a"], jan10, flip(data, len(data) // 2))
    assert scrapy("verify", db_url=db_url, cwd=tmp_path).returncode == 1

    def for_this(sql: str) -> str:
        return sql.replace("article_id = 2", f"article_id = {ids['a']}").replace(
            "1736496000", str(ts(jan10))
        )

    if db_url.startswith("sqlite"):
        backup = tmp_path / "backup.db"
        assert fill(f"sqlite:///{backup}") == ids
        sql = restore_sql("restore-snapshot.sql")
        sql = sql.replace("backup/zeroarchive-2025-01-10.db", str(backup))
        with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
            conn.executescript(for_this(sql))
        conn.close()
    else:
        with fresh_mariadb(ARCHIVE) as backup_url:
            assert fill(backup_url) == ids
            sql = restore_sql("restore-snapshot-mariadb.sql")
            sql = sql.replace("zeroarchive_restore.", f"{make_url(backup_url).database}.")
            sql = sql.replace("zeroarchive.", f"{make_url(db_url).database}.")
            engine = create_engine(db_url)
            with engine.begin() as conn:
                conn.execute(text(for_this(sql)))
            engine.dispose()
    run = scrapy("verify", "--site", "one", db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    assert "0 damaged" in run.stderr


def test_snapshots_imported_from_0archive_verify_against_the_digest_taken_at_import(
    zeroscraper: tuple[str, ZeroArchiveRows],  # noqa: F811 (the fixture imported above)
    db_url: str,
    tmp_path: Path,
) -> None:
    """0archive kept no digest: the import records the SHA-256 of the bytes 0archive held
    (non-UTF-8 ones as they are), and verify checks those."""
    source, _ = zeroscraper
    run_import(source, db_url)
    run = scrapy("verify", db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    assert "pass complete: 16 item(s) checked (16 by this run), 0 damaged" in run.stderr
