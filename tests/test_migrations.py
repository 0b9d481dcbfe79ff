"""The migrations build exactly the schema that zeroarchive/storage/schema.py declares."""

from __future__ import annotations

from sqlalchemy import create_engine, inspect

from zeroarchive.storage.engine import make_engine, migrate
from zeroarchive.storage.schema import metadata


def test_migrated_database_matches_the_declared_schema(db_url: str) -> None:
    engine = make_engine(db_url)
    migrate(engine)
    engine.dispose()
    engine = create_engine(db_url)
    inspector = inspect(engine)
    for table in metadata.sorted_tables:
        columns = {column["name"] for column in inspector.get_columns(table.name)}
        assert columns == {column.name for column in table.columns}, table.name
        indexes = {index["name"] for index in inspector.get_indexes(table.name)}
        assert {index.name for index in table.indexes} <= indexes, table.name
    engine.dispose()
