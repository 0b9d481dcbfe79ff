"""The archive's clock: every timestamp a crawl writes comes from here."""

from __future__ import annotations

import datetime as dt
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


def utc_minute(unix: int | None, missing: str = "never") -> str:
    """A unix time as people read it, in UTC to the minute; ``missing`` for 0 or None.

    >>> utc_minute(1_700_000_000), utc_minute(0), utc_minute(None, "-")
    ('2023-11-14 22:13', 'never', '-')
    """
    if not unix:
        return missing
    return dt.datetime.fromtimestamp(unix, dt.UTC).strftime("%Y-%m-%d %H:%M")


def utc_iso(unix: int) -> str:
    """A unix time as ISO 8601 in UTC to the second (WARC-Date, Atom).

    >>> utc_iso(1736496000)
    '2025-01-10T08:00:00Z'
    """
    return dt.datetime.fromtimestamp(unix, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
