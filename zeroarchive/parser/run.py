"""Parsing every snapshot that has no publication for the current parser version.

Incremental (snapshots already mapped for this version are skipped), idempotent (a snapshot
is mapped once per version), and versioned: a snapshot whose parse equals the previous
snapshot's maps to the same publication version, a changed one makes a new version.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import multiprocessing
import time
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from zeroarchive.core.progress import Progress
from zeroarchive.parser import (
    DEFAULT_TIMEZONE,
    PARSER_VERSION,
    Parsed,
    ParseError,
    parse_snapshot,
)
from zeroarchive.sources import SOURCES
from zeroarchive.storage.publications import (
    ArticleInfo,
    PassState,
    Previous,
    PublicationStore,
    Unparsed,
    VersionHook,
    flush_hooks,
)
from zeroarchive.storage.snapshots import StoredSnapshot, read_snapshot

logger = logging.getLogger(__name__)
_LIBRARIES = ("readability-lxml", "trafilatura", "htmldate", "lxml")
# Snapshots read and handed to the parser processes ahead of the one being stored, per
# process: enough to keep them busy while this process writes, few enough to hold in memory.
_AHEAD_PER_WORKER = 4


@dataclass(frozen=True)
class ParseRunConfig:
    site_id: int | None = None
    since: int | None = None
    reparse: bool = False
    timezone: str = DEFAULT_TIMEZONE
    parser_version: str = PARSER_VERSION
    batch: int = 1000
    # Processes that parse (1: this process parses); this one reads and writes either way.
    workers: int = 1


def parser_components() -> dict[str, str]:
    """The library versions the parsers' output depends on (kept in parser_info)."""
    found = {}
    for name in _LIBRARIES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "absent"
    return found


def parse_pending(
    engine: Engine,
    config: ParseRunConfig,
    now: int | None = None,
    hooks: Sequence[VersionHook] = (),
    progress: Progress | None = None,
) -> Counter[str]:
    """Parse the snapshots that need it; return counts (``parser/...`` stats keys).

    ``progress``, when given, is told the run's total and each snapshot handled.

    ``hooks`` are told of each new publication version inside the transaction that adds it
    (the stages after the parser pass them in: the parser never imports them); those that
    batch their work (``BatchedHook``: the Mroonga index) are flushed when the run ends.

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
        state = PassState(False, discarded.generation)
    else:
        state = store.progress()
    started = time.perf_counter()
    if progress is not None:
        progress.set_total(store.count_pending(config.site_id, config.since, not state.complete))
    with _parser_processes(config.workers) as pool:
        try:
            if not state.complete:
                stats["parser/full_pass"] = 1
                batches = store.iter_unparsed(config.site_id, config.since, config.batch)
                _parse_all(store, engine, batches, config, stamp, stats, pool, hooks, progress)
            # After a full pass too: what was stored while it ran, and emptying the inbox.
            inbox = store.iter_inbox(config.site_id, config.since, config.batch)
            _parse_all(store, engine, inbox, config, stamp, stats, pool, hooks, progress)
        finally:
            flush_hooks(hooks)
    whole = config.site_id is None and config.since is None
    if not state.complete and (whole or (config.reparse and restorable)):
        store.mark_complete(state.generation)
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
    pool: ProcessPoolExecutor | None,
    hooks: Sequence[VersionHook],
    progress: Progress | None,
) -> None:
    previous: Previous | None = None
    for step in _steps(store, engine, batches, config, pool):
        if step.first_of_article:
            previous = step.previous
        previous = _handle(store, engine, step, config, stamp, previous, stats, hooks)
        if progress is not None:
            progress.advance()


@dataclass(frozen=True)
class _Step:
    """One unparsed snapshot, with its article, and its parse when one was started ahead."""

    snapshot: Unparsed
    info: ArticleInfo
    first_of_article: bool
    # The article's latest parsed snapshot before this run (on its first snapshot only).
    previous: Previous | None
    stored: StoredSnapshot | None = None
    parse: Future[Parsed] | None = None


#: What a parser process needs before its first snapshot: every source's parser module,
#: imported, and dateparser's languages, loaded.
_PARSER_MODULES = (
    *dict.fromkeys(source.parser.split(":")[0] for source in SOURCES),
    "zeroarchive.parser.preload",
)


@contextlib.contextmanager
def _parser_processes(workers: int) -> Iterator[ProcessPoolExecutor | None]:
    """``workers`` parser processes, or None to parse in this process."""
    if workers <= 1:
        yield None
        return
    # Not forked from this process (a fork would copy its open database connections) but
    # from a fresh one that imported the parsers once: each spawned worker imported them
    # itself, about 2 CPU seconds a worker before its first page, and each loaded
    # dateparser's languages on its first undated page, about 1.8 more.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(_PARSER_MODULES))
    pool = ProcessPoolExecutor(workers, mp_context=context)
    try:
        yield pool
    finally:
        pool.shutdown(cancel_futures=True)


def _steps(
    store: PublicationStore,
    engine: Engine,
    batches: Iterator[list[Unparsed]],
    config: ParseRunConfig,
    pool: ProcessPoolExecutor | None,
) -> Iterator[_Step]:
    """The unparsed snapshots in order; with a pool, a few are read ahead and handed to it.

    The snapshots that look changed (other bytes than the article's snapshot before them)
    are parsed ahead; the run still decides in order, as without a pool, which it needs.
    """
    ahead: deque[_Step] = deque()
    limit = _AHEAD_PER_WORKER * config.workers if pool is not None else 0
    current: int | None = None
    info: ArticleInfo | None = None
    last_hash: bytes | None = None
    for batch in batches:
        for snapshot in batch:
            first = snapshot.article_id != current
            previous = None
            if first:
                current = snapshot.article_id
                info = store.article_info(current)
                previous = store.previous(current, snapshot.snapshot_at)
                last_hash = previous.raw_hash if previous is not None else None
            assert info is not None
            step = _Step(snapshot, info, first, previous)
            if snapshot.status < 400:
                if pool is not None and snapshot.content_hash != last_hash:
                    step = _parse_ahead(step, engine, config, pool)
                last_hash = snapshot.content_hash
            ahead.append(step)
            if len(ahead) > limit:
                yield ahead.popleft()
    yield from ahead


def _parse_ahead(
    step: _Step, engine: Engine, config: ParseRunConfig, pool: ProcessPoolExecutor
) -> _Step:
    snapshot, info = step.snapshot, step.info
    try:
        stored = read_snapshot(engine, snapshot.article_id, snapshot.snapshot_at)
    except LookupError:
        return step  # read again, and reported, in its turn
    parse = pool.submit(
        parse_snapshot,
        info.article_type,
        stored.raw,
        stored.encoding,
        stored.final_url or info.url,
        config.timezone,
    )
    return dataclasses.replace(step, stored=stored, parse=parse)


def _handle(
    store: PublicationStore,
    engine: Engine,
    step: _Step,
    config: ParseRunConfig,
    stamp: int,
    previous: Previous | None,
    stats: Counter[str],
    hooks: Sequence[VersionHook],
) -> Previous | None:
    """Map one unparsed snapshot; return what the article's next snapshot compares with."""
    snapshot, info = step.snapshot, step.info
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
        stored = step.stored
        if stored is None:
            try:
                stored = read_snapshot(engine, article_id, snapshot_at)
            except LookupError as exc:
                logger.error("Cannot read snapshot %s@%s: %s", article_id, snapshot_at, exc)
                store.record_error(article_id, snapshot_at, f"unreadable: {exc}", stamp)
                stats["parser/errors"] += 1
                return previous
        return _parse_one(store, info, stored, step.parse, config, stamp, previous, stats, hooks)
    except IntegrityError:
        # Another parse run of the same version mapped this snapshot meanwhile.
        logger.warning("Snapshot %s@%s was parsed by another run", article_id, snapshot_at)
        stats["parser/conflict"] += 1
        return previous


def _parse_one(
    store: PublicationStore,
    info: ArticleInfo,
    snapshot: StoredSnapshot,
    parse: Future[Parsed] | None,
    config: ParseRunConfig,
    stamp: int,
    previous: Previous | None,
    stats: Counter[str],
    hooks: Sequence[VersionHook],
) -> Previous | None:
    raw_hash = snapshot.content_hash
    snapshot_at = snapshot.snapshot_at
    try:
        if parse is not None:
            parsed = parse.result()
        else:
            parsed = parse_snapshot(
                info.article_type,
                snapshot.raw,
                snapshot.encoding,
                snapshot.final_url or info.url,
                config.timezone,
            )
    except BrokenProcessPool:
        # A parser process died (killed, or a crash in a C library): which page did it
        # is not known, so no snapshot is marked failed; the run stops as it would in one
        # process.
        raise
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
    publication_id, version = store.add_version(info, snapshot_at, parsed, digest, stamp, hooks)
    stats["parser/new_version" if version > 1 else "parser/new_publication"] += 1
    return Previous(snapshot_at, raw_hash, publication_id, digest)
