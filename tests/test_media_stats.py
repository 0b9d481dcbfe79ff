"""Per-site media counts and bytes: `scrapy site_stats` (table and --json) and the monitor's
dashboard, from an archive whose media records are written as the crawl's writer writes
them."""

from __future__ import annotations

import json
import time
from pathlib import Path

from sqlalchemy import select, update
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from tests.conftest import scrapy
from tests.test_media import PNG, PNG2
from tests.test_monitor import config
from zeroarchive.media.store import MediaRecord, MediaStore, blobs_for
from zeroarchive.monitor.app import create_app
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import close_archives, open_archive
from zeroarchive.storage.media_stats import SiteMedia, site_media, store_totals
from zeroarchive.storage.schema import article, media_item, snapshot_media
from zeroarchive.storage.site_stats import SiteStatsConfig, site_stats

NOW = 1_750_000_000


def put_records(
    store: MediaStore, article_id: int, at: int, items: list[tuple[str, bytes | str]]
) -> None:
    """One snapshot's records: (url, bytes) stored, (url, reason) refused."""
    with store.engine.begin() as conn:
        records = []
        for url, what in items:
            if isinstance(what, str):
                records.append(
                    MediaRecord(article_id, at, "image", url, None, None, None, at, False, what)
                )
                continue
            put = store.put(conn, [what], "image/png", at)
            records.append(
                MediaRecord(
                    article_id, at, "image", url, put.sha256, put.size, "image/png", at, True, None
                )
            )
        store.record(conn, records)


def media_archive(db_url: str, now: int = NOW, directory: str = "") -> dict[str, int]:
    """Two sites: "pics" shows the logo on two articles, a photo and a missing image (twice),
    and a too-large one; "text" shows the same logo once. "none" has no media."""
    archive = open_archive(url=db_url)
    ids = {}
    for name in ("pics", "text", "none"):
        spec = parse_spec(
            {"name": name, "url": f"https://{name}.example/", "config": {"article": "/a/"}}
        )
        ids[name], _ = archive.sites.upsert(spec, now - 10 * 86400)
        archive.articles.add(
            ids[name], "Article", [f"https://{name}.example/a/{n}" for n in (1, 2)], now - 86400
        )
    with archive.engine.connect() as conn:
        articles = dict(conn.execute(select(article.c.url, article.c.article_id)).all())
    store = MediaStore(archive.engine, blobs_for(directory))
    put_records(
        store,
        articles["https://pics.example/a/1"],
        now - 100,
        [
            ("https://cdn/logo.png", PNG),
            ("https://cdn/photo.png", PNG2),
            ("https://cdn/x.png", "failed:404"),
        ],
    )
    put_records(
        store,
        articles["https://pics.example/a/2"],
        now - 50,
        [
            ("https://cdn/logo.png", PNG),
            ("https://cdn/x.png", "failed:404"),
            ("https://cdn/big.png", "too-large"),
        ],
    )
    put_records(
        store, articles["https://text.example/a/1"], now - 10, [("https://cdn/logo.png", PNG)]
    )
    return ids


def test_media_per_site_counts_records_refusals_and_bytes(db_url: str) -> None:
    ids = media_archive(db_url)
    engine = open_archive(url=db_url).engine
    stats = {s.name: s.media for s in site_stats(engine, NOW, SiteStatsConfig(3, 3600))}
    pics = stats["pics"]
    assert (pics.items, pics.stored) == (6, 3)
    assert pics.refused == {"failed:404": 2, "too-large": 1}
    # Fetched: the logo twice and the photo; stored: the logo once and the photo.
    assert pics.bytes_fetched == 2 * len(PNG) + len(PNG2)
    assert pics.bytes_stored == len(PNG) + len(PNG2)
    text = stats["text"]
    assert (text.items, text.stored, text.refused) == (1, 1, {})
    assert text.bytes_fetched == text.bytes_stored == len(PNG)
    assert stats["none"].items == 0 and stats["none"].bytes_stored == 0
    # The store holds the logo once for both sites.
    with engine.connect() as conn:
        assert store_totals(conn) == (2, len(PNG) + len(PNG2))
    assert set(ids) == set(stats)


def test_site_stats_command_shows_media(db_url: str, tmp_path: Path) -> None:
    media_archive(db_url, int(time.time()))
    close_archives()
    run = scrapy("site_stats", "--json", db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    rows = {r["name"]: r for r in map(json.loads, run.stdout.splitlines())}
    assert rows["pics"]["media"] == {
        "items": 6,
        "stored": 3,
        "refused": {"failed:404": 2, "too-large": 1},
        "bytes_fetched": 2 * len(PNG) + len(PNG2),
        "bytes_stored": len(PNG) + len(PNG2),
    }
    assert rows["none"]["media"] == {
        "items": 0,
        "stored": 0,
        "refused": {},
        "bytes_fetched": 0,
        "bytes_stored": 0,
    }
    table = scrapy("site_stats", db_url=db_url, cwd=tmp_path)
    assert table.returncode == 0, table.output
    lines = table.stdout.splitlines()
    pics = next(line for line in lines if line.endswith("(pics)"))
    assert pics.split()[1:5] == [
        "6",
        "3",
        f"{2 * len(PNG) + len(PNG2):,}",
        f"{len(PNG) + len(PNG2):,}",
    ]
    assert "failed:404 2, too-large 1" in pics
    assert not any(line.endswith("(none)") for line in lines)
    assert f"The media store holds 2 item(s), {len(PNG) + len(PNG2):,} bytes" in table.stdout


def test_the_dashboard_shows_each_sites_media(db_url: str) -> None:
    ids = media_archive(db_url)
    engine = open_archive(url=db_url).engine
    app = create_app(engine, config(), SiteStatsConfig(3, 3600), clock=lambda: NOW)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        html = client.get("/").text
    row = html.split(f'data-site-id="{ids["pics"]}"')[1].split("</tr>")[0]
    assert '<dt>media</dt><dd class="media">3 of 6 item(s) stored;' in row
    assert "failed:404 2; too-large 1</dd>" in row
    assert "<dt>media</dt>" not in html.split(f'data-site-id="{ids["none"]}"')[1].split("</tr>")[0]


def recount(engine: Engine) -> dict[int, SiteMedia]:
    """The media per site grouped from every record: what the kept totals must be."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(article.c.site_id, snapshot_media, media_item.c.size).select_from(
                snapshot_media.join(
                    article, article.c.article_id == snapshot_media.c.article_id
                ).outerjoin(media_item, media_item.c.sha256 == snapshot_media.c.sha256)
            )
        ).all()
    found: dict[int, SiteMedia] = {}
    for site_id in {row.site_id for row in rows}:
        mine = [row for row in rows if row.site_id == site_id]
        refused: dict[str, int] = {}
        for row in mine:
            if not row.stored:
                refused[row.reason] = refused.get(row.reason, 0) + 1
        found[site_id] = SiteMedia(
            len(mine),
            sum(1 for row in mine if row.stored),
            dict(sorted(refused.items(), key=lambda kv: (-kv[1], kv[0]))),
            sum(row.bytes for row in mine if row.stored),
            sum({bytes(row.sha256): row.bytes for row in mine if row.stored}.values()),
        )
    return found


def test_kept_media_totals_follow_inserts_and_deletes(db_url: str) -> None:
    """Records written, some deleted (as rotation does), one moved in time: the totals the
    triggers keep match a recount of every record, and so does the migration's backfill."""
    media_archive(db_url)
    engine = open_archive(url=db_url).engine
    reported = {site_id: media for site_id, media in _site_media(engine).items() if media.items}
    assert reported == recount(engine)
    with engine.begin() as conn:
        # The second snapshot of pics (the logo again, a refusal) goes, as rotation drops it.
        conn.execute(snapshot_media.delete().where(snapshot_media.c.snapshot_at == NOW - 50))
        conn.execute(
            update(snapshot_media)
            .where(snapshot_media.c.snapshot_at == NOW - 10)
            .values(snapshot_at=NOW - 5)
        )
    assert _site_media(engine) == recount(engine)
    with engine.begin() as conn:
        # The text site's only record of the logo goes: its bytes stored go with it.
        conn.execute(snapshot_media.delete().where(snapshot_media.c.snapshot_at == NOW - 5))
    after = _site_media(engine)
    assert after == recount(engine) and len(after) == 1
    with engine.begin() as conn:
        # A video's bytes expire: its records stay, stored no more, their digest kept.
        conn.execute(
            update(snapshot_media)
            .where(snapshot_media.c.stored.is_(True))
            .values(stored=False, reason="expired", expired_at=NOW)
        )
    expired = _site_media(engine)
    assert expired == recount(engine)
    assert all(m.stored == 0 and m.bytes_stored == 0 for m in expired.values())


def _site_media(engine: Engine) -> dict[int, SiteMedia]:
    with engine.connect() as conn:
        return site_media(conn)


def test_the_migration_counts_the_records_already_there(blank_db_url: str) -> None:
    from alembic import command
    from alembic.script import ScriptDirectory

    from zeroarchive.storage.engine import _alembic_config

    media_archive(blank_db_url)
    engine = open_archive(url=blank_db_url).engine
    config = _alembic_config(engine)
    # The revision is read from the code: the lead may renumber it.
    totals = next(
        script
        for script in ScriptDirectory.from_config(config).walk_revisions()
        if script.path.endswith("_media_totals.py")
    )
    below = totals.down_revision
    command.downgrade(config, below[0] if isinstance(below, tuple) else str(below))
    from sqlalchemy import inspect

    assert "SiteMediaTotals" not in inspect(engine).get_table_names()
    command.upgrade(config, totals.revision)
    reported = _site_media(engine)
    assert reported == recount(engine) and len(reported) == 2
    close_archives()
