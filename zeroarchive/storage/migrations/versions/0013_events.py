"""Events (issue 24): takedowns, silent edits and restorations, and the long-tail watch.

- ArticleEvent: one row per change an article went through (``deleted``, ``edited``,
  ``restored``), unique per article, kind and the time of the answer that showed it, so
  crawling or parsing again adds none.
- Article.gone_at / gone_evidence: the first answer that looked like a deletion, not yet
  confirmed by a second one at least ten minutes later; Article.deleted_at: when the
  deletion was confirmed (0 while the article answers).
- Article.watch_at: when the long-tail watch next checks an article whose plan has ended
  (0 = not watched); ix_Article_watch picks a site's longest-waiting ones in order.
- WatchUsage: watch checks handed out per site and UTC day, against ``watch_budget``.
- SiteProbe: each site's answer to a made-up URL (its own "not found" page), for soft 404s.

Revision ID: 0013
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0011"

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
LongText = sa.Text().with_variant(sa.dialects.mysql.MEDIUMTEXT(), "mysql", "mariadb")


def upgrade() -> None:
    with op.batch_alter_table("Article") as batch:
        for name in ("watch_at", "gone_at", "deleted_at"):
            batch.add_column(sa.Column(name, sa.BigInteger, nullable=False, server_default="0"))
        batch.add_column(sa.Column("gone_evidence", sa.String(255), nullable=True))
    op.create_index("ix_Article_watch", "Article", ["site_id", "next_snapshot_at", "watch_at"])
    op.create_table(
        "ArticleEvent",
        sa.Column("event_id", Id, primary_key=True, autoincrement=True),
        sa.Column("article_id", Id, nullable=False),
        sa.Column("site_id", Id, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("detected_at", sa.BigInteger, nullable=False),
        sa.Column("evidence", sa.Text, nullable=False),
        sa.Column("before_snapshot_at", sa.BigInteger, nullable=True),
        sa.Column("after_snapshot_at", sa.BigInteger, nullable=False),
        sa.Column("diff", LongText, nullable=True),
        sa.UniqueConstraint(
            "article_id", "kind", "after_snapshot_at", name="uq_ArticleEvent_change"
        ),
    )
    op.create_index("ix_ArticleEvent_detected", "ArticleEvent", ["detected_at", "event_id"])
    op.create_index("ix_ArticleEvent_site", "ArticleEvent", ["site_id", "detected_at"])
    op.create_table(
        "WatchUsage",
        sa.Column("site_id", Id, nullable=False),
        sa.Column("day", sa.Integer, nullable=False),
        sa.Column("checks", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("site_id", "day"),
    )
    op.create_table(
        "SiteProbe",
        sa.Column("site_id", Id, primary_key=True, autoincrement=False),
        sa.Column("probed_at", sa.BigInteger, nullable=False),
        sa.Column("status", sa.SmallInteger, nullable=False),
        sa.Column("title", sa.String(512), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("SiteProbe")
    op.drop_table("WatchUsage")
    op.drop_index("ix_ArticleEvent_site", "ArticleEvent")
    op.drop_index("ix_ArticleEvent_detected", "ArticleEvent")
    op.drop_table("ArticleEvent")
    op.drop_index("ix_Article_watch", "Article")
    with op.batch_alter_table("Article") as batch:
        for name in ("gone_evidence", "deleted_at", "gone_at", "watch_at"):
            batch.drop_column(name)
