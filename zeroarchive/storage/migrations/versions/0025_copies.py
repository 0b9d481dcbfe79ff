"""Copies (issue 38): fingerprints of publication bodies, their LSH bands, each site's
learnt boilerplate, clusters of copies and the state of an interrupted rebuild
(zeroarchive/copies/). Empty until parse_snapshots adds versions or `scrapy copies
--rebuild` fills them.

Revision ID: 0025
Revises: 0024
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "copy_doc",
        sa.Column("article_id", Id, primary_key=True, autoincrement=False),
        sa.Column("publication_id", Id, nullable=False),
        sa.Column("site_id", Id, nullable=False),
        sa.Column("first_seen_at", sa.BigInteger, nullable=False),
        sa.Column("script", sa.SmallInteger, nullable=False),
        sa.Column("bands", sa.LargeBinary, nullable=False),
        sa.Column("cluster_id", Id, nullable=True),
        sa.Column("similarity", sa.Float, nullable=True),
    )
    op.create_index("ix_copy_doc_cluster", "copy_doc", ["cluster_id"])
    op.create_index("ix_copy_doc_site", "copy_doc", ["site_id", "cluster_id"])
    op.create_table(
        "copy_band",
        sa.Column("band_key", sa.Integer, nullable=False),
        sa.Column("article_id", Id, nullable=False),
        sa.PrimaryKeyConstraint("band_key", "article_id"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "copy_block",
        sa.Column("site_id", Id, nullable=False),
        sa.Column("block", sa.Integer, nullable=False),
        sa.Column("articles", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("site_id", "block"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "copy_cluster",
        sa.Column("cluster_id", Id, primary_key=True, autoincrement=True),
        sa.Column("first_article_id", Id, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "copy_rebuild",
        sa.Column("scope", sa.String(32), primary_key=True),
        sa.Column("parser_version", sa.String(32), nullable=False),
        sa.Column("phase", sa.String(16), nullable=False),
        sa.Column("last_article_id", sa.BigInteger, nullable=False),
        sa.Column("started_at", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    for name in ("copy_rebuild", "copy_cluster", "copy_block", "copy_band", "copy_doc"):
        op.drop_table(name)
