"""Site, Article and ArticleSnapshot.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from alembic import op

from zeroarchive.storage import schema

revision = "0001"
down_revision = None


def upgrade() -> None:
    # The first revision is the schema module itself; later revisions spell out their changes.
    bind = op.get_bind()
    for table in (schema.site, schema.article, schema.article_snapshot):
        table.create(bind)
