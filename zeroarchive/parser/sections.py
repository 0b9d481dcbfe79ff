"""The rest of an article made of several sections: a heading, then a block of the same
template as the block the text ends in (issue 41's long multi-section bodies).

Both extractors take one block of a page: readability the best-scored element and those of
its siblings that score near it, trafilatura what its own tree walk keeps. Where an article
is a run of sections (a notice's "ご参考" part after its lead, a diary's days, a report's
chapters), each a heading followed by a block of the site's one template, the block the
text ends in is the first section only, and the page's next headings and blocks of that
same template (tag and class), which are prose and not a row of links, are the article's
too. Nothing is added where the next element with text is anything else (a related-stories
box, a comment form, a footer): the run of sections ends there.
"""

from __future__ import annotations

from lxml.html import HtmlElement

from zeroarchive.parser.evidence import bigrams, squeeze, text_bigrams
from zeroarchive.parser.text import element_text

_HEADINGS = frozenset(("h2", "h3", "h4", "h5", "h6"))
# Elements that hold a section of an article (a <p> is a paragraph: its siblings are the
# paragraphs the extractors chose from already).
_SECTIONS = frozenset(("div", "section", "article"))
# Share of an element's bigrams the chosen text holds for the element to be part of it.
_CHOSEN = 0.8
# ... and for a later block to be in it already.
_ALREADY = 0.5
# A block whose text is more than this share link text is a list of links, not a section
# (the tuning page's second section, a consultation example with its references: 0.24).
_SECTION_LINKED = 0.35
# A heading longer than this (characters, white space out) is not a section's heading.
_HEADING = 60
# How far up from the block the text ends in a wrapper may be (the block being the last of
# its wrapper): a section element holding a heading and a body block.
_CLIMB = 2
_PREFIX = 12


def continued_sections(tree: HtmlElement, text: str) -> str:
    """``text`` (the article's text so far, taken from ``tree``) with the sections after
    its last block: the headings and blocks of that block's template that follow it.

    >>> import lxml.html
    >>> page = lxml.html.document_fromstring(
    ...     "<body><div id=main><h1>Notice</h1><div class=text><p>First part of the notice, "
    ...     "long enough.</p></div><h3>Examples</h3><div class=text><p>The second part, "
    ...     "cut by both extractors.</p></div><div class=related><a href=/x>Other</a></div>"
    ...     "</div></body>")
    >>> print(continued_sections(page, "First part of the notice, long enough."))
    First part of the notice, long enough.
    Examples
    The second part, cut by both extractors.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return text
    start = _holding(tree, lines[-1])
    if start is None:
        return text
    if not any(_may_follow(element) for element in (start, *start.iterancestors())):
        return text  # no heading or block of the same template after any of them: most pages
    chosen = text_bigrams(text)
    longest = len(squeeze(text)) / _CHOSEN
    # The ancestors short enough to be 80 % the chosen text's, the highest first: the highest
    # the chosen text holds is the block (mostly the first asked).
    short = []
    for element in (start, *start.iterancestors()):
        squeezed = squeeze(element.text_content())
        if element.tag in ("body", "html") or len(squeezed) > longest:
            break
        short.append((element, squeezed))
    block = None
    for element, squeezed in reversed(short):
        found = bigrams(squeezed)
        if not found or len(found & chosen) >= _CHOSEN * len(found):
            block = element
            break
    level = block
    for _ in range(_CLIMB + 1):
        if level is None or level.tag in ("body", "html"):
            return text
        added = _following(level, chosen)
        if added:
            return "\n".join([text.rstrip("\n"), *added])
        if any(squeeze(later.text_content()) for later in level.itersiblings()):
            return text
        level = level.getparent()
    return text


def _holding(tree: HtmlElement, line: str) -> HtmlElement | None:
    """The element whose text (or whose child's tail) holds the last occurrence in the page of
    the first word of ``line`` (its first characters up to a space, at most twelve)."""
    words = line.split()
    if not words:
        return None
    # Found by libxml2 (a walk of every text node in Python was a tenth of a parse).
    found = tree.xpath("(//text()[contains(., $word)])[last()]", word=words[0][:_PREFIX])
    if not found:
        return None
    return found[0].getparent()


def _signature(element: HtmlElement) -> tuple[str, str] | None:
    """A block's template: its tag and classes; None for a block without a class (a bare
    <div> is no template), unless it is a <section> or an <article>."""
    classes = " ".join(sorted((element.get("class") or "").split()))
    if element.tag not in _SECTIONS or (not classes and element.tag == "div"):
        return None
    return (element.tag, classes)


def _following(block: HtmlElement, chosen: frozenset[str]) -> list[str]:
    """The lines of the headings and same-template blocks after ``block``, up to the first
    other element with text."""
    template = _signature(block)
    if template is None:
        return []
    added: list[str] = []
    pending: list[str] = []
    for later in block.itersiblings():
        if not isinstance(later.tag, str):
            continue
        text = element_text(later).strip()
        squeezed = squeeze(text)
        if not squeezed:
            continue
        if later.tag in _HEADINGS and len(squeezed) <= _HEADING:
            pending.append(text)
            continue
        if _signature(later) != template:
            break
        found = bigrams(squeezed)
        if len(found & chosen) >= _ALREADY * len(found):
            pending = []
            continue
        links = sum(len(squeeze(a.text_content())) for a in later.iter("a"))
        headed = pending or _starts_with_heading(later)
        if links > _SECTION_LINKED * len(squeezed) or not headed:
            break
        added += [*pending, text]
        pending = []
    return added


def _may_follow(element: HtmlElement) -> bool:
    """Whether a heading or a block of ``element``'s template comes after it (the cheap test
    before the texts are compared)."""
    template = _signature(element)
    if template is None:
        return False
    return any(
        later.tag in _HEADINGS or _signature(later) == template
        for later in element.itersiblings()
        if isinstance(later.tag, str)
    )


def _starts_with_heading(block: HtmlElement) -> bool:
    for child in block.iter():
        if child is block or not isinstance(child.tag, str):
            continue
        if child.tag in _HEADINGS:
            return True
        if squeeze(child.text or ""):
            return False
    return False
