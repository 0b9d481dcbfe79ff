"""WARC files in as snapshots of one site's articles (Heritrix, browsertrix, wget, our own).

What becomes a snapshot:

- a ``response`` with a 2xx status and an HTML payload (by Content-Type, else by its first
  bytes), or any record of our own export (it carries Zeroarchive-Article-ID): the payload
  after warcio undid the chunking and the content coding, i.e. the page as Scrapy would
  have stored it;
- a ``revisit`` of a response taken in this import (same article and payload digest) or of
  a stored snapshot (its WARC-Refers-To-Date): a snapshot without bytes of its own;
- a ``resource`` of our own export (a rendered DOM, or a document a spider assembled such
  as Dcard's JSON): that snapshot again, with the status and headers of the ``metadata``
  record our export writes beside it.

Media items (``media``): our export's records of a snapshot's items (responses, revisits,
screenshots, and the metadata records of items not stored) and foreign ``urn:view:``
screenshots go back into the media store by content, each a row of the snapshot of its
page (by the page's URL and time: our export's exact snapshot time, a foreign screenshot's
nearest snapshot within an hour); a row already there is not added again.

Everything else is counted and skipped: other record types, other hosts than the site's,
non-2xx and non-HTML responses, foreign resources, revisits of nothing imported. The
article is the canonical URL (the site's url_rules) of Zeroarchive-Article-URL when our
export wrote one, else of WARC-Target-URI. A malformed record is logged with its file and
offset and counted; the import carries on with the next record, or the next file when the
file itself cannot be read further.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordloader import ArcWarcRecord

from zeroarchive.core.clock import now
from zeroarchive.core.encoding import detect_encoding
from zeroarchive.core.progress import Progress
from zeroarchive.core.urls import UrlRejected, canonicalize_url, is_on_site
from zeroarchive.media.store import MediaStore
from zeroarchive.publish.warc.media import MediaImporter, MediaInRecord, media_in_record
from zeroarchive.publish.warc.records import (
    ARTICLE_ID,
    ARTICLE_URL,
    ENCODING,
    RENDERED,
    STATUS,
    header_lists,
    is_html,
    parse_warc_date,
    read_head,
)
from zeroarchive.sites.record import Site
from zeroarchive.storage.imports import (
    ADDED,
    DUPLICATE,
    NO_BYTES,
    UNCHANGED,
    ImportedSnapshot,
    StoredCapture,
    record_imported,
    stored_capture,
)
from zeroarchive.storage.snapshots import content_hash

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

# The article type the spiders give each site type's articles (the generic spider's
# "Article" for the rest), until the source registry holds it (DESIGN.md, Sources).
PREFIX = "warc_import"


class MalformedRecord(ValueError):
    """A record that cannot be read as what its headers say it is."""


@dataclass(frozen=True)
class WarcImportConfig:
    batch: int

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> WarcImportConfig:
        config = cls(batch=settings.getint("WARC_IMPORT_BATCH"))
        if config.batch < 1:
            raise ValueError(f"WARC_IMPORT_BATCH must be positive, got {config.batch}")
        return config


class WarcImporter:
    """Imports WARC files into one site; ``stats`` counts what became of every record."""

    def __init__(
        self,
        engine: Engine,
        site: Site,
        config: WarcImportConfig,
        progress: Progress | None = None,
        media: MediaStore | None = None,
    ) -> None:
        """``progress``, when given, counts the files' bytes as their records are read;
        ``media``, when given, takes the records' media items (else they are skipped)."""
        self.engine = engine
        self.media = None if media is None else MediaImporter(media, now())
        self.progress = progress
        self.site = site
        self.config = config
        self.article_type = site.source.article_type
        self.stats: Counter[str] = Counter()
        self._pending: list[ImportedSnapshot] = []
        #: WARC-Record-ID of the record the last pending snapshot came from.
        self._pending_id: str | None = None
        # (article URL, WARC-Payload-Digest) of the responses read so far -> what a revisit
        # of them needs (the digest is of the payload as sent, so it is kept, not recomputed).
        self._seen: dict[tuple[str, str], StoredCapture] = {}

    def import_files(self, paths: Sequence[Path]) -> Counter[str]:
        if self.progress is not None:
            self.progress.set_total(sum(path.stat().st_size for path in paths))
        for path in paths:
            self.import_file(path)
        self.flush()
        return self.stats

    def import_file(self, path: Path) -> None:
        self._count("files")
        counted = self.progress.done if self.progress is not None else 0
        try:
            with path.open("rb") as handle:
                records = ArchiveIterator(handle)
                offset = 0
                try:
                    for record in records:
                        self._count("records")
                        error = self._import_record(record)
                        # Asking for the offset reads the record to its end: only now.
                        read, offset = offset, records.get_record_offset()
                        if self.progress is not None:
                            self.progress.advance(offset - read)
                        if error is not None:
                            self._count("malformed")
                            logger.error(
                                "%s: malformed %s record at offset %d: %s",
                                path,
                                record.rec_type,
                                offset,
                                error,
                            )
                except ArchiveLoadFailed as exc:
                    self._count("malformed")
                    self._count("files_cut_short")
                    logger.error(
                        "%s: unreadable after offset %d, rest of the file skipped: %s",
                        path,
                        offset,
                        " ".join(str(exc).split()),
                    )
        except OSError as exc:
            self._count("files_unreadable")
            logger.error("%s: cannot read: %s", path, exc)
        if self.progress is not None:
            # Offsets are of records' starts: the last record's bytes are counted here.
            with contextlib.suppress(OSError):
                self.progress.advance(path.stat().st_size - (self.progress.done - counted))

    def _import_record(self, record: ArcWarcRecord) -> Exception | None:
        """Queue the record's snapshot, if it makes one, or store its media item; return the
        error if it is malformed."""
        try:
            item = media_in_record(record)
            if item is not None:
                self._media(record, item)
                return None
            snapshot = self._snapshot(record)
        except (MalformedRecord, ValueError, OSError, EOFError) as exc:
            return exc
        if snapshot is not None:
            # Flushed before, not after: the metadata record that follows a resource of
            # ours amends its snapshot while it is still pending.
            if len(self._pending) >= self.config.batch:
                self.flush()
            self._pending.append(snapshot)
            self._pending_id = record.rec_headers.get_header("WARC-Record-ID")
        return None

    def flush(self) -> None:
        if not self._pending:
            return
        batch, self._pending = self._pending, []
        outcomes = record_imported(self.engine, self.site, self.article_type, batch, now())
        names = {
            ADDED: "snapshots_added",
            UNCHANGED: "snapshots_unchanged",
            DUPLICATE: "duplicates",
            NO_BYTES: "skipped/revisit_unresolved",
        }
        for outcome in outcomes:
            self._count(names[outcome])

    def _skip(self, why: str) -> None:
        self._count(f"skipped/{why}")

    def _count(self, key: str) -> None:
        self.stats[f"{PREFIX}/{key}"] += 1

    def _snapshot(self, record: ArcWarcRecord) -> ImportedSnapshot | None:
        """The snapshot a record becomes, or None (counted) when it becomes none."""
        kind = record.rec_type
        fields = record.rec_headers
        ours = fields.get_header(ARTICLE_ID) is not None
        if kind == "metadata" and ours:
            self._amend_head(record)
            return None
        if kind not in ("response", "revisit", "resource"):
            self._skip(kind or "unknown")
            return None
        rendered = fields.get_header(RENDERED) == "true"
        if kind == "resource" and not ours:
            self._skip("resource")
            return None
        uri = fields.get_header("WARC-Target-URI") or ""
        try:
            url = canonicalize_url(
                fields.get_header(ARTICLE_URL) or uri, self.site.config.url_rules
            )
        except UrlRejected:
            self._skip("bad_url")
            return None
        if not is_on_site(url, self.site.url):
            self._skip("other_host")
            return None
        date = fields.get_header("WARC-Date")
        if not date:
            raise MalformedRecord("no WARC-Date")
        fetched_at = parse_warc_date(date)
        if kind == "revisit":
            return self._revisit(record, url, uri, fetched_at)
        if kind == "resource":
            body = record.content_stream().read()
            content_type = record.content_type or "text/html; charset=utf-8"
            return self._remember(
                record,
                ImportedSnapshot(
                    url=url,
                    fetched_at=fetched_at,
                    status=int(fields.get_header(STATUS) or 200),
                    final_url=uri,
                    headers={"Content-Type": [content_type]},
                    encoding=fields.get_header(ENCODING) or "utf-8",
                    content_hash=content_hash(body),
                    body=body,
                    rendered=rendered,
                ),
            )
        http = record.http_headers
        if http is None or not http.statusline:
            raise MalformedRecord("a response without an HTTP head")
        status = _status(http.get_statuscode())
        if not 200 <= status < 300:
            self._skip(f"status_{status // 100}xx")
            return None
        content_type = http.get_header("Content-Type")
        body = record.content_stream().read()
        if not body:
            self._skip("empty")
            return None
        if not ours and not is_html(content_type, body):
            self._skip("not_html")
            return None
        encoding = fields.get_header(ENCODING) or detect_encoding(body, content_type)
        headers = header_lists(http.headers)
        return self._remember(
            record,
            ImportedSnapshot(
                url, fetched_at, status, uri, headers, encoding, content_hash(body), body
            ),
        )

    def _media(self, record: ArcWarcRecord, item: MediaInRecord) -> None:
        if self.media is None:
            self._skip("media")
            return
        try:
            page = canonicalize_url(item.page_url, self.site.config.url_rules)
        except UrlRejected:
            self._skip("bad_url")
            return
        if not is_on_site(page, self.site.url):
            self._skip("media_other_host")
            return
        # The snapshot the item belongs to may still be pending.
        self.flush()
        self._count(self.media.take(record, item, page))

    def _amend_head(self, record: ArcWarcRecord) -> None:
        """Our metadata record beside a resource: the status and headers its page came
        with, given to the resource's snapshot (the one just read)."""
        concurrent = record.rec_headers.get_header("WARC-Concurrent-To")
        if not self._pending or concurrent is None or concurrent != self._pending_id:
            self._skip("metadata")
            return
        status, headers = read_head(record.content_stream().read())
        last = self._pending[-1]
        self._pending[-1] = dataclasses.replace(
            last, status=status or last.status, headers=headers or last.headers
        )
        self._count("heads")

    def _remember(self, record: ArcWarcRecord, snapshot: ImportedSnapshot) -> ImportedSnapshot:
        """Keep what a later revisit of this record needs."""
        digest = record.rec_headers.get_header("WARC-Payload-Digest")
        if digest:
            self._seen[(snapshot.url, digest)] = StoredCapture(
                snapshot.content_hash,
                snapshot.status,
                {},
                snapshot.encoding,
                snapshot.rendered,
                snapshot.size,
            )
        return snapshot

    def _revisit(
        self, record: ArcWarcRecord, url: str, uri: str, fetched_at: int
    ) -> ImportedSnapshot | None:
        fields = record.rec_headers
        original = self._seen.get((url, fields.get_header("WARC-Payload-Digest") or ""))
        refers_to = fields.get_header("WARC-Refers-To-Date")
        if original is None and refers_to:
            original = stored_capture(self.engine, url, parse_warc_date(refers_to))
        if original is None:
            self._skip("revisit_unresolved")
            return None
        http = record.http_headers
        status, headers = original.status, original.headers
        if http is not None and http.statusline:
            status, headers = _status(http.get_statuscode()), header_lists(http.headers)
        elif fields.get_header(RENDERED) == "true":
            headers = {"Content-Type": ["text/html; charset=utf-8"]}
        if not 200 <= status < 300:
            self._skip(f"status_{status // 100}xx")
            return None
        return ImportedSnapshot(
            url=url,
            fetched_at=fetched_at,
            status=int(fields.get_header(STATUS) or status),
            final_url=uri,
            headers=headers,
            encoding=fields.get_header(ENCODING) or original.encoding,
            content_hash=original.content_hash,
            body=None,
            rendered=original.rendered or fields.get_header(RENDERED) == "true",
            raw_size=original.raw_size,
        )


def _status(code: str | None) -> int:
    try:
        return int(code or "")
    except ValueError:
        raise MalformedRecord(f"bad HTTP status {code!r}") from None
