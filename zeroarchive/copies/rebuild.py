"""``scrapy copies --rebuild``: the copy index recomputed from the publications.

Four passes, each resumable (``copy_rebuild`` keeps the pass and how far it got; a
finished run leaves no state behind):

1. ``blocks``: every site's edge lines counted over each article's latest version (of the
   newest parser version), so that the next pass drops all of a site's boilerplate from its
   first article on (the parse run's hook learns it as articles come); each body's sketch
   as if its site had no boilerplate, and its short lines' hashes, kept in memory;
2. ``fingerprints``: each body's sketch without its site's boilerplate kept in
   ``copy_doc`` (a batch of articles per transaction): the one the blocks pass kept for a
   body that holds none of it, else the body read, folded and sketched again (all of them
   when the blocks pass did not run whole in this process: a resumed rebuild);
3. ``clusters``: every sketch read back, the pairs under a common band key found by one
   sort (``pairs``), those that agree enough checked exactly, and the clusters their
   copies make written (a stopped pass starts again);
4. ``bands``: ``copy_band`` written in its own key order, so its pages fill (random keys
   left InnoDB's ~60 % full), a slice of keys per transaction.

What the hook does one body at a time (its candidates through ``copy_band``, each checked,
then its cluster) gives the same clusters, since a cluster is what its copies join in
whatever order; this does it at once, in far fewer statements.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np
from sqlalchemy import and_, func, select
from sqlalchemy.engine import Connection, Engine

from zeroarchive.copies import store
from zeroarchive.copies.fingerprint import (
    BINS,
    Folded,
    band_key_rows,
    body,
    containment,
    edge_and_line_blocks,
    fold_many,
    shingles,
    sketch_bytes,
    sketch_many,
)
from zeroarchive.copies.index import MIN_AGREEMENT, CopiesConfig, CopyIndex
from zeroarchive.copies.pairs import agreeing, band_rows, candidate_pairs, components
from zeroarchive.copies.store import Doc, Sketches
from zeroarchive.core.progress import Progress
from zeroarchive.storage.publications import newest_parser_version
from zeroarchive.storage.schema import article, copy_rebuild, publication

RESUME = "run scrapy copies --rebuild again: it goes on where it stopped"
SCOPE = "all"
PHASES = ("blocks", "fingerprints", "clusters", "bands")
#: Where the ``bands`` pass starts: below every band key (a signed 32-bit integer).
NO_KEY = -(1 << 31) - 1
#: Pairs checked exactly per step (their bodies read in one statement or a few).
PAIRS_PER_STEP = 2000
#: Shingle sets kept between steps (~5 KB each for a body of 1,300 characters).
_KEPT = 20_000
#: ``copy_band`` rows per transaction of the ``bands`` pass.
BAND_ROWS = 100_000
#: Edge lines (a site's line on one article) counted in memory between two writes of the
#: ``blocks`` pass (16 bytes each while counted; ~6 an article).
BLOCK_ROWS = 2_000_000
#: A line's hash (signed 32 bits) plus this is unsigned and sorts in the same order.
_SIGN = 1 << 31


def _latest(conn: Connection, parser_version: str, after: int, limit: int) -> Sequence[Any]:
    """The latest version of the next ``limit`` articles after ``after``."""
    pub = publication.c
    latest = (
        select(pub.article_id, func.max(pub.version).label("version"))
        .where(pub.parser_version == parser_version, pub.article_id > after)
        .group_by(pub.article_id)
        .order_by(pub.article_id)
        .limit(limit)
        .subquery()
    )
    return conn.execute(
        select(
            pub.publication_id,
            pub.article_id,
            pub.site_id,
            pub.publication_text,
            pub.first_seen_at,
            article.c.first_snapshot_at,
        )
        .join(
            latest,
            and_(
                pub.article_id == latest.c.article_id,
                pub.version == latest.c.version,
                pub.parser_version == parser_version,
            ),
        )
        .join(article, article.c.article_id == pub.article_id)
        .order_by(pub.article_id)
    ).all()


def _seen(row: Any) -> int:
    return int(min(row.first_snapshot_at or row.first_seen_at, row.first_seen_at))


def _count(engine: Engine, parser_version: str, after: int) -> int:
    pub = publication.c
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count(pub.article_id.distinct())).where(
                    pub.parser_version == parser_version, pub.article_id > after
                )
            ).scalar_one()
        )


def rebuild(
    engine: Engine,
    config: CopiesConfig | None = None,
    stream: TextIO | None = None,
    now: int | None = None,
) -> tuple[int, bool]:
    """Recompute the copy index; return how many articles this run fingerprinted and
    whether it resumed a stopped one."""
    config = config or CopiesConfig()
    parser_version = newest_parser_version(engine)
    if parser_version is None:
        return 0, False
    state = copy_rebuild.c
    with engine.begin() as conn:
        row = conn.execute(select(copy_rebuild).where(state.scope == SCOPE)).first()
        resumed = row is not None and row.parser_version == parser_version
        if resumed:
            assert row is not None
            phase, last = row.phase, int(row.last_article_id)
        else:
            phase, last = PHASES[0], 0
            store.clear(conn)
            conn.execute(copy_rebuild.delete())
            conn.execute(
                copy_rebuild.insert().values(
                    scope=SCOPE,
                    parser_version=parser_version,
                    phase=phase,
                    last_article_id=0,
                    started_at=int(time.time()),
                )
            )
    if not resumed and engine.dialect.name != "sqlite":
        _uncompress(engine)
    index = CopyIndex(config)
    stamp = int(time.time()) if now is None else now
    done = 0
    docs = None
    # The blocks pass's sketches, if it runs whole here (a resumed one leaves them unknown).
    kept: list[_Kept] | None = [] if phase == "blocks" and last == 0 else None
    for name in PHASES[PHASES.index(phase) :]:
        if name in ("blocks", "fingerprints"):
            done += _articles(engine, index, name, parser_version, last, stream, kept)
        elif name == "clusters":
            docs = _clusters(engine, index, stamp, stream)
        else:
            _bands(engine, last if phase == "bands" else NO_KEY, stream, docs)
        last = 0
    with engine.begin() as conn:
        conn.execute(copy_rebuild.delete().where(state.scope == SCOPE))
    if engine.dialect.name != "sqlite":
        _compact(engine)
    return done, resumed


def _mark(conn: Connection, phase: str, last: int) -> None:
    conn.execute(
        copy_rebuild.update()
        .where(copy_rebuild.c.scope == SCOPE)
        .values(phase=phase, last_article_id=last)
    )


def _articles(
    engine: Engine,
    index: CopyIndex,
    name: str,
    parser_version: str,
    after: int,
    stream: TextIO | None,
    kept: list[_Kept] | None = None,
) -> int:
    """The ``blocks`` or ``fingerprints`` pass over the articles after ``after``; returns
    how many were fingerprinted. ``kept``: the blocks pass's sketches (it fills the list,
    the fingerprints pass uses and empties it)."""
    total = _count(engine, parser_version, after)
    what = "copies: boilerplate" if name == "blocks" else "copies: fingerprints"
    done = 0
    with Progress(what, total=total, unit="article", resume=RESUME, stream=stream) as progress:
        if name == "blocks":
            _blocks(engine, parser_version, after, index.config.rebuild_batch, progress, kept)
            return 0
        if kept:
            while kept:
                batch = kept.pop(0)
                with engine.begin() as conn:
                    fingerprint_batch(conn, index, batch)
                    _mark(conn, name, int(batch.article_ids[-1]))
                done += len(batch.article_ids)
                progress.advance(len(batch.article_ids))
            return done
        for rows in _batches(engine, parser_version, after, index.config.rebuild_batch):
            with engine.begin() as conn:
                fingerprint_batch(conn, index, rows)
                done += len(rows)
                _mark(conn, name, int(rows[-1].article_id))
            progress.advance(len(rows))
    return done


@dataclass(frozen=True)
class _Kept:
    """What the blocks pass computed of a batch's bodies, for the fingerprints pass: each
    body's sketch as if its site had no boilerplate (the one it gets when it holds none of
    it) and its short lines' hashes (whether it holds any), ~300 bytes a body."""

    article_ids: np.ndarray
    publication_ids: np.ndarray
    site_ids: np.ndarray
    seen: np.ndarray
    scripts: np.ndarray
    #: One row per body; ``present``: False for a body too short to compare.
    sketches: np.ndarray
    present: np.ndarray
    #: Body ``n``'s line hashes are ``lines[ends[n - 1]:ends[n]]``.
    ends: np.ndarray
    lines: np.ndarray


def _keep(rows: Sequence[Any], folded: Sequence[Folded], lines: Sequence[set[int]]) -> _Kept:
    sketches = sketch_many(["".join(one.lines) for one in folded])
    hashes = [sorted(found) for found in lines]
    return _Kept(
        np.array([row.article_id for row in rows], dtype=np.int64),
        np.array([row.publication_id for row in rows], dtype=np.int64),
        np.array([row.site_id for row in rows], dtype=np.int64),
        np.array([_seen(row) for row in rows], dtype=np.int64),
        np.array([one.script for one in folded], dtype=np.int8),
        np.array(
            [np.zeros(BINS, np.uint16) if values is None else values for values in sketches],
            dtype=np.uint16,
        ).reshape(len(rows), BINS),
        np.array([values is not None for values in sketches], dtype=bool),
        np.cumsum([len(found) for found in hashes], dtype=np.int64),
        np.fromiter((line for found in hashes for line in found), dtype=np.int32),
    )


def _blocks(
    engine: Engine,
    parser_version: str,
    after: int,
    size: int,
    progress: Progress,
    kept: list[_Kept] | None = None,
) -> None:
    """The ``blocks`` pass: each article's edge lines counted in memory (a number per
    site and line) and written in the table's key order ``BLOCK_ROWS`` at a time, its place
    marked with them (upserts a batch at a time hit random pages: on MariaDB's compressed
    ``copy_block`` each recompressed a page again and again). ``kept``: each batch's
    sketches and lines added to it (``_Kept``)."""
    pending: list[np.ndarray] = []
    held = 0
    for rows in _batches(engine, parser_version, after, size):
        folded = fold_many([row.publication_text or "" for row in rows])
        both = [edge_and_line_blocks(one) for one in folded]
        if kept is not None:
            kept.append(_keep(rows, folded, [lines for _, lines in both]))
        found = [edges for edges, _ in both]
        sites = np.repeat(
            np.array([row.site_id for row in rows], dtype=np.uint64),
            [len(blocks) for blocks in found],
        )
        lines = np.fromiter(
            (block for blocks in found for block in blocks), dtype=np.int64, count=len(sites)
        )
        pending.append((sites << np.uint64(32)) | (lines + _SIGN).astype(np.uint64))
        held += len(sites)
        after = int(rows[-1].article_id)
        if held >= BLOCK_ROWS:
            _write_blocks(engine, pending, after)
            pending, held = [], 0
        progress.advance(len(rows))
    if pending:
        _write_blocks(engine, pending, after)


def _write_blocks(engine: Engine, pending: list[np.ndarray], last: int) -> None:
    keys, counts = np.unique(np.concatenate(pending), return_counts=True)
    sites = (keys >> np.uint64(32)).astype(np.int64)
    lines = (keys & np.uint64(0xFFFFFFFF)).astype(np.int64) - _SIGN
    with engine.begin() as conn:
        store.count_block_columns(conn, sites, lines, counts)
        _mark(conn, "blocks", last)


def fingerprint_batch(conn: Connection, index: CopyIndex, rows: Sequence[Any] | _Kept) -> None:
    """``copy_doc`` rows (in no cluster yet) for a batch of articles' latest versions; a
    body too short to compare gets none. ``rows``: the versions read, or what the blocks
    pass kept of them."""
    if isinstance(rows, _Kept):
        store.add_docs(conn, _kept_docs(conn, index, rows), [])
        return
    folded = fold_many([row.publication_text or "" for row in rows])
    sketches = sketch_many(
        [
            body(one, index.boilerplate(conn, row.site_id))
            for row, one in zip(rows, folded, strict=True)
        ]
    )
    store.add_docs(
        conn,
        [
            Doc(
                int(row.article_id),
                int(row.publication_id),
                int(row.site_id),
                _seen(row),
                one.script,
                sketch_bytes(values),
                None,
                None,
            )
            for row, one, values in zip(rows, folded, sketches, strict=True)
            if values is not None
        ],
        [],
    )


def _kept_docs(conn: Connection, index: CopyIndex, batch: _Kept) -> list[Doc]:
    """The batch's ``copy_doc`` rows: the kept sketch of each body that holds no line of
    its site's boilerplate (dropping none, its sketch is the same), the others' bodies
    read, folded and sketched again without it."""
    sites = batch.site_ids.tolist()
    boilerplate = {site: index.boilerplate(conn, site) for site in set(sites)}
    starts = np.concatenate(([0], batch.ends[:-1])).tolist()
    ends = batch.ends.tolist()
    again = [
        number
        for number, site in enumerate(sites)
        if boilerplate[site]
        and not boilerplate[site].isdisjoint(batch.lines[starts[number] : ends[number]].tolist())
    ]
    sketches: list[np.ndarray | None] = [
        values if present else None
        for values, present in zip(batch.sketches, batch.present.tolist(), strict=True)
    ]
    if again:
        ids = batch.publication_ids[again].tolist()
        texts = store.publication_texts(conn, ids)
        folded = fold_many([texts.get(publication_id, "") for publication_id in ids])
        fresh = sketch_many(
            [
                body(one, boilerplate[sites[number]])
                for number, one in zip(again, folded, strict=True)
            ]
        )
        for number, values in zip(again, fresh, strict=True):
            sketches[number] = values
    return [
        Doc(article_id, publication_id, site, seen, script, sketch_bytes(values), None, None)
        for article_id, publication_id, site, seen, script, values in zip(
            batch.article_ids.tolist(),
            batch.publication_ids.tolist(),
            sites,
            batch.seen.tolist(),
            batch.scripts.tolist(),
            sketches,
            strict=True,
        )
        if values is not None
    ]


class _Shingles:
    """The shingle sets of the bodies being checked, read a step at a time and kept for
    the steps after (a story's copies are checked against it again and again)."""

    def __init__(self, conn: Connection, index: CopyIndex, docs: Sketches) -> None:
        self.conn, self.index, self.docs = conn, index, docs
        self.kept: OrderedDict[int, np.ndarray] = OrderedDict()

    def have(self, numbers: Sequence[int]) -> None:
        missing = sorted({number for number in numbers if number not in self.kept})
        for number in numbers:
            if number in self.kept:
                self.kept.move_to_end(number)
        if missing:
            ids = self.docs.publication_ids[missing].tolist()
            texts = store.publication_texts(self.conn, ids)
            folded = fold_many([texts.get(publication_id, "") for publication_id in ids])
            for number, one in zip(missing, folded, strict=True):
                site = int(self.docs.site_ids[number])
                self.kept[number] = shingles(body(one, self.index.boilerplate(self.conn, site)))
        while len(self.kept) > max(_KEPT, len(numbers)):
            self.kept.popitem(last=False)

    def containment(self, pairs: np.ndarray) -> list[float]:
        """Each pair's containment (body numbers), their shingles read first."""
        self.have(pairs.ravel().tolist())
        return [containment(self.kept[one], self.kept[other]) for one, other in pairs.tolist()]


def _clusters(engine: Engine, index: CopyIndex, now: int, stream: TextIO | None) -> Sketches:
    """The ``clusters`` pass: every candidate pair checked, the clusters written; returns
    the sketches it read (the ``bands`` pass's too)."""
    with engine.begin() as conn:
        store.clear_clusters(conn)
        docs = store.all_sketches(conn, BINS)
        pairs = agreeing(
            docs.sketches,
            candidate_pairs(*band_rows(band_key_rows(docs.sketches))),
            MIN_AGREEMENT,
        )
        reading = _Shingles(conn, index, docs)
        # The copies' containment only: a pair below the threshold is checked again if its
        # two bodies end in one cluster as its first and a member (few do), so that the
        # pass holds a value per copy, not per candidate (millions at a million bodies).
        checked: dict[tuple[int, int], float] = {}
        edges: list[tuple[int, int]] = []
        least = index.config.min_similarity
        with Progress(
            "copies: clusters", total=len(pairs), unit="pair", resume=RESUME, stream=stream
        ) as progress:
            for start in range(0, len(pairs), PAIRS_PER_STEP):
                step = pairs[start : start + PAIRS_PER_STEP]
                for (one, other), value in zip(
                    step.tolist(), reading.containment(step), strict=True
                ):
                    if value >= least:
                        checked[(one, other)] = value
                        edges.append((one, other))
                progress.advance(len(step))
        parts = components(edges)
        # A part's first is its member first seen (then the smallest article id).
        firsts = [
            min(part, key=lambda number: (int(docs.first_seen[number]), number)) for part in parts
        ]
        missing = [
            (first, number)
            for part, first in zip(parts, firsts, strict=True)
            for number in part
            if number != first and (min(first, number), max(first, number)) not in checked
        ]
        for start in range(0, len(missing), PAIRS_PER_STEP):
            step = np.array(missing[start : start + PAIRS_PER_STEP], dtype=np.int64)
            for (one, other), value in zip(step.tolist(), reading.containment(step), strict=True):
                checked[(min(one, other), max(one, other))] = value
        ids = store.add_clusters(conn, [int(docs.article_ids[first]) for first in firsts], now)
        memberships = []
        for part, first in zip(parts, firsts, strict=True):
            cluster = ids[int(docs.article_ids[first])]
            for number in part:
                similarity = (
                    1.0
                    if number == first
                    else round(checked[(min(first, number), max(first, number))], 4)
                )
                memberships.append((int(docs.article_ids[number]), cluster, similarity))
        store.set_memberships(conn, memberships)
        _mark(conn, "bands", NO_KEY)
    return docs


def _bands(engine: Engine, after: int, stream: TextIO | None, docs: Sketches | None) -> None:
    """The ``bands`` pass: ``copy_band`` written in key order from the band keys above
    ``after``, a slice of keys per transaction (``docs``: the sketches, if at hand)."""
    with engine.begin() as conn:
        store.drop_band_rows_after(conn, after)
        if docs is None:
            docs = store.all_sketches(conn, BINS)
    keys, numbers = band_rows(band_key_rows(docs.sketches))
    first = 0 if after == NO_KEY else int(np.searchsorted(keys, after, side="right"))
    with Progress(
        "copies: bands", total=len(keys) - first, unit="row", resume=RESUME, stream=stream
    ) as progress:
        while first < len(keys):
            # A slice ends at a key's last row, so the next starts above it.
            end = int(np.searchsorted(keys, keys[min(first + BAND_ROWS, len(keys)) - 1], "right"))
            with engine.begin() as conn:
                store.add_band_rows(conn, keys[first:end], docs.article_ids[numbers[first:end]])
                _mark(conn, "bands", int(keys[end - 1]))
            progress.advance(end - first)
            first = end


#: What a MariaDB rebuild rewrites at its end: ``copy_band`` is written in its key order,
#: and ``copy_block``, compressed (migration 0034), came out a third larger rewritten than
#: as its upserts left it (bench/README.md).
COMPACTED = ("copy_doc",)
#: Migration 0034's row format, as ``information_schema`` names it.
_COMPRESSED = "Compressed"


def row_format(conn: Connection, name: str) -> str:
    return str(
        conn.exec_driver_sql(
            "SELECT ROW_FORMAT FROM information_schema.TABLES"
            " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
            (name,),
        ).scalar_one()
    )


def _uncompress(engine: Engine) -> None:
    """A MariaDB rebuild writes ``copy_doc``, emptied, uncompressed; its end (``_compact``)
    writes it compressed again: the clusters pass lengthens a fifth of its rows (a
    cluster and a similarity where there were NULLs), and each such update of a compressed
    page cost the server ~280 µs (1.2 CPU s for 4,335 rows, 0.05 s uncompressed;
    bench/README.md). A rebuild stopped before its end leaves it uncompressed until one
    ends."""
    with engine.connect() as conn:
        if row_format(conn, "copy_doc") == _COMPRESSED:
            conn.exec_driver_sql("ALTER TABLE copy_doc ROW_FORMAT=DYNAMIC KEY_BLOCK_SIZE=0")


def _compact(engine: Engine) -> None:
    """Rewrite ``copy_doc``, whose rows the clusters pass lengthened (a cluster and a
    similarity where there were NULLs): pages split under those updates were left about
    half full (bench/README.md). Written compressed again when the index is (migration
    0034: ``copy_band`` tells), else rewritten as it is."""
    with engine.connect() as conn:
        compressed = row_format(conn, "copy_band") == _COMPRESSED
        for name in COMPACTED:
            if compressed and row_format(conn, name) != _COMPRESSED:
                conn.exec_driver_sql(f"ALTER TABLE {name} ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8")
            else:
                conn.exec_driver_sql(f"OPTIMIZE TABLE {name}").all()


def _batches(engine: Engine, parser_version: str, after: int, size: int) -> Iterator[Sequence[Any]]:
    while True:
        with engine.connect() as conn:
            rows = _latest(conn, parser_version, after, size)
        if not rows:
            return
        yield rows
        after = int(rows[-1].article_id)
