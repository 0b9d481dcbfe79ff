"""Progress of long work: a bar on a terminal, dated lines otherwise, a clean Ctrl-C."""

from __future__ import annotations

import io

import pytest

from zeroarchive.core.progress import INTERRUPTED_EXIT_CODE, Progress


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_a_line_every_few_seconds_with_rate_and_time_left() -> None:
    stream, clock = io.StringIO(), Clock()
    with Progress("export", total=100, unit="row", stream=stream, log_every=10, clock=clock) as p:
        for _ in range(10):
            clock.now += 1
            p.advance()  # 10 rows in 10 s: one line, at the tenth
        for _ in range(5):
            clock.now += 1
            p.advance()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert "export: 10/100 rows (10.0%), 1.0/s, about 0:01:30 left" in lines[0]
    assert "export: 15 rows done in 0:00:15" in lines[1]


def test_past_its_total_no_time_is_left() -> None:
    clock = Clock()
    progress = Progress("parse", total=2, unit="snapshot", stream=io.StringIO(), clock=clock)
    clock.now += 3
    progress.done = 3  # a run that took in rows that came in while it worked
    assert progress.line().endswith("(150.0%), 1.0/s, about 0:00:00 left")


def test_without_a_total_it_counts_and_gives_the_rate() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress("walk", stream=stream, bar=False, log_every=5, clock=clock)
    clock.now += 10
    progress.advance(40)
    assert "walk: 40 items, 4.0/s" in stream.getvalue()
    assert "left" not in stream.getvalue()


def test_on_a_terminal_a_bar_with_count_rate_and_time_left() -> None:
    stream = io.StringIO()
    with Progress("reindex", total=50, unit="publication", stream=stream, bar=True) as p:
        p.advance(50)
    drawn = stream.getvalue()
    assert "reindex" in drawn and "50/50" in drawn and "publication/s" in drawn


def test_ctrl_c_stops_cleanly_saying_how_to_resume() -> None:
    stream = io.StringIO()
    progress = Progress("import", total=10, stream=stream, bar=False, resume="run it again")
    with pytest.raises(SystemExit) as stopped, progress:
        progress.advance(3)
        raise KeyboardInterrupt
    assert stopped.value.code == INTERRUPTED_EXIT_CODE
    assert "import: stopped by Ctrl-C after 3 items; run it again" in stream.getvalue()
    assert "Traceback" not in stream.getvalue()


def test_an_error_is_not_hidden() -> None:
    with pytest.raises(ValueError), Progress("x", stream=io.StringIO(), bar=False):
        raise ValueError("bad row")
