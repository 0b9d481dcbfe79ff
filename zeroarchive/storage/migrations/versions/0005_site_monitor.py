"""Site.last_list_ok_at: when a list page of the site last answered, and a covering index
for the monitor's grouped scan of Article (for `site_stats`).

Revision ID: 0005
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0001"

# Every column `site_stats` reads, so its GROUP BY site_id scans this index in order and
# never the table: 1M articles measured 7.8 s on SQLite without it (row lookups).
STATS_COLUMNS = (
    "site_id",
    "created_at",
    "next_snapshot_at",
    "failure_count",
    "snapshot_count",
    "stop_reason",
)


def upgrade() -> None:
    op.add_column(
        "Site", sa.Column("last_list_ok_at", sa.BigInteger, nullable=False, server_default="0")
    )
    op.create_index("ix_Article_site_stats", "Article", list(STATS_COLUMNS))


def downgrade() -> None:
    op.drop_index("ix_Article_site_stats", "Article")
    op.drop_column("Site", "last_list_ok_at")
