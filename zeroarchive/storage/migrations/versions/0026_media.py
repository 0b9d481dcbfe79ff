"""Media: the images, stylesheets and videos of stored snapshots (zeroarchive/media/).

``MediaItem`` holds one row per distinct content (its SHA-256, size and type), ``MediaChunk``
the bytes of the database backend in 1 MiB chunks, and ``SnapshotMedia`` one row per
(snapshot, item) with whether it was stored and, when not, why.

Revision ID: 0026
Revises: 0025
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.mysql import BINARY, LONGBLOB

revision = "0026"
down_revision = "0025"

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Blob = sa.LargeBinary().with_variant(LONGBLOB(), "mysql", "mariadb")
ContentHash = sa.LargeBinary(32).with_variant(BINARY(32), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "MediaItem",
        sa.Column("sha256", ContentHash, primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("content_type", sa.String(255), nullable=True),
        sa.Column("stored_at", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "MediaChunk",
        sa.Column("sha256", ContentHash, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("data", Blob, nullable=False),
        sa.PrimaryKeyConstraint("sha256", "seq"),
    )
    op.create_table(
        "SnapshotMedia",
        sa.Column("media_id", Id, primary_key=True, autoincrement=True),
        sa.Column("article_id", Id, nullable=False),
        sa.Column("snapshot_at", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("sha256", ContentHash, nullable=True),
        sa.Column("bytes", sa.BigInteger, nullable=True),
        sa.Column("content_type", sa.String(255), nullable=True),
        sa.Column("fetched_at", sa.BigInteger, nullable=False),
        sa.Column("stored", sa.Boolean, nullable=False),
        sa.Column("reason", sa.String(64), nullable=True),
    )
    op.create_index("ix_SnapshotMedia_snapshot", "SnapshotMedia", ["article_id", "snapshot_at"])
    op.create_index("ix_SnapshotMedia_sha256", "SnapshotMedia", ["sha256"])


def downgrade() -> None:
    op.drop_table("SnapshotMedia")
    op.drop_table("MediaChunk")
    op.drop_table("MediaItem")
