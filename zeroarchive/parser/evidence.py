"""What a page says about its own article, beside the extractors' texts: its declared
description (Open Graph, ``<meta name="description">``, JSON-LD ``description`` and
``articleBody``) and the texts of its links.

``generic.combine`` weighs the extractors' texts with it: a text that holds none of the
page's own description took another block, and lines that are mostly the text of links
are a stream of other stories or a menu, not more of the article.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lxml.html import HtmlElement

from zeroarchive.parser.metadata import PageMetadata

# Descriptions shorter than this (white space out) say too little to place an article.
_MIN_DESCRIPTION = 40
_MIN_LINK = 4


@dataclass(frozen=True)
class PageEvidence:
    """The page's descriptions and the texts of its links, white space taken out."""

    descriptions: tuple[str, ...] = ()
    linked: frozenset[str] = frozenset()


def squeeze(text: str) -> str:
    """``text`` without white space.

    >>> squeeze(" 台 北\\n市 ")
    '台北市'
    """
    return "".join(text.split())


def page_evidence(tree: HtmlElement, meta: PageMetadata) -> PageEvidence:
    """The evidence of a parsed page (its scripts may be gone; ``meta`` was read before)."""
    found = [meta.first("og:description", "twitter:description"), meta.first("description")]
    for key in ("description", "articleBody"):
        value = meta.jsonld_value(key)
        found.append(value if isinstance(value, str) else None)
    descriptions = tuple(
        dict.fromkeys(d for text in found if text and len(d := squeeze(text)) >= _MIN_DESCRIPTION)
    )
    linked = frozenset(
        text for a in tree.iter("a") if len(text := squeeze(a.text_content())) >= _MIN_LINK
    )
    return PageEvidence(descriptions, linked)


def bigrams(text: str) -> frozenset[str]:
    """The character bigrams of a squeezed text."""
    return frozenset(text[i : i + 2] for i in range(len(text) - 1))


def coverage(part: str, whole: str) -> float:
    """The share of ``part``'s character bigrams found in ``whole`` (white space out).

    >>> coverage("台北市政府", "今天台北市政府宣布"), coverage("台北市", "高雄")
    (1.0, 0.0)
    """
    wanted = bigrams(squeeze(part))
    return len(wanted & bigrams(squeeze(whole))) / len(wanted) if wanted else 0.0


def described(text: str, evidence: PageEvidence) -> float | None:
    """How much of the page's best-covered description ``text`` holds; None without one."""
    if not evidence.descriptions:
        return None
    return max(coverage(d, text) for d in evidence.descriptions)


def linked_share(lines: Iterable[str], linked: frozenset[str]) -> float:
    """The share of the characters of ``lines`` that are the text of the page's links.

    >>> round(linked_share(["Other story", "The article's line"], frozenset(["Otherstory"])), 2)
    0.38
    """
    total = covered = 0
    for line in lines:
        text = squeeze(line)
        total += len(text)
        if text in linked:
            covered += len(text)
        elif text:
            covered += min(len(text), sum(len(link) for link in linked if link in text))
    return covered / total if total else 0.0


_BLOCK_TAGS = ("p", "div", "section", "article", "main", "td", "li", "span")
_CLIMB_LINKED = 0.2
_CLIMB_GROWTH = 3


def described_block(tree: HtmlElement, evidence: PageEvidence, least: float) -> HtmlElement | None:
    """The element that holds the page's own description (at least ``least`` of one), grown
    to its parents while they add text that is not mostly links: the article of a page
    whose extractors took a longer neighbour."""
    best: HtmlElement | None = None
    best_length = 0
    for description in evidence.descriptions:
        wanted = bigrams(description)
        for element in tree.iter(*_BLOCK_TAGS):
            text = squeeze(element.text_content())
            if best is not None and len(text) >= best_length:
                continue
            if len(text) >= len(description) * least and (
                len(wanted & bigrams(text)) >= least * len(wanted)
            ):
                best, best_length = element, len(text)
    if best is None:
        return None
    while (parent := best.getparent()) is not None and parent.tag != "body":
        text = squeeze(parent.text_content())
        links = sum(len(squeeze(a.text_content())) for a in parent.iter("a"))
        if len(text) > _CLIMB_GROWTH * best_length or links > _CLIMB_LINKED * len(text):
            break
        best, best_length = parent, len(text)
    return best


def headline_scope(tree: HtmlElement, text: str) -> str | None:
    """The squeezed text of the nearest ancestor of the page's first ``<h1>`` that holds
    ``text`` (the article's own container), or None where only the whole page does."""
    headline = next(tree.iter("h1"), None)
    if headline is None:
        return None
    wanted = bigrams(squeeze(text))
    for element in headline.iterancestors():
        if element.tag in ("body", "html"):
            return None
        found = squeeze(element.text_content())
        if wanted and len(wanted & bigrams(found)) >= 0.9 * len(wanted):
            return found
    return None
