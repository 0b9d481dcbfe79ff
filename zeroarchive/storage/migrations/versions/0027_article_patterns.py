"""site_pattern and site_unmatched_link: article patterns learnt per site, and the links a
walk found that matched no regex.

site_pattern holds, for a site without an ``article`` regex, each shape of its links
(zeroarchive/core/url_shapes.py): how many links had it, how many fetched pages of it said
article or not, and the verdict (article, other or undecided) learnt from them or set by a
person (`scrapy sites --pattern`). site_unmatched_link counts, per shape, the same-site links
of the site's latest walk that matched neither ``article`` nor ``following``.

Revision ID: 0027
Revises: 0026
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "site_pattern",
        sa.Column("site_id", Id, sa.ForeignKey("Site.site_id"), nullable=False),
        sa.Column("shape", sa.String(512), nullable=False),
        sa.Column("verdict", sa.String(8), nullable=False),
        sa.Column("origin", sa.String(8), nullable=False),
        sa.Column("links", sa.BigInteger, nullable=False),
        sa.Column("article_pages", sa.BigInteger, nullable=False),
        sa.Column("other_pages", sa.BigInteger, nullable=False),
        sa.Column("example", sa.String(2048), nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("site_id", "shape"),
    )
    op.create_table(
        "site_unmatched_link",
        sa.Column("site_id", Id, sa.ForeignKey("Site.site_id"), nullable=False),
        sa.Column("shape", sa.String(512), nullable=False),
        sa.Column("links", sa.BigInteger, nullable=False),
        sa.Column("example", sa.String(2048), nullable=False),
        sa.Column("walk_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("site_id", "shape"),
    )


def downgrade() -> None:
    op.drop_table("site_unmatched_link")
    op.drop_table("site_pattern")
