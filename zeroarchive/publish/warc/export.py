"""Snapshots out as WARC/1.1 files that pywb and ReplayWeb.page replay, with their CDXJ index.

Per snapshot, in article order then time order (iter_snapshots'):

- ``response``: the stored status and headers as an HTTP/1.1 head (framing fixed, see
  records.replay_headers) and the stored bytes as the payload, at the snapshot's time;
- ``revisit`` (identical-payload-digest): a later snapshot of the same article whose bytes
  equal an earlier one in this export; it names that record's URI and date;
- ``resource``: a snapshot that is no answer as served: a rendered DOM (``text/html;
  charset=utf-8``) or a document its source's spider assembled (Dcard's post and comment
  pages as one JSON, with its stored Content-Type), which pywb replays as a 200 at that
  time; each resource (or revisit of one) is followed by a ``metadata`` record
  (WARC-Concurrent-To it) holding the status and headers the page came with.

After each snapshot come the records of its stored media items (``media``: responses
under their own URLs, screenshots as ``urn:view:`` resources, revisits for bytes already
written), so a replay shows the page with its pictures and stylesheets.

WARC-Target-URI is the URL the bytes came from (the snapshot's final URL), so relative
links resolve as they did; the article's canonical URL goes in Zeroarchive-Article-URL.
Every record is its own gzip member; a file is rolled once it reaches ``roll_bytes`` and
starts with a ``warcinfo`` record. The index (``index.cdxj``) is written by cdxj-indexer,
the indexer pywb's and the WACZ tools use.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from sqlalchemy.engine import Engine
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from zeroarchive.core.atomic import discard, partial_path, written_whole
from zeroarchive.core.progress import Progress
from zeroarchive.media.store import MediaStore, any_media
from zeroarchive.publish.warc.media import MEDIA_KIND, MediaCounts, MediaExport
from zeroarchive.publish.warc.records import (
    ARTICLE_ID,
    ARTICLE_URL,
    ENCODING,
    HEAD_HEADER,
    HEAD_STATUS,
    RENDERED,
    STATUS,
    head_pairs,
    replay_headers,
    status_line,
    warc_date,
)
from zeroarchive.sources import source_for_article_type
from zeroarchive.storage.snapshots import ExportedSnapshot, count_snapshots, iter_snapshots

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

INDEX_NAME = "index.cdxj"
SOFTWARE = "zeroarchive 0.1.0 (warcio)"
RENDERED_TYPE = "text/html; charset=utf-8"


@dataclass(frozen=True)
class WarcExportConfig:
    roll_bytes: int

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> WarcExportConfig:
        config = cls(roll_bytes=settings.getint("WARC_EXPORT_ROLL_BYTES"))
        if config.roll_bytes < 1:
            raise ValueError(f"WARC_EXPORT_ROLL_BYTES must be positive, got {config.roll_bytes}")
        return config


@dataclass
class ExportCounts:
    snapshots: int = 0
    responses: int = 0
    revisits: int = 0
    resources: int = 0
    # The stored bytes of the snapshots, revisits included (what read_snapshot returns).
    payload_bytes: int = 0


@dataclass(frozen=True)
class WarcExport:
    directory: Path
    files: tuple[Path, ...]
    index: Path
    counts: ExportCounts
    wacz: Path | None = None
    media: MediaCounts | None = None

    @property
    def warc_bytes(self) -> int:
        return sum(path.stat().st_size for path in self.files)


@dataclass
class _First:
    """The first record of an article's bytes in this export, which revisits refer to."""

    uri: str
    date: str
    digest: str


class _RollingWriter:
    """WARC files ``<prefix>-00000.warc.gz``, ... in ``directory``, each started with a
    warcinfo record and rolled before a record once the file holds ``roll_bytes``."""

    def __init__(self, directory: Path, prefix: str, roll_bytes: int, info: dict[str, str]) -> None:
        self.directory = directory
        self.prefix = prefix
        self.roll_bytes = roll_bytes
        self.info = info
        self.files: list[Path] = []
        self._handle: IO[bytes] | None = None
        self._writer: WARCWriter | None = None

    def writer(self) -> WARCWriter:
        if self._handle is None or self._handle.tell() >= self.roll_bytes:
            self._roll()
        assert self._writer is not None
        return self._writer

    def _roll(self) -> None:
        self.close()
        path = self.directory / f"{self.prefix}-{len(self.files):05d}.warc.gz"
        self._handle = path.open("wb")
        self.files.append(path)
        self._writer = WARCWriter(self._handle, gzip=True, warc_version="1.1")
        self._writer.write_record(self._writer.create_warcinfo_record(path.name, self.info))

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
            self._writer = None


def _fields(exported: ExportedSnapshot) -> dict[str, str]:
    snapshot = exported.snapshot
    fields = {
        "WARC-Date": warc_date(snapshot.snapshot_at),
        ARTICLE_ID: str(snapshot.article_id),
        ARTICLE_URL: exported.url,
        ENCODING: snapshot.encoding,
    }
    if snapshot.rendered:
        fields[RENDERED] = "true"
        fields[STATUS] = str(snapshot.status)
    return fields


def _http_head(exported: ExportedSnapshot) -> StatusAndHeaders:
    snapshot = exported.snapshot
    return StatusAndHeaders(
        status_line(snapshot.status),
        replay_headers(snapshot.headers, len(snapshot.raw)),
        protocol="HTTP/1.1",
    )


def is_resource(exported: ExportedSnapshot) -> bool:
    """Whether a snapshot is no answer as served: a rendered DOM, or a document its
    source's spider assembled (Dcard's post and comments as one JSON)."""
    if exported.snapshot.rendered:
        return True
    try:
        return source_for_article_type(exported.article_type).assembled
    except KeyError:
        return False


def _resource_type(exported: ExportedSnapshot) -> str:
    if exported.snapshot.rendered:
        return RENDERED_TYPE
    for name, values in exported.snapshot.headers.items():
        if name.lower() == "content-type" and values:
            return values[0]
    return "application/octet-stream"


def snapshot_record(
    writer: WARCWriter, exported: ExportedSnapshot, first: _First | None
) -> ArcWarcRecord:
    """The record of one snapshot: a revisit of ``first`` when given, else its bytes."""
    snapshot = exported.snapshot
    uri = snapshot.final_url or exported.url
    fields = _fields(exported)
    resource = is_resource(exported)
    if first is not None:
        return writer.create_revisit_record(
            uri,
            first.digest,
            first.uri,
            first.date,
            # A resource has no HTTP head of its own: pywb takes the resource's.
            http_headers=None if resource else _http_head(exported),
            warc_headers_dict=fields,
        )
    payload = io.BytesIO(snapshot.raw)
    if resource:
        return writer.create_warc_record(
            uri,
            "resource",
            payload=payload,
            length=len(snapshot.raw),
            warc_content_type=_resource_type(exported),
            warc_headers_dict=fields,
        )
    return writer.create_warc_record(
        uri,
        "response",
        payload=payload,
        length=len(snapshot.raw),
        http_headers=_http_head(exported),
        warc_headers_dict=fields,
    )


def head_record(
    writer: WARCWriter, exported: ExportedSnapshot, described: ArcWarcRecord
) -> ArcWarcRecord:
    """The ``metadata`` record beside a resource (or its revisit): the status and headers
    of the answer the page came with (application/warc-fields, one ``HTTP-Status`` and an
    ``HTTP-Header: Name: value`` per header; cdxj-indexer leaves such records out of the
    index, so pywb replays the resource)."""
    snapshot = exported.snapshot
    lines = [f"{HEAD_STATUS}: {snapshot.status}"]
    lines += [f"{HEAD_HEADER}: {name}: {value}" for name, value in head_pairs(snapshot.headers)]
    body = ("\r\n".join(lines) + "\r\n").encode("utf-8")
    fields = {
        "WARC-Date": described.rec_headers.get_header("WARC-Date"),
        "WARC-Concurrent-To": described.rec_headers.get_header("WARC-Record-ID"),
        ARTICLE_ID: str(snapshot.article_id),
    }
    return writer.create_warc_record(
        described.rec_headers.get_header("WARC-Target-URI"),
        "metadata",
        payload=io.BytesIO(body),
        length=len(body),
        warc_content_type="application/warc-fields",
        warc_headers_dict=fields,
    )


def write_warcs(
    snapshots: Iterable[ExportedSnapshot],
    directory: Path,
    prefix: str,
    roll_bytes: int,
    description: str = "",
    media: MediaExport | None = None,
) -> tuple[list[Path], ExportCounts]:
    """Write ``snapshots`` (grouped by article, as iter_snapshots gives them) as WARC files,
    each followed by its media items' records when ``media`` is given."""
    counts = ExportCounts()
    info = {
        "software": SOFTWARE,
        "format": "WARC File Format 1.1",
        "conformsTo": "https://iipc.github.io/warc-specifications/specifications/"
        "warc-format/warc-1.1/",
        "description": description,
    }
    rolling = _RollingWriter(directory, prefix, roll_bytes, info)
    article_id = None
    firsts: dict[bytes, _First] = {}
    try:
        for exported in snapshots:
            snapshot = exported.snapshot
            if snapshot.article_id != article_id:
                article_id, firsts = snapshot.article_id, {}
            first = firsts.get(snapshot.content_hash)
            writer = rolling.writer()
            record = snapshot_record(writer, exported, first)
            writer.write_record(record)
            if is_resource(exported):
                writer.write_record(head_record(writer, exported, record))
            if media is not None:
                for row in media.rows(exported):
                    # Rolled between items too: a video may be bigger than a whole file.
                    media.write_row(rolling.writer(), exported, row)
            if first is None:
                firsts[snapshot.content_hash] = _First(
                    record.rec_headers.get_header("WARC-Target-URI"),
                    record.rec_headers.get_header("WARC-Date"),
                    record.rec_headers.get_header("WARC-Payload-Digest"),
                )
            counts.snapshots += 1
            counts.payload_bytes += len(snapshot.raw)
            if record.rec_type == "revisit":
                counts.revisits += 1
            elif record.rec_type == "resource":
                counts.resources += 1
            else:
                counts.responses += 1
    finally:
        rolling.close()
    return rolling.files, counts


def write_index(files: Iterable[Path], index: Path) -> Path:
    """The sorted CDXJ index of ``files`` (names relative to their directory, as pywb's
    ``collections/<name>/archive`` layout wants), written by cdxj-indexer."""
    from cdxj_indexer.main import write_cdx_index

    partial = index.with_name(index.name + ".partial")
    # The snapshot records only, named: cdxj-indexer's default adds metadata records (ours
    # carry a rendered page's or Dcard's status and headers), and importing wacz appends
    # warcinfo to that default for the whole process.
    options = {"sort": True, "records": "response,revisit,resource"}
    write_cdx_index(str(partial), [str(path) for path in files], options)
    os.replace(partial, index)
    return index


def export_warc(
    engine: Engine,
    directory: Path,
    config: WarcExportConfig,
    prefix: str,
    site_id: int | None = None,
    since: int | None = None,
    until: int | None = None,
    progress: Progress | None = None,
    media: MediaStore | None = None,
) -> WarcExport:
    """Export the selected snapshots to ``directory``: WARC files and ``index.cdxj``;
    ``progress``, when given, is told the total and each snapshot written; with ``media``,
    each snapshot's stored media items too.

    Everything is written in a hidden directory inside ``directory`` and moved out once
    complete, the index last; a failed export leaves nothing behind.
    """
    directory.mkdir(parents=True, exist_ok=True)
    selection = ", ".join(
        f"{name} {value}"
        for name, value in (("site", site_id), ("since", since), ("until", until))
        if value is not None
    )
    snapshots = iter_snapshots(engine, site_id=site_id, since=since, until=until)
    if progress is not None:
        progress.set_total(count_snapshots(engine, site_id, since, until))
        snapshots = progress.track(snapshots)
    work = partial_path(directory / prefix)
    work.mkdir()
    # An archive without media records asks nothing more per snapshot.
    items = MediaExport(media) if media is not None and any_media(engine) else None
    try:
        written, counts = write_warcs(
            snapshots,
            work,
            prefix,
            config.roll_bytes,
            description=f"zeroarchive snapshots ({selection or 'all'})",
            media=items,
        )
        write_index(written, work / INDEX_NAME)
        files = [directory / path.name for path in written]
        for path in written:
            os.replace(path, directory / path.name)
        index = directory / INDEX_NAME
        os.replace(work / INDEX_NAME, index)
    except BaseException:
        for path in directory.glob(f"{prefix}-*.warc.gz"):
            path.unlink()
        raise
    finally:
        discard(work)
    logger.info(
        "Exported %d snapshot(s) to %d WARC file(s) in %s", counts.snapshots, len(files), directory
    )
    return WarcExport(
        directory, tuple(files), index, counts, media=None if items is None else items.counts
    )


def _pages(files: Iterable[Path]) -> Iterator[dict[str, str]]:
    """One ReplayWeb.page page per snapshot record (each capture is worth browsing). Media
    records are not pages: the replay finds them through the index when their page asks."""
    from warcio.archiveiterator import ArchiveIterator

    for path in files:
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type not in ("response", "resource", "revisit"):
                    continue
                headers = record.rec_headers
                uri = headers.get_header("WARC-Target-URI")
                kind = headers.get_header(MEDIA_KIND)
                if kind is not None:
                    continue
                yield {
                    "id": f"{headers.get_header(ARTICLE_ID)}-{headers.get_header('WARC-Date')}",
                    "url": uri,
                    "ts": headers.get_header("WARC-Date"),
                    "title": headers.get_header(ARTICLE_URL) or "",
                }


def write_wacz(export: WarcExport, path: Path, title: str) -> Path:
    """Package an export's WARC files as a WACZ (the ``wacz`` tool: its own index, our
    pages list), for ReplayWeb.page."""
    from wacz.main import main as wacz_main

    with tempfile.TemporaryDirectory() as scratch:
        pages = Path(scratch) / "pages.jsonl"
        with pages.open("w", encoding="utf-8") as handle:
            header = {"format": "json-pages-1.0", "id": "pages", "title": title}
            handle.write(json.dumps(header) + "\n")
            for page in _pages(export.files):
                handle.write(json.dumps(page, ensure_ascii=False) + "\n")
        args = ["-p", str(pages), "--copy-pages", "--title", title]
        args += [str(p) for p in export.files]
        chatter = io.StringIO()
        with written_whole(path) as partial:
            # The wacz tool reports its progress with print().
            with contextlib.redirect_stdout(chatter):
                code = wacz_main(["create", "-o", str(partial), *args])
            logger.debug("wacz create: %s", chatter.getvalue())
            if code != 0:
                raise OSError(f"wacz create failed ({code}): {chatter.getvalue().strip()}")
    return path
