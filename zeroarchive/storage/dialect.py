"""The few statements whose spelling differs between SQLite and MySQL/MariaDB."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

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


class PlainInsert:
    """An INSERT of ``columns`` compiled once per dialect and run with its rows as plain
    tuples through the DB-API (``exec_driver_sql``: one ``executemany`` for many rows),
    without SQLAlchemy's per-statement work (a cache key, the parameters' dictionaries and
    processing): on the snapshot writer's media rows that work cost more CPU than the
    database's own insert (bench/README.md, issue 42). A column type's bind processor (a
    binary's, a boolean's on SQLite) is applied to its values as SQLAlchemy would. Errors
    are SQLAlchemy's, as for any other statement (the writer's retries see them).

    >>> from sqlalchemy import Column, Integer, LargeBinary, MetaData, create_engine
    >>> t = Table("t", MetaData(), Column("a", Integer), Column("b", LargeBinary))
    >>> engine = create_engine("sqlite://")
    >>> t.metadata.create_all(engine)
    >>> with engine.begin() as conn:
    ...     PlainInsert(t, ("a", "b")).many(conn, [(1, b"x"), (2, None)])
    ...     PlainInsert(t.insert().prefix_with("OR IGNORE"), ("a", "b")).one(conn, (3, b""))
    ...     conn.execute(t.select()).all()
    1
    [(1, b'x'), (2, None), (3, b'')]
    """

    def __init__(self, table_or_insert: Table | Insert, columns: tuple[str, ...]) -> None:
        self.statement = (
            table_or_insert.insert() if isinstance(table_or_insert, Table) else table_or_insert
        )
        self.columns = columns
        self._compiled: dict[str, tuple[str, tuple[Callable[[Any], Any] | None, ...]]] = {}

    def _for(self, connection: Connection) -> tuple[str, tuple[Callable[[Any], Any] | None, ...]]:
        dialect = connection.dialect
        key = f"{dialect.name}:{dialect.driver}:{dialect.paramstyle}"
        found = self._compiled.get(key)
        if found is None:
            if not dialect.positional and dialect.paramstyle == "pyformat":
                # PyMySQL and mysqlclient take ``%s`` with a tuple as well as ``%(name)s``.
                dialect = copy.copy(dialect)
                dialect.paramstyle, dialect.positional = "format", True
            compiled = self.statement.compile(dialect=dialect, column_keys=list(self.columns))
            order = tuple(compiled.positiontup or ()) if compiled.positional else ()
            if order != self.columns:
                raise ValueError(f"not positional in the given order: {order}")
            processors: list[Callable[[Any], Any] | None] = []
            for name in order:
                processor = compiled._bind_processors.get(name)
                if processor is not None and not callable(processor):
                    raise ValueError(f"{name}: a processor per element (a tuple's)")
                processors.append(processor)
            found = (compiled.string, tuple(processors))
            self._compiled[key] = found
        return found

    def _rows(
        self, processors: tuple[Callable[[Any], Any] | None, ...], rows: list[tuple[Any, ...]]
    ) -> list[tuple[Any, ...]]:
        if not any(processors):
            return rows
        return [_processed(processors, row) for row in rows]

    def many(self, connection: Connection, rows: list[tuple[Any, ...]]) -> None:
        if rows:
            sql, processors = self._for(connection)
            connection.exec_driver_sql(sql, self._rows(processors, rows))

    def one(self, connection: Connection, row: tuple[Any, ...]) -> int:
        """Insert one row; the number of rows inserted (0: an ignored duplicate)."""
        sql, processors = self._for(connection)
        return int(connection.exec_driver_sql(sql, self._rows(processors, [row])[0]).rowcount)


def _processed(
    processors: tuple[Callable[[Any], Any] | None, ...], row: tuple[Any, ...]
) -> tuple[Any, ...]:
    pairs = zip(processors, row, strict=True)
    return tuple(v if f is None or v is None else f(v) for f, v in pairs)
