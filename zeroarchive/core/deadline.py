"""A thread's deadline, which long work checks as it goes: the monitor sets one around
each request's work (zeroarchive/monitor/deadline.py, which also cuts its database
statements); the search's snippets and the diffs call ``check()`` in their loops, so a
request's thread ends soon after its 503 instead of running on. A thread without a deadline
(a crawl, a parse run) is never stopped: ``check()`` is then a no-op."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_local = threading.local()


class TimeUp(Exception):
    """The request's time is up (or the server is stopping)."""


def until() -> float | None:
    """This thread's deadline on ``time.monotonic()``'s clock, None without one."""
    return getattr(_local, "until", None)


def expired() -> bool:
    """Whether this thread's deadline has passed (or its server is stopping).

    >>> expired()
    False
    >>> with deadline(0, threading.Event()):
    ...     expired()
    True
    """
    limit = until()
    if limit is None:
        return False
    stopping: threading.Event = _local.stopping
    return stopping.is_set() or time.monotonic() >= limit


def check() -> None:
    """Raise TimeUp when this thread's deadline has passed."""
    if expired():
        raise TimeUp("the request ran out of time")


@contextmanager
def deadline(seconds: float, stopping: threading.Event) -> Iterator[None]:
    """Run the block in this thread with a deadline ``seconds`` from now, or until
    ``stopping`` is set (the server is stopping), whichever comes first."""
    _local.until = time.monotonic() + seconds
    _local.stopping = stopping
    try:
        yield
    finally:
        _local.until = None
