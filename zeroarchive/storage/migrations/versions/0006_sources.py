"""Sites from 0archive's real table: names need not be unique (one operator runs five
content farms under one name), a site keeps its researchers' category (the Airtable label),
and a snapshot records whether a browser rendered it.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"


def _rebuild_sqlite_site(name_unique: bool) -> None:
    """SQLite cannot drop a column's UNIQUE: copy the table, recreate it, copy back.

    One script in one transaction of its own, with foreign keys deferred to its COMMIT, by
    when every Article's site is back (the driver would otherwise run each DDL statement
    on its own, and dropping Site would break Article's foreign key at once).
    """
    bind = op.get_bind()
    old = sa.Table("Site", sa.MetaData(), autoload_with=bind)
    new = sa.Table(
        "Site",
        sa.MetaData(),
        *(
            sa.Column(
                column.name,
                column.type,
                primary_key=column.primary_key,
                nullable=column.nullable,
                server_default=column.server_default,
                unique=name_unique if column.name == "name" else None,
            )
            for column in old.columns
        ),
        sa.UniqueConstraint("airtable_id"),
    )
    names = ", ".join(f'"{column.name}"' for column in old.columns)
    create = str(sa.schema.CreateTable(new).compile(dialect=bind.dialect)).strip()
    bind.connection.dbapi_connection.executescript(  # type: ignore[union-attr]
        "BEGIN; PRAGMA defer_foreign_keys=ON;"
        " CREATE TABLE _site_copy AS SELECT * FROM Site; DROP TABLE Site;"
        f" {create}; INSERT INTO Site ({names}) SELECT {names} FROM _site_copy;"
        " DROP TABLE _site_copy; COMMIT;"
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite_site(name_unique=False)
    else:
        op.drop_index("name", "Site")
    op.create_index("ix_Site_name", "Site", ["name"])
    op.add_column("Site", sa.Column("category", sa.String(64), nullable=True))
    op.add_column(
        "ArticleSnapshot",
        sa.Column("rendered", sa.Boolean, nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    op.drop_column("ArticleSnapshot", "rendered")
    op.drop_column("Site", "category")
    op.drop_index("ix_Site_name", "Site")
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite_site(name_unique=True)
    else:
        op.create_unique_constraint("name", "Site", ["name"])
