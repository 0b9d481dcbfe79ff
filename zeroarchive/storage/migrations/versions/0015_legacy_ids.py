"""legacy_id: which archive row each row of an imported 0archive database became.

``scrapy import_0archive`` writes one row per 0archive site and article in the same
transaction as the archive row it became, so a second run or a run resumed after a kill
skips what is done, and 0archive's duplicate articles (its url_hash is a CRC32 without a
unique key) are counted into their merged article once only. ``source`` names the
0archive database (host, port and name), so two of them can be imported.

Revision ID: 0015
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0011"

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "legacy_id",
        sa.Column("source", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("old_id", sa.BigInteger, nullable=False),
        sa.Column("new_id", Id, nullable=False),
        sa.PrimaryKeyConstraint("source", "kind", "old_id"),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("legacy_id")
