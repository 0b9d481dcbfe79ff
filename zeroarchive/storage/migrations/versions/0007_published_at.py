"""Article.published_at: when the source says the article was published (a feed's or
sitemap's date, a video's upload time), as found with its link; NULL when nothing said.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"


def upgrade() -> None:
    op.add_column("Article", sa.Column("published_at", sa.BigInteger, nullable=True))


def downgrade() -> None:
    op.drop_column("Article", "published_at")
