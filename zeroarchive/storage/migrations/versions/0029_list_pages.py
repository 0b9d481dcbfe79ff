"""list_page: each list page, feed and sitemap of a site with its walk history, for its
own walk interval (zeroarchive/crawl/list_intervals.py): when it is due, its fading counts
of new links and seconds (the Poisson estimate of its rate), its validators (ETag,
Last-Modified) for conditional requests, its 304s, the budget's postponements and the day's
requests.

Revision ID: 0029
Revises: 0028
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.mysql import BINARY

revision = "0029"
down_revision = "0028"

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
UrlHash = sa.LargeBinary(16).with_variant(BINARY(16), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "list_page",
        sa.Column("site_id", Id, sa.ForeignKey("Site.site_id"), nullable=False),
        sa.Column("url_hash", UrlHash, nullable=False),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("depth", sa.Integer, nullable=False),
        sa.Column("first_walk_at", sa.BigInteger, nullable=False),
        sa.Column("last_walk_at", sa.BigInteger, nullable=False),
        sa.Column("next_walk_at", sa.BigInteger, nullable=False),
        sa.Column("walk_interval", sa.Integer, nullable=False),
        sa.Column("rate_links", sa.Float, nullable=False),
        sa.Column("rate_seconds", sa.Float, nullable=False),
        sa.Column("walks", sa.BigInteger, nullable=False),
        sa.Column("new_links", sa.BigInteger, nullable=False),
        sa.Column("not_modified", sa.BigInteger, nullable=False),
        sa.Column("postponed", sa.BigInteger, nullable=False),
        sa.Column("etag", sa.String(512), nullable=True),
        sa.Column("last_modified", sa.String(64), nullable=True),
        sa.Column("day", sa.Integer, nullable=False),
        sa.Column("walks_today", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("site_id", "url_hash"),
    )


def downgrade() -> None:
    op.drop_table("list_page")
