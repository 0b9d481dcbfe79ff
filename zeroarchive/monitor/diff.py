"""Two versions of a publication's text side by side, line against line; within a changed
line, the characters that changed are marked (an edit of two characters in a paragraph of
three hundred is otherwise hard to see)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from itertools import zip_longest

Parts = tuple[tuple[str, bool], ...]  # (text, changed) runs of a line


@dataclass(frozen=True)
class DiffRow:
    kind: str  # "equal", "delete", "insert" or "replace"
    old_number: int | None
    old: Parts
    new_number: int | None
    new: Parts


def changed_parts(old: str, new: str) -> tuple[Parts, Parts]:
    """Both lines cut into runs, each marked changed or not.

    >>> old, new = changed_parts("林義雄宣布停止禁食", "林義雄宣布結束禁食")
    >>> old
    (('林義雄宣布', False), ('停止', True), ('禁食', False))
    >>> new
    (('林義雄宣布', False), ('結束', True), ('禁食', False))
    """
    old_parts: list[tuple[str, bool]] = []
    new_parts: list[tuple[str, bool]] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for kind, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        changed = kind != "equal"
        if old_end > old_start:
            old_parts.append((old[old_start:old_end], changed))
        if new_end > new_start:
            new_parts.append((new[new_start:new_end], changed))
    return tuple(old_parts), tuple(new_parts)


def side_by_side(old_text: str, new_text: str) -> list[DiffRow]:
    """Rows of the two texts' lines, aligned; a changed block pairs its lines in order.

    >>> [(r.kind, r.old, r.new) for r in side_by_side("a\\nb", "a\\nc\\nd")]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('equal', (('a', False),), (('a', False),)),
     ('replace', (('b', True),), (('c', True),)),
     ('replace', (), (('d', True),))]
    """
    old_lines = old_text.splitlines()
    new_lines = new_text.splitlines()
    rows = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for kind, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        pairs = zip_longest(range(old_start, old_end), range(new_start, new_end))
        for old_index, new_index in pairs:
            old = "" if old_index is None else old_lines[old_index]
            new = "" if new_index is None else new_lines[new_index]
            if kind == "equal":
                old_parts: Parts = ((old, False),)
                new_parts: Parts = ((new, False),)
            else:
                old_parts, new_parts = changed_parts(old, new)
            rows.append(
                DiffRow(
                    kind=kind,
                    old_number=None if old_index is None else old_index + 1,
                    old=old_parts,
                    new_number=None if new_index is None else new_index + 1,
                    new=new_parts,
                )
            )
    return rows
