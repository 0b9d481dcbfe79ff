"""The archive's clock: every timestamp a crawl writes comes from here."""

from __future__ import annotations

import os
import time

FAKE_NOW_ENV = "ZEROARCHIVE_FAKE_NOW"


def now() -> int:
    """Unix seconds, or ``ZEROARCHIVE_FAKE_NOW`` when set.

    The fake clock is for tests only (schedules are replayed over days in seconds); never
    set it on a real archive, every timestamp written would be the fake one.
    """
    fake = os.environ.get(FAKE_NOW_ENV)
    return int(fake) if fake else int(time.time())
