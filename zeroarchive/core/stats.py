"""Stats keys: ``zeroarchive/<metric>`` for the run and ``zeroarchive/site/<id>/<metric>``
per site, which the site summary at the end of a crawl reads back."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

PREFIX = "zeroarchive"


def count(
    stats: StatsCollector | None, metric: str, site_id: int | None = None, n: int = 1
) -> None:
    """Add ``n`` to ``zeroarchive/<metric>`` and, with a site, to its per-site twin."""
    if stats is None or n == 0:
        return
    stats.inc_value(f"{PREFIX}/{metric}", n)
    if site_id is not None:
        stats.inc_value(f"{PREFIX}/site/{site_id}/{metric}", n)


def site_metrics(stats: dict[str, object], site_id: int) -> dict[str, int]:
    """The per-site counters of one site, by metric name."""
    prefix = f"{PREFIX}/site/{site_id}/"
    return {
        key[len(prefix) :]: int(value)  # type: ignore[call-overload]
        for key, value in stats.items()
        if key.startswith(prefix)
    }
