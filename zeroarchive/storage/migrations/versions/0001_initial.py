"""Site, Article and ArticleSnapshot.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.mysql import BINARY, LONGBLOB, MEDIUMTEXT

revision = "0001"
down_revision = None

# Spelled out here, not imported from schema.py: a migration must keep creating exactly
# what it created when it was written, whatever later revisions add.
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Blob = sa.LargeBinary().with_variant(LONGBLOB(), "mysql", "mariadb")
LongText = sa.Text().with_variant(MEDIUMTEXT(), "mysql", "mariadb")
UrlHash = sa.LargeBinary(16).with_variant(BINARY(16), "mysql", "mariadb")
ContentHash = sa.LargeBinary(32).with_variant(BINARY(32), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "Site",
        sa.Column("site_id", Id, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("config", sa.Text, nullable=False),
        sa.Column("is_active", sa.Boolean, nullable=False),
        sa.Column("airtable_id", sa.String(64), nullable=True, unique=True),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.Column("last_crawl_at", sa.BigInteger, nullable=False),
        sa.Column("next_crawl_at", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "Article",
        sa.Column("article_id", Id, primary_key=True, autoincrement=True),
        sa.Column("site_id", Id, sa.ForeignKey("Site.site_id"), nullable=False),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("url_hash", UrlHash, nullable=False, unique=True),
        sa.Column("article_type", sa.String(32), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("first_snapshot_at", sa.BigInteger, nullable=False),
        sa.Column("last_snapshot_at", sa.BigInteger, nullable=False),
        sa.Column("next_snapshot_at", sa.BigInteger, nullable=False),
        sa.Column("snapshot_count", sa.Integer, nullable=False),
        sa.Column("failure_count", sa.Integer, nullable=False),
        sa.Column("stop_reason", sa.String(64), nullable=True),
        sa.Column("redirect_to", Id, nullable=True),
        sa.Column("last_content_hash", ContentHash, nullable=True),
        sa.Column("lease_until", sa.BigInteger, nullable=False),
        sa.Column("lease_owner", sa.String(16), nullable=True),
    )
    op.create_index("ix_Article_site_next", "Article", ["site_id", "next_snapshot_at"])
    op.create_index("ix_Article_next", "Article", ["next_snapshot_at"])
    op.create_table(
        "ArticleSnapshot",
        sa.Column("article_id", Id, nullable=False),
        sa.Column("snapshot_at", sa.BigInteger, nullable=False),
        sa.Column("snapshot_at_date", sa.Date, nullable=False),
        sa.Column("status", sa.SmallInteger, nullable=False),
        sa.Column("final_url", sa.String(2048), nullable=False),
        sa.Column("headers", LongText, nullable=False),
        sa.Column("encoding", sa.String(32), nullable=False),
        sa.Column("content_hash", ContentHash, nullable=False),
        sa.Column("raw_size", sa.Integer, nullable=False),
        sa.Column("raw_data", Blob, nullable=True),
        sa.Column("codec", sa.String(8), nullable=True),
        sa.PrimaryKeyConstraint("article_id", "snapshot_at", "snapshot_at_date"),
    )
