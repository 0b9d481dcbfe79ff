"""list_page: how often each tracked page changes (its faded count of full answers with new
validators after its first walk) and when it last did, so the budget its unchanging pages
leave goes to those that change (zeroarchive/crawl/list_intervals.py, ``shares``). Existing
pages start with none: they are judged from their next changes, as new pages are.

Revision ID: 0033
Revises: 0032
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0033"
down_revision = "0032"


def upgrade() -> None:
    with op.batch_alter_table("list_page") as batch:
        batch.add_column(sa.Column("changes", sa.Float, nullable=False, server_default="0"))
        batch.add_column(sa.Column("changed_at", sa.BigInteger, nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("list_page") as batch:
        batch.drop_column("changed_at")
        batch.drop_column("changes")
