"""The query language, the same on every engine.

Words are ANDed; ``"a quoted phrase"`` is one term; ``-word`` or ``-"a phrase"``
excludes. Everything else is text: the engines' own operators (``*``, ``:``, ``NEAR``,
``OR``, ``^``, parentheses) and SQL are searched for as written, never obeyed. An
unbalanced quote runs to the end of the query. Terms are normalised like the indexed text
(NFKC, case folded); a term in CJK matches as a contiguous string, a word in Latin script
matches whole words only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from zeroarchive.search.text import normalize, runs

#: Longer queries are refused: no claim needs more, and each term costs a pass.
MAX_QUERY_CHARS = 1000
MAX_TERMS = 32


class QueryError(ValueError):
    """A query that cannot be searched; the message is one line for the user."""


@dataclass(frozen=True)
class Term:
    """One normalised term, and the forms it also matches (other Chinese script)."""

    text: str
    exclude: bool = False
    variants: tuple[str, ...] = ()
    #: Chinese characters folded (``--fold-chinese``): the text holds the term where it
    #: holds any spelling of it (``fold.variant_pattern``); ``variants`` are its spellings.
    folded: bool = False
    #: Folded, with more spellings than an engine is asked for (``fold.MAX_FORMS``).
    unlisted: bool = False

    @property
    def forms(self) -> tuple[str, ...]:
        return (self.text, *(v for v in self.variants if v != self.text))

    @property
    def searchable(self) -> bool:
        """Whether an index can find it (it holds a letter, digit or CJK character)."""
        return bool(runs(self.text))


@dataclass(frozen=True)
class Query:
    raw: str
    terms: tuple[Term, ...]

    @property
    def positive(self) -> tuple[Term, ...]:
        return tuple(t for t in self.terms if not t.exclude)

    @property
    def excluded(self) -> tuple[Term, ...]:
        return tuple(t for t in self.terms if t.exclude)


def _split(raw: str) -> list[tuple[str, bool]]:
    """(text, excluded) pieces: quoted phrases whole, other words at whitespace."""
    pieces: list[tuple[str, bool]] = []
    i, n = 0, len(raw)
    while i < n:
        if raw[i].isspace():
            i += 1
            continue
        exclude = raw[i] == "-" and i + 1 < n and not raw[i + 1].isspace()
        start = i + 1 if exclude else i
        if start < n and raw[start] in '"“”＂':
            end = start + 1
            while end < n and raw[end] not in '"“”＂':
                end += 1
            pieces.append((raw[start + 1 : end], exclude))
            i = end + 1
            continue
        end = start
        while end < n and not raw[end].isspace():
            end += 1
        pieces.append((raw[start:end], exclude))
        i = end
    return pieces


def parse_query(raw: str, fold: Callable[[str], tuple[str, ...]] | None = None) -> Query:
    """Parse ``raw``; ``fold`` gives a normalised term's every spelling, or none when
    they are too many (``fold.chinese_forms``: ``--fold-chinese``).

    >>> [t.text for t in parse_query('Ｃｏｖｉｄ "台灣 海峽" -疫苗').terms]
    ['covid', '台灣 海峽', '疫苗']
    >>> parse_query("")
    Traceback (most recent call last):
    ...
    zeroarchive.search.query.QueryError: the query is empty
    """
    if len(raw) > MAX_QUERY_CHARS:
        raise QueryError(
            f"the query is too long ({len(raw)} characters; at most {MAX_QUERY_CHARS})"
        )
    if not raw.strip():
        raise QueryError("the query is empty")
    terms: list[Term] = []
    seen: set[tuple[str, bool]] = set()
    for piece, exclude in _split(raw):
        text = normalize(piece)
        if not text or (text, exclude) in seen:
            continue
        seen.add((text, exclude))
        if fold is None:
            terms.append(Term(text, exclude))
            continue
        spellings = fold(text)
        variants = tuple(v for v in spellings if v != text)
        terms.append(Term(text, exclude, variants, folded=True, unlisted=not spellings))
    if len(terms) > MAX_TERMS:
        raise QueryError(f"the query has too many terms ({len(terms)}; at most {MAX_TERMS})")
    query = Query(raw, tuple(terms))
    if not any(t.searchable for t in query.positive):
        if query.positive:
            raise QueryError(
                "the query has no letter, digit or CJK character to search for "
                "(only punctuation or symbols)"
            )
        if terms:
            raise QueryError("the query only excludes; give at least one word to find")
        raise QueryError("the query is empty")
    return query
