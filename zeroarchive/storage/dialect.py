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
