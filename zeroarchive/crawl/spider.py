"""The base of every source spider: picks the sites to work on, walks their list pages,
then snapshots their due articles. Source spiders only say how to fetch and read pages;
what they serve comes from their record in the source registry (``source``).

Arguments common to every spider: ``-a site=<id or name>`` (one site, even if not due),
``-a mode=discover|snapshot|all`` (default all).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider, DontCloseSpider
from scrapy.http import Request, Response
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from twisted.python.failure import Failure

from zeroarchive.core.clock import now
from zeroarchive.core.db_retry import write_with_retry
from zeroarchive.core.encoding import detect_encoding
from zeroarchive.core.errors import Unreachable, error_kind
from zeroarchive.core.items import ArticleLinks, FailedFetch
from zeroarchive.core.owners import queued_owner, run_owner
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.core.schedule import DAY
from zeroarchive.core.services import is_unreachable, reason, set_pauses_from
from zeroarchive.core.signals import articles_stored, walk_pages_done, work_returned, work_taken
from zeroarchive.core.stats import count, site_metrics
from zeroarchive.crawl.due_work import (
    LinksClaim,
    begin_walk,
    claim_due,
    due_sites,
    plan_walk_of,
    skip_walk,
)
from zeroarchive.crawl.list_intervals import RETIRE_AFTER, WalkPlan
from zeroarchive.crawl.list_pages import ListPages, planned_meta
from zeroarchive.crawl.recovery import HeldWork, give_back_leftovers, take_up_dead_runs
from zeroarchive.crawl.runlock import SiteRunLocks, default_lock_dir
from zeroarchive.distributed.redis_client import redis_url_from
from zeroarchive.events.probe import PROBE_EVERY, probe_url, probes_due, record_probe
from zeroarchive.events.watch import promote_watch
from zeroarchive.sites.record import Site
from zeroarchive.sources import Source
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.articles import DueArticle
from zeroarchive.storage.list_pages import ListPageStore
from zeroarchive.storage.site_stats import record_list_success
from zeroarchive.storage.sites import AmbiguousSite

logger = logging.getLogger(__name__)


def plain_answers(site: Site) -> bool:
    """Whether a snapshot of this site is one plain answer, whose validators (ETag,
    Last-Modified) a conditional watch check may send: not a rendered page, nor a document
    assembled from several answers (a Dcard post's 304 says nothing of its comments), nor
    a page rendered for its screenshot."""
    rendered = site.config.render or site.source.renders or "screenshot" in site.media
    return not (rendered or site.source.assembled)


#: Answers that say an article is not there any more.
GONE_STATUSES = frozenset({404, 410})


def _log_failure(message: str, url: str, kind: str, failure: Failure) -> None:
    """A failed request's line; for a request dropped because its site cannot be reached,
    the site's one line (middlewares/robots.py) has said it already."""
    level = logging.DEBUG if failure.check(Unreachable) else logging.WARNING
    logger.log(level, message, url, kind)


MODES = ("discover", "snapshot", "all")
# How often a long-running worker records that a site's list pages answer (for the
# monitor's "last list ok"): one short UPDATE per site at most this often.
LIST_OK_EVERY = 60


class ArchiveSpider(scrapy.Spider):
    #: This spider's record in the source registry (zeroarchive/sources/).
    source: ClassVar[Source]

    archive: Archive
    locks: SiteRunLocks
    #: The tracked list pages (zeroarchive/crawl/list_pages.py).
    list_pages: ListPages

    def __init__(self, *args: Any, site: str | None = None, mode: str = "all", **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.site_key = site
        self.mode = mode
        self.sites: dict[int, Site] = {}
        #: When each site's record was last read (time.monotonic()).
        self._site_read_at: dict[int, float] = {}
        self.site_refresh = 300.0
        self.due_batch = 500
        self.lease = 3600
        self._snapshots_exhausted = False
        self.distributed = False
        self.idle_limit = 0
        self._idle_since: float | None = None
        self._list_ok_at: dict[int, float] = {}
        #: An embedded run's owner of its walks (zeroarchive/core/owners.py).
        self.run_owner = run_owner()
        #: What a distributed worker holds (None when embedded).
        self.held: HeldWork | None = None
        #: When this process last asked for each site's soft-404 probe (time.monotonic()).
        self._probed: dict[int, float] = {}
        #: List pages' links whose due articles the links pipeline claimed, by id, until
        #: their ``item_scraped`` (kept: an id is not reused while its item lives).
        self._claimed_with_links: dict[int, ArticleLinks] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        source = cls.__dict__.get("source")
        if source is not None and cls.__dict__.get("name") != source.name:
            raise TypeError(f"{cls.__name__}.name must be its source's name {source.name!r}")

    @property
    def site_types(self) -> tuple[str, ...]:
        """The site types this spider crawls."""
        return self.source.type_names

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> ArchiveSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        # A crawl started otherwise than by `scrapy crawl` (`scrapy recheck`) pauses alike.
        set_pauses_from(settings)
        spider.archive = open_archive(settings)
        lock_dir = settings.get("ZEROARCHIVE_LOCK_DIR")
        spider.locks = SiteRunLocks(
            Path(lock_dir) if lock_dir else default_lock_dir(spider.archive.url)
        )
        spider.due_batch = settings.getint("ZEROARCHIVE_DUE_BATCH")
        spider.lease = settings.getint("ZEROARCHIVE_LEASE_SECONDS")
        spider.site_refresh = settings.getfloat("ZEROARCHIVE_SITE_REFRESH_SECONDS")
        # Read here, not from the add-on's settings: Scrapy builds the spider before add-ons.
        spider.distributed = redis_url_from(settings) is not None
        spider.idle_limit = settings.getint("ZEROARCHIVE_IDLE_LIMIT")
        spider.list_pages = ListPages(
            ListPageStore(spider.archive.engine),
            lambda: crawler.stats,
            spider.site,
            spider.site_refresh,
        )
        crawler.signals.connect(spider._on_links_stored, articles_stored)
        crawler.signals.connect(spider._on_idle, signals.spider_idle)
        crawler.signals.connect(spider._on_item_scraped, signals.item_scraped)
        crawler.signals.connect(spider._forget_claimed, signals.item_dropped)
        crawler.signals.connect(spider._forget_claimed, signals.item_error)
        crawler.signals.connect(spider._on_closed, signals.spider_closed)
        crawler.signals.connect(spider._on_activity, signals.request_reached_downloader)
        if spider.distributed:
            spider.held = HeldWork(spider.archive, crawler, spider.lease, now)
            crawler.signals.connect(spider.held.taken, work_taken)
            crawler.signals.connect(spider.held.returned, work_returned)
            crawler.signals.connect(spider.held.walk_pages_done, walk_pages_done)
        return spider

    # --- hooks for source spiders -------------------------------------------------------

    def adhoc_site(self) -> Site | None:
        """A site defined by spider arguments (generic: ``-a url=...``), stored first."""
        return None

    def discovery_requests(self, site: Site) -> Iterable[Request]:
        raise NotImplementedError

    def snapshot_request(self, site: Site, article: DueArticle) -> Request:
        raise NotImplementedError

    def list_page_request(self, site: Site, url: str, kind: str, depth: int) -> Request | None:
        """The request of a known list page its walk asks for that the walk's first requests
        do not make (a followed page, a feed or sitemap found on the site); None when this
        spider walks no such pages."""
        return None

    # --- the walk of a site's tracked list pages (zeroarchive/crawl/list_pages.py) --------

    def walk_requests(self, site: Site, plan: WalkPlan) -> list[Request]:
        """The requests of a walk by its plan: the due known pages (conditional when the
        site's answers are plain), the pages never seen; [] when nothing is to be asked."""
        walk = planned_meta(plan, plain_answers(site))
        return list(self.planned_walk(site, self.discovery_requests(site), walk))

    def planned_walk(
        self, site: Site, entries: Iterable[Request], walk: dict[str, dict[str, Any]]
    ) -> Iterator[Request]:
        """``entries`` (a walk's first requests) as the plan ``walk`` has them, then the
        plan's other pages; a login carries the plan on, to the requests after it."""
        asked: set[str] = set()
        login = False
        for request in entries:
            meta = request.meta.get(META_KEY, {})
            if meta.get("kind") == "login":
                login = True
                request.meta["walk_plan"] = walk
                yield request
                continue
            if meta.get("page_kind") is None:
                yield request
            elif request.url in walk:
                asked.add(request.url)
                self.list_pages.linked(site.site_id, request.url, now())
                for name, value in walk[request.url]["headers"].items():
                    request.headers.setdefault(name, value)
                yield request
            elif self.list_pages.is_known(site.site_id, request.url):
                self.list_pages.linked(site.site_id, request.url, now())
                count(self._stats(), "list_pages/not_due", site.site_id)
            else:
                yield request
        if login:
            return
        for url, entry in walk.items():
            if url in asked:
                continue
            extra = self.list_page_request(site, url, entry["kind"], entry["depth"])
            if extra is None:
                continue
            for name, value in entry["headers"].items():
                extra.headers.setdefault(name, value)
            yield extra

    def unknown_list_page(self, site: Site, url: str) -> bool:
        """Whether a list page a walk found is one to ask for now: never seen before (a
        known one is asked for by its own schedule, not by the pages that link to it)."""
        if self.list_pages.is_known(site.site_id, url):
            self.list_pages.linked(site.site_id, url, now())
            count(self._stats(), "list_pages/not_due", site.site_id)
            return False
        return True

    def _stats(self) -> Any:
        crawler = getattr(self, "crawler", None)
        return crawler.stats if crawler is not None else None

    def _on_links_stored(self, item: Any, new: int) -> None:
        if isinstance(item, ArticleLinks):
            self.list_pages.links_stored(item.site_id, item.source_url, new)

    # --- shared machinery ---------------------------------------------------------------

    def site_of(self, request: Request) -> Site | None:
        """The site a request belongs to."""
        site_id = request.meta.get(META_KEY, {}).get("site_id")
        return None if site_id is None else self.site(int(site_id))

    def site(self, site_id: int) -> Site | None:
        """A site's record: read from the archive on first sight and again once it is
        ``ZEROARCHIVE_SITE_REFRESH_SECONDS`` old, so a worker that runs for weeks follows the
        edits of the sites table (sync_sites, load_sites) without a restart. While the
        database cannot be read, the record at hand serves."""
        cached = self.sites.get(site_id)
        clock = time.monotonic()
        if cached is not None and clock - self._site_read_at.get(site_id, 0.0) < self.site_refresh:
            return cached
        try:
            fresh = self.archive.sites.get(site_id)
        except SQLAlchemyError as exc:
            if cached is None:
                raise
            self._site_read_at[site_id] = clock
            logger.warning(
                "Site #%d could not be read again, its record at hand serves: %s", site_id, exc
            )
            return cached
        if fresh is None:
            return cached
        if cached is not None and fresh != cached:
            logger.info(
                "Site %s (#%d) was edited: its new record applies from now", fresh.name, site_id
            )
            count(self.crawler.stats, "sites_reread_changed", site_id)
        self._keep_site(fresh)
        return fresh

    def _keep_site(self, site: Site) -> None:
        self.sites[site.site_id] = site
        self._site_read_at[site.site_id] = time.monotonic()

    def request_meta(self, site: Site, kind: str, **fields: Any) -> dict[str, Any]:
        return {META_KEY: {"site_id": site.site_id, "kind": kind, **fields}}

    def snapshot_meta(self, site: Site, article: DueArticle) -> dict[str, Any]:
        """Meta of a snapshot request: what its page record and its errback need."""
        return self.request_meta(
            site,
            "snapshot",
            article_id=article.article_id,
            article_url=article.url,
            article_type=article.article_type,
            last_hash=article.last_hash,
        )

    def _choose_sites(self) -> tuple[bool, list[Site], set[int]]:
        """(explicitly asked for, sites, ids of the sites whose list pages to walk): the
        requested site, walked due or not, else every site with due work for this mode."""
        adhoc = self.adhoc_site()
        if adhoc is not None:
            return True, [adhoc], {adhoc.site_id}
        if self.site_key is not None:
            try:
                site = self.archive.sites.get(self.site_key, self.site_types)
            except AmbiguousSite as exc:
                logger.error("%s", exc)
                raise CloseSpider("ambiguous_site") from None
            if site is None:
                logger.error(
                    "No %s site %r: see `scrapy sites` for ids and names",
                    "/".join(self.site_types),
                    self.site_key,
                )
                raise CloseSpider("unknown_site")
            if self.mode != "discover":
                promote_watch(self.archive.engine, [site], now())
            return True, [site], {site.site_id}
        due = due_sites(
            self.archive,
            self.site_types,
            now(),
            lists=self.mode != "snapshot",
            snapshots=self.mode != "discover",
        )
        for _ in due.bad:
            count(self.crawler.stats, "errors/bad_site_config")
        return False, list(due.sites.values()), set(due.walk)

    async def start(self) -> AsyncIterator[Any]:
        if self.mode not in MODES:
            logger.error("Unknown mode %r: use one of %s", self.mode, ", ".join(MODES))
            raise CloseSpider("bad_arguments")
        if self.distributed:
            # Workers only take work from the shared queue; `scrapy schedule` decides when.
            logger.info(
                "Distributed worker: waiting for requests (idle limit: %s)",
                f"{self.idle_limit} s" if self.idle_limit else "none",
            )
            return
        # Before the due work is chosen: what a killed run held is due again at once.
        await asyncio.to_thread(
            take_up_dead_runs, self.archive, self.locks, now(), self.crawler.stats
        )
        explicit, sites, walk = await asyncio.to_thread(self._choose_sites)
        for site in sites:
            if not self.locks.acquire(site.site_id):
                holder = self.locks.holder(site.site_id)
                if explicit:
                    logger.error(
                        "Site %s (#%d) is already being crawled (process %s); exiting",
                        site.name,
                        site.site_id,
                        holder,
                    )
                    raise CloseSpider("site_locked")
                logger.warning(
                    "Skipping site %s (#%d): another run (process %s) is crawling it",
                    site.name,
                    site.site_id,
                    holder,
                )
                count(self.crawler.stats, "sites_skipped_locked", site.site_id)
                continue
            self._keep_site(site)
        for site_id in self.locks.held:
            if site_id not in self.sites:
                self.locks.release(site_id)
        logger.info(
            "Working on %d site(s), mode %s: %s",
            len(self.sites),
            self.mode,
            ", ".join(f"{s.name} (#{s.site_id})" for s in self.sites.values()) or "none due",
        )
        if self.mode == "snapshot":
            return
        for site in list(self.sites.values()):
            if site.site_id not in walk:
                continue
            at = now()
            plan = await asyncio.to_thread(plan_walk_of, self.archive, site, at, explicit)
            requests = self.walk_requests(site, plan)
            self._count_plan(site, plan)
            if not requests:
                await asyncio.to_thread(skip_walk, self.archive, site, at, plan)
                continue
            await asyncio.to_thread(begin_walk, self.archive, site, at, self.run_owner, plan)
            for request in requests:
                yield request

    def _count_plan(self, site: Site, plan: WalkPlan) -> None:
        if plan.retired:
            count(self._stats(), "list_pages/retired", site.site_id, len(plan.retired))
            logger.info(
                "Site %s (#%d): %d list page(s) retired (neither linked nor showing new "
                "links for %d days): %s",
                site.name,
                site.site_id,
                len(plan.retired),
                RETIRE_AFTER // DAY,
                ", ".join(plan.retired[:5]),
            )
        if plan.over_budget:
            count(self._stats(), "list_pages/over_budget", site.site_id, plan.over_budget)
            logger.warning(
                "Site %s (#%d): walked as asked, %d list request(s) beyond its budget of %d "
                "a day (%d used today); its scheduled walks wait for the next UTC day's",
                site.name,
                site.site_id,
                plan.over_budget,
                plan.budget,
                plan.used,
            )
        if plan.postponed:
            count(self._stats(), "list_pages/postponed", site.site_id, len(plan.postponed))
            logger.info(
                "Site %s (#%d): %d list page(s) postponed by its budget of %d requests a day "
                "(%d used today)",
                site.name,
                site.site_id,
                len(plan.postponed),
                plan.budget,
                plan.used,
            )

    def _on_activity(self) -> None:
        self._idle_since = None

    def links_claim(self, item: ArticleLinks) -> LinksClaim | None:
        """Snapshot new articles as soon as their list page is stored, while discovery goes
        on, instead of waiting for the engine's idle check (up to 5 s after the last page)
        or, in distributed mode, for the next round of `scrapy schedule`: the links
        pipeline (pipelines/articles.py) claims the site's due articles in the transaction
        that stores the page's links, and hands them to ``links_claimed``. None: no claim
        (a mode that only walks, or only snapshots what was due at its start)."""
        if self.mode != "all":
            return None
        # One owner for the retries too (see claim_due).
        return LinksClaim(self.due_batch, self.lease, self._owner())

    def links_claimed(self, item: ArticleLinks, due: list[DueArticle]) -> None:
        """The articles claimed with ``item``'s links: their requests go through the
        scheduler, i.e. into the shared queue, for any worker."""
        self._claimed_with_links[id(item)] = item
        self._crawl_due(due)

    def _forget_claimed(self, item: Any) -> None:
        """An item a later pipeline dropped, or failed on, gets no ``item_scraped``."""
        self._claimed_with_links.pop(id(item), None)

    async def _on_item_scraped(self, item: Any) -> None:
        """The claim of ``links_claim`` for list pages whose links were stored otherwise
        than by the links pipeline (a crawl whose ITEM_PIPELINES leave it out)."""
        if self.mode != "all" or not isinstance(item, ArticleLinks):
            return
        if self._claimed_with_links.pop(id(item), None) is item:
            return
        # On MariaDB a claim can deadlock with a batch of snapshot writes; retried like any
        # transient write.
        owner = self._owner()  # one owner for the retries too (see claim_due)
        due = await write_with_retry(
            lambda: claim_due(
                self.archive, [item.site_id], now(), self.due_batch, self.lease, owner
            ),
            "article leases",
            self.crawler.settings.getfloat("ZEROARCHIVE_DB_RETRY_SECONDS"),
            self.crawler.stats,
        )
        self._crawl_due(due)

    def _owner(self) -> str:
        """The owner of a claim: queued when its requests go to the shared queue, else this
        run (a fresh one per claim, so concurrent claims never take each other's rows)."""
        return queued_owner() if self.distributed else run_owner()

    def _crawl_due(self, due: list[DueArticle]) -> None:
        if due:
            logger.info("Snapshotting %d due article(s)", len(due))
        sites = {article.site_id: self.sites[article.site_id] for article in due}
        for request in self.probe_requests(sites.values()):
            self.crawler.engine.crawl(request)
        for article in due:
            self.crawler.engine.crawl(self.due_request(self.sites[article.site_id], article))

    def due_request(self, site: Site, article: DueArticle) -> Request:
        """The snapshot request of a due article; a long-tail watch check is conditional
        (If-None-Match / If-Modified-Since), so an unchanged page answers 304."""
        request = self.snapshot_request(site, article)
        if article.conditional and plain_answers(site):
            for name, value in article.conditional:
                request.headers.setdefault(name, value)
        return request

    def probe_requests(self, sites: Iterable[Site], engine: Engine | None = None) -> list[Request]:
        """The known soft-404 probe (zeroarchive/events/probe.py): a made-up URL of each
        open-web site not probed lately, asked at most once per probe interval by this
        process (the scheduler's spiders have no archive: it passes its ``engine``)."""
        clock = time.monotonic()
        fresh = [
            site
            for site in sites
            if site.source.name == "generic"
            and not site.config.render
            and clock - self._probed.get(site.site_id, -PROBE_EVERY) >= PROBE_EVERY
        ]
        if not fresh:
            return []
        for site in fresh:
            self._probed[site.site_id] = clock
        due = probes_due(engine or self.archive.engine, [site.site_id for site in fresh], now())
        return [
            Request(
                probe_url(site),
                callback=self.probe_answered,
                errback=self.probe_failed,
                meta={**self.request_meta(site, "probe"), "handle_httpstatus_all": True},
                dont_filter=True,
            )
            for site in fresh
            if site.site_id in due
        ]

    async def probe_answered(self, response: Response) -> None:
        site = self.response_site(response)
        content_type = response.headers.get("Content-Type")
        encoding = detect_encoding(
            response.body, content_type.decode("latin-1") if content_type else None
        )
        at = now()
        try:
            await asyncio.to_thread(
                record_probe,
                self.archive.engine,
                site.site_id,
                at,
                response.status,
                response.body,
                encoding,
            )
        except DBAPIError as exc:
            # The probe is asked again with the site's next snapshots; nothing else waits.
            count(self.crawler.stats, "errors/db_write", site.site_id)
            logger.warning("Soft-404 probe of %s not stored: %s", site.name, exc.orig)
            return
        count(self.crawler.stats, "events/probes", site.site_id)

    def probe_failed(self, failure: Failure) -> None:
        kind, _ = error_kind(failure)
        count(self.crawler.stats, "events/probe_failures")
        logger.info("Soft-404 probe %s failed: %s", failure.request.url, kind)  # type: ignore[attr-defined]

    def _on_idle(self) -> None:
        """Hand out the next batch of due articles once discovery is done.

        The claim is one short indexed query per batch, so it runs on the reactor thread.
        A distributed worker instead keeps waiting for its queue, up to its idle limit.
        """
        self.list_pages.maybe_write()
        if self.distributed:
            idle_since = self._idle_since or time.monotonic()
            self._idle_since = idle_since
            if self.idle_limit and time.monotonic() - idle_since >= self.idle_limit:
                logger.info("Idle for %d s: closing", self.idle_limit)
                return
            raise DontCloseSpider
        if self.mode == "discover" or self._snapshots_exhausted or not self.sites:
            return
        try:
            due = claim_due(
                self.archive, list(self.sites), now(), self.due_batch, self.lease, self._owner()
            )
        except DBAPIError as exc:
            if not is_unreachable(exc):
                raise
            # A deadlock with a batch of snapshot writes (MariaDB): claim at the next check.
            count(self.crawler.stats, "db_retries")
            logger.warning("Claiming due articles failed (%s); trying again", exc.orig)
            raise DontCloseSpider from None
        if not due:
            self._snapshots_exhausted = True
            return
        self._crawl_due(due)
        raise DontCloseSpider

    def snapshot_failed(self, failure: Failure) -> Iterable[FailedFetch]:
        """Errback of snapshot requests: count the error and back the article off."""
        request = failure.request  # type: ignore[attr-defined]
        meta = request.meta[META_KEY]
        kind, status = error_kind(failure)
        if status == 304:
            # A watch check's conditional request: unchanged, nothing to store.
            logger.debug("Watch check of %s: not modified", request.url)
            count(self.crawler.stats, "snapshots_not_modified", meta["site_id"])
            yield FailedFetch(meta["article_id"], meta["site_id"], now(), kind, status)
            return
        count(self.crawler.stats, f"errors/{kind}", meta["site_id"])
        count(self.crawler.stats, "snapshot_failures", meta["site_id"])
        if status in GONE_STATUSES:
            # The site answered: the article is gone (what events watch for), not a failed run.
            count(self.crawler.stats, "snapshots_gone", meta["site_id"])
        _log_failure("Snapshot of %s failed: %s", request.url, kind, failure)
        yield FailedFetch(meta["article_id"], meta["site_id"], now(), kind, status)

    def parse_media(self, response: Response) -> Iterator[Any]:
        """Callback of media requests (middlewares/media.py): the item's record, and a
        stylesheet's own items."""
        from zeroarchive.media.fetch import batch_answered, grouped

        request = response.request
        site = None if request is None else self.site_of(request)
        yield from grouped(batch_answered(response, site, self))

    def media_failed(self, failure: Failure) -> Iterator[Any]:
        """Errback of media requests: a record of why the item was not kept."""
        from zeroarchive.media.fetch import batch_failed, grouped

        yield from grouped(batch_failed(failure))

    def list_page_answered(self, site: Site, response: Response | None = None) -> None:
        """What every list page callback calls once the page is what it should be: counts
        it, records its answer when it is a tracked page (``response``), and records for the
        monitor that the site's list pages answer."""
        count(self.crawler.stats, "list_pages", site.site_id)
        if response is not None:
            meta = response.meta.get(META_KEY, {})
            url = (response.meta.get("redirect_urls") or [response.url])[0]
            self.list_pages.answered(site.site_id, url, response.url, meta, response.headers, now())
        clock = time.monotonic()
        if clock - self._list_ok_at.get(site.site_id, -LIST_OK_EVERY) >= LIST_OK_EVERY:
            try:
                record_list_success(self.archive.engine, site.site_id, now())
            except DBAPIError as exc:
                if not is_unreachable(exc):
                    raise
                # A deadlock with another worker's write of the site's row (MariaDB, seen on
                # the distributed bench) or the database away: the page's links go on, its
                # walk too; the monitor's note waits for the site's next list page.
                count(self.crawler.stats, "errors/db_write", site.site_id)
                logger.warning(
                    "Site #%d: could not note that its list pages answer (%s); crawling on",
                    site.site_id,
                    reason(exc),
                )
                return
            self._list_ok_at[site.site_id] = clock

    def list_failed(self, failure: Failure) -> None:
        """Errback of list page requests: count the error; the next round walks again. A 304
        is no error: the page did not change since its validators (nothing new)."""
        request = failure.request  # type: ignore[attr-defined]
        if self.list_not_modified(failure):
            return
        kind, _ = error_kind(failure)
        site_id = request.meta[META_KEY]["site_id"]
        count(self.crawler.stats, f"errors/{kind}", site_id)
        count(self.crawler.stats, "list_page_failures", site_id)
        self.list_pages.failed(site_id, request.url, request.meta[META_KEY], now())
        _log_failure("List page %s failed: %s", request.url, kind, failure)

    def list_not_modified(self, failure: Failure) -> bool:
        """Whether a failed list request was a 304 of a tracked page, recorded as such."""
        _, status = error_kind(failure)
        if status != 304:
            return False
        request = failure.request  # type: ignore[attr-defined]
        meta = request.meta[META_KEY]
        logger.debug("List page %s: not modified", request.url)
        self.list_pages.not_modified(meta["site_id"], request.url, meta, now())
        return True

    def _on_closed(self, reason: str) -> None:
        self.list_pages.maybe_write(force=True)
        if self.locks.held:
            try:
                give_back_leftovers(
                    self.archive, self.locks.held, now(), finished=reason == "finished"
                )
            except SQLAlchemyError as exc:
                logger.warning(
                    "Could not give back this run's unfinished leases (the next run takes "
                    "them up): %s",
                    exc,
                )
        self.locks.release_all()
        stats = self.crawler.stats.get_stats() if self.crawler.stats else {}
        for site in self.sites.values():
            metrics = site_metrics(stats, site.site_id)
            errors = sum(v for k, v in metrics.items() if k.startswith("errors/"))
            logger.info(
                "Site %s (#%d): %d list pages, %d article links (%d new), %d links matched "
                "nothing, %d snapshots saved, %d unchanged, %d moved, %d failed, %d errors",
                site.name,
                site.site_id,
                metrics.get("list_pages", 0),
                metrics.get("articles_found", 0),
                metrics.get("articles_new", 0),
                metrics.get("links_unmatched", 0),
                metrics.get("snapshots_saved", 0),
                metrics.get("snapshots_unchanged", 0),
                metrics.get("canonical_redirects", 0),
                metrics.get("snapshot_failures", 0),
                errors,
            )

    def response_site(self, response: Response) -> Site:
        site = self.site_of(response.request)  # type: ignore[arg-type]
        assert site is not None, f"request without a site: {response.request}"
        return site
