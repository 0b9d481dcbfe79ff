"""Partition ArticleSnapshot by month on MySQL/MariaDB, for rotation by EXCHANGE PARTITION.

RANGE COLUMNS on snapshot_at_date: every unique key must hold the partition column, which
the primary key (article_id, snapshot_at, snapshot_at_date) does, and partitioned tables
take no foreign keys (ArticleSnapshot has none). It starts as one MAXVALUE partition;
`scrapy rotate_snapshots` splits months off it as it rotates them and keeps the next
months split ahead, while they are still empty and cheap to split. SQLite: nothing to do.

Revision ID: 0004
Revises: 0001
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0001"


def upgrade() -> None:
    if op.get_bind().dialect.name not in ("mysql", "mariadb"):
        return
    op.execute(
        "ALTER TABLE ArticleSnapshot PARTITION BY RANGE COLUMNS(snapshot_at_date) "
        "(PARTITION pmax VALUES LESS THAN (MAXVALUE))"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name not in ("mysql", "mariadb"):
        return
    op.execute("ALTER TABLE ArticleSnapshot REMOVE PARTITIONING")
