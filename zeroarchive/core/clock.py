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


def parse_time(value: str, *, until: bool = False) -> int:
    """A time given on a command line, as unix seconds: unix seconds themselves, a UTC day
    (``YYYY-MM-DD``) or a UTC time (``YYYY-MM-DDTHH:MM[:SS]``, a space for the ``T``, an
    offset such as ``+08:00`` or ``Z`` allowed). With ``until``, a bare day means the end of
    that day (the start of the next), so ``--until 2026-11-29`` takes the whole day in.

    >>> parse_time("1700000000"), parse_time("2023-11-14"), parse_time("2023-11-14", until=True)
    (1700000000, 1699920000, 1700006400)
    >>> parse_time("2023-11-14 22:13"), parse_time("2023-11-15T06:13:20+08:00")
    (1699999980, 1700000000)
    >>> parse_time("14/11/2023")
    Traceback (most recent call last):
    ValueError: a time is unix seconds, YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS] (UTC), not '14/11/2023'
    """
    text = value.strip()
    if text.isascii() and text.isdigit():
        return int(text)
    try:
        if len(text) == 10:
            day = dt.date.fromisoformat(text)
            start = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
            return int(start.timestamp()) + (86400 if until else 0)
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        moment = None
    if moment is None or not text.isascii():
        raise ValueError(
            f"a time is unix seconds, YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS] (UTC), not {value!r}"
        )
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp())
