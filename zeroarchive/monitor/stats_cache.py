"""The dashboard's numbers: ``site_stats`` and new articles per day for every site,
counted in the background every few seconds, so no page waits on the grouped scans (on a
million articles they take longer than a page may)."""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from zeroarchive.core.schedule import DAY
from zeroarchive.storage.site_stats import SiteStats, SiteStatsConfig, day_start, new_per_day
from zeroarchive.storage.site_stats import site_stats as count_site_stats

logger = logging.getLogger(__name__)


def day_labels(now: int, days: int) -> list[str]:
    """The UTC dates of the last ``days`` days, today last.

    >>> day_labels(1_700_000_000, 3)
    ['2023-11-12', '2023-11-13', '2023-11-14']
    """
    first = day_start(now) - (days - 1) * DAY
    return [
        dt.datetime.fromtimestamp(first + n * DAY, dt.UTC).date().isoformat() for n in range(days)
    ]


#: Days of new articles per day kept with the counts: 0archive's longest window (360 days)
#: and then some, so `hist` answers from them too. Counting 366 days costs about what 28
#: do: the scan reads the same index either way.
HISTORY_DAYS = 366


@dataclass(frozen=True)
class StatsView:
    counted_at: int
    seconds: float  # how long counting took
    sites: list[SiteStats]
    per_day: dict[int, list[int]]  # site id -> new articles per day, len(days) of them
    days: list[str]  # the dates those counts are of, today last
    by_id: dict[int, SiteStats]  # the same stats by site id (GraphQL asks site by site)

    def of_site(self, site_id: int) -> SiteStats | None:
        return self.by_id.get(site_id)

    def recent(self, site_id: int, days: int) -> list[int]:
        """New articles of the site on each of the last ``days`` days (at most len(days))."""
        counts = self.per_day.get(site_id)
        return counts[-days:] if counts is not None else [0] * min(days, len(self.days))


class StatsCache:
    def __init__(
        self,
        engine: Engine,
        config: SiteStatsConfig,
        chart_days: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.config = config
        self.chart_days = chart_days
        self._view: StatsView | None = None
        self._lock = threading.Lock()

    def refresh(self) -> StatsView:
        """Count again now (the background task calls this; so does the first page)."""
        now = int(self.clock())
        started = time.perf_counter()
        sites = count_site_stats(self.engine, now, self.config)
        history = max(self.chart_days, HISTORY_DAYS)
        per_day = new_per_day(self.engine, now, history)
        view = StatsView(
            counted_at=now,
            seconds=time.perf_counter() - started,
            sites=sites,
            per_day=per_day,
            days=day_labels(now, history),
            by_id={row.site_id: row for row in sites},
        )
        self._view = view
        logger.debug("Monitor: site stats counted in %.2f s", view.seconds)
        return view

    def current(self) -> StatsView:
        view = self._view
        if view is not None:
            return view
        with self._lock:
            return self._view or self.refresh()
