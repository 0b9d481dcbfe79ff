"""Riding out a database that went away: writes are retried with growing pauses until a
deadline, so a restarting MariaDB costs time, not items."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from scrapy.statscollectors import StatsCollector
from sqlalchemy.exc import DBAPIError, OperationalError

logger = logging.getLogger(__name__)
T = TypeVar("T")

FIRST_PAUSE = 1.0
MAX_PAUSE = 30.0


def is_transient(exc: BaseException) -> bool:
    """Errors a later attempt may not see: lost or refused connections, lock timeouts."""
    if isinstance(exc, OperationalError):
        return True
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


async def write_with_retry(
    write: Callable[[], T], what: str, deadline_seconds: float, stats: StatsCollector | None
) -> T:
    """Run the blocking ``write`` in a thread; retry transient failures until the deadline."""
    pause = FIRST_PAUSE
    give_up_at = time.monotonic() + deadline_seconds
    while True:
        try:
            return await asyncio.to_thread(write)
        except Exception as exc:
            if not is_transient(exc) or time.monotonic() + pause > give_up_at:
                raise
            if stats is not None:
                stats.inc_value("zeroarchive/db_retries")
            logger.warning(
                "Database unavailable while writing %s (%s); retrying in %.0f s",
                what,
                type(exc.orig if isinstance(exc, DBAPIError) else exc).__name__,
                pause,
            )
            await asyncio.sleep(pause)
            pause = min(pause * 2, MAX_PAUSE)
