"""``--fold-chinese``: Chinese characters folded to one canonical form, so that a term in
Traditional (Taiwan's or Hong Kong's variants too: 台/臺, 裡/裏, 着/著, 綫/線) or
Simplified script finds every spelling of it, whichever it was written in.

The characters that fold together (``chinese_variants.txt``, shipped with the package)
are the classes that OpenCC's conversions join: Traditional to Simplified and back, and
Taiwan's and Hong Kong's variant tables; each class's canonical character is the
Simplified one. Folding is character by character, so a text holds a term's canonical
form exactly where its canonical form holds it. The index keeps the text as written: a
folded term asks the engine for each of its spellings (``chinese_forms``), or when they
are too many for its pieces, and the stored text judges each candidate through its
canonical form (``variant_pattern``). A change to the classes needs no reindex.
``python -m zeroarchive.search.fold`` writes the table again from the installed OpenCC.
"""

from __future__ import annotations

import collections
import functools
import itertools
import re
import unicodedata
from pathlib import Path

TABLE = Path(__file__).with_name("chinese_variants.txt")
#: A folded term's spellings asked of an engine at most (one phrase each); a term with
#: more is found by its pieces, each with at most this many spellings.
MAX_FORMS = 64
#: Han blocks whose characters OpenCC's tables may name (the CJK ranges of ``text``).
_HAN = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3134F))
#: OpenCC's conversions whose one-character answers join classes.
_CONVERSIONS = ("t2s", "tw2s", "hk2s", "s2t", "s2tw", "s2hk", "t2tw", "t2hk", "tw2t", "hk2t")


@functools.cache
def _classes() -> dict[str, str]:
    """Each character that has variants: its class, canonical character first."""
    found: dict[str, str] = {}
    for line in TABLE.read_text("utf-8").splitlines():
        if line and not line.startswith("#"):
            for char in line:
                found[char] = line
    return found


@functools.cache
def _canonical_table() -> dict[int, str]:
    return {ord(char): members[0] for char, members in _classes().items()}


def canonical(text: str) -> str:
    """``text`` with each Chinese character as its class's canonical character.

    >>> canonical("臺灣、台灣與台湾的裡裏着著")
    '台湾、台湾与台湾的里里着着'
    """
    return text.translate(_canonical_table())


def variants(char: str) -> str:
    """The characters that fold with ``char``, canonical first (``char`` alone if none).

    >>> variants("臺"), variants("海")
    ('台枱檯臺颱', '海')
    """
    return _classes().get(char, char)


def chinese_forms(term: str) -> tuple[str, ...]:
    """Every spelling that folds to ``term``'s canonical form (``term`` NFKC-normalised
    first), or none when there are more than ``MAX_FORMS``.

    >>> chinese_forms("台灣")
    ('台湾', '台灣', '枱湾', '枱灣', '檯湾', '檯灣', '臺湾', '臺灣', '颱湾', '颱灣')
    >>> len(chinese_forms("國防部長說台灣海峽")), chinese_forms("vaccine")
    (0, ('vaccine',))
    """
    term = unicodedata.normalize("NFKC", term)
    choices = [variants(char) for char in term]
    if _product(choices) > MAX_FORMS:
        return ()
    return tuple("".join(chars) for chars in itertools.product(*choices))


def _product(choices: list[str]) -> int:
    count = 1
    for choice in choices:
        count *= len(choice)
    return count


def pieces(run: str) -> list[str]:
    """A CJK run cut into pieces of at least two characters (the run itself if it has
    one), each with at most ``MAX_FORMS`` spellings: what finds a term with more, where
    every piece is in the text (a superset of the texts that hold the term).

    >>> pieces("國防部長說台灣海峽")
    ['國防部長說台', '灣海峽']
    """
    found: list[str] = []
    start = 0
    while start < len(run):
        end = start + 1
        while end < len(run) and _product([variants(c) for c in run[start : end + 1]]) <= (
            MAX_FORMS
        ):
            end += 1
        found.append(run[start:end])
        start = end
    if len(found) > 1 and len(found[-1]) == 1:
        # A lone last character would be a prefix search: take it with the one before.
        found[-1] = run[-2:]
    return found


def variant_pattern(form: str) -> str:
    """A regular expression of ``form`` (escaped) that each character's variants match.

    >>> variant_pattern("台灣.")
    '[台枱檯臺颱][湾灣]\\\\.'
    """
    return "".join(
        re.escape(char) if len(variants(char)) == 1 else f"[{variants(char)}]" for char in form
    )


def build_table() -> list[str]:
    """The classes as OpenCC's installed tables join them, canonical first, sorted."""
    import opencc

    chars = [
        chr(code)
        for low, high in _HAN
        for code in range(low, high + 1)
        if unicodedata.normalize("NFKC", chr(code)) == chr(code)
        and unicodedata.category(chr(code)) == "Lo"
    ]
    parent: dict[str, str] = {}

    def root(char: str) -> str:
        while parent.get(char, char) != char:
            char = parent[char]
        return char

    simplified: dict[str, str] = {}
    # One character a line: OpenCC's phrases never reach across lines.
    joined = "\n".join(chars)
    for name in _CONVERSIONS:
        converted = opencc.OpenCC(name).convert(joined).split("\n")
        for char, other in zip(chars, converted, strict=True):
            other = unicodedata.normalize("NFKC", other)
            if name == "t2s":
                simplified[char] = other
            if len(other) == 1 and other != char:
                low, high = sorted((root(char), root(other)))
                parent[high] = low
    members: dict[str, list[str]] = collections.defaultdict(list)
    for char in chars:
        members[root(char)].append(char)
    lines = []
    for group in members.values():
        if len(group) < 2:
            continue
        # The Simplified character most of the class converts to (the first if tied).
        counts = collections.Counter(simplified.get(c, c) for c in group)
        first = min(group, key=lambda c: (-counts[c], c))
        lines.append(first + "".join(sorted(c for c in group if c != first)))
    return sorted(lines)


def main() -> None:
    import opencc

    header = [
        f"# Chinese characters that --fold-chinese folds together, canonical first: OpenCC "
        f"{getattr(opencc, '__version__', '?')}'s {', '.join(_CONVERSIONS)}.",
        "# Written by python -m zeroarchive.search.fold; tests/test_fold.py checks it.",
    ]
    TABLE.write_text("\n".join(header + build_table()) + "\n", "utf-8")


if __name__ == "__main__":
    main()
