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
from zeroarchive.storage.schema import article
from zeroarchive.storage.snapshots import content_hash

NOT_MODIFIED = 304


@dataclass
class SortedAnswers:
    pages: list[FetchedPage] = field(default_factory=list)
    failures: list[FailedFetch] = field(default_factory=list)
    gone: list[GoneAnswer] = field(default_factory=list)
    #: (article_id, site_id) of watch checks answered 304 Not Modified.
    not_modified: list[tuple[int, int]] = field(default_factory=list)


def last_hashes(engine: Engine, article_ids: Iterable[int]) -> dict[int, bytes]:
    """The content hash of each article's last snapshot (one read per batch)."""
    ids = sorted(set(article_ids))
    if not ids:
        return {}
    with engine.connect() as conn:
        rows = conn.execute(
            select(article.c.article_id, article.c.last_content_hash).where(
                article.c.article_id.in_(ids), article.c.last_content_hash.is_not(None)
            )
        )
        return {row.article_id: bytes(row.last_content_hash) for row in rows}


def sort_answers(
    pages: Sequence[FetchedPage],
    failures: Sequence[FailedFetch],
    sites: Mapping[int, Site],
    probes: Mapping[int, Probe],
    last: Mapping[int, bytes] | None = None,
) -> SortedAnswers:
    """Sort one batch: a page or failure that says its article is gone becomes a
    GoneAnswer (never a snapshot, never a move); a 304 a not-modified check.

    A page with the same bytes as its article's last snapshot (``last``: hashes by article
    id, from ``last_hashes``) is not looked at: it was no sign of deletion then, and is
    none now. Most re-snapshots are unchanged, so most pages cost one hash."""
    result = SortedAnswers()
    last = last or {}
    for page in pages:
        site_record = sites.get(page.site_id)
        unchanged = last.get(page.article_id) == content_hash(page.body)
        evidence = (
            page_sign(page, site_record, probes.get(page.site_id))
            if site_record is not None and not unchanged
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
