"""Whether a publication's stored text holds a query — the one judge of a hit on every
engine (an index only proposes candidates) — with its score and a marked snippet.

An index built of pairs of characters or of whole tokens finds a superset: ``covid-19``
also in ``covid 19``, ``vacc`` in ``vaccine`` on Mroonga. Checking each candidate here on
the text itself keeps every engine's answers, and their counts, exact and the same.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from zeroarchive.core.deadline import check
from zeroarchive.search.fold import variant_pattern
from zeroarchive.search.query import Query, Term
from zeroarchive.search.text import WORD, fold_with_origins, nfc, normalize

_WORD = re.compile(WORD)
_SPACES = re.compile(r"\s+")
#: Characters of original text shown either side of the first match.
SNIPPET_CONTEXT = 80
#: Characters of a body looked through at a time for a snippet's first match; each window
#: takes in the last ``SNIPPET_OVERLAP`` of the one before, so that a match across an
#: edge is whole in one of them.
SNIPPET_WINDOW = 20_000
SNIPPET_OVERLAP = 1_000
MARK_OPEN, MARK_CLOSE = "«", "»"


def term_pattern(form: str, folded: bool = False) -> re.Pattern[str]:
    """The normalised form as a pattern: whole words where it begins or ends with a
    letter or digit of a word-spaced script, as written elsewhere (CJK, punctuation);
    ``folded``: each Chinese character as any of its variants (``--fold-chinese``).

    >>> bool(term_pattern("vaccine").search("vaccines work"))
    False
    >>> bool(term_pattern("疫苗").search("新冠疫苗接種"))
    True
    >>> bool(term_pattern("台湾", folded=True).search("臺灣海峽"))
    True
    """
    pattern = variant_pattern(form) if folded else re.escape(form)
    if _WORD.match(form[0]):
        pattern = rf"(?<!{WORD}){pattern}"
    if _WORD.match(form[-1]):
        pattern = rf"{pattern}(?!{WORD})"
    return re.compile(pattern)


@dataclass(frozen=True)
class Snippet:
    """Pieces of original text; the odd ones are matches."""

    pieces: tuple[str, ...]

    def marked(self, open_: str = MARK_OPEN, close: str = MARK_CLOSE) -> str:
        return "".join(
            f"{open_}{piece}{close}" if i % 2 else piece for i, piece in enumerate(self.pieces)
        )


class Matcher:
    """A parsed query, compiled once, applied to many publications."""

    def __init__(self, query: Query) -> None:
        self.query = query
        self._positive = [self._compile(t) for t in query.positive]
        self._excluded = [self._compile(t) for t in query.excluded]

    @staticmethod
    def _compile(term: Term) -> list[re.Pattern[str]]:
        if term.folded:
            return [term_pattern(term.text, folded=True)]
        return [term_pattern(form) for form in term.forms]

    def holds(self, title: str, body: str) -> bool:
        """Whether the text holds every term and no excluded one (both already normalised)."""
        for patterns in self._positive:
            if not any(p.search(title) or p.search(body) for p in patterns):
                return False
        for patterns in self._excluded:
            if any(p.search(title) or p.search(body) for p in patterns):
                return False
        return True

    def _find(self, folded: str) -> list[re.Match[str]]:
        return [
            found
            for patterns in self._positive
            for pattern in patterns
            for found in pattern.finditer(folded)
            if found.end() > found.start()
        ]

    def _first(self, folded: str) -> int | None:
        """Where the first match in ``folded`` starts (each pattern searched once: a text
        of a million matches makes no list of them)."""
        starts = [
            found.start()
            for patterns in self._positive
            for pattern in patterns
            if (found := pattern.search(folded)) is not None
        ]
        return min(starts, default=None)

    def _first_spans(self, text: str) -> list[tuple[int, int]]:
        """The spans around the first match in ``text``, looked for a window at a time
        (the deadline checked at each): normalising a window is C-speed, and only a few
        hundred characters around where its first match must be are folded character by
        character (NFKC keeps most texts' lengths), the whole window if it is not there.
        Folding a whole text of megabytes took seconds a hit and hundreds of MB."""
        for start in range(0, len(text), SNIPPET_WINDOW):
            check()
            low, high = max(start - SNIPPET_OVERLAP, 0), start + SNIPPET_WINDOW
            window = normalize(text[low:high])
            first_at = self._first(window)
            if first_at is None:
                continue
            guess = low + first_at * (min(high, len(text)) - low) // max(len(window), 1)
            around = max(low, guess - 4 * SNIPPET_CONTEXT), guess + 6 * SNIPPET_CONTEXT
            spans = self._spans(text, *around) or self._spans(text, low, high)
            if spans:
                return spans
        return []

    def _spans(self, text: str, low: int, high: int) -> list[tuple[int, int]]:
        """Where the terms match in ``text[low:high]`` (original characters); not at a cut
        edge, where a word's boundary is not known."""
        high = min(high, len(text))
        folded, origins = fold_with_origins(text[low:high])
        found = [
            (low + origins[f.start()], low + origins[f.end() - 1] + 1) for f in self._find(folded)
        ]
        return sorted(
            (left, right)
            for left, right in found
            if (left > low or low == 0) and (right < high or high == len(text))
        )

    def score(self, title: str, body: str) -> float:
        """Relevance: per term, the log of its occurrences, a title's counting five times,
        over the log of the body's length (a short text about it beats a long one)."""
        total = 0.0
        for patterns in self._positive:
            count = sum(5 * len(p.findall(title)) + len(p.findall(body)) for p in patterns)
            total += math.log1p(count)
        return round(total / math.log(math.e + len(body) / 1000), 6)

    def snippet(self, title: str, body: str) -> Snippet:
        """Around the first match in the body (or the body's start), matches marked."""
        text = nfc(body) if body.strip() else nfc(title)
        spans = self._first_spans(text)
        first = spans[0][0] if spans else 0
        start = max(0, first - SNIPPET_CONTEXT)
        end = min(len(text), first + 2 * SNIPPET_CONTEXT)
        pieces: list[str] = []
        at = start
        for left, right in spans:
            if left < at or right > end:
                continue
            pieces.extend([text[at:left], text[left:right]])
            at = right
        pieces.append(text[at:end])
        pieces = [_SPACES.sub(" ", piece) for piece in pieces]
        pieces[0] = ("…" if start else "") + pieces[0].lstrip()
        if end < len(text):
            pieces[-1] = pieces[-1].rstrip() + "…"
        return Snippet(tuple(pieces))
