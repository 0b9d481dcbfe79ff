"""Two versions of a publication's text side by side, line against line; within a changed
line, the characters that changed are marked (an edit of two characters in a paragraph of
three hundred is otherwise hard to see).

The work is bounded whatever the texts (core/sequence_diff.py): lines and characters are
compared past their common start and end only, a middle over ``MAX_LINES`` lines is paired
in order without alignment, a changed middle over ``MAX_LINE_CHARS`` characters is marked
whole, and characters are compared in ``CHAR_BUDGET`` characters of changed lines at most
(past it, changed lines are marked whole). Each shortcut is said in a note above the
diff."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import zip_longest

from zeroarchive.core.deadline import check
from zeroarchive.core.sequence_diff import bounded_opcodes

Parts = tuple[tuple[str, bool], ...]  # (text, changed) runs of a line

#: Lines of either text's changed middle aligned line by line (more: paired in order).
MAX_LINES = 2_000
#: Characters of a changed line's middle compared character by character (more: whole).
MAX_LINE_CHARS = 1_000
#: Characters of changed lines compared character by character in one diff, all lines.
CHAR_BUDGET = 10_000


@dataclass(frozen=True)
class DiffRow:
    kind: str  # "equal", "delete", "insert" or "replace"
    old_number: int | None
    old: Parts
    new_number: int | None
    new: Parts


@dataclass
class Diff:
    rows: list[DiffRow] = field(default_factory=list)
    #: What was not compared in full, for the reader.
    notes: list[str] = field(default_factory=list)


def changed_parts(old: str, new: str, limit: int = MAX_LINE_CHARS) -> tuple[Parts, Parts, int]:
    """Both lines cut into runs, each marked changed or not, and how many characters of
    their middle were not compared (0 when all were).

    >>> old, new, uncompared = changed_parts("林義雄宣布停止禁食", "林義雄宣布結束禁食")
    >>> old
    (('林義雄宣布', False), ('停止', True), ('禁食', False))
    >>> new, uncompared
    ((('林義雄宣布', False), ('結束', True), ('禁食', False)), 0)
    """
    old_parts: list[tuple[str, bool]] = []
    new_parts: list[tuple[str, bool]] = []
    found = bounded_opcodes(old, new, limit)
    for kind, old_start, old_end, new_start, new_end in found.codes:
        changed = kind != "equal"
        if old_end > old_start:
            old_parts.append((old[old_start:old_end], changed))
        if new_end > new_start:
            new_parts.append((new[new_start:new_end], changed))
    return tuple(old_parts), tuple(new_parts), found.uncompared


def side_by_side(old_text: str, new_text: str) -> Diff:
    """Rows of the two texts' lines, aligned; a changed block pairs its lines in order.

    >>> [(r.kind, r.old, r.new) for r in side_by_side("a\\nb", "a\\nc\\nd").rows]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('equal', (('a', False),), (('a', False),)),
     ('replace', (('b', True),), (('c', True),)),
     ('replace', (), (('d', True),))]
    """
    old_lines = old_text.splitlines()
    new_lines = new_text.splitlines()
    diff = Diff()
    lines = bounded_opcodes(old_lines, new_lines, MAX_LINES)
    if lines.uncompared:
        diff.notes.append(
            f"Over {MAX_LINES:,} lines changed: the changed lines are shown in order, "
            "not aligned line by line."
        )
    budget = CHAR_BUDGET
    long_lines = over_budget = 0
    for kind, old_start, old_end, new_start, new_end in lines.codes:
        pairs = zip_longest(range(old_start, old_end), range(new_start, new_end))
        for old_index, new_index in pairs:
            old = "" if old_index is None else old_lines[old_index]
            new = "" if new_index is None else new_lines[new_index]
            if kind == "equal":
                old_parts: Parts = ((old, False),)
                new_parts: Parts = ((new, False),)
            elif budget <= 0 or not old or not new:
                over_budget += bool(old and new)
                old_parts = ((old, True),) if old else ()
                new_parts = ((new, True),) if new else ()
            else:
                check()
                old_parts, new_parts, uncompared = changed_parts(old, new)
                long_lines += bool(uncompared)
                budget -= min(max(len(old), len(new)), MAX_LINE_CHARS)
            diff.rows.append(
                DiffRow(
                    kind=kind,
                    old_number=None if old_index is None else old_index + 1,
                    old=old_parts,
                    new_number=None if new_index is None else new_index + 1,
                    new=new_parts,
                )
            )
    if long_lines:
        diff.notes.append(
            f"{long_lines:,} changed line(s) differ in over {MAX_LINE_CHARS:,} characters: "
            "marked whole past their common start and end."
        )
    if over_budget:
        diff.notes.append(
            f"{over_budget:,} changed line(s) past the first {CHAR_BUDGET:,} characters "
            "compared: marked whole."
        )
    return diff
