"""Riding out a database that went away: writes are retried with growing pauses until a
deadline, so a restarting MariaDB costs time, not items."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from scrapy.statscollectors import StatsCollector

from zeroarchive.core.services import FIRST_PAUSE, is_unreachable, next_pause, reason

logger = logging.getLogger(__name__)
T = TypeVar("T")


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
            if not is_unreachable(exc) or time.monotonic() + pause > give_up_at:
                raise
            if stats is not None:
                stats.inc_value("zeroarchive/db_retries")
            logger.warning(
                "Database unavailable while writing %s (%s); retrying in %.0f s",
                what,
                reason(exc),
                pause,
            )
            await asyncio.sleep(pause)
            pause = next_pause(pause)
