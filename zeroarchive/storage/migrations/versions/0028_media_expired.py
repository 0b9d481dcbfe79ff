"""SnapshotMedia.expired_at: when the rotation removed the bytes of the record's item (a
video kept its site's ``video_keep_days``; zeroarchive/media/expiry.py). The record stays,
``stored`` false with ``reason`` "expired", its digest and size kept; NULL for every other.

Revision ID: 0028
Revises: 0027
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"


def upgrade() -> None:
    op.add_column("SnapshotMedia", sa.Column("expired_at", sa.BigInteger, nullable=True))


def downgrade() -> None:
    op.drop_column("SnapshotMedia", "expired_at")
