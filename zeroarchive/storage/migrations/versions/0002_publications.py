"""Publication tables: producer, producer_mapping, publication, publication_mapping, parser_info.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.mysql import BINARY, MEDIUMTEXT

revision = "0002"
down_revision = "0001"

# Spelled out here, not imported from schema.py (see 0001).
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
LongText = sa.Text().with_variant(MEDIUMTEXT(), "mysql", "mariadb")
ContentHash = sa.LargeBinary(32).with_variant(BINARY(32), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "parser_info",
        sa.Column("parser_version", sa.String(32), primary_key=True),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("info", sa.Text, nullable=False),
    )
    op.create_table(
        "producer",
        sa.Column("producer_id", Id, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("languages", sa.Text, nullable=False),
        sa.Column("first_seen_at", sa.BigInteger, nullable=False),
        sa.Column("last_updated_at", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "producer_mapping",
        sa.Column("site_id", Id, primary_key=True, autoincrement=False),
        sa.Column("producer_id", Id, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_producer_mapping_producer", "producer_mapping", ["producer_id"])
    op.create_table(
        "publication",
        sa.Column("publication_id", Id, primary_key=True, autoincrement=True),
        sa.Column("article_id", Id, nullable=False),
        sa.Column("parser_version", sa.String(32), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("producer_id", Id, nullable=False),
        sa.Column("site_id", Id, nullable=False),
        sa.Column("canonical_url", sa.String(2048), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("publication_text", LongText, nullable=False),
        sa.Column("language", sa.String(35), nullable=True),
        sa.Column("author", sa.String(512), nullable=True),
        sa.Column("published_at", sa.BigInteger, nullable=True),
        sa.Column("first_seen_at", sa.BigInteger, nullable=False),
        sa.Column("last_seen_at", sa.BigInteger, nullable=False),
        sa.Column("last_updated_at", sa.BigInteger, nullable=False),
        sa.Column("hashtags", sa.Text, nullable=False),
        sa.Column("urls", LongText, nullable=False),
        sa.Column("keywords", sa.Text, nullable=False),
        sa.Column("tags", sa.Text, nullable=False),
        sa.Column("metadata", LongText, nullable=False),
        sa.Column("comments", LongText, nullable=False),
        sa.Column("comment_count", sa.Integer, nullable=False),
        sa.Column("content_hash", ContentHash, nullable=False),
        sa.Column("parsed_at", sa.BigInteger, nullable=False),
        sa.UniqueConstraint(
            "article_id", "parser_version", "version", name="uq_publication_version"
        ),
    )
    op.create_index("ix_publication_site", "publication", ["site_id", "published_at"])
    op.create_table(
        "publication_mapping",
        sa.Column("article_id", Id, nullable=False),
        sa.Column("snapshot_at", sa.BigInteger, nullable=False),
        sa.Column("parser_version", sa.String(32), nullable=False),
        sa.Column("publication_id", Id, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.String(512), nullable=True),
        sa.Column("parsed_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("article_id", "snapshot_at", "parser_version"),
    )
    op.create_index("ix_publication_mapping_publication", "publication_mapping", ["publication_id"])


def downgrade() -> None:
    op.drop_table("publication_mapping")
    op.drop_table("publication")
    op.drop_table("producer_mapping")
    op.drop_table("producer")
    op.drop_table("parser_info")
