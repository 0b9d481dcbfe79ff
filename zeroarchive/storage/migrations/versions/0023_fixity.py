"""fixity_progress: where an interrupted `scrapy verify` goes on.

One row per scope of a pass (the whole archive or one site, with its ``--since``): the
source being walked and the last item checked in it, how many were checked, and the
damage found so far (JSON lines), so a pass stopped by Ctrl-C, a kill or its own
``--limit`` reports all of its damage when the run that finishes it ends. A finished
pass leaves no row.

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.mysql import MEDIUMTEXT

revision = "0023"
down_revision = "0022"

LongText = sa.Text().with_variant(MEDIUMTEXT(), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "fixity_progress",
        sa.Column("scope", sa.String(64), primary_key=True),
        sa.Column("since", sa.BigInteger, nullable=True),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("position", sa.String(255), nullable=False),
        sa.Column("checked", sa.BigInteger, nullable=False),
        sa.Column("damage", LongText, nullable=False),
        sa.Column("started_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("fixity_progress")
