"""Who holds a lease: the ``lease_owner`` of an Article and the ``walk_owner`` of a Site.

An owner is 16 characters (the column's width) whose first letter says what holds the
work, so recovery can tell a lost lease from a live one without asking anyone:

- ``q…`` queued: handed to a shared redis queue by ``scrapy schedule`` (or a worker that
  claimed what it discovered); no process holds it yet. Lost with the queue.
- ``w…`` a distributed worker took it from the queue; alive while its heartbeat key is
  in redis (zeroarchive/distributed/heartbeat.py).
- ``r…`` an embedded run: six hex digits of its host's name, then nine random ones. A
  run that holds a site's run lock knows no other run of its host works on that site.

Older rows hold sixteen hex digits (no letter above ``f``), which none of these match.
"""

from __future__ import annotations

import hashlib
import secrets
import socket

QUEUED = "q"
WORKER = "w"
RUN = "r"
OWNER_LENGTH = 16


def queued_owner() -> str:
    """A fresh owner for one claim whose work goes into a shared queue.

    >>> o = queued_owner(); (o[0], len(o))
    ('q', 16)
    """
    return QUEUED + secrets.token_hex(8)[:15]


def worker_owner() -> str:
    """A fresh id for one distributed worker process (its heartbeat names it).

    >>> o = worker_owner(); (o[0], len(o), o == worker_owner())
    ('w', 16, False)
    """
    return WORKER + secrets.token_hex(8)[:15]


def host_prefix(host: str | None = None) -> str:
    """The owner prefix of embedded runs on ``host`` (default: this machine).

    >>> host_prefix("crawler-1")
    'r069ae8'
    >>> len(host_prefix())
    7
    """
    name = socket.gethostname() if host is None else host
    return RUN + hashlib.sha256(name.encode()).hexdigest()[:6]


def run_owner(host: str | None = None) -> str:
    """A fresh owner for one embedded run (or one of its claims) on ``host``.

    >>> o = run_owner("crawler-1"); (o[:7], len(o))
    ('r069ae8', 16)
    """
    return host_prefix(host) + secrets.token_hex(5)[:9]


def kind_of(owner: str | None) -> str | None:
    """``queued``, ``worker`` or ``run`` for an owner of ours, else None.

    >>> [kind_of(o) for o in ("q" + "0" * 15, "w" + "1" * 15, "r" * 16, "e3b0c44298fc1c14", None)]
    ['queued', 'worker', 'run', None, None]
    """
    if owner is None or len(owner) != OWNER_LENGTH:
        return None
    return {QUEUED: "queued", WORKER: "worker", RUN: "run"}.get(owner[0])


def prefix_range(prefix: str) -> tuple[str, str]:
    """The half-open range of strings that start with ``prefix``, for an index range scan
    (SQLite's LIKE ignores the index and case).

    >>> prefix_range("w")
    ('w', 'x')
    >>> prefix_range("r069ae8")
    ('r069ae8', 'r069ae9')
    """
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)
