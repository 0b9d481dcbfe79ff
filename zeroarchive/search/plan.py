"""What an engine is asked for a query: phrases of index tokens (``text.index_text``),
the same on every engine, and whether the engine's answer is the exact answer.

A query whose every term is a string of runs and spaces is exact: each form is one phrase
of tokens, found in exactly the texts that hold it, and an excluded term is a NOT — the
engine counts and ranks alone. Otherwise (punctuation or symbols in a term, say
``covid-19`` or ``c++``) each form asks for its runs, each found where the text has it,
a superset the text must then judge (``match.Matcher``).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

from zeroarchive.search.fold import chinese_forms, pieces
from zeroarchive.search.query import Query, Term
from zeroarchive.search.text import is_cjk, phrase_tokens, runs


@dataclass(frozen=True)
class Phrase:
    """Tokens in a row; ``prefix``: the only token is a lone CJK character, matched as the
    start of a token (a pair it begins, or a run's last character)."""

    tokens: tuple[str, ...]
    prefix: bool = False


#: A form: all its phrases (one when exact). A term: any of its forms.
Form = tuple[Phrase, ...]
TermPlan = tuple[Form, ...]


@dataclass(frozen=True)
class Plan:
    positive: tuple[TermPlan, ...]
    excluded: tuple[TermPlan, ...]
    #: The engine's answer is the answer (else a superset, without the exclusions).
    exact: bool


def _run_phrase(run: str) -> Phrase:
    if is_cjk(run) and len(run) == 1:
        return Phrase((run,), prefix=True)
    if is_cjk(run):
        return Phrase(tuple(map(operator.add, run, run[1:])))
    return Phrase((run,))


def has_prefix(term: TermPlan) -> bool:
    return any(phrase.prefix for form in term for phrase in form)


def only_prefixes(term: TermPlan) -> bool:
    return all(phrase.prefix for form in term for phrase in form)


def _exact_term(term: Term) -> TermPlan | None:
    if term.unlisted:
        return None
    forms = []
    for form in term.forms:
        found = phrase_tokens(form)
        if found is None:
            return None
        forms.append((Phrase(*found),))
    plan = tuple(forms)
    # A lone character's form beside a longer one's (another script): Groonga cannot put a
    # phrase after a prefix (mroonga.py), so the text decides.
    if has_prefix(plan) and not only_prefixes(plan):
        return None
    return plan


def _loose_form(form: str) -> Form:
    phrases = tuple(_run_phrase(run) for run in runs(form))
    # A superset either way; without its lone characters a form is one kind or the other.
    longer = tuple(phrase for phrase in phrases if not phrase.prefix)
    return longer or phrases[:1]


def _loose_terms(term: Term) -> tuple[TermPlan, ...]:
    if not term.unlisted:
        return (tuple(_loose_form(form) for form in term.forms if runs(form)),)
    # Too many spellings to ask for: each piece of each run with its spellings, ANDed.
    found: list[TermPlan] = []
    for run in runs(term.text):
        if not is_cjk(run):
            found.append(((_run_phrase(run),),))
            continue
        for piece in pieces(run):
            found.append(tuple((_run_phrase(form),) for form in chinese_forms(piece)))
    return tuple(found)


def plan(query: Query) -> Plan:
    """The engine's part of ``query``.

    >>> from zeroarchive.search.query import parse_query
    >>> plan(parse_query('台 "台灣海峽" -x')).exact
    True
    >>> found = plan(parse_query("covid-19 -x"))
    >>> found.exact, [[p.tokens for p in form] for form in found.positive[0]], found.excluded
    (False, [[('covid',), ('19',)]], ())
    >>> from zeroarchive.search.fold import chinese_forms
    >>> found = plan(parse_query("國防部長說台灣海峽", chinese_forms))
    >>> found.exact, [len(term) for term in found.positive], found.positive[1][0]
    (False, [60, 4], (Phrase(tokens=('湾海', '海峡'), prefix=False),))
    """
    exact = [_exact_term(term) for term in query.terms]
    if all(found is not None for found in exact):
        return Plan(
            tuple(p for p, t in zip(exact, query.terms, strict=True) if p and not t.exclude),
            tuple(p for p, t in zip(exact, query.terms, strict=True) if p and t.exclude),
            exact=True,
        )
    positive = tuple(p for t in query.positive if t.searchable for p in _loose_terms(t))
    return Plan(positive, (), exact=False)
