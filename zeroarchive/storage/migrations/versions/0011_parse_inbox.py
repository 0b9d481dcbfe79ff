"""parse_inbox and parse_progress: a parse run with nothing new reads two small tables, not
every snapshot against the mapping table (1M snapshots: 18 s on MariaDB, 4.7 s on SQLite).

- parse_inbox: the key of every snapshot stored since; a trigger on ArticleSnapshot fills
  it in the inserting transaction, so every writer (crawl, import_warc, a bulk load) does,
  and a row is visible exactly when its snapshot is. A parse run removes a row once the
  snapshot is mapped for its version (or gone, rotated away).
- parse_progress: per parser version, whether every snapshot not in the inbox is mapped
  (``complete``), set by a run that went over all of them; ``generation`` grows whenever
  that may stop being true (a run of another version drained the inbox, a reparse
  discarded results), so a pass that started before cannot set it on stale grounds.

A new database (or a version never run) starts incomplete: its first run is a full pass.
Rebuilding ArticleSnapshot by copying it drops the trigger: recreate it after.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"

TRIGGER = "ArticleSnapshot_parse_inbox"
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "parse_inbox",
        sa.Column("article_id", Id, nullable=False),
        sa.Column("snapshot_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("article_id", "snapshot_at"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "parse_progress",
        sa.Column("parser_version", sa.String(32), primary_key=True),
        sa.Column("complete", sa.Boolean, nullable=False),
        sa.Column("generation", sa.BigInteger, nullable=False),
    )
    values = "(article_id, snapshot_at) VALUES (NEW.article_id, NEW.snapshot_at)"
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            f"CREATE TRIGGER {TRIGGER} AFTER INSERT ON ArticleSnapshot"
            f" BEGIN INSERT OR IGNORE INTO parse_inbox {values}; END"
        )
    else:
        op.execute(
            f"CREATE TRIGGER {TRIGGER} AFTER INSERT ON ArticleSnapshot FOR EACH ROW"
            f" INSERT IGNORE INTO parse_inbox {values}"
        )


def downgrade() -> None:
    op.execute(f"DROP TRIGGER {TRIGGER}")
    op.drop_table("parse_progress")
    op.drop_table("parse_inbox")
