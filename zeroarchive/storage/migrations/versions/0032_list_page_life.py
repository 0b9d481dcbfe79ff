"""list_page: when each tracked page was last linked by its site's walks (or named by its
config) and when it last showed a new article link, so a page that is neither for a long
time is retired (zeroarchive/crawl/list_intervals.py, ``retiring``). Existing pages count
as linked and productive at their last walk: none is retired for the missing history.

Revision ID: 0032
Revises: 0031
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"


def upgrade() -> None:
    with op.batch_alter_table("list_page") as batch:
        batch.add_column(sa.Column("linked_at", sa.BigInteger, nullable=False, server_default="0"))
        batch.add_column(sa.Column("new_at", sa.BigInteger, nullable=False, server_default="0"))
    op.execute("UPDATE list_page SET linked_at = last_walk_at, new_at = last_walk_at")


def downgrade() -> None:
    with op.batch_alter_table("list_page") as batch:
        batch.drop_column("new_at")
        batch.drop_column("linked_at")
