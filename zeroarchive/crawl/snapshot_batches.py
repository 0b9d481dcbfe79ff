"""One batch of the crawl's answers (fetched pages, failed fetches) written to the archive:
each page's encoding and canonical claims settled where its spider left them (``settle``),
sorted by what they say (``events/answers.py``), stored in one transaction with the events
they settle, and counted.

It runs in a thread of the crawl or in the crawl's writer process (``writer_process``), so
it never touches the crawler: what it counts comes back as a list, which the snapshot
pipeline adds to the crawl's stats.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import NamedTuple

from sqlalchemy.engine import Connection

from zeroarchive.core.db_retry import call_with_retry
from zeroarchive.core.encoding import detect_encoding
from zeroarchive.core.items import FailedFetch, FetchedPage, MediaAnswer
from zeroarchive.crawl.canonical import Claims, declared_urls, read_claims
from zeroarchive.events.answers import (
    REDIRECT_OFF_SITE,
    SortedAnswers,
    last_snapshots,
    sort_answers,
)
from zeroarchive.events.probe import load_probes
from zeroarchive.events.store import Answered, record_answered, record_gone, record_not_modified
from zeroarchive.media.store import CHUNK, MediaRecord, MediaStore, media_store
from zeroarchive.media.video import discard
from zeroarchive.sites.record import Site
from zeroarchive.storage.archive import Archive
from zeroarchive.storage.snapshots import SaveResult

logger = logging.getLogger(__name__)

Answer = FetchedPage | FailedFetch | MediaAnswer
#: A count for the crawl's stats: metric, site id (None for the run's total only), amount.
Count = tuple[str, int | None, int]
#: The records of a batch's sites, by id (None: a site no longer in the archive).
Sites = Mapping[int, Site | None]


class Written(NamedTuple):
    """What one batch's transaction wrote."""

    results: list[SaveResult]
    stopped: list[tuple[int, str | None]]
    gone: list[str]
    cleared: list[tuple[int, str]]
    media: list[Count]


def write_batch(
    archive: Archive,
    batch: Sequence[Answer],
    sites: Sites,
    retry_seconds: float,
    media_dir: str = "",
) -> list[Count]:
    """Sort and store ``batch``, riding out a database away for ``retry_seconds``; what
    it wrote, counted. Its media items go to the backend ``media_dir`` names (empty: the
    archive's database). A batch that cannot be written is logged and counted as
    ``errors/db_write``: its articles stay leased, so they are due again when the lease
    runs out."""
    counts: list[Count] = []

    def retried() -> None:
        counts.append(("db_retries", None, 1))

    batch = [
        settle(item, sites.get(item.site_id), counts) if isinstance(item, FetchedPage) else item
        for item in batch
    ]
    try:
        # Sorting reads the archive (deletion signs): it rides out an outage too.
        answers = call_with_retry(
            lambda: sort_batch(archive, batch, sites), "answers", retry_seconds, retried
        )
        media = media_store(archive.engine, media_dir)
        written = call_with_retry(
            lambda: store_batch(archive, answers, batch, media), "snapshots", retry_seconds, retried
        )
    except Exception:
        logger.exception("Could not write %d snapshot(s); they will be retaken", len(batch))
        return [*counts, ("errors/db_write", None, len(batch))]
    finally:
        for item in batch:
            if isinstance(item, MediaAnswer) and item.spooled is not None:
                discard(item.spooled)
    return counts + written_counts(answers, written)


def settle(page: FetchedPage, site: Site | None, counts: list[Count]) -> FetchedPage:
    """``page`` with what its spider left to the writer worked out: its encoding, from the
    bytes and the Content-Type (zeroarchive/core/encoding.py), and the canonical URL it
    belongs to if not its article's own (zeroarchive/crawl/canonical.py). A page whose
    claims cannot be read is kept as fetched, logged and counted; so is a claim that
    cannot be used (``canonical/ignored/<why>``): the page stays its article's."""
    article_url = page.unsettled_for
    if article_url is None:
        return page
    encoding = page.encoding or "utf-8"
    claims = Claims(None)
    try:
        encoding = page.encoding or detect_encoding(page.body, _content_type(page))
        if site is not None:
            declared = declared_urls(page.body, encoding)
            claims = read_claims(article_url, page.final_url, declared, site)
    except Exception:
        logger.exception("Could not read the claims of %s; kept as fetched", page.final_url)
        counts.append(("errors/settle", page.site_id, 1))
    if claims.ignored:
        _log_ignored(page, claims.ignored)
        counts.extend((f"canonical/ignored/{why}", page.site_id, 1) for _, why in claims.ignored)
    if claims.moved_to is not None:
        counts.append(("canonical_redirects", page.site_id, 1))
    return replace(page, encoding=encoding, moved_to=claims.moved_to, unsettled_for=None)


#: (site id, why) of the ignored claims logged at INFO by this process: the first of each
#: kind per site; the rest at DEBUG (some sites make the same claim on every page).
_logged_ignored: set[tuple[int, str]] = set()


def _log_ignored(page: FetchedPage, ignored: tuple[tuple[str, str], ...]) -> None:
    first = {(page.site_id, why) for _, why in ignored} - _logged_ignored
    _logged_ignored.update(first)
    logger.log(
        logging.INFO if first else logging.DEBUG,
        "Article %d (%s): kept as its own page, ignoring its canonical claim(s) %s",
        page.article_id,
        page.final_url,
        ", ".join(f"{_shown(value)} ({why})" for value, why in ignored),
    )


def _shown(value: str) -> str:
    return repr(value if len(value) <= 100 else value[:100] + "...")


def _content_type(page: FetchedPage) -> str | None:
    for name, values in page.headers.items():
        if name.lower() == "content-type" and values:
            return values[0]
    return None


def sort_batch(archive: Archive, batch: Sequence[Answer], sites: Sites) -> SortedAnswers:
    """The batch's answers sorted by what they say (zeroarchive/events/answers.py)."""
    pages = [item for item in batch if isinstance(item, FetchedPage)]
    failures = [item for item in batch if isinstance(item, FailedFetch)]
    known = {site_id: site for site_id, site in sites.items() if site is not None}
    engine = archive.engine
    probes = load_probes(engine, {page.site_id for page in pages})
    last = last_snapshots(engine, [page.article_id for page in pages])
    return sort_answers(pages, failures, known, probes, last.size, last.at)


def store_batch(
    archive: Archive,
    answers: SortedAnswers,
    batch: Sequence[Answer],
    media: MediaStore | None = None,
) -> Written:
    """Write what the batch's answers say in one transaction: a snapshot, the events
    its answer settles (a restoration, a deletion) and the media items that came with it
    land together or not at all, so a batch retaken after a crash finds nothing half
    written."""
    items = [item for item in batch if isinstance(item, MediaAnswer)]
    if items and media is None:
        media = media_store(archive.engine, "")
    store = archive.snapshots
    with archive.engine.begin() as conn:
        results = store.save(answers.pages, conn)
        stopped = store.record_failures(answers.failures, conn) if answers.failures else []
        gone = record_gone(conn, answers.gone)
        if answers.not_modified:
            at = max(item.failed_at for item in batch if isinstance(item, FailedFetch))
            record_not_modified(conn, answers.not_modified, at)
        answered = [
            Answered(result.article_id, page.site_id, page.fetched_at, page.status)
            for page, result in zip(answers.pages, results, strict=True)
            if result.outcome != "duplicate" and result.moved_from is None
        ]
        cleared = record_answered(conn, answered)
        media_counts = store_media(conn, media, items) if media is not None and items else []
    return Written(results, stopped, gone, cleared, media_counts)


def store_media(conn: Connection, media: MediaStore, items: Sequence[MediaAnswer]) -> list[Count]:
    """Each item's bytes stored once by content and one record per (snapshot, item);
    counted. The batch's digests are looked up in one query: an item already held costs
    that lookup and no write. An item the crawl reused (no bytes, its digest known) is
    stored when its bytes are held, as they are once the batch of its first fetch was
    written (the same batch or an earlier one). A video's bytes come from the file yt-dlp
    wrote (``spooled``), streamed and hashed as they are stored."""
    counts: list[Count] = []
    records = []
    digests = [_digest(item) for item in items]
    with_bytes = {d for d, item in zip(digests, items, strict=True) if item.body is not None}
    held = media.held(conn, (d for d in digests if d is not None)) if digests else set()
    for item, digest in zip(items, digests, strict=True):
        reason = item.reason
        size = None
        if item.spooled is not None and reason is None:
            put = media.put(conn, _file_chunks(item.spooled), item.content_type, item.fetched_at)
            digest, size = put.sha256, put.size
            if put.new:
                counts.append(("media/new", item.site_id, 1))
                counts.append(("media/bytes_stored", item.site_id, size))
            counts.append(("media/bytes_fetched", item.site_id, size))
        elif digest is not None and item.body is not None:
            size = len(item.body)
            if digest not in held:
                if media.put_body(conn, digest, item.body, item.content_type, item.fetched_at):
                    counts.append(("media/new", item.site_id, 1))
                    counts.append(("media/bytes_stored", item.site_id, size))
                held.add(digest)
            counts.append(("media/bytes_fetched", item.site_id, size))
        elif digest is not None:
            if digest in held or digest in with_bytes:
                size = item.size
                counts.append(("media/reused", item.site_id, 1))
            else:
                # Its first fetch's batch was never written (logged there): nothing to show.
                digest, reason = None, UNSTORED
        if digest is None:
            records.append(
                MediaRecord(
                    item.article_id,
                    item.snapshot_at,
                    item.kind,
                    item.url,
                    None,
                    None,
                    None,
                    item.fetched_at,
                    False,
                    reason,
                )
            )
            counts.append((f"media/refused/{(reason or '').split(':')[0]}", item.site_id, 1))
            continue
        records.append(
            MediaRecord(
                item.article_id,
                item.snapshot_at,
                item.kind,
                item.url,
                digest,
                size,
                item.content_type,
                item.fetched_at,
                True,
                None,
            )
        )
        counts.append(("media/items", item.site_id, 1))
    media.record(conn, records)
    # Summed here: the crawl adds each to its stats, a few thousand calls a batch else.
    totals: dict[tuple[str, int | None], int] = {}
    for metric, site_id, n in counts:
        totals[metric, site_id] = totals.get((metric, site_id), 0) + n
    return [(metric, site_id, n) for (metric, site_id), n in totals.items()]


def _file_chunks(path: str) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            yield chunk


#: The reason of a reused item whose bytes were never stored (its first fetch's batch
#: could not be written).
UNSTORED = "failed:unstored"


def _digest(item: MediaAnswer) -> bytes | None:
    """The item's SHA-256: the crawl's, else hashed here; None for a refusal (and for a
    video, hashed as its file is stored)."""
    if item.body is not None:
        return item.sha256 or hashlib.sha256(item.body).digest()
    if item.reason is None:
        return item.sha256
    return None


def written_counts(answers: SortedAnswers, written: Written) -> list[Count]:
    counts: list[Count] = []
    for page, result in zip(answers.pages, written.results, strict=True):
        counts.append((f"snapshots_{result.outcome}", page.site_id, 1))
        if result.referenced:
            counts.append(("snapshots_referenced", page.site_id, 1))
        counts.append(("snapshot_bytes_raw", page.site_id, len(page.body)))
        counts.append(("snapshot_bytes_stored", page.site_id, result.stored_bytes))
    for failure, (_, stop_reason) in zip(answers.failures, written.stopped, strict=True):
        if stop_reason:
            counts.append(("articles_stopped", failure.site_id, 1))
        if failure.reason == REDIRECT_OFF_SITE:
            counts.append((f"errors/{REDIRECT_OFF_SITE}", failure.site_id, 1))
            logger.info(
                "Article %d was redirected to another host's page; not stored, tried again",
                failure.article_id,
            )
    for answer, outcome in zip(answers.gone, written.gone, strict=True):
        counts.append((f"events/{outcome}", answer.site_id, 1))
        if outcome == "suspected":
            logger.info(
                "Article %d looks gone (%s); confirming in 10 minutes",
                answer.article_id,
                answer.evidence,
            )
    for _, site_id in answers.not_modified:
        counts.append(("watch/not_modified", site_id, 1))
    for _, outcome in written.cleared:
        counts.append((f"events/{outcome}", None, 1))
    return counts + written.media
