"""The crawl's one call into events: a batch of answers sorted into pages to store,
failures to back off, signs of deletion and unchanged watch checks (304)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from zeroarchive.core.items import FailedFetch, FetchedPage
from zeroarchive.events.signs import Probe, page_sign, status_sign
from zeroarchive.events.store import GoneAnswer
from zeroarchive.sites.record import Site

NOT_MODIFIED = 304


@dataclass
class SortedAnswers:
    pages: list[FetchedPage] = field(default_factory=list)
    failures: list[FailedFetch] = field(default_factory=list)
    gone: list[GoneAnswer] = field(default_factory=list)
    #: (article_id, site_id) of watch checks answered 304 Not Modified.
    not_modified: list[tuple[int, int]] = field(default_factory=list)


def sort_answers(
    pages: Sequence[FetchedPage],
    failures: Sequence[FailedFetch],
    sites: Mapping[int, Site],
    probes: Mapping[int, Probe],
) -> SortedAnswers:
    """Sort one batch: a page or failure that says its article is gone becomes a
    GoneAnswer (never a snapshot, never a move); a 304 a not-modified check."""
    result = SortedAnswers()
    for page in pages:
        site_record = sites.get(page.site_id)
        evidence = page_sign(page, site_record, probes.get(page.site_id)) if site_record else None
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
