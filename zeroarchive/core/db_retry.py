"""Riding out a database that went away: writes are retried with growing pauses until a
deadline, so a restarting MariaDB costs time, not items."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from zeroarchive.core.services import first_pause, is_unreachable, next_pause, reason
from zeroarchive.core.stats import count

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)
T = TypeVar("T")


async def write_with_retry(
    write: Callable[[], T], what: str, deadline_seconds: float, stats: StatsCollector | None
) -> T:
    """Run the blocking ``write`` in a thread; retry transient failures until the deadline."""
    pause = first_pause()
    give_up_at = time.monotonic() + deadline_seconds
    while True:
        try:
            return await asyncio.to_thread(write)
        except Exception as exc:
            _retry_or_raise(exc, what, pause, give_up_at)
            count(stats, "db_retries")
            await asyncio.sleep(pause)
            pause = next_pause(pause)


def call_with_retry(
    write: Callable[[], T], what: str, deadline_seconds: float, on_retry: Callable[[], None]
) -> T:
    """``write_with_retry`` for a caller that may block (a thread, the writer process):
    pauses sleep here; ``on_retry`` is called before each pause."""
    pause = first_pause()
    give_up_at = time.monotonic() + deadline_seconds
    while True:
        try:
            return write()
        except Exception as exc:
            _retry_or_raise(exc, what, pause, give_up_at)
            on_retry()
            time.sleep(pause)
            pause = next_pause(pause)


def _retry_or_raise(exc: Exception, what: str, pause: float, give_up_at: float) -> None:
    """Raise ``exc`` unless it is transient and a pause still fits before the deadline."""
    if not is_unreachable(exc) or time.monotonic() + pause > give_up_at:
        raise exc
    logger.warning(
        "Database unavailable while writing %s (%s); retrying in %g s", what, reason(exc), pause
    )
