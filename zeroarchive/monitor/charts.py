"""Small bar charts of new articles per day, drawn as inline SVG on the server: the pages
need no script and load nothing from elsewhere."""

from __future__ import annotations

from dataclasses import dataclass

WIDTH = 120
HEIGHT = 24


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    count: int
    day: str  # YYYY-MM-DD, for the bar's tooltip


def bars(counts: list[int], days: list[str], width: int = WIDTH, height: int = HEIGHT) -> list[Bar]:
    """One bar per day, scaled to the busiest day; a day with articles gets at least 1 px.

    >>> [(b.x, b.height) for b in bars([0, 2, 4], ["d1", "d2", "d3"], width=30, height=10)]
    [(0.0, 0.0), (10.0, 5.0), (20.0, 10.0)]
    """
    top = max(counts, default=0) or 1
    step = width / max(len(counts), 1)
    drawn = []
    for index, (count, day) in enumerate(zip(counts, days, strict=True)):
        bar_height = max(height * count / top, 1.0) if count else 0.0
        drawn.append(
            Bar(
                x=round(index * step, 2),
                y=round(height - bar_height, 2),
                width=round(max(step - 1, 1), 2),
                height=round(bar_height, 2),
                count=count,
                day=day,
            )
        )
    return drawn
