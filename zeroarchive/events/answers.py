"""The crawl's one call into events: a batch of answers sorted into pages to store,
failures to back off, signs of deletion and unchanged watch checks (304)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import select, tuple_
from sqlalchemy.engine import Engine

from zeroarchive.core.items import FailedFetch, FetchedPage
from zeroarchive.events.signs import Probe, page_sign, status_sign
from zeroarchive.events.store import GoneAnswer
from zeroarchive.sites.record import Site
from zeroarchive.storage.schema import article, article_snapshot

NOT_MODIFIED = 304


@dataclass
class SortedAnswers:
    pages: list[FetchedPage] = field(default_factory=list)
    failures: list[FailedFetch] = field(default_factory=list)
    gone: list[GoneAnswer] = field(default_factory=list)
    #: (article_id, site_id) of watch checks answered 304 Not Modified.
    not_modified: list[tuple[int, int]] = field(default_factory=list)


def last_sizes(engine: Engine, article_ids: Iterable[int]) -> dict[int, int]:
    """The size of each article's last snapshot, in bytes (two reads per batch: the
    articles' last snapshot times, then those snapshots by their whole key, so MariaDB
    looks in one month's partition for each)."""
    ids = sorted(set(article_ids))
    if not ids:
        return {}
    with engine.connect() as conn:
        keys = [
            (row.article_id, row.last_snapshot_at, _utc_date(row.last_snapshot_at))
            for row in conn.execute(
                select(article.c.article_id, article.c.last_snapshot_at).where(
                    article.c.article_id.in_(ids), article.c.last_snapshot_at > 0
                )
            )
        ]
        if not keys:
            return {}
        rows = conn.execute(
            select(article_snapshot.c.article_id, article_snapshot.c.raw_size).where(
                tuple_(
                    article_snapshot.c.article_id,
                    article_snapshot.c.snapshot_at,
                    article_snapshot.c.snapshot_at_date,
                ).in_(keys)
            )
        )
        return {row.article_id: row.raw_size for row in rows}


#: The proleptic ordinal of 1970-01-01: a day count plus this is a date's ordinal.
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()


def _utc_date(at: int) -> dt.date:
    """The UTC date of a unix time (a snapshot's ``snapshot_at_date``).

    >>> _utc_date(0), _utc_date(1_800_000_000)
    (datetime.date(1970, 1, 1), datetime.date(2027, 1, 15))
    """
    return dt.date.fromordinal(_EPOCH_ORDINAL + at // 86400)


def sort_answers(
    pages: Sequence[FetchedPage],
    failures: Sequence[FailedFetch],
    sites: Mapping[int, Site],
    probes: Mapping[int, Probe],
    last_size: Mapping[int, int] | None = None,
) -> SortedAnswers:
    """Sort one batch: a page or failure that says its article is gone becomes a
    GoneAnswer (never a snapshot, never a move); a 304 a not-modified check.

    ``last_size`` (sizes by article id, from ``last_sizes``) lets a page about the size of
    its article's last snapshot skip the search for a removal notice in its body: most
    re-snapshots are unchanged or changed by noise only (``signs.same_size``)."""
    result = SortedAnswers()
    last_size = last_size or {}
    for page in pages:
        site_record = sites.get(page.site_id)
        evidence = (
            page_sign(page, site_record, probes.get(page.site_id), last_size.get(page.article_id))
            if site_record is not None
            else None
        )
        if evidence:
            result.gone.append(GoneAnswer(page.article_id, page.site_id, page.fetched_at, evidence))
        else:
            result.pages.append(page)
    for failure in failures:
        evidence = status_sign(failure.status)
        if evidence:
            result.gone.append(
                GoneAnswer(failure.article_id, failure.site_id, failure.failed_at, evidence)
            )
        elif failure.status == NOT_MODIFIED:
            result.not_modified.append((failure.article_id, failure.site_id))
        else:
            result.failures.append(failure)
    return result
