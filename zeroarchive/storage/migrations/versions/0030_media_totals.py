"""Per-site media totals kept by triggers on SnapshotMedia, so `site_stats` and the
dashboard read a few rows per site instead of grouping every media record (one million
records: 28 s on SQLite before).

- SiteMediaTotals: per site, stored or not and reason ('' when stored), the records and
  the bytes fetched (the sizes of the stored ones);
- SiteMediaItems: per site, each distinct item its records show and how many do;
- SiteMediaBytes: per site, the sizes of those distinct items added up (bytes stored).

A record counts for the site its article belongs to when it is written; an article moved
to another site later leaves its media counted where they were. Rebuilding SnapshotMedia
by copying it drops the triggers: recreate them after.

Revision ID: 0030
Revises: 0029, 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.mysql import BINARY

revision = "0030"
# Also after 0013 (a branch of its own till now): its downgrade rebuilds Article on SQLite,
# which a trigger naming Article would stop, so going below 0013 takes these away first.
down_revision = ("0029", "0013")

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
ContentHash = sa.LargeBinary(32).with_variant(BINARY(32), "mysql", "mariadb")
TRIGGERS = (
    "SnapshotMedia_totals_insert",
    "SnapshotMedia_totals_delete",
    "SnapshotMedia_totals_update",
)


def _site(row: str) -> str:
    return f"(SELECT site_id FROM Article WHERE article_id = {row}.article_id)"


class _Sql:
    """The triggers' statements in the database's own spelling."""

    def __init__(self, dialect: str) -> None:
        self.sqlite = dialect == "sqlite"

    def upsert(self, table: str, columns: str, select: str, keys: str, adds: list[str]) -> str:
        if self.sqlite:
            sets = ", ".join(f"{c} = {c} + excluded.{c}" for c in adds)
            conflict = f"ON CONFLICT ({keys}) DO UPDATE SET {sets}"
        else:
            sets = ", ".join(f"{c} = {c} + VALUES({c})" for c in adds)
            conflict = f"ON DUPLICATE KEY UPDATE {sets}"
        return f"INSERT INTO {table} ({columns}) {select} {conflict}"

    def insert_ignore(self) -> str:
        return "INSERT OR IGNORE INTO" if self.sqlite else "INSERT IGNORE INTO"

    def trigger(self, name: str, event: str, statements: list[str]) -> str:
        body = "; ".join(statements) + ";"
        each = "" if self.sqlite else " FOR EACH ROW"
        return f"CREATE TRIGGER {name} AFTER {event} ON SnapshotMedia{each} BEGIN {body} END"

    def triggers(self) -> list[str]:
        stored = "CASE WHEN {r}.stored THEN 1 ELSE 0 END"
        fetched = "CASE WHEN {r}.stored THEN COALESCE({r}.bytes, 0) ELSE 0 END"
        item = "sha256 = {r}.sha256 AND site_id = " + _site("{r}")
        inserted = [
            self.upsert(
                "SiteMediaTotals",
                "site_id, stored, reason, records, bytes_fetched",
                f"SELECT site_id, {stored.format(r='NEW')}, COALESCE(NEW.reason, ''), 1, "
                f"{fetched.format(r='NEW')} FROM Article WHERE article_id = NEW.article_id",
                "site_id, stored, reason",
                ["records", "bytes_fetched"],
            ),
            f"{self.insert_ignore()} SiteMediaItems (site_id, sha256, refs, size) "
            "SELECT site_id, NEW.sha256, 0, COALESCE(NEW.bytes, 0) FROM Article "
            "WHERE article_id = NEW.article_id AND NEW.sha256 IS NOT NULL AND NEW.stored",
            "UPDATE SiteMediaItems SET refs = refs + 1 "
            f"WHERE {item.format(r='NEW')} AND NEW.stored",
            # refs 1: the site's first record of the item, its bytes now count.
            self.upsert(
                "SiteMediaBytes",
                "site_id, bytes_stored",
                "SELECT site_id, size FROM SiteMediaItems "
                f"WHERE {item.format(r='NEW')} AND NEW.stored AND refs = 1",
                "site_id",
                ["bytes_stored"],
            ),
        ]
        gone = item.format(r="OLD")
        deleted = [
            f"UPDATE SiteMediaTotals SET records = records - 1, "
            f"bytes_fetched = bytes_fetched - {fetched.format(r='OLD')} "
            f"WHERE site_id = {_site('OLD')} AND stored = {stored.format(r='OLD')} "
            "AND reason = COALESCE(OLD.reason, '')",
            f"UPDATE SiteMediaItems SET refs = refs - 1 WHERE {gone} AND OLD.stored",
            f"UPDATE SiteMediaBytes SET bytes_stored = bytes_stored - COALESCE("
            f"(SELECT size FROM SiteMediaItems WHERE {gone} AND OLD.stored AND refs <= 0), 0) "
            f"WHERE site_id = {_site('OLD')}",
            f"DELETE FROM SiteMediaItems WHERE {gone} AND refs <= 0",
        ]
        # An update (a video's bytes expired: stored no more, its digest kept; records
        # moved to a kept snapshot) counts as the old row gone and the new one written.
        return [
            self.trigger(TRIGGERS[0], "INSERT", inserted),
            self.trigger(TRIGGERS[1], "DELETE", deleted),
            self.trigger(TRIGGERS[2], "UPDATE", deleted + inserted),
        ]


def upgrade() -> None:
    op.create_table(
        "SiteMediaTotals",
        sa.Column("site_id", Id, nullable=False),
        sa.Column("stored", sa.SmallInteger, nullable=False),
        sa.Column("reason", sa.String(64), nullable=False),
        sa.Column("records", sa.BigInteger, nullable=False),
        sa.Column("bytes_fetched", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("site_id", "stored", "reason"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "SiteMediaItems",
        sa.Column("site_id", Id, nullable=False),
        sa.Column("sha256", ContentHash, nullable=False),
        sa.Column("refs", sa.BigInteger, nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("site_id", "sha256"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "SiteMediaBytes",
        sa.Column("site_id", Id, primary_key=True, autoincrement=False),
        sa.Column("bytes_stored", sa.BigInteger, nullable=False),
        sqlite_with_rowid=False,
    )
    stored = "CASE WHEN m.stored THEN 1 ELSE 0 END"
    reason = "COALESCE(m.reason, '')"
    joined = "FROM SnapshotMedia m JOIN Article a ON a.article_id = m.article_id"
    op.execute(
        "INSERT INTO SiteMediaTotals (site_id, stored, reason, records, bytes_fetched) "
        f"SELECT a.site_id, {stored}, {reason}, COUNT(*), "
        f"SUM(CASE WHEN m.stored THEN COALESCE(m.bytes, 0) ELSE 0 END) {joined} "
        f"GROUP BY a.site_id, {stored}, {reason}"
    )
    op.execute(
        "INSERT INTO SiteMediaItems (site_id, sha256, refs, size) "
        f"SELECT a.site_id, m.sha256, COUNT(*), MAX(COALESCE(m.bytes, 0)) {joined} "
        "WHERE m.sha256 IS NOT NULL AND m.stored GROUP BY a.site_id, m.sha256"
    )
    op.execute(
        "INSERT INTO SiteMediaBytes (site_id, bytes_stored) "
        "SELECT site_id, SUM(size) FROM SiteMediaItems GROUP BY site_id"
    )
    for statement in _Sql(op.get_bind().dialect.name).triggers():
        op.execute(statement)


def downgrade() -> None:
    for name in TRIGGERS:
        op.execute(f"DROP TRIGGER {name}")
    op.drop_table("SiteMediaBytes")
    op.drop_table("SiteMediaItems")
    op.drop_table("SiteMediaTotals")
