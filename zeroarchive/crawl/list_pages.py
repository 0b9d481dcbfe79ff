"""The tracked list pages of a crawl: which of a site's pages a walk asks for, with which
conditional headers, and what each answer taught (zeroarchive/crawl/list_intervals.py has
the rules, zeroarchive/storage/list_pages.py the rows).

A tracked page is a list request whose meta names its ``page_kind``: a generic site's pages
(its front page and the list pages its ``following`` leads to), feeds, sitemaps and
robots.txt, and the first page of a PTT board, a Dcard forum, a YouTube feed or a Facebook
page (the pages a chain walks on to after it belong to that page's walk). A page the site
has never shown is walked as soon as it is found; a known page only when it is due, by the
walk plan of its site (``walk_plan``: the same in both modes, where a walk begins). A page's
answer is recorded once the new links it showed are known (the ``articles_stored`` signal
of its links), or with none when no links followed within ``SETTLE_SECONDS``; a 304 at once.
Each time a walk finds a link to a known page (or its config names it), the page is marked
linked (written at most every ``LINKED_EVERY``); the walk plan retires pages neither linked
nor showing new links for a long time (``list_intervals.retiring``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import SQLAlchemyError

from zeroarchive.core.stats import count
from zeroarchive.crawl.list_intervals import (
    KINDS,
    ListPage,
    WalkPlan,
    begun,
    credited,
    plan_walk,
    postpone,
    settle,
    walked,
)
from zeroarchive.sites.record import Site
from zeroarchive.storage.list_pages import ListPageStore

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)
#: An answered page whose links were not stored this long after is recorded with none new.
SETTLE_SECONDS = 30.0
#: Answers are written at most this often (and when the crawl idles or closes).
WRITE_EVERY = 5.0
#: A page's ``linked_at`` is written at most this often (retiring counts in weeks).
LINKED_EVERY = 3600
_FIELDS = {f.name for f in fields(ListPage)}


def page_of(row: dict[str, Any]) -> ListPage:
    return ListPage(**{k: v for k, v in row.items() if k in _FIELDS})


def row_of(page: ListPage) -> dict[str, Any]:
    return {f: getattr(page, f) for f in _FIELDS}


def load_pages(store: ListPageStore, site_id: int) -> dict[str, ListPage]:
    return {row["url"]: page_of(row) for row in store.load(site_id)}


def walk_plan(store: ListPageStore, site: Site, now: int, everything: bool = False) -> WalkPlan:
    """Which of the site's known pages its walk at ``now`` asks for (``everything``: a person
    asked for the site), and which the budget postpones."""
    return plan_walk(
        load_pages(store, site.site_id).values(), site.list_bounds, now, everything=everything
    )


def begin_pages(store: ListPageStore, site: Site, plan: WalkPlan, now: int) -> int:
    """Record the plan's requests, postponements and retired pages; when the site is due
    again: its earliest page, or the plan's interval for a site with no known page yet."""
    bounds = site.list_bounds
    if plan.retired:
        store.delete(site.site_id, plan.retired)
    pages = load_pages(store, site.site_id)
    changed: list[ListPage] = []
    for url in plan.walk:
        if url in pages:
            pages[url] = begun(pages[url], bounds, now)
            changed.append(pages[url])
    for url, until in plan.postponed.items():
        if url in pages:
            pages[url] = postpone(pages[url], until)
            changed.append(pages[url])
    store.save(site.site_id, (row_of(p) for p in changed))
    if not pages:
        return now + bounds.default
    return min(p.next_walk_at for p in pages.values())


def planned_meta(plan: WalkPlan, conditional: bool) -> dict[str, dict[str, Any]]:
    """The plan's pages as request meta carries them (a login's walk goes on with them):
    URL -> kind, depth and the conditional headers (none when ``conditional`` is off)."""
    return {
        url: {
            "kind": page.kind,
            "depth": page.depth,
            "headers": page.validators() if conditional else {},
        }
        for url, page in plan.walk.items()
    }


@dataclass
class _Answer:
    site_id: int
    url: str
    kind: str
    depth: int
    at: int
    not_modified: bool = False
    etag: str | None = None
    last_modified: str | None = None
    new: int = 0
    #: time.monotonic() when answered (how long it has waited for its links).
    clock: float = 0.0
    #: Only new links found later for a page already recorded.
    credit_only: bool = False
    #: The request failed: a walk that showed nothing, so a page that keeps failing backs
    #: off like a quiet one (its validators kept).
    failed: bool = False


class ListPages:
    """One crawl's view of the tracked pages: which are known, and the answers to write."""

    def __init__(
        self,
        store: ListPageStore,
        stats: Callable[[], StatsCollector | None],
        site: Callable[[int], Site | None],
        refresh: float,
    ) -> None:
        self.store = store
        self._stats = stats
        self._site = site
        self.refresh = refresh
        self._known: dict[int, set[str]] = {}
        self._known_at: dict[int, float] = {}
        #: Known pages a walk linked, by site: URL -> when.
        self._linked: dict[int, dict[str, int]] = {}
        #: Answers waiting for their links, by (site id, the answer's URL).
        self._pending: dict[tuple[int, str], _Answer] = {}
        self._ready: list[_Answer] = []
        self._written_at = time.monotonic()

    def known(self, site_id: int) -> set[str]:
        clock = time.monotonic()
        if site_id not in self._known or clock - self._known_at[site_id] >= self.refresh:
            try:
                self._known[site_id] = {row["url"] for row in self.store.load(site_id)}
            except SQLAlchemyError as exc:
                logger.warning(
                    "Could not read the tracked list pages of site #%d: %s", site_id, exc
                )
                self._known.setdefault(site_id, set())
            self._known_at[site_id] = clock
        return self._known[site_id]

    def is_known(self, site_id: int, url: str) -> bool:
        return url in self.known(site_id)

    def linked(self, site_id: int, url: str, at: int) -> None:
        """A walk found a link to a known page (or the site's config names it)."""
        self._linked.setdefault(site_id, {})[url] = at

    def answered(
        self, site_id: int, url: str, answer_url: str, meta: dict[str, Any], headers: Any, at: int
    ) -> None:
        """A tracked page answered in full (its links are about to be stored)."""
        kind = meta.get("page_kind")
        if kind not in KINDS:
            return
        etag = _header(headers, b"ETag")
        modified = _header(headers, b"Last-Modified")
        answer = _Answer(site_id, url, kind, int(meta.get("depth", 0)), at, False, etag, modified)
        answer.clock = time.monotonic()
        self._pending[(site_id, answer_url)] = answer
        self.maybe_write()

    def not_modified(self, site_id: int, url: str, meta: dict[str, Any], at: int) -> None:
        """A tracked page answered 304: a walk that showed nothing new."""
        kind = meta.get("page_kind")
        if kind not in KINDS:
            return
        count(self._stats(), "list_pages/not_modified", site_id)
        self._ready.append(_Answer(site_id, url, kind, int(meta.get("depth", 0)), at, True))
        self.maybe_write()

    def failed(self, site_id: int, url: str, meta: dict[str, Any], at: int) -> None:
        """A known tracked page's request failed (an error, a block page, a 404)."""
        kind = meta.get("page_kind")
        if kind not in KINDS:
            return
        answer = _Answer(site_id, url, kind, int(meta.get("depth", 0)), at, failed=True)
        self._ready.append(answer)
        self.maybe_write()

    def links_stored(self, site_id: int, source_url: str, new: int) -> None:
        """The links a page showed were stored, ``new`` of them new."""
        answer = self._pending.pop((site_id, source_url), None)
        if answer is not None:
            answer.new += new
            self._ready.append(answer)
        elif new:
            credit = _Answer(site_id, source_url, "page", 0, 0, new=new, credit_only=True)
            self._ready.append(credit)
        self.maybe_write()

    def maybe_write(self, force: bool = False) -> None:
        clock = time.monotonic()
        if not force and clock - self._written_at < WRITE_EVERY:
            return
        self._written_at = clock
        for key, answer in list(self._pending.items()):
            if force or clock - answer.clock >= SETTLE_SECONDS:
                self._ready.append(self._pending.pop(key))
        ready, self._ready = self._ready, []
        linked, self._linked = self._linked, {}
        for site_id, marks in linked.items():
            try:
                self.store.mark_linked(site_id, list(marks), max(marks.values()), LINKED_EVERY)
            except SQLAlchemyError as exc:
                logger.warning("Could not mark the linked list pages of site #%d: %s", site_id, exc)
        by_site: dict[int, list[_Answer]] = {}
        for answer in ready:
            by_site.setdefault(answer.site_id, []).append(answer)
        for site_id, answers in by_site.items():
            try:
                self._write(site_id, answers)
            except SQLAlchemyError as exc:
                self._ready.extend(answers)  # written with the next write
                logger.warning(
                    "Could not record the list pages of site #%d (kept): %s", site_id, exc
                )

    def _write(self, site_id: int, answers: Iterable[_Answer]) -> None:
        site = self._site(site_id)
        if site is None:
            return
        bounds = site.list_bounds
        answers = list(answers)
        # All the site's pages: each answered page rests at its share of the site's budget
        # (list_intervals.shares), and one found now, or back at its resting interval, is
        # spread among the others.
        pages = load_pages(self.store, site_id)
        changed: dict[str, ListPage] = {}
        for answer in answers:
            page = changed.get(answer.url) or pages.get(answer.url)
            if answer.credit_only or answer.failed:
                if page is not None and answer.credit_only:
                    changed[answer.url] = credited(page, answer.new)
                elif page is not None:
                    changed[answer.url] = walked(
                        page,
                        bounds,
                        answer.at,
                        0,
                        etag=page.etag,
                        last_modified=page.last_modified,
                        failed=True,
                    )
                continue
            if page is None:
                # Found on this walk: its first request counts on the day's budget too.
                found = ListPage(answer.url, answer.kind, answer.depth, linked_at=answer.at)
                page = begun(found, bounds, answer.at)
                count(self._stats(), "list_pages/found", site_id)
            before = page.interval
            page = walked(
                page,
                bounds,
                answer.at,
                answer.new,
                not_modified=answer.not_modified,
                etag=answer.etag,
                last_modified=answer.last_modified,
            )
            changed[answer.url] = settle(page, before, {**pages, **changed}.values(), bounds)
        if not changed:
            return
        earliest = min(p.next_walk_at for p in changed.values())
        self.store.save(site_id, (row_of(p) for p in changed.values()), earliest)
        self.known(site_id).update(changed)


def _header(headers: Any, name: bytes) -> str | None:
    value = headers.get(name) if headers is not None else None
    if not value:
        return None
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)
