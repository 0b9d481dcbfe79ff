"""The worker's scheduler in distributed mode: scrapy-redis's Scheduler, adapted to Scrapy
2.19 and made safe for many workers sharing the queue of zeroarchive/distributed/queue.py.

Differences from stock scrapy-redis, each for a reason:
- the dupefilter is built with ``build_from_crawler``, so it gets the crawler's request
  fingerprinter (scrapy-redis builds it from settings alone);
- the queue is never flushed when a worker closes (stock scrapy-redis wipes the shared
  queue unless SCHEDULER_PERSIST is set);
- an idle worker looks at the queue every ``ZEROARCHIVE_QUEUE_POLL_SECONDS``: Scrapy's
  engine only asks an empty scheduler again on its 5 s heartbeat, so work pushed by
  ``scrapy schedule`` or another worker would wait up to 5 s on every idle worker;
- a worker takes up to ``ZEROARCHIVE_QUEUE_PREFETCH`` entries per ZPOPMIN and hands
  them to its engine one by one, instead of one round trip per request; a worker that
  closes puts back what it took and did not start;
- requests the engine schedules are checked and pushed in batches: every request found
  while the reactor is busy (the links of a page, say) is checked against the dupefilter
  in one round trip and pushed in one more, at the end of that reactor turn or before
  the next pop, instead of two round trips per request. A duplicate still fires
  ``request_dropped``;
- a worker rides out a Redis that stops answering: it logs once, keeps what it has not
  pushed, tries again with growing pauses and stays open (idle, not finished) meanwhile;
  what it still holds when it closes is logged and counted, and the database's leases
  queue those articles again;
- a worker beats a heartbeat (zeroarchive/distributed/heartbeat.py) under its own lease
  owner and says what it takes from the queue and puts back (``work_taken``,
  ``work_returned``), so the spider can record what it holds and `scrapy schedule` can
  take back at once what a dead worker held.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import deque
from collections.abc import Container, Sequence
from typing import Any

import redis
from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Request
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.reactor import CallLaterOnce
from scrapy_redis.scheduler import Scheduler

from zeroarchive.core.owners import worker_owner
from zeroarchive.core.request_meta import META_KEY, archive_meta
from zeroarchive.core.services import first_pause, next_pause, reason, safe_url
from zeroarchive.core.signals import walk_pages_done, work_returned, work_taken
from zeroarchive.distributed.heartbeat import Heartbeat
from zeroarchive.distributed.queue import (
    QUEUE_KEY,
    JsonSerializer,
    push_and_hold,
    request_queue,
)
from zeroarchive.distributed.redis_client import connect
from zeroarchive.distributed.walks import walk_of, walk_pages

logger = logging.getLogger(__name__)

MAX_MALFORMED_PER_POP = 100
# A batch this large is flushed at once rather than at the end of the reactor turn.
MAX_PENDING = 500


def _requests_seen(dupefilter: Any, requests: Sequence[Request]) -> list[bool]:
    """The dupefilter's verdicts, in one call when it can check a batch."""
    if hasattr(dupefilter, "requests_seen"):
        seen: list[bool] = dupefilter.requests_seen(requests)
        return seen
    return [not r.dont_filter and bool(dupefilter.request_seen(r)) for r in requests]


def _in_progress(engine: Any) -> Container[Request]:
    """The requests the engine has not finished with: downloading, or in their callback
    and the pipelines of their items (Scrapy's slot, else the downloader's and scraper's
    own sets)."""
    slot = getattr(engine, "_slot", None)
    if slot is not None and isinstance(getattr(slot, "inprogress", None), set):
        return slot.inprogress
    scraper = getattr(getattr(engine, "scraper", None), "slot", None)
    return set(engine.downloader.active) | set(getattr(scraper, "active", ()))


def _answers_pipeline(engine: Any) -> Any:
    """The item pipeline that writes the crawl's answers in batches and says which are
    written (pipelines/snapshots.py), or None."""
    scraper = getattr(engine, "scraper", None)
    pipelines = getattr(getattr(scraper, "itemproc", None), "middlewares", ())
    return next((p for p in pipelines if hasattr(p, "written_mark")), None)


class RedisScheduler(Scheduler):
    crawler: Crawler
    poll_seconds: float = 0.1

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: list[Request] = []
        # Checked against the dupefilter (so marked seen) but not yet pushed: pushed later
        # without a second check, which would call them duplicates.
        self._checked: list[Request] = []
        self._flush_later = CallLaterOnce(self.flush_pending)
        self.prefetch = 1
        self._taken: deque[tuple[bytes, float]] = deque()
        # Taken requests already decoded and announced, by entry, until handed out.
        self._decoded: dict[bytes, Request] = {}
        # Entries to release once their request has left the downloader (not recorded by
        # the spider), until handed out.
        self._unrecorded: set[bytes] = set()
        # Handed out, with their held entries: released once the downloader is done with
        # them, whichever way (see _release_finished).
        self._downloading: list[tuple[Request, bytes]] = []
        # Answered media requests (the pipeline's mark, entry, request): held until the
        # snapshot batch with their items is written (see _release_written).
        self._unwritten: list[tuple[int, bytes, Request]] = []
        self.owner = worker_owner()
        self.heartbeat: Heartbeat | None = None
        self._away_since: float | None = None
        self._retry_at = 0.0
        self._pause = first_pause()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisScheduler:
        settings = crawler.settings
        server = connect(settings)
        server.ping()
        dupefilter = build_from_crawler(load_object(settings["DUPEFILTER_CLASS"]), crawler)
        scheduler = cls(
            server=server,
            persist=True,
            queue_key=QUEUE_KEY,
            queue_cls="zeroarchive.distributed.queue.SharedQueue",
            dupefilter=dupefilter,
            serializer=JsonSerializer,
        )
        scheduler.crawler = crawler
        scheduler.stats = crawler.stats
        scheduler.poll_seconds = settings.getfloat("ZEROARCHIVE_QUEUE_POLL_SECONDS")
        if scheduler.poll_seconds <= 0:
            raise ValueError(
                f"ZEROARCHIVE_QUEUE_POLL_SECONDS must be positive, not {scheduler.poll_seconds}"
            )
        scheduler.heartbeat = Heartbeat(
            connect(settings),
            scheduler.owner,
            settings.getfloat("ZEROARCHIVE_HEARTBEAT_SECONDS"),
            crawler.spider.name if crawler.spider is not None else "?",
        )
        scheduler.prefetch = settings.getint("ZEROARCHIVE_QUEUE_PREFETCH")
        if scheduler.prefetch < 1:
            raise ValueError(
                f"ZEROARCHIVE_QUEUE_PREFETCH must be at least 1, not {scheduler.prefetch}"
            )
        return scheduler

    def open(self, spider: Spider) -> None:
        self.spider = spider
        # The engine starts its heartbeat after opening the scheduler, with this interval;
        # set on this engine only. An empty pop is one short redis round trip.
        engine = self.crawler.engine
        if engine is not None and hasattr(engine, "_SLOT_HEARTBEAT_INTERVAL"):
            engine._SLOT_HEARTBEAT_INTERVAL = self.poll_seconds
        else:
            logger.warning(
                "This Scrapy has no engine heartbeat setting: idle workers see new requests "
                "only every 5 s"
            )
        self.queue = request_queue(self.server, spider)
        if self.heartbeat is not None:
            # Before the first take: what this worker takes is never held by no one alive.
            self.heartbeat.start()
        if hasattr(self.df, "open"):
            self.df.open()
        logger.info(
            "Sharing request queue %s (%d waiting) at %s",
            self.queue.key,
            len(self.queue),
            self.server.connection_pool.connection_kwargs.get("host", "?"),
        )

    def close(self, reason: str) -> None:
        # Never flush the queue: it belongs to every worker, not to this one.
        self._flush_later.cancel()
        self._retry_at = 0.0  # one last try, even while Redis is away
        self.flush_pending()
        unpushed = len(self._pending) + len(self._checked)
        if unpushed:
            logger.error(
                "Closing with %d request(s) not queued in %s: Redis does not answer (list "
                "pages come due again next round, leased articles when their lease ends)",
                unpushed,
                self.queue.key,
            )
            if self.stats:
                self.stats.inc_value("scheduler/redis/unpushed", unpushed)
        self._put_back_taken()
        # The engine closes once nothing is in progress: what it handed out is answered.
        with contextlib.suppress(redis.RedisError):
            self._release_finished(closing=True)
        # What it took is back in the queue or done (or leased in the database, which
        # takes it back once this worker's heartbeat is gone).
        self._downloading.clear()
        self._unrecorded.clear()
        with contextlib.suppress(redis.RedisError):
            self.queue.release_held(self.owner)
        if hasattr(self.df, "close"):
            self.df.close(reason)
        if self.heartbeat is not None:
            self.heartbeat.stop()

    def enqueue_request(self, request: Request) -> bool:
        """Accept ``request`` into the pending batch; True even for a duplicate, which is
        dropped (with ``request_dropped``) when the batch is checked. A walk's page is
        queued at once, not at the end of the reactor's turn: the next page of a walk is
        found only when this one is answered, so the walk's pages are its critical path."""
        self._pending.append(request)
        if (
            len(self._pending) >= MAX_PENDING or walk_of(request) is not None
        ) and self._redis_may_answer():
            self.flush_pending()
        else:
            self._flush_later.schedule()
        return True

    def flush_pending(self) -> int:
        """Check the pending batch in one round trip, push the new ones in one more;
        return how many were pushed. While Redis is away they wait for the next try."""
        if not self._redis_may_answer():
            return 0
        try:
            pushed = self._check_and_push()
        except redis.RedisError as exc:
            self._redis_lost(exc)
            return 0
        self._redis_answered()
        return pushed

    def _check_and_push(self) -> int:
        if self._pending:
            seen = _requests_seen(self.df, self._pending)
            batch, self._pending = self._pending, []
            for request, duplicate in zip(batch, seen, strict=True):
                if duplicate:
                    self.df.log(request, self.spider)
                    self.crawler.signals.send_catch_log(
                        signals.request_dropped, request=request, spider=self.spider
                    )
                else:
                    self._checked.append(request)
        if not self._checked:
            return 0
        shared, held = self._keep_walk_pages(self._checked)
        entries = push_and_hold(self.server, self.spider, shared, held, self.owner)
        pushed = len(self._checked)
        self._checked = []
        if self.stats:
            self.stats.inc_value("scheduler/enqueued/redis", pushed)
            if entries:
                self.stats.inc_value("scheduler/kept/redis", len(entries))
        self._hand_out_first(entries, held)
        return pushed

    def _keep_walk_pages(self, requests: list[Request]) -> tuple[list[Request], list[Request]]:
        """(to queue for any worker, to keep): the walk pages this worker found, up to its
        prefetch, are its own next requests, handed out before what it took from the
        queue. A walk's next page is known only once this one is answered: through the
        shared queue it waited for the end of the reactor's turn, for a worker to take it
        and for that worker's prefetched requests to go first (0.05-0.2 s a page of a
        walk at load 10, where each page brings 50 snapshots)."""
        room = self.prefetch
        shared: list[Request] = []
        held: list[Request] = []
        for request in requests:
            if room and walk_of(request) is not None:
                held.append(request)
                room -= 1
            else:
                shared.append(request)
        return shared, held

    def _hand_out_first(self, entries: list[tuple[bytes, float]], held: list[Request]) -> None:
        """Put the requests this worker kept (held in redis as ``entries``) at the head of
        what it hands out, and say that it holds them, as for what it takes."""
        if not held:
            return
        for (entry, score), request in zip(reversed(entries), reversed(held), strict=True):
            self._taken.appendleft((entry, score))
            self._decoded[entry] = request
            self._unrecorded.add(entry)
        self.crawler.signals.send_catch_log(
            work_taken, requests=held, owner=self.owner, confirm=lambda: None
        )

    # --- Redis away ---------------------------------------------------------------------

    def _redis_may_answer(self) -> bool:
        return self._away_since is None or time.monotonic() >= self._retry_at

    def _redis_lost(self, exc: redis.RedisError) -> None:
        now = time.monotonic()
        held = len(self._pending) + len(self._checked)
        if self._away_since is None:
            self._away_since = now
            self._pause = first_pause()
            logger.error(
                "Redis does not answer at %s (%s): this worker waits for it, holding %d "
                "request(s) to queue; next try in %g s",
                self._server_url(),
                reason(exc),
                held,
                self._pause,
            )
        else:
            logger.warning(
                "Redis still does not answer (%s) after %.0f s; %d request(s) held; next try "
                "in %g s",
                reason(exc),
                now - self._away_since,
                held,
                self._pause,
            )
        if self.stats:
            self.stats.inc_value("scheduler/redis/errors")
        self._retry_at = now + self._pause
        self._pause = next_pause(self._pause)

    def _redis_answered(self) -> None:
        if self._away_since is not None:
            logger.info("Redis answers again after %.0f s", time.monotonic() - self._away_since)
            self._away_since = None
            self._pause = first_pause()

    def _server_url(self) -> str:
        kwargs = self.server.connection_pool.connection_kwargs
        url = f"redis://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"
        return safe_url(url)

    def _put_back_taken(self) -> None:
        if not self._taken:
            return
        try:
            self.queue.put_back(self._taken)
        except redis.RedisError as exc:
            logger.error(
                "Could not put %d taken request(s) back in %s (the leases queue their "
                "articles again): %s",
                len(self._taken),
                self.queue.key,
                exc,
            )
        else:
            logger.info("Put %d taken request(s) back in %s", len(self._taken), self.queue.key)
            returned = [self._decoded[e] for e, _ in self._taken if e in self._decoded]
            if returned:
                self.crawler.signals.send_catch_log(
                    work_returned, requests=returned, owner=self.owner
                )
        self._taken.clear()
        self._decoded.clear()

    def _announce_taken(self) -> None:
        """Decode what was just taken (skipping malformed entries, logged and counted) and
        say that this worker holds it.

        Each entry stays in this worker's held hash until a kill no longer loses it: a
        snapshot once the spider recorded it in the database (``work_taken``'s
        ``confirm``); any other request, a walk's list pages above all, once it was
        answered and what it found is queued (``_release_finished``).
        """
        announced: list[Request] = []
        snapshots: list[bytes] = []
        malformed: list[bytes] = []
        for entry, _score in self._taken:
            try:
                request = self.queue.decode(entry)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                logger.error("Skipping a malformed entry in %s: %s", self.queue.key, exc)
                if self.stats:
                    self.stats.inc_value("scheduler/redis/malformed")
                malformed.append(entry)
                continue
            self._decoded[entry] = request
            meta = request.meta.get(META_KEY)
            if not isinstance(meta, dict):
                meta = {}
            if meta.get("kind") == "snapshot":
                announced.append(request)
                snapshots.append(entry)
                continue
            if walk_of(request) is not None:
                announced.append(request)
            self._unrecorded.add(entry)
        self._release_held(malformed)
        if not announced:
            return
        confirmed: list[bool] = []

        def confirm() -> None:
            if not confirmed:
                confirmed.append(True)
                self._release_held(snapshots)

        receivers = self.crawler.signals.send_catch_log(
            work_taken, requests=announced, owner=self.owner, confirm=confirm
        )
        if not receivers:
            confirm()  # nobody records them: nothing to wait for

    def _release_finished(self, *, closing: bool = False) -> None:
        """Let go of the entries of requests this worker is done with, and take the walk
        pages among them off their walks' counters.

        Done means answered to the end: the engine keeps a request in progress from its
        download through its callback and the pipelines of what it yielded (a walk's next
        page is found there), however it ends (downloaded, dropped by a middleware,
        answered by one). Only once what they found is queued: a kill before that finds
        them still held, and they are put back.
        """
        engine = self.crawler.engine
        if engine is None or self._pending or self._checked:
            return
        self._release_written(engine, closing=closing)
        if not self._downloading:
            return
        busy = set() if closing else _in_progress(engine)
        finished = {entry: request for request, entry in self._downloading if request not in busy}
        if not finished:
            return
        pipeline = None if closing else _answers_pipeline(engine)
        if pipeline is not None:
            # A media item's record is in the pipeline's batch until that batch is
            # written: its entry stays held until then, so that a kill takes it back.
            mark = pipeline.written_mark()
            for entry, request in list(finished.items()):
                if archive_meta(request).get("kind") == "media":
                    self._unwritten.append((mark, entry, request))
                    del finished[entry]
            parked = {entry for _, entry, _ in self._unwritten}
            self._downloading = [(r, e) for r, e in self._downloading if e not in parked]
            if not finished:
                return
        try:
            ended = self.queue.finish(self.owner, finished)
        except redis.RedisError as exc:
            # Left held and counted: put back only if this worker dies.
            logger.debug("Could not let go of answered entries: %s", exc)
            return
        self._downloading = [(r, e) for r, e in self._downloading if e not in finished]
        walks = walk_pages(finished.values())
        if walks:
            self.crawler.signals.send_catch_log(
                walk_pages_done, pages=walks, ended=ended, owner=self.owner
            )

    def _release_written(self, engine: Any, *, closing: bool) -> None:
        """Let go of the answered media requests whose items' batch is written (all of
        them when closing: the pipeline closed first, writing everything)."""
        if not self._unwritten:
            return
        pipeline = None if closing else _answers_pipeline(engine)
        written = pipeline.batches_written if pipeline is not None else None
        ready = {
            entry: request
            for mark, entry, request in self._unwritten
            if written is None or mark <= written
        }
        if not ready:
            return
        try:
            self.queue.finish(self.owner, ready)
        except redis.RedisError as exc:
            logger.debug("Could not let go of answered media requests: %s", exc)
            return
        self._unwritten = [u for u in self._unwritten if u[1] not in ready]

    def _release_held(self, entries: list[bytes]) -> None:
        """A kill no longer loses these entries: out of the held hash."""
        if not entries:
            return
        try:
            self.queue.release_held(self.owner, entries)
        except redis.RedisError as exc:
            # Left held: put back only if this worker dies, and deleted when it closes.
            logger.debug("Could not release held entries: %s", exc)

    def has_pending_requests(self) -> bool:
        if self._pending or self._checked or self._taken or self._away_since is not None:
            # While Redis is away the worker stays open: the shared queue may hold work.
            return True
        try:
            return len(self.queue) > 0
        except redis.RedisError as exc:
            self._redis_lost(exc)
            return True

    def next_request(self) -> Request | None:
        # After the push: a request a middleware returned in place of one (a retry) is
        # queued before the entry it replaces is released.
        self.flush_pending()
        self._release_finished()
        for _ in range(MAX_MALFORMED_PER_POP):
            if not self._taken:
                if not self._redis_may_answer():
                    return None
                try:
                    self._taken.extend(self.queue.take(self.prefetch, self.owner))
                except redis.RedisError as exc:
                    self._redis_lost(exc)
                    return None
                self._redis_answered()
                if not self._taken:
                    return None
                self._announce_taken()
            entry, _score = self._taken.popleft()
            request = self._decoded.pop(entry, None)
            if request is None:
                continue
            if entry in self._unrecorded:
                self._unrecorded.discard(entry)
                self._downloading.append((request, entry))
            if self.stats:
                self.stats.inc_value("scheduler/dequeued/redis")
            return request
        return None
