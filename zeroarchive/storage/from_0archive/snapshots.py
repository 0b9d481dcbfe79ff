"""0archive's snapshots as the archive stores snapshots: the bytes 0archive held,
byte for byte, compressed, and stored once per article and content (a repeat, or the same
page in a rotated table and the live one, stores no bytes again; ``read_snapshot`` finds
them); a changed page is compressed against its article's stand-alone frame of the same
UTC month, as the crawl stores it (a re-snapshot mostly repeats it). A snapshot already in
the archive (same article, same second) is not added again, which makes a second or
resumed run add nothing twice.

0archive kept no status, headers or final URL: a snapshot is recorded as a 200 of the
article's URL with no headers. Its text was UTF-8 (MEDIUMTEXT); bytes that are not valid
UTF-8 are kept as they are, with the encoding they decode best with, and named.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.engine import Connection, Engine

from zeroarchive.core.encoding import detect_encoding
from zeroarchive.sites.record import SiteConfigError, parse_config
from zeroarchive.storage.compression import compress, compress_against
from zeroarchive.storage.dialect import insert_ignore
from zeroarchive.storage.from_0archive.ids import ARTICLE, known_ids
from zeroarchive.storage.from_0archive.source import OldSnapshot
from zeroarchive.storage.schema import article, article_snapshot, site
from zeroarchive.storage.snapshots import (
    Reference,
    latest_references,
    month_reference,
    snapshot_month,
)

_NO_HEADERS = "{}"

_LAST_HASH = (
    update(article)
    .where(
        article.c.article_id == bindparam("p_id"),
        article.c.last_snapshot_at <= bindparam("p_at"),
    )
    .values(last_content_hash=bindparam("p_hash"))
)


@dataclass
class SnapshotCounts:
    imported: int = 0
    stored_bytes: int = 0
    already: int = 0
    skipped: int = 0
    not_utf8: int = 0


# Two threads: the machine's other core; more only contend with the reader and the database.
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="import-0archive")


def _facts(raw: bytes) -> tuple[bytes, str | None]:
    return hashlib.sha256(raw).digest(), text_encoding(raw)


def _compress(raw: bytes, reference: Reference | None) -> tuple[bytes, str, int | None]:
    """A page's frame: against ``reference`` when there is one, else stand-alone."""
    if reference is None:
        return *compress(raw), None
    return *compress_against(raw, reference.raw), reference.at


def _digest(raw: bytes) -> tuple[bytes, str | None]:
    return hashlib.sha256(raw).digest(), None


def text_encoding(raw: bytes) -> str | None:
    """None when ``raw`` is valid UTF-8 text, else the codec it decodes best with.

    >>> page = "<p>台灣的新聞報導，今天天氣很好</p>" * 3
    >>> text_encoding(page.encode()), text_encoding(page.encode("big5"))
    (None, 'cp950')
    """
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return detect_encoding(raw)
    return None


def skip_reason(snap: OldSnapshot, imported: bool) -> str:
    """Why a snapshot cannot come over (``imported``: whether its article did)."""
    if imported:
        return "raw_data is NULL"
    if snap.site_id is None:
        return f"no article {snap.article_id} in 0archive"
    return f"its article {snap.article_id} was skipped (see above)"


class SnapshotWriter:
    def __init__(self, engine: Engine, source: str) -> None:
        self.engine = engine
        self.source = source
        self._renders: dict[int, bool] = {}
        # One batch is written on a thread of its own while the next is read, hashed and
        # compressed (the database's answer was half of the time into MariaDB). Its keys
        # and stored hashes count as stored for the next batch, which cannot see them yet.
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="import-writer")
        self._pending: Future[None] | None = None
        self._inflight_keys: set[tuple[int, int]] = set()
        self._inflight_bytes: set[tuple[int, bytes]] = set()
        self._inflight_references: dict[int, Reference] = {}

    def finish(self) -> None:
        """Wait for the batch being written; raise what went wrong with it."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()
        self._inflight_keys = set()
        self._inflight_bytes = set()
        self._inflight_references = {}

    def close(self) -> None:
        try:
            self.finish()
        finally:
            self._writer.shutdown()

    def write(
        self,
        batch: Sequence[OldSnapshot],
        counts: SnapshotCounts,
        skip: Callable[[str, str], None],
        problem: Callable[[str, str], None],
        utf8: bool = False,
    ) -> None:
        """Import one batch: reads and compression first, then one short transaction.
        ``utf8``: the bytes are valid UTF-8 for certain, and not checked (a tenth of the
        CPU a page costs, and it holds the GIL)."""
        with self.engine.connect() as conn:
            ids = known_ids(conn, self.source, ARTICLE, [s.article_id for s in batch])
            wanted: dict[tuple[int, int], OldSnapshot] = {}
            for snap in batch:
                new_id = ids.get(snap.article_id)
                if new_id is None or snap.raw is None:
                    skip(snap.name(), skip_reason(snap, new_id is not None))
                    counts.skipped += 1
                    continue
                key = (new_id, snap.snapshot_at)
                if key in wanted:
                    counts.already += 1  # the same snapshot twice in 0archive
                    continue
                wanted[key] = snap
            if not wanted:
                return
            taken = _taken(conn, list(wanted)) | (self._inflight_keys & wanted.keys())
            counts.already += len(taken)
            for key in taken:
                del wanted[key]
            if not wanted:
                return
            articles = {
                int(row.article_id): row
                for row in conn.execute(
                    select(article.c.article_id, article.c.site_id, article.c.url).where(
                        article.c.article_id.in_(sorted({key[0] for key in wanted}))
                    )
                )
            }
            with_bytes = _hashes_with_bytes(conn, set(articles)) | self._inflight_bytes
            renders = self._site_renders(conn, {int(row.site_id) for row in articles.values()})
        keys = list(wanted)
        raws = [wanted[key].raw or b"" for key in keys]
        # hashlib and zstd let go of the GIL on large inputs: pages are checked and
        # compressed on a few threads while the next batch is read (``prefetched``).
        facts = list(_POOL.map(_digest if utf8 else _facts, raws))
        fresh: dict[int, bytes] = {}
        for index, ((article_id, _), (digest, _encoding)) in enumerate(
            zip(keys, facts, strict=True)
        ):
            if (article_id, digest) not in with_bytes:
                with_bytes.add((article_id, digest))
                fresh[index] = raws[index]
        references = self._references([keys[index] for index in fresh])
        standalone: dict[int, Reference] = {}
        against: list[Reference | None] = []
        for index in fresh:
            article_id, at = keys[index]
            reference = month_reference(references, article_id, at)
            if reference is None:
                references[article_id] = standalone[article_id] = Reference(at, raws[index])
            against.append(reference)
        frames = dict(zip(fresh, _POOL.map(_compress, fresh.values(), against), strict=True))
        rows: list[dict[str, Any]] = []
        newest: dict[int, tuple[int, bytes]] = {}
        for index, ((article_id, at), (digest, encoding)) in enumerate(
            zip(keys, facts, strict=True)
        ):
            snap, raw = wanted[(article_id, at)], raws[index]
            if encoding is not None:
                problem(snap.name(), f"not valid UTF-8 text: stored as it is, read as {encoding}")
                counts.not_utf8 += 1
            data, codec, reference_at = frames.get(index, (None, None, None))
            counts.stored_bytes += len(data or b"")
            row = articles[article_id]
            rows.append(
                {
                    "article_id": article_id,
                    "snapshot_at": at,
                    "snapshot_at_date": dt.datetime.fromtimestamp(at, dt.UTC).date(),
                    "status": 200,
                    "final_url": row.url,
                    "headers": _NO_HEADERS,
                    "encoding": encoding or "utf-8",
                    "content_hash": digest,
                    "raw_size": len(raw),
                    "raw_data": data,
                    "codec": codec,
                    "reference_at": reference_at,
                    "rendered": renders.get(int(row.site_id), False),
                }
            )
            if at >= newest.get(article_id, (-1, b""))[0]:
                newest[article_id] = (at, digest)
        self.finish()
        self._inflight_keys = {(row["article_id"], row["snapshot_at"]) for row in rows}
        self._inflight_bytes = {
            (row["article_id"], row["content_hash"]) for row in rows if row["raw_data"] is not None
        }
        self._inflight_references = standalone
        last = [{"p_id": i, "p_at": at, "p_hash": h} for i, (at, h) in newest.items()]
        self._pending = self._writer.submit(self._store, rows, last)
        counts.imported += len(rows)

    def _references(self, keys: list[tuple[int, int]]) -> dict[int, Reference]:
        """The stand-alone frames that pages at ``keys`` (article_id, time) may refer to:
        those stored, then those of the batch being written (not visible yet)."""
        if not keys:
            return {}
        since = min(snapshot_month(at) for _, at in keys)
        with self.engine.connect() as conn:
            references = latest_references(conn, {article_id for article_id, _ in keys}, since)
        references.update(self._inflight_references)
        return references

    def _store(self, rows: list[dict[str, Any]], last: list[dict[str, Any]]) -> None:
        with self.engine.begin() as conn:
            conn.execute(insert_ignore(conn, article_snapshot), rows)
            conn.execute(_LAST_HASH, last)

    def _site_renders(self, conn: Connection, site_ids: set[int]) -> dict[int, bool]:
        """Whether each site's pages were rendered by a browser (0archive's ``selenium``):
        its snapshots are the DOM the browser built."""
        missing = site_ids - self._renders.keys()
        if missing:
            query = select(site.c.site_id, site.c.name, site.c.config).where(
                site.c.site_id.in_(sorted(missing))
            )
            for row in conn.execute(query):
                try:
                    render = parse_config(json.loads(row.config or "{}"), row.name).render
                except (ValueError, SiteConfigError):
                    render = False
                self._renders[int(row.site_id)] = render
        return {site_id: self._renders.get(site_id, False) for site_id in site_ids}


def imported_keys(
    engine: Engine, source: str, snapshots: Sequence[OldSnapshot]
) -> set[tuple[int, int]]:
    """The (article_id, snapshot_at) of those 0archive ``snapshots`` that the archive
    holds already (their article imported, a snapshot at that second stored)."""
    with engine.connect() as conn:
        ids = known_ids(conn, source, ARTICLE, [s.article_id for s in snapshots])
        mapped = {(ids[s.article_id], s.snapshot_at): s for s in snapshots if s.article_id in ids}
        if not mapped:
            return set()
        taken = _taken(conn, list(mapped))
    return {(mapped[key].article_id, mapped[key].snapshot_at) for key in taken}


def _taken(conn: Connection, keys: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """Those of ``keys`` (article_id, snapshot_at) that the archive holds. Asked by
    article and time range, which the primary key serves: SQLite answers a row-value
    ``IN`` by scanning the whole key (1.5 ms at 20,000 snapshots, and growing with the
    archive, twice a batch)."""
    wanted = set(keys)
    times = [at for _, at in wanted]
    query = select(article_snapshot.c.article_id, article_snapshot.c.snapshot_at).where(
        article_snapshot.c.article_id.in_(sorted({article_id for article_id, _ in wanted})),
        article_snapshot.c.snapshot_at.between(min(times), max(times)),
    )
    found = {(int(row.article_id), int(row.snapshot_at)) for row in conn.execute(query)}
    return found & wanted


def _hashes_with_bytes(conn: Connection, ids: set[int]) -> set[tuple[int, bytes]]:
    query = (
        select(article_snapshot.c.article_id, article_snapshot.c.content_hash)
        .where(
            article_snapshot.c.article_id.in_(sorted(ids)),
            article_snapshot.c.raw_data.is_not(None),
        )
        .distinct()
    )
    return {(int(row.article_id), bytes(row.content_hash)) for row in conn.execute(query)}
