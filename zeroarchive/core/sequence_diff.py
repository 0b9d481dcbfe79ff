"""difflib's opcodes in bounded work. ``SequenceMatcher`` is quadratic or worse where the
two sides share few long runs: one changed line of 20,000 characters took 33-80 CPU s to
mark. Here the common start and end are set aside first (linear: an edit of a few
characters in a long line leaves a short middle), the middle is compared item by item
only when neither side of it is over a limit, and otherwise it is one ``replace``, which
the caller says in a note. The thread's deadline (core/deadline.py) is checked at every
step of the matcher."""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from zeroarchive.core.deadline import check

Opcode = tuple[str, int, int, int, int]


@dataclass(frozen=True)
class Opcodes:
    codes: list[Opcode]
    #: Items of the longer side of the middle, when it was too long to compare (else 0).
    uncompared: int = 0


class _CheckedMatcher(difflib.SequenceMatcher[Any]):
    """A SequenceMatcher that stops at the thread's deadline (each longest-match search
    is at most limit × limit steps)."""

    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> difflib.Match:
        check()
        return super().find_longest_match(alo, ahi, blo, bhi)


def common_ends(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[int, int]:
    """How many items ``a`` and ``b`` share at their start, and then at their end.

    >>> common_ends("abcxyzdef", "abcdef"), common_ends("same", "same"), common_ends("", "x")
    ((3, 3), (4, 0), (0, 0))
    """
    shortest = min(len(a), len(b))
    head = 0
    while head < shortest and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < shortest - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


def _shift(codes: Sequence[Opcode], by: int) -> list[Opcode]:
    return [(tag, i1 + by, i2 + by, j1 + by, j2 + by) for tag, i1, i2, j1, j2 in codes]


def bounded_opcodes(
    a: Sequence[Hashable], b: Sequence[Hashable], limit: int, autojunk: bool = False
) -> Opcodes:
    """The opcodes from ``a`` to ``b``, as ``SequenceMatcher.get_opcodes`` gives them when
    the middle (what is left between the common start and end) is at most ``limit`` items
    a side; one ``replace`` of the middle otherwise.

    >>> bounded_opcodes("林義雄宣布停止禁食", "林義雄宣布結束禁食", 10).codes
    [('equal', 0, 5, 0, 5), ('replace', 5, 7, 5, 7), ('equal', 7, 9, 7, 9)]
    >>> found = bounded_opcodes("a" + "xy" * 20 + "b", "a" + "yx" * 20 + "b", 10)
    >>> found.codes, found.uncompared
    ([('equal', 0, 1, 0, 1), ('replace', 1, 41, 1, 41), ('equal', 41, 42, 41, 42)], 40)
    """
    head, tail = common_ends(a, b)
    a_end, b_end = len(a) - tail, len(b) - tail
    middle_a, middle_b = a[head:a_end], b[head:b_end]
    codes: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    uncompared = 0
    if not middle_a and not middle_b:
        pass
    elif not middle_a:
        codes.append(("insert", head, head, head, b_end))
    elif not middle_b:
        codes.append(("delete", head, a_end, head, head))
    elif max(len(middle_a), len(middle_b)) > limit:
        codes.append(("replace", head, a_end, head, b_end))
        uncompared = max(len(middle_a), len(middle_b))
    else:
        matcher = _CheckedMatcher(None, middle_a, middle_b, autojunk=autojunk)
        codes.extend(_shift(matcher.get_opcodes(), head))
    if tail:
        codes.append(("equal", a_end, len(a), b_end, len(b)))
    return Opcodes(codes, uncompared)
