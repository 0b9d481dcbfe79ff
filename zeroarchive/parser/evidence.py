"""What a page says about its own article, beside the extractors' texts: its declared
description (Open Graph, ``<meta name="description">``, JSON-LD ``description`` and
``articleBody``) and the texts of its links.

``generic.combine`` weighs the extractors' texts with it: a text that holds none of the
page's own description took another block, and lines that are mostly the text of links
are a stream of other stories or a menu, not more of the article.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from lxml.html import HtmlElement

from zeroarchive.parser.metadata import PageMetadata

# Descriptions shorter than this (white space out) say too little to place an article.
_MIN_DESCRIPTION = 40
_MIN_LINK = 4


@dataclass
class PageEvidence:
    """The page's descriptions, its declared title and (read from ``tree`` when first
    asked: few pages need them) the texts of its links, white space taken out."""

    descriptions: tuple[str, ...] = ()
    title: str = ""
    tree: HtmlElement | None = field(default=None, repr=False)

    @cached_property
    def linked(self) -> frozenset[str]:
        if self.tree is None:
            return frozenset()
        return frozenset(
            text for a in self.tree.iter("a") if len(text := squeeze(a.text_content())) >= _MIN_LINK
        )

    @cached_property
    def captions(self) -> str:
        """The texts of the page's figures and captions (``figure``, ``figcaption``, an
        element whose class names a caption or a credit), white space taken out, one a
        line (read from ``tree`` when first asked)."""
        if self.tree is None:
            return ""
        found = []
        for element in self.tree.iter():
            if not isinstance(element.tag, str):
                continue
            names = (element.get("class") or "").lower()
            if element.tag in ("figure", "figcaption") or "caption" in names or "credit" in names:
                found.append(squeeze(element.text_content()))
        return "\n".join(found)


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
    title = " ".join(
        t for t in (meta.first("og:title", "twitter:title"), tree.findtext(".//title")) if t
    )
    return PageEvidence(descriptions, title, tree)


def bigrams(text: str) -> frozenset[str]:
    """The character bigrams of a squeezed text.

    >>> sorted(bigrams("台北市"))
    ['北市', '台北']
    """
    # Paired in C: a slice per character in Python was a third of the evidence's cost.
    return frozenset(map(str.__add__, text, text[1:]))


@lru_cache(maxsize=32)
def text_bigrams(text: str) -> frozenset[str]:
    """The bigrams of ``text`` squeezed (cached: each extractor's text is asked several
    times)."""
    return bigrams(squeeze(text))


def coverage(part: str, whole: str) -> float:
    """The share of ``part``'s character bigrams found in ``whole`` (white space out).

    >>> coverage("台北市政府", "今天台北市政府宣布"), coverage("台北市", "高雄")
    (1.0, 0.0)
    """
    wanted = text_bigrams(part)
    return len(wanted & text_bigrams(whole)) / len(wanted) if wanted else 0.0


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
# What an article's header holds besides its headline (byline, date, section, tags), in
# characters without white space: 38 on buzzap.jp; the shortest body in the CJK sets has 82.
_HEADER_REST = 60


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


class HeadlinePlace:
    """Where a page's headline (its ``<h1>`` that the declared title names, else its first)
    sits, to place the extractors' texts against it: the article is in the element that
    holds the headline, its neighbours' items (list items, other ``<article>``s) are not."""

    def __init__(self, tree: HtmlElement, title: str = "") -> None:
        self.tree = tree
        self.title = squeeze(title)
        self._items: list[str] | None = None

    @cached_property
    def headline(self) -> HtmlElement | None:
        # The <h1> that shares most of the declared title, not the first one the title holds:
        # a site's logo in an <h1> is in its own pages' titles too ("... - Yahoo!ニュース"),
        # and an empty <h1> (a logo image) names nothing.
        wanted = bigrams(self.title)
        best, shared = None, -1
        for h1 in self.tree.iter("h1"):
            if (text := squeeze(h1.text_content())) and (n := len(bigrams(text) & wanted)) > shared:
                best, shared = h1, n
        return best

    def container(self, text: str) -> str | None:
        """The squeezed text of the nearest ancestor of the headline that holds ``text``
        (90 % of its bigrams), or None where only the whole page does or there is none."""
        found = self._holder(text)
        return found[1] if found is not None else None

    def distance(self, text: str) -> int | None:
        """How many levels above the headline the element holding ``text`` is (None: only
        the whole page holds both, or there is no headline)."""
        found = self._holder(text)
        return found[0] if found is not None else None

    def _holder(self, text: str) -> tuple[int, str] | None:
        if self.headline is None:
            return None
        wanted = bigrams(squeeze(text))
        if not wanted:
            return None
        for level, element in enumerate(self.headline.iterancestors()):
            if element.tag in ("body", "html"):
                return None
            found = squeeze(element.text_content())
            if len(wanted & bigrams(found)) >= 0.9 * len(wanted):
                return level, found
        return None

    def is_header(self, text: str) -> bool:
        """Whether ``text`` is no body: the article's header (the headline and little else:
        a byline, a date, a row of tags), or too little text for an article at all without
        the headline (a comment box's "0人跟贴 | 手机发跟贴 | 注册" stub, a notice)."""
        if self.headline is None:
            return False
        heading = squeeze(self.headline.text_content())
        rest = squeeze(text).replace(heading, "", 1)
        return bool(heading) and len(rest) < _HEADER_REST

    def closer(self, text: str, than: str) -> bool:
        """Whether ``text`` lies nearer the headline than ``than`` does (True without a
        headline: no evidence against it)."""
        if self.headline is None:
            return True
        mine, theirs = self.distance(text), self.distance(than)
        return mine is not None and (theirs is None or mine < theirs)

    def as_close(self, text: str, than: str) -> bool:
        """Whether ``text`` lies as near the headline as ``than`` does, or nearer (True
        without a headline)."""
        if self.headline is None:
            return True
        mine, theirs = self.distance(text), self.distance(than)
        return mine is not None and (theirs is None or mine <= theirs)

    def in_other_items(self, lines: Iterable[str]) -> float:
        """The share of the characters of ``lines`` inside list items or ``<article>``s that
        do not hold the headline: a stream of other stories, the next articles."""
        if self._items is None:
            holding = set(self.headline.iterancestors()) if self.headline is not None else set()
            self._items = [
                squeeze(element.text_content())
                for element in self.tree.iter("li", "article")
                if element not in holding
            ]
        total = inside = 0
        for line in lines:
            text = squeeze(line)
            total += len(text)
            if text and any(text in item for item in self._items):
                inside += len(text)
        return inside / total if total else 0.0
