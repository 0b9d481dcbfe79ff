"""A snapshot's media items in a WARC, and back: what pywb and ReplayWeb.page need to show
the page with its pictures and stylesheets.

Out, after each snapshot's own record, one record per stored (snapshot, item) row:

- the first time an item's bytes (its SHA-256) come in an export: a ``response`` under the
  item's own URL, a 200 with its Content-Type, the stored bytes as the payload;
- every later row of the same bytes (the same logo on another article, the same picture
  under another URL): a ``revisit`` (identical-payload-digest) naming that first record's
  URI and date, so each payload is in the export once;
- a screenshot (kind ``screenshot``, its URL the page's): a ``resource`` of the stored
  bytes under ``urn:view:<page URL>``, the URI browsertrix-crawler gives a page's
  screenshot, and revisits of it likewise.

Each carries the item's kind, the page's URL and snapshot time and the item's SHA-256 in
our own fields (``Zeroarchive-Media-*``): an import gives the item back to its snapshot.
An item not stored (refused, or a video expired) has no bytes to replay: its row is a
``metadata`` record under its URL with the same fields and its reason (and the digest and
size an expired one kept), left out of the replay index, read back by an import. Bytes are
streamed from the media store through a spooled temporary file (warcio reads a payload
twice, for its digests), never held whole in memory.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import logging
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from sqlalchemy import select
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders

from zeroarchive.media.store import CHUNK, MediaRecord, MediaStore, media_records
from zeroarchive.publish.warc.records import parse_warc_date, warc_date
from zeroarchive.storage.imports import snapshot_near
from zeroarchive.storage.schema import media_item, snapshot_media

if TYPE_CHECKING:
    from warcio.warcwriter import WARCWriter

    from zeroarchive.storage.snapshots import ExportedSnapshot

logger = logging.getLogger(__name__)

MEDIA_KIND = "Zeroarchive-Media-Kind"
PAGE_URL = "Zeroarchive-Media-Page-URL"
PAGE_DATE = "Zeroarchive-Media-Page-Date"
MEDIA_SHA256 = "Zeroarchive-Media-SHA256"
MEDIA_REASON = "Zeroarchive-Media-Reason"
MEDIA_BYTES = "Zeroarchive-Media-Bytes"
MEDIA_TYPE = "Zeroarchive-Media-Content-Type"
VIEW = "urn:view:"
SCREENSHOT = "screenshot"
OCTET_STREAM = "application/octet-stream"


def item_uri(kind: str, url: str) -> str:
    """The WARC-Target-URI of an item: its URL, or ``urn:view:`` and the page's URL for a
    screenshot (as browsertrix-crawler names a page's screenshot).

    >>> item_uri("image", "https://a.example/x.png")
    'https://a.example/x.png'
    >>> item_uri("screenshot", "https://a.example/news/1")
    'urn:view:https://a.example/news/1'
    """
    return VIEW + url if kind == SCREENSHOT else url


@dataclass(frozen=True)
class _First:
    uri: str
    date: str
    digest: str


@dataclass
class MediaCounts:
    responses: int = 0
    resources: int = 0
    revisits: int = 0
    #: Rows of items not stored (metadata records).
    refusals: int = 0
    #: Stored rows whose bytes the store did not give back (whole, with their digest).
    missing: int = 0
    #: Bytes read from the store for the export (each item once).
    payload_bytes: int = 0

    @property
    def records(self) -> int:
        return self.responses + self.resources + self.revisits


class MediaExport:
    """Writes each exported snapshot's media records (``write``), each payload once."""

    def __init__(self, store: MediaStore) -> None:
        self.store = store
        self.counts = MediaCounts()
        # (digest, screenshot or not) -> the record revisits of it name.
        self._firsts: dict[tuple[bytes, bool], _First] = {}

    def rows(self, exported: ExportedSnapshot) -> Iterator[MediaRecord]:
        snapshot = exported.snapshot
        yield from media_records(
            self.store.engine, snapshot.article_id, snapshot_at=snapshot.snapshot_at
        )

    def write(self, writer: WARCWriter, exported: ExportedSnapshot) -> None:
        """Write the records of ``exported``'s stored items with ``writer``."""
        for row in self.rows(exported):
            self.write_row(writer, exported, row)

    def write_row(self, writer: WARCWriter, exported: ExportedSnapshot, row: MediaRecord) -> None:
        screenshot = row.kind == SCREENSHOT
        uri = item_uri(row.kind, row.url)
        content_type = row.content_type or OCTET_STREAM
        fields = {
            "WARC-Date": warc_date(row.fetched_at),
            MEDIA_KIND: row.kind,
            PAGE_URL: exported.url,
            PAGE_DATE: warc_date(exported.snapshot.snapshot_at),
        }
        if row.sha256 is not None:
            fields[MEDIA_SHA256] = row.sha256.hex()
        if not row.stored or row.sha256 is None:
            self._refusal(writer, uri, fields, row)
            return
        first = self._firsts.get((row.sha256, screenshot))
        if first is not None:
            head = None if screenshot else _http_head(content_type, row.bytes or 0)
            record = writer.create_revisit_record(
                uri,
                first.digest,
                first.uri,
                first.date,
                http_headers=head,
                warc_headers_dict=fields,
            )
            writer.write_record(record)
            self.counts.revisits += 1
            return
        with tempfile.SpooledTemporaryFile(max_size=CHUNK) as spool:
            size = self._spool(row.sha256, spool)
            if size is None:
                return
            if screenshot:
                record = writer.create_warc_record(
                    uri,
                    "resource",
                    payload=spool,
                    length=size,
                    warc_content_type=content_type,
                    warc_headers_dict=fields,
                )
                self.counts.resources += 1
            else:
                record = writer.create_warc_record(
                    uri,
                    "response",
                    payload=spool,
                    length=size,
                    http_headers=_http_head(content_type, size),
                    warc_headers_dict=fields,
                )
                self.counts.responses += 1
            writer.write_record(record)
        self.counts.payload_bytes += size
        self._firsts[(row.sha256, screenshot)] = _First(
            uri,
            record.rec_headers.get_header("WARC-Date"),
            record.rec_headers.get_header("WARC-Payload-Digest"),
        )

    def _refusal(
        self, writer: WARCWriter, uri: str, fields: dict[str, str], row: MediaRecord
    ) -> None:
        fields[MEDIA_REASON] = row.reason or "unknown"
        if row.bytes is not None:
            fields[MEDIA_BYTES] = str(row.bytes)
        if row.content_type:
            fields[MEDIA_TYPE] = row.content_type
        record = writer.create_warc_record(
            uri,
            "metadata",
            payload=io.BytesIO(b""),
            length=0,
            warc_content_type="application/warc-fields",
            warc_headers_dict=fields,
        )
        writer.write_record(record)
        self.counts.refusals += 1

    def _spool(self, sha256: bytes, spool: IO[bytes]) -> int | None:
        """Copy the item's bytes into ``spool`` (left at its start); None, logged and
        counted, when the store lacks them or they no longer hash to their name."""
        digest = hashlib.sha256()
        size = 0
        try:
            for chunk in self.store.read(sha256):
                digest.update(chunk)
                spool.write(chunk)
                size += len(chunk)
        except LookupError as exc:
            self.counts.missing += 1
            logger.error("Media item %s left out of the export: %s", sha256.hex(), exc)
            return None
        if digest.digest() != sha256:
            self.counts.missing += 1
            logger.error(
                "Media item %s left out of the export: its stored bytes hash to %s",
                sha256.hex(),
                digest.hexdigest(),
            )
            return None
        spool.seek(0)
        return size


def _http_head(content_type: str, size: int) -> StatusAndHeaders:
    return StatusAndHeaders(
        "200 OK",
        [("Content-Type", content_type), ("Content-Length", str(size))],
        protocol="HTTP/1.1",
    )


@dataclass(frozen=True)
class MediaInRecord:
    """What a WARC record of an item says: the snapshot it belongs to (its page's URL and
    time; None for a foreign screenshot, which has only its own date), the item, and for
    an item not stored why (``reason``) with the digest and size an expired one kept."""

    kind: str
    url: str
    page_url: str
    page_at: int | None
    fetched_at: int
    sha256: bytes | None
    content_type: str | None
    stored: bool = True
    reason: str | None = None
    size: int | None = None


def media_in_record(record: ArcWarcRecord) -> MediaInRecord | None:
    """The item a record holds, revisits or refuses: one of our export's (its
    ``Zeroarchive-Media-*`` fields), or a foreign ``urn:view:`` screenshot resource
    (browsertrix-crawler's); None for any other record. Raises ``ValueError`` on a bad
    date, digest or size."""
    fields = record.rec_headers
    uri = fields.get_header("WARC-Target-URI") or ""
    date = fields.get_header("WARC-Date")
    kind = fields.get_header(MEDIA_KIND)
    if kind is None:
        if record.rec_type != "resource" or not uri.startswith(VIEW) or not date:
            return None
        page = uri[len(VIEW) :]
        return MediaInRecord(
            SCREENSHOT, page, page, None, parse_warc_date(date), None, record.content_type
        )
    if not date:
        raise ValueError("no WARC-Date")
    page_date = fields.get_header(PAGE_DATE)
    if not page_date:
        raise ValueError(f"no {PAGE_DATE}")
    hexdigest = fields.get_header(MEDIA_SHA256)
    sha256 = None if hexdigest is None else bytes.fromhex(hexdigest)
    if sha256 is not None and len(sha256) != 32:
        raise ValueError(f"bad {MEDIA_SHA256}: {hexdigest!r}")
    url = uri[len(VIEW) :] if kind == SCREENSHOT and uri.startswith(VIEW) else uri
    base = MediaInRecord(
        kind,
        url,
        fields.get_header(PAGE_URL) or "",
        parse_warc_date(page_date),
        parse_warc_date(date),
        sha256,
        None,
    )
    if record.rec_type == "metadata":
        size = fields.get_header(MEDIA_BYTES)
        return dataclasses.replace(
            base,
            content_type=fields.get_header(MEDIA_TYPE),
            stored=False,
            reason=fields.get_header(MEDIA_REASON) or "unknown",
            size=None if size is None else int(size),
        )
    if sha256 is None:
        raise ValueError(f"no {MEDIA_SHA256}")
    content_type = record.content_type
    if record.http_headers is not None and record.http_headers.statusline:
        content_type = record.http_headers.get_header("Content-Type")
    return dataclasses.replace(base, content_type=content_type)


#: How far from a foreign screenshot's date its page's snapshot may be (browsertrix-crawler
#: dates a screenshot by its page's load, its response a few seconds apart).
FOREIGN_WINDOW = 3600
#: The outcomes of an item's record, as the import counts them.
ADDED = "media_added"
DUPLICATE = "media_duplicates"
NO_PAGE = "skipped/media_page_unknown"
UNRESOLVED = "skipped/media_revisit_unresolved"
OTHER_HOST = "skipped/media_other_host"


def read_chunks(stream: IO[bytes]) -> Iterator[bytes]:
    """A stream's bytes, a chunk at a time."""
    while chunk := stream.read(CHUNK):
        yield chunk


class MediaImporter:
    """Items of WARC records back into the media store and their snapshots' rows: bytes
    stored by content (an item held already costs a lookup), one row per (snapshot, item)
    not there yet, so a second import adds nothing."""

    def __init__(self, store: MediaStore, at: int) -> None:
        self.store = store
        self.at = at

    def take(self, record: ArcWarcRecord, item: MediaInRecord, page_url: str) -> str:
        """Store ``item`` (read from ``record``) for the snapshot of ``page_url`` (the
        canonical URL) it belongs to; return what became of it (``ADDED`` ...)."""
        with self.store.engine.begin() as conn:
            if item.page_at is not None:
                found = snapshot_near(conn, page_url, item.page_at)
            else:
                found = snapshot_near(conn, page_url, item.fetched_at, FOREIGN_WINDOW)
            if found is None:
                return NO_PAGE
            article_id, snapshot_at = found
            sha256, size, content_type = item.sha256, item.size, item.content_type
            if item.stored and record.rec_type == "revisit":
                held = conn.execute(
                    select(media_item.c.size, media_item.c.content_type).where(
                        media_item.c.sha256 == sha256
                    )
                ).first()
                if held is None:
                    return UNRESOLVED
                size, content_type = int(held.size), content_type or held.content_type
            elif item.stored:
                put = self.store.put(
                    conn, read_chunks(record.content_stream()), content_type, self.at
                )
                if sha256 is not None and put.sha256 != sha256:
                    raise ValueError(
                        f"payload hashes to {put.sha256.hex()}, not its {MEDIA_SHA256} "
                        f"{sha256.hex()}"
                    )
                sha256, size = put.sha256, put.size
            row = snapshot_media.c
            same = conn.execute(
                select(row.media_id).where(
                    row.article_id == article_id,
                    row.snapshot_at == snapshot_at,
                    row.kind == item.kind,
                    row.url == item.url[:2048],
                    row.stored == item.stored,
                    row.sha256.is_(None) if sha256 is None else row.sha256 == sha256,
                )
            ).first()
            if same is not None:
                return DUPLICATE
            self.store.record(
                conn,
                [
                    MediaRecord(
                        article_id,
                        snapshot_at,
                        item.kind,
                        item.url,
                        sha256,
                        size,
                        content_type,
                        item.fetched_at,
                        item.stored,
                        None if item.stored else item.reason,
                    )
                ],
            )
        return ADDED
