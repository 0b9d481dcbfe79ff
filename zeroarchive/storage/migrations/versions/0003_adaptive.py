"""Article.snapshot_interval: the adaptive re-snapshot interval of each article.

Revision ID: 0003
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0001"


def upgrade() -> None:
    # 0 = no interval yet: the next snapshot starts from the plan step's own interval.
    op.add_column(
        "Article",
        sa.Column("snapshot_interval", sa.Integer, nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_column("Article", "snapshot_interval")
