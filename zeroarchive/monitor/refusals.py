"""How the monitor says no: one warning line per refused request, with the client's input
escaped and cut short, at most so many lines a minute (the rest counted, then summed up in
the next line), and a count per reason that the dashboard shows."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable

from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import Scope

logger = logging.getLogger(__name__)
WINDOW_SECONDS = 60.0


def escaped(text: str, limit: int = 120) -> str:
    """``text`` safe for one log line: control characters escaped, cut to ``limit``.

    >>> escaped("/a\\r\\nFAKE LOG LINE")
    '/a\\\\r\\\\nFAKE LOG LINE'
    >>> escaped("x" * 10, limit=4)
    'xxxx…(10 chars)'
    >>> escaped("/sites/林")
    '/sites/林'
    """
    cut = text[:limit]
    out = "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in cut
    )
    return out if len(text) <= limit else f"{out}…({len(text)} chars)"


class Refusals:
    """The log and the counts of refused requests, shared by every part of the app."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self.counts: Counter[int] = Counter()
        self._lock = threading.Lock()
        self._window_start = clock()
        self._logged = 0
        self._unlogged = 0

    @property
    def total(self) -> int:
        """Requests refused (4xx and 503), not answers that carried field errors."""
        return sum(count for status, count in self.counts.items() if status >= 400)

    def note(self, scope: Scope, status: int, why: str, what: str = "refused") -> None:
        """Count one refusal (or an answer of errors) and log it, unless this minute's
        lines are used up."""
        with self._lock:
            self.counts[status] += 1
            now = self.clock()
            if now - self._window_start >= WINDOW_SECONDS:
                self._window_start, self._logged = now, 0
            if self._logged >= self.per_minute:
                self._unlogged += 1
                return
            self._logged += 1
            unlogged, self._unlogged = self._unlogged, 0
        client = scope.get("client") or ("?", 0)
        logger.warning(
            "Monitor: %s %d %s %s from %s: %s%s",
            what,
            status,
            escaped(str(scope.get("method", "")), 10),
            escaped(str(scope.get("path", ""))),
            escaped(str(client[0]), 60),
            escaped(why, 200),
            f" ({unlogged} more refusal(s) not logged)" if unlogged else "",
        )

    def plain(self, scope: Scope, status: int, why: str, **headers: str) -> Response:
        self.note(scope, status, why)
        return PlainTextResponse(why, status_code=status, headers=headers or None)

    def graphql(self, scope: Scope, status: int, why: str, **headers: str) -> Response:
        self.note(scope, status, why)
        return JSONResponse({"errors": [{"message": why}]}, status, headers=headers or None)
