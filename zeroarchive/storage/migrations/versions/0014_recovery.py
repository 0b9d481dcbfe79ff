"""Recovery of lost work: who holds a site's list walk, and how often work was recovered.

- ``Site.walk_owner``: the walk is queued (``q…``), begun by a worker (``w…``) or an
  embedded run (``r…``), or NULL once walked (zeroarchive/core/owners.py); a walk whose
  holder died, or whose queue was lost, is due again at once.
- ``Site.recoveries`` / ``Site.last_recovery_at``: how many walks and leases of the site
  were taken back from a dead holder or a lost queue, and when last (for `site_stats` and
  the monitor).
- ``ix_Article_lease_owner``: the owners holding leases, read every round of `scrapy
  schedule` to find dead workers without scanning Article.

Revision ID: 0014
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0011"


def upgrade() -> None:
    op.add_column("Site", sa.Column("walk_owner", sa.String(16), nullable=True))
    op.add_column("Site", sa.Column("recoveries", sa.Integer, nullable=False, server_default="0"))
    op.add_column(
        "Site", sa.Column("last_recovery_at", sa.BigInteger, nullable=False, server_default="0")
    )
    op.create_index("ix_Article_lease_owner", "Article", ["lease_owner", "lease_until"])


def downgrade() -> None:
    op.drop_index("ix_Article_lease_owner", "Article")
    op.drop_column("Site", "last_recovery_at")
    op.drop_column("Site", "recoveries")
    op.drop_column("Site", "walk_owner")
