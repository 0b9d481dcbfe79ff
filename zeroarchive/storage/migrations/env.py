"""Alembic environment: the engine comes from zeroarchive.storage.engine.migrate()."""

from __future__ import annotations

from alembic import context

from zeroarchive.storage.schema import metadata

engine = context.config.attributes["engine"]
with engine.begin() as connection:
    context.configure(connection=connection, target_metadata=metadata)
    with context.begin_transaction():
        context.run_migrations()
