"""The shared request queue of distributed mode: one redis sorted set per spider, which
``scrapy schedule`` and the workers push to and the workers pop from.

Differences from stock scrapy-redis's priority queue, each for a reason:
- within one priority, the requests of many sites are interleaved (each site's n-th request
  a little behind every site's first): a worker's ZPOPMIN then takes several sites' work
  at once, not the head of one site's backlog, which its delay would serve one by one
  while the worker's other slots stay empty;
- requests are stored as JSON, not pickles: an entry someone else pushed cannot execute
  code, and a malformed one is logged, counted and skipped instead of killing the worker;
- a pop is one ZPOPMIN, not a MULTI/EXEC of ZRANGE and ZREMRANGEBYRANK;
- a worker's pop moves what it takes into a hash of its own (``<queue>:held:<owner>``)
  in the same atomic script, so a worker killed before it recorded what it took loses
  nothing: `scrapy schedule` puts a dead worker's held entries back (``requeue_held``).
  The worker empties its hash once the database knows what it holds (a snapshot) or once
  the request is answered and what it found is queued (a list page: in the same script
  that takes the page off its walk's counter, zeroarchive/distributed/walks.py).
"""

from __future__ import annotations

import base64
import json
import logging
from collections import Counter
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

import redis
from scrapy import Spider
from scrapy.http import Request
from scrapy_redis.queue import PriorityQueue

from zeroarchive.core.request_meta import META_KEY
from zeroarchive.distributed.walks import add_pages, finish_pages, walk_pages

logger = logging.getLogger(__name__)

QUEUE_KEY = "zeroarchive:%(spider)s:requests"
HELD_MATCH = "zeroarchive:*:requests:held:*"

# ZPOPMIN and remember what was taken under the taker's name, atomically.
_TAKE = """
local taken = redis.call('ZPOPMIN', KEYS[1], ARGV[1])
for i = 1, #taken, 2 do redis.call('HSET', KEYS[2], taken[i], taken[i + 1]) end
return taken
"""
# Put every entry of a held hash back into its queue under its own score, atomically.
_REQUEUE = """
local held = redis.call('HGETALL', KEYS[1])
for i = 1, #held, 2 do redis.call('ZADD', KEYS[2], held[i + 1], held[i]) end
redis.call('DEL', KEYS[1])
return #held / 2
"""
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

    def take(self, count: int, owner: str | None = None) -> list[tuple[bytes, float]]:
        """Remove and return up to ``count`` raw entries with their scores, best first;
        with ``owner``, kept in its held hash until ``release_held``."""
        if owner is None:
            taken: list[tuple[bytes, float]] = self.server.zpopmin(self.key, count)
            return taken
        flat = self.server.eval(_TAKE, 2, self.key, held_key(self.key, owner), count)
        return [(flat[i], float(flat[i + 1])) for i in range(0, len(flat), 2)]

    def release_held(self, owner: str, entries: Iterable[bytes] | None = None) -> None:
        """``owner`` recorded elsewhere that it holds ``entries`` (None: all of them, or it
        closes having put them back): no longer to be put back if it dies."""
        key = held_key(self.key, owner)
        names = list(entries) if entries is not None else None
        if names is None:
            self.server.delete(key)
        elif names:
            self.server.hdel(key, *names)

    def finish(self, owner: str, requests: dict[bytes, Request]) -> list[tuple[int, int]]:
        """``owner`` answered these taken requests (by entry) and queued what they found:
        out of its held hash, and off their walks' counters, atomically; return the walks
        whose last page they were."""
        if not requests:
            return []
        return finish_pages(
            self.server,
            held_key(self.key, owner),
            list(requests),
            walk_pages(requests.values()),
        )

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

    def encode(self, request: Request) -> bytes:
        """The entry of ``request`` in this queue."""
        return self._encode_request(request)

    def decode(self, entry: bytes) -> Request:
        request: Request = self._decode_request(entry)
        return request

    def _encode_request(self, request: Request) -> bytes:
        """The entry of ``request``, as scrapy-redis encodes it, with its callbacks' names
        looked up among the spider's methods they are (``Request.to_dict`` lists every
        method of the object it is given to find them: the spider's ``inspect.getmembers``
        for each request pushed cost 2 % of a worker's samples)."""
        entry: bytes = self.serializer.dumps(
            request.to_dict(spider=_callbacks_of(self.spider, request))
        )
        return entry


class _Callbacks(SimpleNamespace):
    """The holder ``to_dict`` searches: ``inspect.getmembers`` lists what ``dir`` names,
    and a namespace's ``dir`` names its 26 attributes of ``object`` too (looked up and
    tested one by one for each callback of each request pushed: 1 % of a worker's main
    thread). Here, only the callbacks.

    >>> dir(_Callbacks(parse=print))
    ['parse']
    """

    def __dir__(self) -> list[str]:
        return list(vars(self))


def _callbacks_of(spider: Spider, request: Request) -> Any:
    """An object holding just the spider's methods ``request`` calls back, each under its
    own name (the spider itself when one is not found under its name, so that
    ``to_dict``'s full search, or its error, decides).

    >>> class S:
    ...     def parse(self, response): ...
    >>> spider = S()
    >>> vars(_callbacks_of(spider, Request("http://a.example/", callback=spider.parse)))
    {'parse': <bound method S.parse of ...>}
    """
    holder = _Callbacks()
    func: Any
    for func in (request.callback, request.errback):
        if not hasattr(func, "__func__"):
            continue
        name = func.__name__
        bound = getattr(spider, name, None)
        if getattr(bound, "__func__", None) is not func.__func__:
            return spider
        setattr(holder, name, bound)
    return holder


def held_key(queue_key: str, owner: str) -> str:
    """
    >>> held_key("zeroarchive:generic:requests", "w0123456789abcde")
    'zeroarchive:generic:requests:held:w0123456789abcde'
    """
    return f"{queue_key}:held:{owner}"


def held_keys(server: redis.Redis) -> dict[str, list[str]]:
    """Every worker's held hashes, by owner."""
    found: dict[str, list[str]] = {}
    for raw in server.scan_iter(match=HELD_MATCH, count=1000):
        key = raw.decode() if isinstance(raw, bytes) else str(raw)
        found.setdefault(key.rsplit(":", 1)[1], []).append(key)
    return found


def requeue_held(server: redis.Redis, key: str) -> int:
    """Put what a dead worker held (its hash ``key``) back in its queue; return how many."""
    queue_key = key.split(":held:", 1)[0]
    return int(server.eval(_REQUEUE, 2, key, queue_key))


def request_queue(server: redis.Redis, spider: Spider) -> SharedQueue:
    """The shared queue of one spider (the scheduler process pushes, workers pop)."""
    return SharedQueue(server=server, spider=spider, key=QUEUE_KEY, serializer=JsonSerializer)


def push_requests(
    server: redis.Redis, spider: Spider, requests: Iterable[Request], *, begin_walks: bool = False
) -> int:
    """Queue requests for ``spider``'s workers in one transaction, each site's interleaved
    with the others', and count the walk pages among them on their walks' counters
    (``begin_walks``: these are new walks' first pages); return how many."""
    pushing = list(requests)
    if not pushing:
        return 0
    push_and_hold(server, spider, pushing, (), "", begin_walks=begin_walks)
    return len(pushing)


def push_and_hold(
    server: redis.Redis,
    spider: Spider,
    shared: Iterable[Request],
    held: Iterable[Request],
    owner: str,
    *,
    begin_walks: bool = False,
) -> list[tuple[bytes, float]]:
    """Queue ``shared`` for any worker (as ``push_requests``) and put ``held`` straight
    into ``owner``'s held hash, as if it had pushed and taken them back, in one
    transaction that counts the walk pages of both; return the entries held, with their
    scores, in their order. A held entry is ``owner``'s to answer: put back in the queue
    by `scrapy schedule` if ``owner`` dies first, like any entry it took."""
    sharing, holding = list(shared), list(held)
    pipe = server.pipeline(transaction=True)
    queue = request_queue(pipe, spider)
    of_site: Counter[object] = Counter()
    for request in sharing:
        meta = request.meta.get(META_KEY)
        site = meta.get("site_id") if isinstance(meta, dict) else None
        queue.push_nth_of_site(request, of_site[site])
        of_site[site] += 1
    entries = [(queue.encode(request), float(-request.priority)) for request in holding]
    if entries:
        pipe.hset(held_key(queue.key, owner), mapping=dict(entries))
    add_pages(pipe, walk_pages([*sharing, *holding]), begin=begin_walks)
    pipe.execute()
    return entries
