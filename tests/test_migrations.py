"""The migrations build exactly the schema that zeroarchive/storage/schema.py declares.

Tests of a migration's upgrade start from a database without a schema (``blank_db_url``),
those that go down from the newest schema and up again from ``db_url``'s archive."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import bindparam, create_engine, inspect, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from zeroarchive.storage.engine import _alembic_config, make_engine, migrate
from zeroarchive.storage.schema import article, metadata, site


def test_migrated_database_matches_the_declared_schema(blank_db_url: str) -> None:
    engine = make_engine(blank_db_url)
    migrate(engine)
    engine.dispose()
    engine = create_engine(blank_db_url)
    inspector = inspect(engine)
    for table in metadata.sorted_tables:
        columns = {column["name"] for column in inspector.get_columns(table.name)}
        assert columns == {column.name for column in table.columns}, table.name
        indexes = {index["name"] for index in inspector.get_indexes(table.name)}
        assert {index.name for index in table.indexes} <= indexes, table.name
    engine.dispose()


def test_sites_keep_their_rows_and_articles_when_names_stop_being_unique(blank_db_url: str) -> None:
    engine = make_engine(blank_db_url)
    config = _alembic_config(engine)
    for revision in ("0002", "0003", "0004", "0005"):
        command.upgrade(config, revision)
    site_row = {
        "name": "琦琦看新聞",
        "url": "https://a.example/",
        "type": "content_farm",
        "config": "{}",
        "is_active": True,
        "airtable_id": "recA",
        "created_at": 1,
        "updated_at": 1,
        "last_crawl_at": 0,
        "next_crawl_at": 0,
    }
    with engine.begin() as conn:
        conn.execute(site.insert().values(site_id=7, **site_row))
        conn.execute(
            text(
                "INSERT INTO Article (site_id, url, url_hash, article_type, created_at,"
                " first_snapshot_at, last_snapshot_at, next_snapshot_at, snapshot_count,"
                " failure_count, lease_until) VALUES (7, 'https://a.example/1', :h,"
                " 'Article', 1, 0, 0, 0, 0, 0, 0)"
            ),
            {"h": b"\x01" * 16},
        )
    migrate(engine)
    with engine.begin() as conn:
        conn.execute(
            site.insert().values(
                site_id=8, **{**site_row, "url": "https://b.example/", "airtable_id": "recB"}
            )
        )
        names = conn.execute(select(site.c.site_id, site.c.name, site.c.category)).all()
        assert sorted(names) == [(7, "琦琦看新聞", None), (8, "琦琦看新聞", None)]
        assert conn.execute(select(article.c.site_id)).scalars().all() == [7]
    # Foreign keys still hold, and Airtable ids stay unique.
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(site.insert().values(**{**site_row, "url": "https://c.example/"}))
    if engine.dialect.name == "sqlite":
        with pytest.raises(IntegrityError), engine.begin() as conn:
            conn.execute(text("UPDATE Article SET site_id = 99"))
    engine.dispose()


def test_reference_frames_migration_goes_down_and_up_again(db_url: str) -> None:
    """From the newest schema (db_url's archive, migrated once per process)."""
    engine = make_engine(db_url)
    config = _alembic_config(engine)
    command.downgrade(config, "0008")
    columns = {c["name"] for c in inspect(engine).get_columns("ArticleSnapshot")}
    assert "reference_at" not in columns and "codec" in columns
    command.upgrade(config, "0009")
    columns = {c["name"] for c in inspect(engine).get_columns("ArticleSnapshot")}
    assert "reference_at" in columns
    engine.dispose()


def test_parse_inbox_migration_goes_down_and_up_again(db_url: str) -> None:
    """From the newest schema (db_url's archive, migrated once per process)."""
    engine = make_engine(db_url)
    config = _alembic_config(engine)
    command.downgrade(config, "0010")
    assert not {"parse_inbox", "parse_progress"} & set(inspect(engine).get_table_names())
    command.upgrade(config, "0011")
    snapshot = (
        "INSERT INTO ArticleSnapshot (article_id, snapshot_at, snapshot_at_date, status,"
        " final_url, headers, encoding, content_hash, raw_size, rendered)"
        " VALUES (5, 1700000000, '2023-11-14', 200, 'https://a.example/1', '{}', 'utf-8',"
        " :h, 0, 0)"
    )
    with engine.begin() as conn:
        conn.execute(text(snapshot), {"h": b"\x02" * 32})
        inbox = conn.execute(text("SELECT article_id, snapshot_at FROM parse_inbox")).all()
    assert [tuple(row) for row in inbox] == [(5, 1_700_000_000)]
    engine.dispose()


def test_ad_hoc_sites_lose_the_credentials_of_their_saved_urls(blank_db_url: str) -> None:
    engine = make_engine(blank_db_url)
    config = _alembic_config(engine)
    command.upgrade(config, "0022")
    row = {
        "type": "news",
        "config": '{"article": ".", "discover": false}',
        "is_active": False,
        "created_at": 1,
        "updated_at": 1,
        "last_crawl_at": 0,
        "next_crawl_at": 0,
    }
    with engine.begin() as conn:
        for site_id, name, url in (
            (1, "saved:ann:s3cret@news.example", "https://ann:s3cret@news.example/"),
            (2, "saved:news.example", "https://news.example/"),
            (3, "saved:bob:s3cret@blog.example", "https://bob:s3cret@blog.example/"),
            (
                4,
                "saved:ptt:https://c:s3cret@ptt.example/bbs/A/index.html",
                "https://c:s3cret@ptt.example/bbs/A/index.html",
            ),
            (5, "cna", "https://www.cna.com.tw/"),
        ):
            conn.execute(site.insert().values(site_id=site_id, name=name, url=url, **row))
    migrate(engine)
    with engine.connect() as conn:
        sites = dict(conn.execute(select(site.c.site_id, site.c.name)).all())
        urls = conn.execute(select(site.c.url)).scalars().all()
    assert sites == {
        1: "saved:news.example #1",
        2: "saved:news.example",
        3: "saved:blog.example",
        4: "saved:ptt:https://ptt.example/bbs/A/index.html",
        5: "cna",
    }
    assert not any("s3cret" in url for url in urls)
    engine.dispose()


def test_the_copy_index_of_the_old_band_keys_is_emptied_and_boilerplate_kept(
    blank_db_url: str,
) -> None:
    """0025's band keys (32 bands of 4) can match none of the new ones: the rows made from
    them go, to be rebuilt; each site's learnt boilerplate stays."""
    engine = make_engine(blank_db_url)
    config = _alembic_config(engine)
    command.upgrade(config, "0027")
    rows = {
        "copy_doc": "INSERT INTO copy_doc (article_id, publication_id, site_id, first_seen_at,"
        " script, bands, cluster_id, similarity) VALUES (1, 1, 1, 5, 0, :b, 1, 1.0)",
        "copy_band": "INSERT INTO copy_band (band_key, article_id) VALUES (-7, 1)",
        "copy_cluster": "INSERT INTO copy_cluster (first_article_id, created_at) VALUES (1, 5)",
        "copy_rebuild": "INSERT INTO copy_rebuild (scope, parser_version, phase,"
        " last_article_id, started_at) VALUES ('all', 'p', 'blocks', 3, 5)",
        "copy_block": "INSERT INTO copy_block (site_id, block, articles) VALUES (1, 9, 6)",
    }
    with engine.begin() as conn:
        for insert in rows.values():
            conn.execute(text(insert), {"b": b"\x00" * 4})
    migrate(engine)
    with engine.connect() as conn:
        counts = {
            name: conn.execute(text(f"SELECT COUNT(*) FROM {name}")).scalar() for name in rows
        }
    assert counts == {
        "copy_doc": 0,
        "copy_band": 0,
        "copy_cluster": 0,
        "copy_rebuild": 0,
        "copy_block": 1,
    }
    engine.dispose()


def _track_a_list_page(engine: Engine) -> None:
    """A site and a list page walked three times (last at 900), in the columns of 0031."""
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO Site (site_id, name, url, type, config, is_active, created_at, "
                "updated_at, next_crawl_at, last_crawl_at) VALUES (1, 's', "
                "'https://s.example/', 'news', '{}', 1, 0, 0, 0, 0)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO list_page (site_id, url_hash, url, kind, depth, first_walk_at, "
                "last_walk_at, next_walk_at, walk_interval, rate_links, rate_seconds, walks, "
                "new_links, not_modified, postponed, day, walks_today) VALUES (1, :h, "
                "'https://s.example/', 'page', 0, 10, 900, 1500, 600, 0, 0, 3, 0, 0, 0, 0, 0)"
            ),
            {"h": b"\x01" * 16},
        )


def test_tracked_list_pages_count_as_linked_at_their_last_walk_and_go_down_again(
    blank_db_url: str,
) -> None:
    """0032: a page tracked before it was known when pages were linked is not retired for
    that; the columns go down and come up again."""
    engine = make_engine(blank_db_url)
    config = _alembic_config(engine)
    command.upgrade(config, "0031")
    _track_a_list_page(engine)
    migrate(engine)
    with engine.connect() as conn:
        row = conn.execute(text("SELECT linked_at, new_at FROM list_page")).one()
    assert tuple(row) == (900, 900)
    command.downgrade(config, "0031")
    columns = {c["name"] for c in inspect(engine).get_columns("list_page")}
    assert "linked_at" not in columns and "new_at" not in columns
    migrate(engine)
    columns = {c["name"] for c in inspect(engine).get_columns("list_page")}
    assert {"linked_at", "new_at"} <= columns
    engine.dispose()


def test_tracked_list_pages_start_with_no_changes_and_go_down_again(blank_db_url: str) -> None:
    """0033: pages tracked before changes were counted start with none (judged from their
    next ones); the columns go down and come up again. From an empty database: in a
    migrated one the row would be written with the columns already there."""
    engine = make_engine(blank_db_url)
    config = _alembic_config(engine)
    command.upgrade(config, "0032")
    _track_a_list_page(engine)
    migrate(engine)
    with engine.connect() as conn:
        row = conn.execute(text("SELECT changes, changed_at, walks FROM list_page")).one()
    assert tuple(row) == (0.0, 0, 3)
    command.downgrade(config, "0032")
    columns = {c["name"] for c in inspect(engine).get_columns("list_page")}
    assert "changes" not in columns and "changed_at" not in columns
    migrate(engine)
    columns = {c["name"] for c in inspect(engine).get_columns("list_page")}
    assert {"changes", "changed_at"} <= columns
    engine.dispose()


def _row_formats(engine: Engine, names: tuple[str, ...]) -> dict[str, str]:
    """Each table's InnoDB row format (MariaDB), or "sqlite" (SQLite has none to set)."""
    if engine.dialect.name == "sqlite":
        return dict.fromkeys(names, "sqlite")
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT table_name, row_format, create_options FROM information_schema.tables"
                " WHERE table_schema = DATABASE() AND table_name IN :names"
            ).bindparams(bindparam("names", expanding=True)),
            {"names": list(names)},
        ).all()
    return {name: f"{row_format} {options}".strip() for name, row_format, options in rows}


def test_the_copy_index_tables_are_compressed_on_mariadb_and_keep_their_rows(
    blank_db_url: str,
) -> None:
    """0034: copy_band, copy_doc and copy_block are ROW_FORMAT=COMPRESSED on MariaDB (their
    rows kept, both ways); SQLite's tables are left as they were. From an empty database:
    a migrated one holds them compressed already."""
    engine = make_engine(blank_db_url)
    config = _alembic_config(engine)
    command.upgrade(config, "0033")
    names = ("copy_band", "copy_doc", "copy_block")
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO copy_doc (article_id, publication_id, site_id, first_seen_at,"
                " script, bands, cluster_id, similarity) VALUES (1, 1, 1, 5, 0, :b, NULL, NULL)"
            ),
            {"b": bytes(range(108))},
        )
        conn.execute(text("INSERT INTO copy_band (band_key, article_id) VALUES (-7, 1), (9, 1)"))
        conn.execute(text("INSERT INTO copy_block (site_id, block, articles) VALUES (1, 9, 6)"))
    before = _row_formats(engine, names)
    migrate(engine)
    after = _row_formats(engine, names)

    def contents() -> list[list[tuple[object, ...]]]:
        with engine.connect() as conn:
            return [
                [tuple(row) for row in conn.execute(text(f"SELECT * FROM {name} ORDER BY 1, 2"))]
                for name in names
            ]

    kept = contents()
    assert kept[0] == [(-7, 1), (9, 1)] and kept[2] == [(1, 9, 6)]
    assert bytes(kept[1][0][5]) == bytes(range(108))
    command.downgrade(config, "0033")
    down = _row_formats(engine, names)
    assert contents() == kept
    if engine.dialect.name == "sqlite":
        assert before == after == down == dict.fromkeys(names, "sqlite")
    else:
        assert all(not value.startswith("Compressed") for value in before.values()), before
        assert after == dict.fromkeys(names, "Compressed row_format=COMPRESSED key_block_size=8")
        assert all(value.startswith("Dynamic") for value in down.values()), down
    engine.dispose()
