"""The archive's tables, with the 0archive names and fields (all times are unix seconds)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Date,
    Float,
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
    UniqueConstraint,
    false,
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
    # Not unique: 0archive's table names one operator's five content farms alike. A synced
    # site is known by its airtable_id, a site from a file by its name (migration 0006).
    Column("name", String(255), nullable=False),
    Column("url", String(2048), nullable=False),
    Column("type", String(32), nullable=False),
    Column("config", Text, nullable=False, default="{}"),
    Column("is_active", Boolean, nullable=False, default=True),
    Column("airtable_id", String(64), nullable=True, unique=True),
    Column("created_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("last_crawl_at", BigInteger, nullable=False, default=0),
    Column("next_crawl_at", BigInteger, nullable=False, default=0),
    # When a list page last answered; last_crawl_at is when a walk started (migration 0005).
    Column("last_list_ok_at", BigInteger, nullable=False, default=0, server_default="0"),
    # The researchers' category: the Airtable label or 0archive type name it came with.
    Column("category", String(64), nullable=True),
    # Who holds the list walk (zeroarchive/core/owners.py): queued, begun by a worker or a
    # run, NULL once walked; recoveries of lost work on this site (migration 0014).
    Column("walk_owner", String(16), nullable=True),
    Column("recoveries", Integer, nullable=False, server_default="0"),
    Column("last_recovery_at", BigInteger, nullable=False, server_default="0"),
    Index("ix_Site_name", "name"),
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
    # Seconds until the next snapshot as adapted so far (0 = none yet; migration 0003).
    Column("snapshot_interval", Integer, nullable=False, default=0, server_default="0"),
    # Due work is leased when it is handed to a spider, so it is not handed out twice.
    Column("lease_until", BigInteger, nullable=False, default=0),
    Column("lease_owner", String(16), nullable=True),
    # When the source says it was published, as found with its link (migration 0007).
    Column("published_at", BigInteger, nullable=True),
    # Events (migration 0013): when the long-tail watch next checks the article after its
    # plan ended (0 = not watched); the first answer that looked like a deletion, not yet
    # confirmed, and why; when the deletion was confirmed (0 while the article answers).
    Column("watch_at", BigInteger, nullable=False, default=0, server_default="0"),
    Column("gone_at", BigInteger, nullable=False, default=0, server_default="0"),
    Column("deleted_at", BigInteger, nullable=False, default=0, server_default="0"),
    Column("gone_evidence", String(255), nullable=True),
    Index("ix_Article_site_next", "site_id", "next_snapshot_at"),
    # A site's finished articles whose watch check is due, longest waiting first (0013).
    Index("ix_Article_watch", "site_id", "next_snapshot_at", "watch_at"),
    # Scheduled articles in due order, covering the due-work selection's filters and
    # `site_stats`' counts of them (migration 0010); the newest article of a site (0008).
    Index(
        "ix_Article_scheduled",
        "next_snapshot_at",
        "article_id",
        "site_id",
        "lease_until",
        "redirect_to",
        "failure_count",
        "snapshot_count",
        "stop_reason",
    ),
    Index("ix_Article_site_created", "site_id", "created_at"),
    # The owners holding leases, for recovery to find the dead ones (migration 0014).
    Index("ix_Article_lease_owner", "lease_owner", "lease_until"),
)

# Kept by triggers on Article (migration 0008), read by `site_stats` instead of Article.
site_article_days = Table(
    "SiteArticleDays",
    metadata,
    Column("site_id", Id, nullable=False),
    Column("day", Integer, nullable=False),  # created_at // DAY
    Column("articles", BigInteger, nullable=False),
    PrimaryKeyConstraint("site_id", "day"),
    sqlite_with_rowid=False,
)

site_article_totals = Table(
    "SiteArticleTotals",
    metadata,
    Column("site_id", Id, primary_key=True, autoincrement=False),
    Column("articles", BigInteger, nullable=False),
    # Over finished articles only (next_snapshot_at = 0); scheduled ones are counted live.
    Column("finished_snapshots", BigInteger, nullable=False),
    Column("stopped", BigInteger, nullable=False),
    Column("finished_blocked", BigInteger, nullable=False),
    sqlite_with_rowid=False,
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
    # A zstd-ref frame's reference: the snapshot_at of the article's stand-alone frame it
    # was compressed against, always in the same UTC month, so rotation (which drops whole
    # months) keeps or drops the two together (migration 0009).
    Column("reference_at", BigInteger, nullable=True),
    # The DOM a browser built, not the bytes as served (migration 0006).
    Column("rendered", Boolean, nullable=False, default=False, server_default=false()),
    PrimaryKeyConstraint("article_id", "snapshot_at", "snapshot_at_date"),
)

# Which archive row each row of an imported 0archive database became (kind "site" or
# "article"; migration 0015): `scrapy import_0archive` skips what is done and merges
# 0archive's duplicate articles once only.
legacy_id = Table(
    "legacy_id",
    metadata,
    Column("source", String(255), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("old_id", BigInteger, nullable=False),
    Column("new_id", Id, nullable=False),
    PrimaryKeyConstraint("source", "kind", "old_id"),
    sqlite_with_rowid=False,
)

# Where an interrupted `scrapy verify` goes on (storage/fixity.py, migration 0023): per
# scope of a pass, the source being walked, the last item checked in it, and the damage
# found so far as JSON lines; no row once a pass is done.
fixity_progress = Table(
    "fixity_progress",
    metadata,
    Column("scope", String(64), primary_key=True),
    Column("since", BigInteger, nullable=True),
    Column("source", String(32), nullable=False),
    Column("position", String(255), nullable=False),
    Column("checked", BigInteger, nullable=False),
    Column("damage", LongText, nullable=False),
    Column("started_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

# A site's link shapes (zeroarchive/core/url_shapes.py) when its config gives no `article`
# regex: links seen, fetched pages that said article or not, and the verdict they settled
# on, or a person set (migration 0027; zeroarchive/crawl/article_patterns.py).
site_pattern = Table(
    "site_pattern",
    metadata,
    Column("site_id", Id, ForeignKey("Site.site_id"), nullable=False),
    Column("shape", String(512), nullable=False),
    Column("verdict", String(8), nullable=False),
    Column("origin", String(8), nullable=False),
    Column("links", BigInteger, nullable=False),
    Column("article_pages", BigInteger, nullable=False),
    Column("other_pages", BigInteger, nullable=False),
    Column("example", String(2048), nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    PrimaryKeyConstraint("site_id", "shape"),
)

# Same-site links of a walk that matched neither `article` nor `following`, by shape: what a
# wrong regex leaves out (site_stats; migration 0027). walk_at: the walk they were counted in.
site_unmatched_link = Table(
    "site_unmatched_link",
    metadata,
    Column("site_id", Id, ForeignKey("Site.site_id"), nullable=False),
    Column("shape", String(512), nullable=False),
    Column("links", BigInteger, nullable=False),
    Column("example", String(2048), nullable=False),
    Column("walk_at", BigInteger, nullable=False),
    PrimaryKeyConstraint("site_id", "shape"),
)

# Each list page, feed and sitemap of a site with its walk history: its own interval from
# its rate of new links, its validators for conditional requests, its 304s, the budget's
# postponements and the day's requests, its changes (migrations 0029, 0032, 0033;
# crawl/list_intervals.py).
list_page = Table(
    "list_page",
    metadata,
    Column("site_id", Id, ForeignKey("Site.site_id"), nullable=False),
    Column("url_hash", UrlHash, nullable=False),
    Column("url", String(2048), nullable=False),
    Column("kind", String(8), nullable=False),
    Column("depth", Integer, nullable=False),
    Column("first_walk_at", BigInteger, nullable=False),
    Column("last_walk_at", BigInteger, nullable=False),
    Column("next_walk_at", BigInteger, nullable=False),
    Column("walk_interval", Integer, nullable=False),
    Column("rate_links", Float, nullable=False),
    Column("rate_seconds", Float, nullable=False),
    Column("walks", BigInteger, nullable=False),
    Column("new_links", BigInteger, nullable=False),
    Column("not_modified", BigInteger, nullable=False),
    Column("postponed", BigInteger, nullable=False),
    Column("etag", String(512), nullable=True),
    Column("last_modified", String(64), nullable=True),
    Column("day", Integer, nullable=False),
    Column("walks_today", Integer, nullable=False),
    # When its site's walks last linked it, and when it last showed a new link (0032).
    Column("linked_at", BigInteger, nullable=False, server_default="0"),
    Column("new_at", BigInteger, nullable=False, server_default="0"),
    # Its faded count of changes and when it last changed (0033).
    Column("changes", Float, nullable=False, server_default="0"),
    Column("changed_at", BigInteger, nullable=False, server_default="0"),
    PrimaryKeyConstraint("site_id", "url_hash"),
)

# --- Publications (stage B, written only by the parser; see storage/publications.py) ---

parser_info = Table(
    "parser_info",
    metadata,
    Column("parser_version", String(32), primary_key=True),
    Column("created_at", BigInteger, nullable=False),
    Column("info", Text, nullable=False),
)

producer = Table(
    "producer",
    metadata,
    Column("producer_id", Id, primary_key=True, autoincrement=True),
    Column("name", String(255), nullable=False),
    Column("type", String(32), nullable=False),
    Column("url", String(2048), nullable=False),
    Column("languages", Text, nullable=False),
    Column("first_seen_at", BigInteger, nullable=False),
    Column("last_updated_at", BigInteger, nullable=False),
)

producer_mapping = Table(
    "producer_mapping",
    metadata,
    Column("site_id", Id, primary_key=True, autoincrement=False),
    Column("producer_id", Id, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Index("ix_producer_mapping_producer", "producer_id"),
)

publication = Table(
    "publication",
    metadata,
    Column("publication_id", Id, primary_key=True, autoincrement=True),
    Column("article_id", Id, nullable=False),
    Column("parser_version", String(32), nullable=False),
    # 1, 2, ... per article and parser version: a new one each time the parsed page changed.
    Column("version", Integer, nullable=False),
    Column("producer_id", Id, nullable=False),
    Column("site_id", Id, nullable=False),
    Column("canonical_url", String(2048), nullable=False),
    Column("title", Text, nullable=False),
    Column("publication_text", LongText, nullable=False),
    Column("language", String(35), nullable=True),
    Column("author", String(512), nullable=True),
    Column("published_at", BigInteger, nullable=True),
    Column("first_seen_at", BigInteger, nullable=False),
    Column("last_seen_at", BigInteger, nullable=False),
    Column("last_updated_at", BigInteger, nullable=False),
    Column("hashtags", Text, nullable=False),
    Column("urls", LongText, nullable=False),
    Column("keywords", Text, nullable=False),
    Column("tags", Text, nullable=False),
    Column("metadata", LongText, nullable=False),
    Column("comments", LongText, nullable=False),
    Column("comment_count", Integer, nullable=False),
    Column("content_hash", ContentHash, nullable=False),
    Column("parsed_at", BigInteger, nullable=False),
    UniqueConstraint("article_id", "parser_version", "version", name="uq_publication_version"),
    Index("ix_publication_site", "site_id", "published_at"),
)

publication_mapping = Table(
    "publication_mapping",
    metadata,
    Column("article_id", Id, nullable=False),
    Column("snapshot_at", BigInteger, nullable=False),
    Column("parser_version", String(32), nullable=False),
    # NULL when the snapshot could not be parsed (status "error"; the reason in error).
    Column("publication_id", Id, nullable=True),
    Column("status", String(16), nullable=False),
    Column("error", String(512), nullable=True),
    Column("parsed_at", BigInteger, nullable=False),
    PrimaryKeyConstraint("article_id", "snapshot_at", "parser_version"),
    Index("ix_publication_mapping_publication", "publication_id"),
)

# What a parse run with nothing new reads instead of every snapshot (migration 0011): the
# keys of snapshots stored since, filled by a trigger on ArticleSnapshot and drained by the
# parser, and per parser version whether all snapshots outside the inbox are mapped.
parse_inbox = Table(
    "parse_inbox",
    metadata,
    Column("article_id", Id, nullable=False),
    Column("snapshot_at", BigInteger, nullable=False),
    PrimaryKeyConstraint("article_id", "snapshot_at"),
    sqlite_with_rowid=False,
)

parse_progress = Table(
    "parse_progress",
    metadata,
    Column("parser_version", String(32), primary_key=True),
    Column("complete", Boolean, nullable=False),
    # Grows whenever `complete` may have become untrue, so a full pass begun before cannot
    # set it again.
    Column("generation", BigInteger, nullable=False),
)

# --- Search (zeroarchive/search/, migrations 0012, 0020, 0021 and 0022) ---
# A document id per indexed publication version, never reused (AUTOINCREMENT), so a stale
# index entry never names a live version; a trigger drops the row of a deleted publication.
# Beside it what a search filters on without reading the publication: its date (published,
# else first seen) and whether it is its article's latest version indexed.
# The index itself is engine-specific and not declared here: ``publication_search``, an
# FTS5 virtual table in SQLite, a Mroonga table in MariaDB (search/sqlite_fts.py, mroonga.py).
search_doc = Table(
    "search_doc",
    metadata,
    Column("doc_id", Id, primary_key=True, autoincrement=True),
    Column("publication_id", Id, nullable=False),
    Column("article_id", Id, nullable=False),
    Column("parser_version", String(32), nullable=False),
    Column("version", Integer, nullable=False),
    Column("site_id", Id, nullable=False),
    Column("date", BigInteger, nullable=False),
    Column("latest", Boolean, nullable=False),
    UniqueConstraint("publication_id", name="uq_search_doc_publication"),
    Index("ix_search_doc_article", "article_id", "parser_version", "version"),
    sqlite_autoincrement=True,
)

# Where an interrupted `scrapy reindex` goes on: per scope ("all" or "site:ID"), the last
# publication id indexed of the parser version being indexed.
search_reindex = Table(
    "search_reindex",
    metadata,
    Column("scope", String(32), primary_key=True),
    Column("parser_version", String(32), nullable=False),
    Column("last_publication_id", BigInteger, nullable=False),
    Column("started_at", BigInteger, nullable=False),
)

# --- Events (zeroarchive/events/, migration 0013) ---

# One row per change: unique per article, kind and the answer that showed it, so crawling
# or parsing again adds none.
article_event = Table(
    "ArticleEvent",
    metadata,
    Column("event_id", Id, primary_key=True, autoincrement=True),
    Column("article_id", Id, nullable=False),
    Column("site_id", Id, nullable=False),
    Column("kind", String(16), nullable=False),  # deleted, edited, restored
    Column("detected_at", BigInteger, nullable=False),
    Column("evidence", Text, nullable=False),
    Column("before_snapshot_at", BigInteger, nullable=True),
    Column("after_snapshot_at", BigInteger, nullable=False),
    # An edit's diff as JSON: {"title": [[op, text], ...], "text": [...]}.
    Column("diff", LongText, nullable=True),
    UniqueConstraint("article_id", "kind", "after_snapshot_at", name="uq_ArticleEvent_change"),
    Index("ix_ArticleEvent_detected", "detected_at", "event_id"),
    Index("ix_ArticleEvent_site", "site_id", "detected_at"),
)

# Long-tail watch checks handed out per site and UTC day (day = unix seconds // 86400).
watch_usage = Table(
    "WatchUsage",
    metadata,
    Column("site_id", Id, nullable=False),
    Column("day", Integer, nullable=False),
    Column("checks", Integer, nullable=False),
    PrimaryKeyConstraint("site_id", "day"),
)

# A site's answer to a made-up URL: its own "not found" page, to recognise soft 404s.
site_probe = Table(
    "SiteProbe",
    metadata,
    Column("site_id", Id, primary_key=True, autoincrement=False),
    Column("probed_at", BigInteger, nullable=False),
    Column("status", SmallInteger, nullable=False),
    Column("title", String(512), nullable=False),
    Column("text", Text, nullable=False),
)

# --- Copies (zeroarchive/copies/, migration 0025) ---
#: The copy index's tables on MariaDB (migration 0034): small rows of random-looking numbers,
#: whose InnoDB row headers and shared key bytes compress (0.41x -> 0.28x the text covered).
COMPRESSED: dict[str, Any] = {"mysql_row_format": "COMPRESSED", "mysql_key_block_size": "8"}

# One fingerprinted body per article (its latest publication version): when the article
# was first seen, its script, its cluster (NULL: no copy known) and its similarity to the
# cluster's first; ``bands`` keeps its LSH band keys (int32, little-endian) so that a new
# version can take exactly its old rows out of ``copy_band``.
copy_doc = Table(
    "copy_doc",
    metadata,
    Column("article_id", Id, primary_key=True, autoincrement=False),
    Column("publication_id", Id, nullable=False),
    Column("site_id", Id, nullable=False),
    Column("first_seen_at", BigInteger, nullable=False),
    # 0: no Chinese script to tell, 1: Simplified, 2: Traditional.
    Column("script", SmallInteger, nullable=False),
    Column("bands", LargeBinary, nullable=False),
    Column("cluster_id", Id, nullable=True),
    Column("similarity", Float, nullable=True),
    Index("ix_copy_doc_cluster", "cluster_id"),
    Index("ix_copy_doc_site", "site_id", "cluster_id"),
    **COMPRESSED,
)

# The LSH index: one row per band of each fingerprint, the band's number folded into its key.
copy_band = Table(
    "copy_band",
    metadata,
    Column("band_key", Integer, nullable=False),
    Column("article_id", Id, nullable=False),
    PrimaryKeyConstraint("band_key", "article_id"),
    sqlite_with_rowid=False,
    **COMPRESSED,
)

# Each site's paragraphs at either end of its articles, by hash, with how many articles had
# them: those on many are the site's boilerplate, dropped before fingerprinting.
copy_block = Table(
    "copy_block",
    metadata,
    Column("site_id", Id, nullable=False),
    Column("block", Integer, nullable=False),
    Column("articles", Integer, nullable=False),
    PrimaryKeyConstraint("site_id", "block"),
    sqlite_with_rowid=False,
    **COMPRESSED,
)

# A cluster's id never changes while it lives (a merge keeps the older one); ``first_article_id``
# is its member first seen.
copy_cluster = Table(
    "copy_cluster",
    metadata,
    Column("cluster_id", Id, primary_key=True, autoincrement=True),
    Column("first_article_id", Id, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    sqlite_autoincrement=True,
)

# Where an interrupted `scrapy copies --rebuild` goes on: its phase ("blocks", then
# "fingerprints") and the last article done in it.
copy_rebuild = Table(
    "copy_rebuild",
    metadata,
    Column("scope", String(32), primary_key=True),
    Column("parser_version", String(32), nullable=False),
    Column("phase", String(16), nullable=False),
    Column("last_article_id", BigInteger, nullable=False),
    Column("started_at", BigInteger, nullable=False),
)

# Media items (zeroarchive/media/): one row per distinct content, named by the SHA-256 of
# its bytes, wherever its bytes are kept (ZEROARCHIVE_MEDIA_DIR: this database's
# MediaChunk, or a content-addressed directory); migration 0026.
media_item = Table(
    "MediaItem",
    metadata,
    Column("sha256", ContentHash, primary_key=True),
    Column("size", BigInteger, nullable=False),
    Column("content_type", String(255), nullable=True),
    Column("stored_at", BigInteger, nullable=False),
)

# The bytes of the database backend's items, in chunks of 1 MiB (a 20 MB item is never one
# statement, one packet or one buffer).
media_chunk = Table(
    "MediaChunk",
    metadata,
    Column("sha256", ContentHash, nullable=False),
    Column("seq", Integer, nullable=False),
    Column("data", Blob, nullable=False),
    PrimaryKeyConstraint("sha256", "seq"),
)

# What each snapshot showed: one row per (snapshot, item), stored or refused with why.
snapshot_media = Table(
    "SnapshotMedia",
    metadata,
    Column("media_id", Id, primary_key=True, autoincrement=True),
    Column("article_id", Id, nullable=False),
    Column("snapshot_at", BigInteger, nullable=False),
    Column("kind", String(16), nullable=False),  # image, style, video, screenshot
    Column("url", String(2048), nullable=False),
    Column("sha256", ContentHash, nullable=True),
    Column("bytes", BigInteger, nullable=True),
    Column("content_type", String(255), nullable=True),
    Column("fetched_at", BigInteger, nullable=False),
    Column("stored", Boolean, nullable=False),
    Column("reason", String(64), nullable=True),
    # When the rotation removed the item's bytes (reason "expired"; migration 0028).
    Column("expired_at", BigInteger, nullable=True),
    Index("ix_SnapshotMedia_snapshot", "article_id", "snapshot_at"),
    Index("ix_SnapshotMedia_sha256", "sha256"),
)

# Per-site media totals kept by triggers on SnapshotMedia (migration 0028), read by
# `site_stats` and the dashboard instead of grouping every record.
site_media_totals = Table(
    "SiteMediaTotals",
    metadata,
    Column("site_id", Id, nullable=False),
    Column("stored", SmallInteger, nullable=False),  # 1 stored, 0 refused
    Column("reason", String(64), nullable=False),  # '' when stored
    Column("records", BigInteger, nullable=False),
    Column("bytes_fetched", BigInteger, nullable=False),
    PrimaryKeyConstraint("site_id", "stored", "reason"),
    sqlite_with_rowid=False,
)

# Each distinct item a site's records show, and how many do.
site_media_items = Table(
    "SiteMediaItems",
    metadata,
    Column("site_id", Id, nullable=False),
    Column("sha256", ContentHash, nullable=False),
    Column("refs", BigInteger, nullable=False),
    Column("size", BigInteger, nullable=False),
    PrimaryKeyConstraint("site_id", "sha256"),
    sqlite_with_rowid=False,
)

site_media_bytes = Table(
    "SiteMediaBytes",
    metadata,
    Column("site_id", Id, primary_key=True, autoincrement=False),
    Column("bytes_stored", BigInteger, nullable=False),
    sqlite_with_rowid=False,
)
