"""Progress of long work: a bar on a terminal, a log line every few seconds otherwise.

Every command that may run for more than a few seconds (parsing, exports, imports, WARC,
rotation, reindexing) counts its work through one ``Progress``::

    with Progress("parse", total=pending, unit="snapshot", resume="run it again") as progress:
        for item in work:
            ...
            progress.advance()

On a terminal it draws a tqdm bar (count, rate, time left); otherwise, say under cron or
scrapyd, it writes one dated line every ``log_every`` seconds and one at the end to the same
stream (stderr by default: commands that start no crawler have no log handler of Scrapy's).
Ctrl-C stops the work between two items: the bar is closed, one line says how far it got
and how to resume, and the command exits with status 130 (no traceback).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, TextIO, TypeVar

if TYPE_CHECKING:
    from tqdm import tqdm

INTERRUPTED_EXIT_CODE = 130
T = TypeVar("T")


def _duration(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


class Progress:
    """Counts done items of one piece of work and shows it as it goes."""

    def __init__(
        self,
        what: str,
        total: int | None = None,
        *,
        unit: str = "item",
        resume: str | None = None,
        stream: TextIO | None = None,
        bar: bool | None = None,
        log_every: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what = what
        self.total = total
        self.unit = unit
        self.resume = resume
        self.done = 0
        self._log_every = log_every
        self._clock = clock
        self._started = clock()
        self._last_log = self._started
        stream = stream if stream is not None else sys.stderr
        self._stream = stream
        if bar is None:
            bar = bool(getattr(stream, "isatty", lambda: False)())
        self._bar: tqdm | None = None
        if bar:
            # Imported here: every command module imports this one, and Scrapy imports every
            # command module when any command starts, crawls included.
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                desc=what,
                unit=f" {unit}",
                file=stream,
                dynamic_ncols=True,
                mininterval=0.5,
            )

    def set_total(self, total: int | None) -> None:
        """The total, once known (a count that comes after the work began)."""
        self.total = total
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def advance(self, count: int = 1) -> None:
        self.done += count
        if self._bar is not None:
            self._bar.update(count)
            return
        now = self._clock()
        if now - self._last_log >= self._log_every:
            self._last_log = now
            self._say(self.line(now))

    def track(self, items: Iterable[T]) -> Iterator[T]:
        """``items`` as they come, each counted once it has been handled."""
        for item in items:
            yield item
            self.advance()

    def line(self, now: float | None = None) -> str:
        """One line: count, share of the total, rate and time left."""
        now = self._clock() if now is None else now
        elapsed = max(now - self._started, 1e-9)
        rate = self.done / elapsed
        count = f"{self.done:,}"
        if self.total:
            share = 100.0 * self.done / self.total
            count = f"{self.done:,}/{self.total:,} {self.unit}s ({share:.1f}%)"
            # Past the total (a parse run that took in new rows as it went): no time left.
            left = max(self.total - self.done, 0) / rate if rate > 0 else None
            eta = f", about {_duration(left)} left" if left is not None else ""
        else:
            count = f"{count} {self.unit}s"
            eta = ""
        return f"{self.what}: {count}, {rate:,.1f}/s{eta}"

    def _say(self, message: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        print(f"{stamp} {message}", file=self._stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
        elapsed = self._clock() - self._started
        if kind is KeyboardInterrupt:
            message = f"{self.what}: stopped by Ctrl-C after {self.done:,} {self.unit}s"
            if self.resume:
                message += f"; {self.resume}"
            self._say(message)
            raise SystemExit(INTERRUPTED_EXIT_CODE) from None
        if kind is None:
            self._say(f"{self.what}: {self.done:,} {self.unit}s done in {_duration(elapsed)}")
