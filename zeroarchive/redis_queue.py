"""The shared request queue of distributed mode: scrapy-redis's Scheduler and priority
queue, adapted to Scrapy 2.19 and made safe for many workers.

Differences from stock scrapy-redis, each for a reason:
- the dupefilter is built with ``build_from_crawler``, so it gets the crawler's request
  fingerprinter (scrapy-redis builds it from settings alone);
- the queue is never flushed when a worker closes (stock scrapy-redis wipes the shared
  queue unless SCHEDULER_PERSIST is set);
- within one priority, the requests of many sites are interleaved (each site's n-th request
  a little behind every site's first): a worker's ZPOPMIN then takes several sites' work
  at once, not the head of one site's backlog, which its delay would serve one by one
  while the worker's other slots stay empty;
- requests are stored as JSON, not pickles: an entry someone else pushed cannot execute
  code, and a malformed one is logged, counted and skipped instead of killing the worker;
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
  queue those articles again.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from typing import Any

import redis
from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Request
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.reactor import CallLaterOnce
from scrapy_redis.queue import PriorityQueue
from scrapy_redis.scheduler import Scheduler

from zeroarchive.redis_client import connect
from zeroarchive.request_meta import META_KEY
from zeroarchive.services import FIRST_PAUSE, next_pause, reason, safe_url

logger = logging.getLogger(__name__)

QUEUE_KEY = "zeroarchive:%(spider)s:requests"
MAX_MALFORMED_PER_POP = 100
# A batch this large is flushed at once rather than at the end of the reactor turn.
MAX_PENDING = 500
# A site's n-th request of a push waits behind the others' first by n / SITE_SPREAD of a
# priority step (never a whole step: priorities still come first).
SITE_SPREAD = 1000


def _tag_bytes(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"__b64__": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return {
            str(k) if not isinstance(k, bytes) else k.decode("latin-1"): _tag_bytes(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_tag_bytes(v) for v in value]
    return value


def _untag_bytes(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__b64__"}:
            return base64.b64decode(value["__b64__"])
        return {k: _untag_bytes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_untag_bytes(v) for v in value]
    return value


class JsonSerializer:
    """Request dicts as JSON, bytes (bodies, header values) as tagged base64.

    >>> JsonSerializer.loads(JsonSerializer.dumps({"url": "http://a/", "body": b"\\xff"}))
    {'url': 'http://a/', 'body': b'\\xff'}
    """

    @staticmethod
    def dumps(obj: dict[str, Any]) -> bytes:
        return json.dumps(_tag_bytes(obj), ensure_ascii=False).encode("utf-8")

    @staticmethod
    def loads(data: bytes) -> dict[str, Any]:
        obj = _untag_bytes(json.loads(data))
        if not isinstance(obj, dict) or "url" not in obj:
            raise ValueError("not a request")
        return obj


class SharedQueue(PriorityQueue):
    """scrapy-redis's priority queue, popped with one ZPOPMIN instead of a MULTI/EXEC of
    ZRANGE and ZREMRANGEBYRANK: the same entries (lowest score, i.e. highest priority),
    just as atomic, in one command instead of four."""

    def pop(self, timeout: int = 0) -> Request | None:
        taken = self.take(1)
        if not taken:
            return None
        return self.decode(taken[0][0])

    def take(self, count: int) -> list[tuple[bytes, float]]:
        """Remove and return up to ``count`` raw entries with their scores, best first."""
        taken: list[tuple[bytes, float]] = self.server.zpopmin(self.key, count)
        return taken

    def push_nth_of_site(self, request: Request, nth: int) -> None:
        """Push ``request``, the ``nth`` (from 0) of its site in this push, behind the
        other sites' requests of the same priority that come before it in theirs."""
        score = -request.priority + min(nth, SITE_SPREAD - 1) / SITE_SPREAD
        self.server.zadd(self.key, {self._encode_request(request): score})

    def put_back(self, entries: Iterable[tuple[bytes, float]]) -> None:
        """Return taken entries under their own scores."""
        mapping = dict(entries)
        if mapping:
            self.server.zadd(self.key, mapping)

    def decode(self, entry: bytes) -> Request:
        request: Request = self._decode_request(entry)
        return request


def request_queue(server: redis.Redis, spider: Spider) -> SharedQueue:
    """The shared queue of one spider (the scheduler process pushes, workers pop)."""
    return SharedQueue(server=server, spider=spider, key=QUEUE_KEY, serializer=JsonSerializer)


def push_requests(server: redis.Redis, spider: Spider, requests: Iterable[Request]) -> int:
    """Queue requests for ``spider``'s workers in one round trip, each site's interleaved
    with the others'; return how many."""
    pipe = server.pipeline(transaction=False)
    queue = request_queue(pipe, spider)
    of_site: Counter[object] = Counter()
    pushed = 0
    for request in requests:
        meta = request.meta.get(META_KEY)
        site = meta.get("site_id") if isinstance(meta, dict) else None
        queue.push_nth_of_site(request, of_site[site])
        of_site[site] += 1
        pushed += 1
    if pushed:
        pipe.execute()
    return pushed


def _requests_seen(dupefilter: Any, requests: Sequence[Request]) -> list[bool]:
    """The dupefilter's verdicts, in one call when it can check a batch."""
    if hasattr(dupefilter, "requests_seen"):
        seen: list[bool] = dupefilter.requests_seen(requests)
        return seen
    return [not r.dont_filter and bool(dupefilter.request_seen(r)) for r in requests]


class RedisScheduler(Scheduler):
    crawler: Crawler
    poll_seconds: float = 0.25

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: list[Request] = []
        # Checked against the dupefilter (so marked seen) but not yet pushed: pushed later
        # without a second check, which would call them duplicates.
        self._checked: list[Request] = []
        self._flush_later = CallLaterOnce(self.flush_pending)
        self.prefetch = 1
        self._taken: deque[tuple[bytes, float]] = deque()
        self._away_since: float | None = None
        self._retry_at = 0.0
        self._pause = FIRST_PAUSE

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
            queue_cls="zeroarchive.redis_queue.SharedQueue",
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
        if hasattr(self.df, "close"):
            self.df.close(reason)

    def enqueue_request(self, request: Request) -> bool:
        """Accept ``request`` into the pending batch; True even for a duplicate, which is
        dropped (with ``request_dropped``) when the batch is checked."""
        self._pending.append(request)
        if len(self._pending) >= MAX_PENDING and self._redis_may_answer():
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
        pushed = push_requests(self.server, self.spider, self._checked)
        self._checked = []
        if self.stats:
            self.stats.inc_value("scheduler/enqueued/redis", pushed)
        return pushed

    # --- Redis away ---------------------------------------------------------------------

    def _redis_may_answer(self) -> bool:
        return self._away_since is None or time.monotonic() >= self._retry_at

    def _redis_lost(self, exc: redis.RedisError) -> None:
        now = time.monotonic()
        held = len(self._pending) + len(self._checked)
        if self._away_since is None:
            self._away_since = now
            self._pause = FIRST_PAUSE
            logger.error(
                "Redis does not answer at %s (%s): this worker waits for it, holding %d "
                "request(s) to queue; next try in %.0f s",
                self._server_url(),
                reason(exc),
                held,
                self._pause,
            )
        else:
            logger.warning(
                "Redis still does not answer (%s) after %.0f s; %d request(s) held; next try "
                "in %.0f s",
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
            self._pause = FIRST_PAUSE

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
        self._taken.clear()

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
        self.flush_pending()
        for _ in range(MAX_MALFORMED_PER_POP):
            if not self._taken:
                if not self._redis_may_answer():
                    return None
                try:
                    self._taken.extend(self.queue.take(self.prefetch))
                except redis.RedisError as exc:
                    self._redis_lost(exc)
                    return None
                self._redis_answered()
                if not self._taken:
                    return None
            entry, _score = self._taken.popleft()
            try:
                request = self.queue.decode(entry)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                logger.error("Skipping a malformed entry in %s: %s", self.queue.key, exc)
                if self.stats:
                    self.stats.inc_value("scheduler/redis/malformed")
                continue
            if self.stats:
                self.stats.inc_value("scheduler/dequeued/redis")
            return request
        return None
