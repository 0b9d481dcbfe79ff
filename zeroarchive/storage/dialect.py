"""The few statements whose spelling differs between SQLite and MySQL/MariaDB."""

from __future__ import annotations

from sqlalchemy import Table
from sqlalchemy.engine import Connection
from sqlalchemy.sql.dml import Insert


def insert_ignore(connection: Connection, table: Table) -> Insert:
    """An INSERT that skips rows whose unique key already exists."""
    if connection.dialect.name == "sqlite":
        return table.insert().prefix_with("OR IGNORE")
    return table.insert().prefix_with("IGNORE")


def add_counts(
    connection: Connection, table: Table, rows: list[dict[str, int]], counter: str
) -> None:
    """Insert each row, or add its ``counter`` to the row already under its primary key."""
    if not rows:
        return
    if connection.dialect.name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        statement = sqlite_insert(table)
        keys = [column.name for column in table.primary_key.columns]
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=keys,
                set_={counter: table.c[counter] + statement.excluded[counter]},
            ),
            rows,
        )
        return
    from sqlalchemy.dialects.mysql import insert as mysql_insert

    upsert = mysql_insert(table)
    connection.execute(
        upsert.on_duplicate_key_update({counter: table.c[counter] + upsert.inserted[counter]}),
        rows,
    )
