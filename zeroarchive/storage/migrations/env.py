"""Alembic environment: the engine comes from zeroarchive.storage.engine.migrate()."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Engine

from zeroarchive.storage.schema import metadata


def run_migrations(engine: Engine) -> None:
    with engine.begin() as connection:
        context.configure(connection=connection, target_metadata=metadata)
        with context.begin_transaction():
            context.run_migrations()


# Only Alembic sets up a context; pytest --doctest-modules imports this file bare.
if hasattr(context, "config"):
    run_migrations(context.config.attributes["engine"])
