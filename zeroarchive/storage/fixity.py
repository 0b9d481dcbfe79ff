"""Fixity: every stored item read back and checked against the SHA-256 recorded for it.

What is checked comes from sources (``FixitySource``): each walks its items in a fixed
order from a position, and gives for each the digest recorded when it was stored and a
way to read its bytes as the archive gives them back, in chunks (a large item is hashed as
it streams, never held whole). The snapshots' source is ``snapshot_fixity``; a store of
other items (media) is one more source in the list ``verify`` is given.

A pass runs the sources in order. Its place (the source and the last item checked), its
count and the damage it found are kept in ``fixity_progress`` every few seconds, on Ctrl-C
and at ``limit``, so a stopped pass goes on where it stopped and the run that ends it
reports all of its damage; a finished pass leaves no row.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TextIO

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Engine

from zeroarchive.core.clock import now as clock_now
from zeroarchive.core.progress import Progress
from zeroarchive.storage.schema import fixity_progress

RESUME = "run the same scrapy verify again: it goes on where it stopped"
#: What can be wrong with a stored item.
DIGEST_MISMATCH = "digest-mismatch"  # its bytes read back, but not the bytes recorded
UNDECOMPRESSABLE = "undecompressable"  # its stored frame cannot be decompressed
MISSING = "missing"  # bytes it needs are not in the archive
DEPENDS_ON_DAMAGED = "depends-on-damaged"  # its own frame may be whole; one it needs is not
# Checkpoints at most this far apart: a killed pass reads this much again.
CHECKPOINT_SECONDS = 5.0
CHECKPOINT_ITEMS = 5000


class Unreadable(Exception):
    """An item's bytes cannot be read back as stored: ``problem`` is one of the names above."""

    def __init__(self, problem: str, detail: str) -> None:
        super().__init__(f"{problem}: {detail}")
        self.problem = problem
        self.detail = detail


@dataclass(frozen=True)
class Item:
    """One stored item: what names it, the SHA-256 recorded for it, how to read it."""

    #: The source's key of the item, ordered as the source walks: a pass resumes after it.
    position: str
    #: What names the item in a report, e.g. ``{"article_id": 12, "snapshot_at": 1736496000}``.
    ids: dict[str, int | str]
    digest: bytes
    #: Its bytes as the archive gives them back; raises ``Unreadable``.
    read: Callable[[], Iterable[bytes]]
    #: Its size as recorded, when the store records one.
    size: int | None = None
    #: The source has hashed the very bytes ``read`` gives against this digest already (an
    #: unchanged snapshot repeats bytes that another item holds): they are not hashed again.
    verified: bool = False
    #: Told whether the item read back whole, once it is checked (a source that keeps
    #: items for others that need them learns that it need not hash them again).
    checked: Callable[[bool], None] | None = None


class FixitySource(Protocol):
    """One kind of stored item (snapshots; media items).

    A content-addressed store (items named by the SHA-256 of their bytes) walks them in
    digest order: the position and the recorded digest are the item's own name, ``ids``
    ``{"sha256": hex}``, and ``url`` one place it was fetched from; ``--site`` and
    ``--since`` reach it through the snapshots that refer to its items.
    """

    #: Its name in reports and checkpoints ("snapshot").
    name: str

    def count(self, after: str | None) -> int:
        """How many items ``items(after)`` gives."""

    def items(self, after: str | None) -> Iterator[Item]:
        """Every item after the position ``after`` (all when None), in the source's order."""

    def url(self, item: Item) -> str | None:
        """Where the item came from, for a report (unmasked: the reader masks it)."""


@dataclass(frozen=True)
class Damage:
    """A damaged item, as reported and kept with the pass."""

    source: str
    ids: dict[str, int | str]
    url: str | None
    problem: str
    detail: str

    def record(self) -> dict[str, object]:
        """The JSON object of ``scrapy verify --json``.

        >>> damage = Damage("snapshot", {"article_id": 3, "snapshot_at": 9}, None, "missing", "x")
        >>> damage.record()  # doctest: +NORMALIZE_WHITESPACE
        {'source': 'snapshot', 'article_id': 3, 'snapshot_at': 9, 'url': None,
         'problem': 'missing', 'detail': 'x'}
        >>> Damage.from_record(damage.record()) == damage
        True
        """
        return {
            "source": self.source,
            **self.ids,
            "url": self.url,
            "problem": self.problem,
            "detail": self.detail,
        }

    @classmethod
    def from_record(cls, record: dict[str, object]) -> Damage:
        fields = dict(record)
        source, url = str(fields.pop("source")), fields.pop("url")
        problem, detail = str(fields.pop("problem")), str(fields.pop("detail"))
        ids = {k: v for k, v in fields.items() if isinstance(v, int | str)}
        return cls(source, ids, None if url is None else str(url), problem, detail)


def check(item: Item) -> tuple[str, str] | None:
    """``(problem, detail)`` when ``item`` does not read back as recorded, else None.

    >>> good = Item("1", {}, hashlib.sha256(b"page").digest(), lambda: [b"pa", b"ge"], 4)
    >>> check(good) is None
    True
    >>> check(Item("1", {}, good.digest, lambda: [b"pag"], 4))[0]
    'digest-mismatch'
    """
    if item.verified:
        return None
    digest = hashlib.sha256()
    size = 0
    try:
        for chunk in item.read():
            digest.update(chunk)
            size += len(chunk)
    except Unreadable as exc:
        return exc.problem, exc.detail
    if digest.digest() == item.digest:
        return None
    detail = f"read {size:,} bytes with SHA-256 {digest.hexdigest()[:16]}…"
    detail += f", recorded {item.digest.hex()[:16]}…"
    if item.size is not None and item.size != size:
        detail += f" of {item.size:,} bytes"
    return DIGEST_MISMATCH, detail


@dataclass
class Pass:
    """A pass over one scope: where it is, what it found, what this run did."""

    scope: str
    since: int | None
    source: str
    position: str | None
    checked: int
    damage: list[Damage]
    started_at: int
    resumed: bool
    checked_now: int = 0
    complete: bool = False
    #: Why this run stopped before the end ("limit"), if it did.
    stopped: str | None = None
    _saved_at: float = field(default=0.0, repr=False)


def begin(
    engine: Engine, scope: str, since: int | None, first_source: str, restart: bool = False
) -> Pass:
    """The pass of ``scope``: the one a stopped run left (its own ``since``, fixed when it
    began), or a new one; ``restart`` drops a stopped one first."""
    state = fixity_progress.c
    at = clock_now()
    with engine.begin() as conn:
        if restart:
            conn.execute(delete(fixity_progress).where(state.scope == scope))
        row = conn.execute(select(fixity_progress).where(state.scope == scope)).first()
        if row is not None:
            damage = [Damage.from_record(json.loads(line)) for line in row.damage.splitlines()]
            return Pass(
                scope=scope,
                since=row.since,
                source=row.source,
                position=row.position or None,
                checked=int(row.checked),
                damage=damage,
                started_at=int(row.started_at),
                resumed=True,
            )
        conn.execute(
            insert(fixity_progress).values(
                scope=scope,
                since=since,
                source=first_source,
                position="",
                checked=0,
                damage="",
                started_at=at,
                updated_at=at,
            )
        )
    return Pass(scope, since, first_source, None, 0, [], at, resumed=False)


def _save(engine: Engine, run: Pass) -> None:
    damage = "".join(json.dumps(d.record(), ensure_ascii=False) + "\n" for d in run.damage)
    with engine.begin() as conn:
        conn.execute(
            update(fixity_progress)
            .where(fixity_progress.c.scope == run.scope)
            .values(
                source=run.source,
                position=run.position or "",
                checked=run.checked,
                damage=damage,
                updated_at=clock_now(),
            )
        )
    run._saved_at = time.monotonic()


def _finish(engine: Engine, run: Pass) -> None:
    with engine.begin() as conn:
        conn.execute(delete(fixity_progress).where(fixity_progress.c.scope == run.scope))
    run.complete = True


def verify(
    engine: Engine,
    run: Pass,
    sources: Sequence[FixitySource],
    report: Callable[[Damage], None],
    limit: int | None = None,
    stream: TextIO | None = None,
) -> Pass:
    """Go on with ``run`` over ``sources`` (in order; the pass's own source first), calling
    ``report`` for each damaged item found; stop after ``limit`` items checked by this run.

    Ctrl-C keeps the place of the last item checked, then ends the run as ``Progress``
    does (exit status 130).
    """
    names = [source.name for source in sources]
    if run.source not in names:
        raise ValueError(f"a stopped pass of {run.source!r}, which is not verified here")
    run._saved_at = time.monotonic()
    for source in sources[names.index(run.source) :]:
        if source.name != run.source:
            run.source, run.position = source.name, None
        total = source.count(run.position)
        if limit is not None:
            total = min(total, limit - run.checked_now)
        with Progress(
            f"verify {source.name}s", total, unit=source.name, resume=RESUME, stream=stream
        ) as progress:
            try:
                for item in source.items(run.position):
                    if limit is not None and run.checked_now >= limit:
                        run.stopped = "limit"
                        break
                    found = check(item)
                    if item.checked is not None:
                        item.checked(found is None)
                    if found is not None:
                        damage = Damage(source.name, item.ids, source.url(item), *found)
                        run.damage.append(damage)
                        report(damage)
                    run.position = item.position
                    run.checked += 1
                    run.checked_now += 1
                    progress.advance()
                    if (
                        run.checked_now % CHECKPOINT_ITEMS == 0
                        or time.monotonic() - run._saved_at >= CHECKPOINT_SECONDS
                    ):
                        _save(engine, run)
            except KeyboardInterrupt:
                _save(engine, run)
                raise
        if run.stopped:
            _save(engine, run)
            return run
    _finish(engine, run)
    return run
