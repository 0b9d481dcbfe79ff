"""How many list pages of each walk are still to be answered, kept in redis beside the queue.

A walk of distributed mode is named by its site and its ``round`` (the time `scrapy
schedule` queued it, which every request of the walk carries in its meta). Its counter
``zeroarchive:walk:<site>:<round>`` holds the walk's pages that are queued or held by a
worker and not yet answered: `scrapy schedule` sets it when it queues the first pages, a
worker adds the pages it found in the same transaction that queues them, and takes off a
page in the same script that lets go of its held entry, once the page's links and the pages
it found are stored and queued. So the counter reaches zero exactly when the walk's last
page was answered, whichever worker answered it, and a worker killed at any step leaves
its page in its held hash (put back by `scrapy schedule`), never a counter that lies.

A redis flushed or restarted empty loses the counters with the queue; `scrapy schedule`
then makes every walk not done due again (zeroarchive/crawl/dispatch.py), and the pages
of the lost walks that live workers still answer update nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from scrapy.http import Request

from zeroarchive.core.request_meta import META_KEY

WALK_KEY = "zeroarchive:walk:%d:%d"
#: The request kinds that are pages of a walk (a login opens the walk it belongs to).
WALK_KINDS = frozenset({"list", "login"})
#: A counter no page touched for this long is let go: a walk that long silent is lost
#: to redis anyway, and comes due again by its plan.
WALK_TTL = 86_400

# KEYS: the walks' counters; ARGV: how many pages each gains, then 1 when the walks begin
# here (`scrapy schedule`), else 0: a worker never brings back a counter a flush took.
_ADD = """
local begin = ARGV[#ARGV] == '1'
for i, key in ipairs(KEYS) do
  if begin or redis.call('EXISTS', key) == 1 then
    redis.call('INCRBY', key, ARGV[i])
    redis.call('EXPIRE', key, ARGV[#ARGV - 1])
  end
end
return #KEYS
"""
# KEYS[1]: a worker's held hash, then the walks' counters; ARGV: how many pages each walk
# loses, then the held entries let go. Returns the counters that reached zero (deleted).
_FINISH = """
local walks = #KEYS - 1
local entries = {}
for i = walks + 1, #ARGV do entries[#entries + 1] = ARGV[i] end
if #entries > 0 then redis.call('HDEL', KEYS[1], unpack(entries)) end
local ended = {}
for i = 1, walks do
  local key = KEYS[i + 1]
  if redis.call('EXISTS', key) == 1 then
    if redis.call('DECRBY', key, ARGV[i]) <= 0 then
      redis.call('DEL', key)
      ended[#ended + 1] = key
    end
  end
end
return ended
"""


def walk_of(request: Request) -> tuple[int, int] | None:
    """(site id, round) of a request that is a page of a queued walk, else None.

    >>> walk_of(Request("https://a.example/", meta={"zeroarchive": {"site_id": 3,
    ...     "kind": "list", "round": 1800000000}}))
    (3, 1800000000)
    >>> walk_of(Request("https://a.example/1", meta={"zeroarchive": {"site_id": 3,
    ...     "kind": "snapshot", "round": 1800000000}})) is None
    True
    """
    meta = request.meta.get(META_KEY)
    if not isinstance(meta, dict) or meta.get("kind") not in WALK_KINDS:
        return None
    site_id, round_id = meta.get("site_id"), meta.get("round")
    if not isinstance(site_id, int) or not isinstance(round_id, int):
        return None
    return site_id, round_id


def walk_key(walk: tuple[int, int]) -> str:
    """
    >>> walk_key((3, 1800000000))
    'zeroarchive:walk:3:1800000000'
    """
    return WALK_KEY % walk


def key_walk(key: bytes | str) -> tuple[int, int]:
    """The walk a counter's key names.

    >>> key_walk(b"zeroarchive:walk:3:1800000000")
    (3, 1800000000)
    """
    text = key.decode() if isinstance(key, bytes) else key
    site_id, round_id = text.rsplit(":", 2)[1:]
    return int(site_id), int(round_id)


def walk_pages(requests: Iterable[Request]) -> Counter[tuple[int, int]]:
    """How many of ``requests`` are pages of each walk."""
    return Counter(walk for walk in map(walk_of, requests) if walk is not None)


def add_pages(pipe: Any, pages: Counter[tuple[int, int]], *, begin: bool) -> None:
    """Queue on ``pipe`` (the transaction that queues the pages) the counters' increase."""
    if pages:
        walks = sorted(pages)
        pipe.eval(
            _ADD,
            len(walks),
            *map(walk_key, walks),
            *(pages[w] for w in walks),
            WALK_TTL,
            1 if begin else 0,
        )


def finish_pages(
    server: Any, held: str, entries: list[bytes], pages: Counter[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Let go of ``entries`` from the held hash ``held`` and take their pages off their
    walks' counters, atomically; return the walks whose last page this was."""
    walks = sorted(pages)
    ended = server.eval(
        _FINISH,
        1 + len(walks),
        held,
        *map(walk_key, walks),
        *(pages[w] for w in walks),
        *entries,
    )
    return [key_walk(key) for key in ended]


def pages_left(server: Any, walk: tuple[int, int]) -> int | None:
    """The walk's pages not answered yet, None when redis has no counter for it."""
    value = server.get(walk_key(walk))
    return None if value is None else int(value)
