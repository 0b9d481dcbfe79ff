"""The archive's tables, with the 0archive names and fields (all times are unix seconds)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Date,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
)
from sqlalchemy.dialects.mysql import BINARY, LONGBLOB, MEDIUMTEXT

metadata = MetaData()

# SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
Id = BigInteger().with_variant(Integer(), "sqlite")
Blob = LargeBinary().with_variant(LONGBLOB(), "mysql", "mariadb")
LongText = Text().with_variant(MEDIUMTEXT(), "mysql", "mariadb")
UrlHash = LargeBinary(16).with_variant(BINARY(16), "mysql", "mariadb")
ContentHash = LargeBinary(32).with_variant(BINARY(32), "mysql", "mariadb")

site = Table(
    "Site",
    metadata,
    Column("site_id", Id, primary_key=True, autoincrement=True),
    Column("name", String(255), nullable=False, unique=True),
    Column("url", String(2048), nullable=False),
    Column("type", String(32), nullable=False),
    Column("config", Text, nullable=False, default="{}"),
    Column("is_active", Boolean, nullable=False, default=True),
    Column("airtable_id", String(64), nullable=True, unique=True),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("last_crawl_at", BigInteger, nullable=False, default=0),
    Column("next_crawl_at", BigInteger, nullable=False, default=0),
)

article = Table(
    "Article",
    metadata,
    Column("article_id", Id, primary_key=True, autoincrement=True),
    Column("site_id", Id, ForeignKey("Site.site_id"), nullable=False),
    Column("url", String(2048), nullable=False),
    Column("url_hash", UrlHash, nullable=False, unique=True),
    Column("article_type", String(32), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("first_snapshot_at", BigInteger, nullable=False, default=0),
    Column("last_snapshot_at", BigInteger, nullable=False, default=0),
    # 0 means "never again" (the plan ended, the page is gone, or it redirects).
    Column("next_snapshot_at", BigInteger, nullable=False, default=0),
    Column("snapshot_count", Integer, nullable=False, default=0),
    Column("failure_count", Integer, nullable=False, default=0),
    Column("stop_reason", String(64), nullable=True),
    Column("redirect_to", Id, nullable=True),
    Column("last_content_hash", ContentHash, nullable=True),
    # Due work is leased when it is handed to a spider, so it is not handed out twice.
    Column("lease_until", BigInteger, nullable=False, default=0),
    Column("lease_owner", String(16), nullable=True),
    Index("ix_Article_site_next", "site_id", "next_snapshot_at"),
    Index("ix_Article_next", "next_snapshot_at"),
)

article_snapshot = Table(
    "ArticleSnapshot",
    metadata,
    Column("article_id", Id, nullable=False),
    Column("snapshot_at", BigInteger, nullable=False),
    # Part of the key so MySQL can partition by month (DESIGN.md, Storage).
    Column("snapshot_at_date", Date, nullable=False),
    Column("status", SmallInteger, nullable=False),
    Column("final_url", String(2048), nullable=False),
    Column("headers", LongText, nullable=False),
    Column("encoding", String(32), nullable=False),
    Column("content_hash", ContentHash, nullable=False),
    Column("raw_size", Integer, nullable=False),
    # NULL when the bytes equal an earlier snapshot of the same article (same content_hash).
    Column("raw_data", Blob, nullable=True),
    Column("codec", String(8), nullable=True),
    PrimaryKeyConstraint("article_id", "snapshot_at", "snapshot_at_date"),
)
