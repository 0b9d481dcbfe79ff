"""The crawl's one call into events: a batch of answers sorted into pages to store,
failures to back off, signs of deletion and unchanged watch checks (304)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.engine import Engine

from zeroarchive.core.items import FailedFetch, FetchedPage
from zeroarchive.events.signs import Probe, page_sign, status_sign
from zeroarchive.events.store import GoneAnswer
from zeroarchive.sites.record import Site
from zeroarchive.storage.schema import article, article_snapshot
from zeroarchive.storage.snapshots import snapshot_date

NOT_MODIFIED = 304


@dataclass
class SortedAnswers:
    pages: list[FetchedPage] = field(default_factory=list)
    failures: list[FailedFetch] = field(default_factory=list)
    gone: list[GoneAnswer] = field(default_factory=list)
    #: (article_id, site_id) of watch checks answered 304 Not Modified.
    not_modified: list[tuple[int, int]] = field(default_factory=list)


def last_sizes(engine: Engine, article_ids: Iterable[int]) -> dict[int, int]:
    """The size of each article's last snapshot, in bytes: one read per batch on SQLite;
    two on MariaDB (the articles' last snapshot times, then those snapshots by article,
    time and date, so that it looks only in the months' partitions that hold them)."""
    ids = sorted(set(article_ids))
    if not ids:
        return {}
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            # No partitions: one join finds each last snapshot by its key.
            joined = conn.execute(
                select(article.c.article_id, article_snapshot.c.raw_size)
                .join(
                    article_snapshot,
                    (article_snapshot.c.article_id == article.c.article_id)
                    & (article_snapshot.c.snapshot_at == article.c.last_snapshot_at),
                )
                .where(article.c.article_id.in_(ids))
            )
            return {row.article_id: row.raw_size for row in joined}
        last: dict[int, int] = {
            row.article_id: row.last_snapshot_at
            for row in conn.execute(
                select(article.c.article_id, article.c.last_snapshot_at).where(
                    article.c.article_id.in_(ids), article.c.last_snapshot_at > 0
                )
            )
        }
        if not last:
            return {}
        times = set(last.values())
        rows = conn.execute(
            select(
                article_snapshot.c.article_id,
                article_snapshot.c.snapshot_at,
                article_snapshot.c.raw_size,
            ).where(
                article_snapshot.c.article_id.in_(sorted(last)),
                article_snapshot.c.snapshot_at.in_(sorted(times)),
                article_snapshot.c.snapshot_at_date.in_(sorted({snapshot_date(t) for t in times})),
            )
        )
        # The IN lists cross: keep each article's own last snapshot only.
        return {
            row.article_id: row.raw_size for row in rows if last[row.article_id] == row.snapshot_at
        }


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
