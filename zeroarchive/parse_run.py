"""Parsing every snapshot that has no publication for the current parser version.

Incremental (snapshots already mapped for this version are skipped), idempotent (a snapshot
is mapped once per version), and versioned: a snapshot whose parse equals the previous
snapshot's maps to the same publication version, a changed one makes a new version.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from zeroarchive.parser import DEFAULT_TIMEZONE, PARSER_VERSION, ParseError, parse_snapshot
from zeroarchive.storage.publications import (
    ArticleInfo,
    Previous,
    Progress,
    PublicationStore,
    Unparsed,
)
from zeroarchive.storage.snapshots import StoredSnapshot, read_snapshot

logger = logging.getLogger(__name__)
_LIBRARIES = ("readability-lxml", "trafilatura", "htmldate", "lxml")


@dataclass(frozen=True)
class ParseRunConfig:
    site_id: int | None = None
    since: int | None = None
    reparse: bool = False
    timezone: str = DEFAULT_TIMEZONE
    parser_version: str = PARSER_VERSION
    batch: int = 1000


def parser_components() -> dict[str, str]:
    """The library versions the parsers' output depends on (kept in parser_info)."""
    found = {}
    for name in _LIBRARIES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "absent"
    return found


def parse_pending(engine: Engine, config: ParseRunConfig, now: int | None = None) -> Counter[str]:
    """Parse the snapshots that need it; return counts (``parser/...`` stats keys).

    Once a run of this version has gone over every snapshot, later runs read only the
    inbox of snapshots stored since (see migration 0011): nothing new costs two small reads.
    """
    stats: Counter[str] = Counter()
    store = PublicationStore(engine, config.parser_version)
    stamp = now if now is not None else int(time.time())
    store.register_parser({"components": parser_components()}, stamp)
    restorable = False
    if config.reparse:
        stats["parser/discarded"], discarded = store.discard(config.site_id)
        # A reparse of one site's whole history re-maps all it discarded: if the rest was
        # complete before, it is again after (unless something spoils it meanwhile).
        restorable = discarded.complete and config.since is None
        progress = Progress(False, discarded.generation)
    else:
        progress = store.progress()
    started = time.perf_counter()
    if not progress.complete:
        stats["parser/full_pass"] = 1
        batches = store.iter_unparsed(config.site_id, config.since, config.batch)
        _parse_all(store, engine, batches, config, stamp, stats)
    # After a full pass too: what was stored while it ran, and emptying the inbox.
    inbox = store.iter_inbox(config.site_id, config.since, config.batch)
    _parse_all(store, engine, inbox, config, stamp, stats)
    whole = config.site_id is None and config.since is None
    if not progress.complete and (whole or (config.reparse and restorable)):
        store.mark_complete(progress.generation)
    elapsed = time.perf_counter() - started
    stats["parser/seconds_x1000"] = round(elapsed * 1000)
    return stats


def _parse_all(
    store: PublicationStore,
    engine: Engine,
    batches: Iterator[list[Unparsed]],
    config: ParseRunConfig,
    stamp: int,
    stats: Counter[str],
) -> None:
    current: int | None = None
    info: ArticleInfo | None = None
    previous: Previous | None = None
    for batch in batches:
        for snapshot in batch:
            if snapshot.article_id != current:
                current = snapshot.article_id
                info = store.article_info(current)
                previous = store.previous(current, snapshot.snapshot_at)
            assert info is not None
            previous = _handle(store, engine, info, snapshot, config, stamp, previous, stats)


def _handle(
    store: PublicationStore,
    engine: Engine,
    info: ArticleInfo,
    snapshot: Unparsed,
    config: ParseRunConfig,
    stamp: int,
    previous: Previous | None,
    stats: Counter[str],
) -> Previous | None:
    """Map one unparsed snapshot; return what the article's next snapshot compares with."""
    article_id, snapshot_at = snapshot.article_id, snapshot.snapshot_at
    if snapshot.status >= 400:
        store.record_error(article_id, snapshot_at, f"http_{snapshot.status}", stamp, "skipped")
        stats["parser/skipped_status"] += 1
        return previous
    try:
        if previous is not None and previous.raw_hash == snapshot.content_hash:
            store.map_to(article_id, snapshot_at, previous.publication_id, stamp)
            stats["parser/unchanged_snapshot"] += 1
            return previous
        try:
            stored = read_snapshot(engine, article_id, snapshot_at)
        except LookupError as exc:
            logger.error("Cannot read snapshot %s@%s: %s", article_id, snapshot_at, exc)
            store.record_error(article_id, snapshot_at, f"unreadable: {exc}", stamp)
            stats["parser/errors"] += 1
            return previous
        return _parse_one(store, info, stored, config, stamp, previous, stats)
    except IntegrityError:
        # Another parse run of the same version mapped this snapshot meanwhile.
        logger.warning("Snapshot %s@%s was parsed by another run", article_id, snapshot_at)
        stats["parser/conflict"] += 1
        return previous


def _parse_one(
    store: PublicationStore,
    info: ArticleInfo,
    snapshot: StoredSnapshot,
    config: ParseRunConfig,
    stamp: int,
    previous: Previous | None,
    stats: Counter[str],
) -> Previous | None:
    raw_hash = snapshot.content_hash
    snapshot_at = snapshot.snapshot_at
    try:
        parsed = parse_snapshot(
            info.article_type,
            snapshot.raw,
            snapshot.encoding,
            snapshot.final_url or info.url,
            config.timezone,
        )
    except (ParseError, ValueError, LookupError) as exc:
        logger.error(
            "Cannot parse snapshot %s@%s (%s, %s): %s",
            info.article_id,
            snapshot_at,
            info.article_type,
            info.url,
            exc,
        )
        store.record_error(info.article_id, snapshot_at, f"{type(exc).__name__}: {exc}", stamp)
        stats["parser/errors"] += 1
        return previous
    except Exception as exc:
        # A page that trips a library bug must not stop the run over every other snapshot.
        logger.exception(
            "Parser crashed on snapshot %s@%s (%s, %s)",
            info.article_id,
            snapshot_at,
            info.article_type,
            info.url,
        )
        store.record_error(
            info.article_id, snapshot_at, f"crash {type(exc).__name__}: {exc}", stamp
        )
        stats["parser/errors"] += 1
        stats["parser/crashes"] += 1
        return previous
    stats["parser/parsed"] += 1
    digest = parsed.digest()
    if previous is not None and previous.digest == digest:
        store.map_to(info.article_id, snapshot_at, previous.publication_id, stamp)
        stats["parser/same_publication"] += 1
        return Previous(snapshot_at, raw_hash, previous.publication_id, digest)
    publication_id, version = store.add_version(info, snapshot_at, parsed, digest, stamp)
    stats["parser/new_version" if version > 1 else "parser/new_publication"] += 1
    return Previous(snapshot_at, raw_hash, publication_id, digest)
