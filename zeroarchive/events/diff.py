"""Silent edits: what changed in a publication's title or body between two versions.

Text is normalised first (Unicode NFKC, spaces collapsed), so a change of the raw page
alone (counters, clocks, tokens, a reshuffled "related" block the parser leaves out) is
no edit. The diff goes character by character through CJK text and word by word through
Latin text (difflib on those tokens, past their common start and end, on a middle of
``MAX_TOKENS`` at most); long unchanged runs are shortened around the edit.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from zeroarchive.core.sequence_diff import bounded_opcodes

#: Unchanged text kept on each side of a change in a stored diff.
CONTEXT = 40
#: Tokens of a changed middle (past the common start and end) compared token by token;
#: a longer one is stored as removed and added whole (a quadratic matcher otherwise).
MAX_TOKENS = 5_000

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|\s+|.", re.DOTALL)

Op = tuple[str, str]  # ("=", text) kept, ("-", text) removed, ("+", text) added


def normalise(text: str) -> str:
    """Text as compared for edits.

    >>> normalise("  台灣\\u3000新聞\\n\\n ＡＢＣ  ")
    '台灣 新聞 ABC'
    """
    return " ".join(unicodedata.normalize("NFKC", text).split())


def tokens(text: str) -> list[str]:
    """CJK characters one by one, Latin words whole, spaces and punctuation apart.

    >>> tokens("市長說 the mayor's plan")
    ['市', '長', '說', ' ', 'the', ' ', 'mayor', "'", 's', ' ', 'plan']
    """
    return _TOKEN.findall(text)


def diff(before: str, after: str) -> list[Op]:
    """The edit from ``before`` to ``after`` (both normalised first), as kept, removed and
    added runs; unchanged runs longer than twice ``CONTEXT`` are shortened with "…".

    >>> diff("市長今天宣布調漲票價", "市長今天宣布調降票價")
    [('=', '市長今天宣布調'), ('-', '漲'), ('+', '降'), ('=', '票價')]
    >>> diff("The mayor raised fares", "The mayor cut fares")
    [('=', 'The mayor '), ('-', 'raised'), ('+', 'cut'), ('=', ' fares')]
    """
    old, new = tokens(normalise(before)), tokens(normalise(after))
    ops: list[Op] = []
    found = bounded_opcodes(old, new, MAX_TOKENS, autojunk=len(old) > 2000)
    for tag, i1, i2, j1, j2 in found.codes:
        if tag == "equal":
            ops.append(("=", "".join(old[i1:i2])))
            continue
        if i2 > i1:
            ops.append(("-", "".join(old[i1:i2])))
        if j2 > j1:
            ops.append(("+", "".join(new[j1:j2])))
    return _shorten(ops)


def _shorten(ops: list[Op]) -> list[Op]:
    out: list[Op] = []
    for index, (op, text) in enumerate(ops):
        if op == "=" and len(text) > 2 * CONTEXT:
            head = text[:CONTEXT] if index > 0 else ""
            tail = text[-CONTEXT:] if index < len(ops) - 1 else ""
            text = f"{head}…{tail}"
        out.append((op, text))
    return out


def removed_added(ops: Sequence[Sequence[str]]) -> tuple[list[str], list[str]]:
    """The removed and the added runs of a diff.

    >>> removed_added([("=", "a"), ("-", "b"), ("+", "c")])
    (['b'], ['c'])
    """
    return [t for op, t in ops if op == "-"], [t for op, t in ops if op == "+"]


def edit_diff(before: tuple[str, str], after: tuple[str, str]) -> dict[str, Any] | None:
    """The stored diff of an edit between (title, text) pairs, or None when their
    normalised forms are equal (no edit).

    >>> edit_diff(("T", "a  b"), ("T", "a b")) is None
    True
    >>> edit_diff(("T", "old"), ("T2", "old"))["fields"]
    ['title']
    """
    fields = [
        name
        for name, old, new in zip(("title", "text"), before, after, strict=True)
        if normalise(old) != normalise(new)
    ]
    if not fields:
        return None
    result: dict[str, Any] = {"fields": fields}
    for name, old, new in zip(("title", "text"), before, after, strict=True):
        if name in fields:
            result[name] = [list(op) for op in diff(old, new)]
    return result


def inline(ops: Sequence[Sequence[str]]) -> str:
    """A diff on one line for a terminal or a feed: removed runs as ``[-…-]``, added ones as
    ``{+…+}`` (wdiff's marks).

    >>> inline([("=", "市長今天宣布調"), ("-", "漲"), ("+", "降"), ("=", "票價")])
    '市長今天宣布調[-漲-]{+降+}票價'
    """
    marks = {"=": ("", ""), "-": ("[-", "-]"), "+": ("{+", "+}")}
    return "".join(f"{marks[op][0]}{text}{marks[op][1]}" for op, text in ops)
