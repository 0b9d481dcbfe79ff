"""ix_Article_scheduled in due order: (next_snapshot_at, article_id) first, then the site,
lease and redirect the due-work selection filters on, then `site_stats`' counts.

A claim orders by (next_snapshot_at, article_id); with the site second in the index it
sorted every due article (10M articles, 200,000 due: minutes), and reading leases and
redirects from the rows made the due-site selection read every due row.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"

BEFORE = ("next_snapshot_at", "site_id", "failure_count", "snapshot_count", "stop_reason")
AFTER = (
    "next_snapshot_at",
    "article_id",
    "site_id",
    "lease_until",
    "redirect_to",
    "failure_count",
    "snapshot_count",
    "stop_reason",
)


def _rebuild(columns: tuple[str, ...]) -> None:
    op.drop_index("ix_Article_scheduled", "Article")
    op.create_index("ix_Article_scheduled", "Article", list(columns))


def upgrade() -> None:
    _rebuild(AFTER)


def downgrade() -> None:
    _rebuild(BEFORE)
