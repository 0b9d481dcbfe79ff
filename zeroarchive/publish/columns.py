"""The columns of the publications, snapshots and media exports: the same names, in the same
order, in JSON lines and in Parquet (``datasets``), so a script written for one reads the
other (docs/reference/datasets.md lists them; a test compares the files with it).

The formats differ only in how a value is written: JSON lines give times as unix seconds
and ``metadata``/``comments`` as JSON objects; Parquet gives times as timestamps and those
two as JSON text, and keeps ``site_id`` (with ``month``) in its partition path. JSON lines
of snapshots also carry the page (``html``), which the Parquet dataset leaves out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zeroarchive.core.language import normalise_language

PUBLICATION_COLUMNS = (
    "publication_id",
    "article_id",
    "site_id",
    "site",
    "url",
    "canonical_url",
    "parser_version",
    "version",
    "producer_id",
    "producer",
    "title",
    "publication_text",
    "language",
    "author",
    "published_at",
    "first_seen_at",
    "last_seen_at",
    "last_updated_at",
    "hashtags",
    "urls",
    "keywords",
    "tags",
    "metadata",
    "comments",
    "comment_count",
    "content_hash",
    "parsed_at",
)
SNAPSHOT_COLUMNS = (
    "article_id",
    "site_id",
    "site",
    "url",
    "snapshot_at",
    "status",
    "final_url",
    "encoding",
    "content_hash",
    "raw_size",
    "rendered",
)
#: ``scrapy media --json``'s keys (``MediaRecord.as_json``), one row per (snapshot, item);
#: the last, ``expired_at``, only of an expired video in JSON lines, a column in Parquet.
MEDIA_COLUMNS = (
    "article_id",
    "snapshot_at",
    "kind",
    "url",
    "sha256",
    "bytes",
    "content_type",
    "fetched_at",
    "stored",
    "reason",
    "expired_at",
)
#: JSON lines of snapshots only: the page, decoded to text.
PAGE = "html"


def publication_export(record: Mapping[str, Any], site_name: str) -> dict[str, Any]:
    """A publication record (``PublicationStore.iter_publications``) as an export row:
    ``PUBLICATION_COLUMNS``, with the site's name and the language in BCP 47's one
    spelling (rows parsed before 2026.5 wrote ``zh-TW``, ``ja-JP`` ...).

    >>> row = publication_export({"site_id": 3, "language": "zh-TW", "url": "u"}, "cna")
    >>> list(row)[:5], row["language"]
    (['publication_id', 'article_id', 'site_id', 'site', 'url'], 'zh-Hant-TW')
    """
    row = {name: record.get(name) for name in PUBLICATION_COLUMNS}
    row["site"] = site_name
    row["language"] = normalise_language(record.get("language"))
    return row


def snapshot_export(record: Mapping[str, Any], site_name: str) -> dict[str, Any]:
    """A snapshot's facts as an export row: ``SNAPSHOT_COLUMNS`` (and ``html`` when the
    record has it), with the site's name."""
    row = {name: record.get(name) for name in SNAPSHOT_COLUMNS}
    row["site"] = site_name
    if PAGE in record:
        row[PAGE] = record[PAGE]
    return row
