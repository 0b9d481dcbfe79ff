"""ArticleSnapshot.reference_at: a re-snapshot's bytes may be a zstd frame compressed
against an earlier snapshot of the same article in the same month; this names that one.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"


def upgrade() -> None:
    op.add_column("ArticleSnapshot", sa.Column("reference_at", sa.BigInteger, nullable=True))


def downgrade() -> None:
    op.drop_column("ArticleSnapshot", "reference_at")
