"""readability-lxml's main text, made cheaper where the library does work whose result no
step here uses, with the same text and links (bench/parse_speed.py compares the
publications of every saved page before and after).

The measured costs (cProfile of the extraction benchmark's pages): its ``Cleaner`` (a fifth
of a parse, mostly rewriting every link), ``remove_unlikely_candidates`` (a debug line built
for every element it drops, over every element of the page) and
``transform_misused_divs_into_paragraphs`` (every ``<div>``'s children serialised to look
for a block tag in the markup: the page written out once per level of nesting).
"""

from __future__ import annotations

import copy
import re
from functools import lru_cache

import lxml.etree
import lxml.html
from lxml.html import HtmlElement, xhtml_to_html
from readability import Document
from readability.readability import REGEXES

from zeroarchive.parser.text import element_text

_DISPLAY_NONE_RE = REGEXES["displayNoneRe"]
_UNLIKELY_RE = REGEXES["unlikelyCandidatesRe"]
_MAYBE_CANDIDATE_RE = REGEXES["okMaybeItsACandidateRe"]
# The same patterns case-sensitive, for lower-cased ASCII names: Python's IGNORECASE search
# of a word list is about 7 times slower, and most elements of a page have a class or id.
_UNLIKELY_LOWER_RE = re.compile(_UNLIKELY_RE.pattern)
_MAYBE_CANDIDATE_LOWER_RE = re.compile(_MAYBE_CANDIDATE_RE.pattern)
_KILLED = ("script", "style", "link", lxml.etree.Comment, lxml.etree.ProcessingInstruction)
_SCRIPT_LINK_RE = re.compile(
    r"\s*(?:javascript|jscript|livescript|vbscript|data|about|mocha):", re.I
)
# readability searched the serialised children of a <div> for "<blockquote", "<dl", "<div",
# "<img", "<ol", "<p", "<pre", "<table" or "<ul": a tag that starts so (<picture>, <param>
# and <dlx> too) anywhere below. Text and attributes are escaped there, so only tags count.
_BLOCK_TAG_RE = re.compile(r"blockquote|dl|div|img|ol|p|pre|table|ul", re.I)
_INLINE_TAGS = frozenset(
    ["a", "b", "cite", "code", "em", "font", "i", "small", "span", "strong", "sub", "sup", "u"]
)
# Runs of white space that readability's squeezing can shorten, and the spaces and tabs in them.
_SPACE_RUN_RE = re.compile(r"\s{2,}")
_BLANKS_RE = re.compile(r"[ \t]+")


def _is_block_tag(node: lxml.etree._Element) -> bool:
    tag = node.tag
    return isinstance(tag, str) and _BLOCK_TAG_RE.match(tag) is not None


@lru_cache(maxsize=4096)
def unlikely_names(names: str) -> bool:
    """Whether class and id ``names`` make an element an unlikely part of the article, as
    readability decides it.

    >>> unlikely_names("Sidebar widget"), unlikely_names("sidebar main-column")
    (True, False)
    """
    # Cached: a page repeats its class names (every item of a list, every link of a menu).
    if names.isascii():
        lowered = names.lower()
        return bool(_UNLIKELY_LOWER_RE.search(lowered)) and not _MAYBE_CANDIDATE_LOWER_RE.search(
            lowered
        )
    return bool(_UNLIKELY_RE.search(names)) and not _MAYBE_CANDIDATE_RE.search(names)


def text_length(element: HtmlElement) -> int:
    """The length of ``element``'s text with its spaces squeezed as readability counts it.

    >>> from lxml.html import fragment_fromstring
    >>> text_length(fragment_fromstring("<p> a \\t b\\n\\n c </p>"))  # "a b\\nc"
    5
    """
    # Counted, not made: readability's three replacements (runs of 255 white space characters
    # or more made 255 spaces, runs holding a line break made one, then each tab and each
    # run of two or more spaces and tabs made one space) rebuilt every candidate's whole
    # text three times, a twentieth of a parse. Only runs of two or more change length.
    text = (element.text_content() or "").strip()
    length = len(text)
    for match in _SPACE_RUN_RE.finditer(text):
        run = match.group()
        length -= len(run) - _squeezed_length(run)
    return length


def _squeezed_length(run: str) -> int:
    """The length readability's squeezing leaves of a run of white space inside a text.

    >>> _squeezed_length(" \\n "), _squeezed_length("\\t\\t  "), _squeezed_length("\\xa0 \\xa0")
    (1, 3, 3)
    """
    if len(run) >= 255 or "\n" in run:
        return 1
    length = len(run)
    if "\t" in run or "  " in run:
        for match in _BLANKS_RE.finditer(run):
            blanks = match.group()
            rest = blanks.lstrip("\t")  # each tab before the first space is a space of its own
            length -= len(blanks) - (len(blanks) - len(rest) + (1 if rest else 0))
    return length


class ReadableDocument(Document):
    """readability-lxml's Document with a lighter clean of the page, same text and links.

    Its own clean (lxml's ``Cleaner``) rewrote every link to blank ``javascript:`` ones
    (``link_urls`` drops any link not http(s)) and took out ``on*`` attributes, which no step
    reads. What changes the text is kept: script, style and link elements out (their tails
    stay), style attributes out, XHTML names made HTML, ``image`` made ``img``; comments and
    processing instructions are already out of the tree ``page_tree`` makes.
    """

    def _parse(self, input: HtmlElement) -> HtmlElement:
        # A copy each time, as the Cleaner made one: summary() parses again to retry, and
        # cuts into what it parsed. The page's tree stays as it was.
        doc = copy.deepcopy(input)
        self.encoding = "utf-8"
        for elem in doc.xpath("//*[@hidden]"):
            elem.drop_tree()
        for elem in doc.xpath("//*[@style]"):
            if _DISPLAY_NONE_RE.search(elem.get("style")):
                elem.drop_tree()
        _light_clean(doc)
        doc.resolve_base_href(handle_failures=self.handle_failures)
        return doc

    def remove_unlikely_candidates(self) -> None:
        # Only elements with a class or an id can match; no debug line per dropped element.
        # Elements inside one already dropped are left alone: dropping them again (as
        # readability did) changed only the part already out of the page.
        dropped: set[HtmlElement] = set()
        for elem in self.html.xpath("//*[@class or @id]"):
            names = f"{elem.get('class', '')} {elem.get('id', '')}"
            if (
                unlikely_names(names)
                and elem.tag not in ("html", "body")
                and not (dropped and any(a in dropped for a in elem.iterancestors()))
                and not elem.xpath("ancestor-or-self::pre | ancestor-or-self::code")
                and not elem.xpath(
                    "descendant-or-self::main | descendant-or-self::article"
                    " | descendant-or-self::math"
                )
            ):
                dropped.add(elem)
                elem.drop_tree()

    def transform_misused_divs_into_paragraphs(self) -> None:
        # A <div> with no block element below it is a paragraph: which ones hold one is
        # found in one walk up from every block element, not by writing each div out.
        holding: set[HtmlElement] = set()
        for node in self.html.iter():
            if not _is_block_tag(node):
                continue
            parent = node.getparent()
            while parent is not None and parent not in holding:
                holding.add(parent)
                parent = parent.getparent()
        for div in self.html.findall(".//div"):
            if div not in holding:
                div.tag = "p"
        for div in self.html.findall(".//div"):
            _wrap_loose_text(div)

    def get_link_density(self, elem: HtmlElement) -> float:
        links = sum(text_length(link) for link in elem.iterdescendants("a"))
        return links / max(text_length(elem), 1)


def _wrap_loose_text(div: HtmlElement) -> None:
    """Text and runs of inline elements directly in ``div`` put in paragraphs of their own,
    ``<br>``s between them dropped (readability's second step for the divs left)."""
    children = list(div)
    paragraph = None
    if div.text and div.text.strip():
        paragraph = div.makeelement("p")
        paragraph.text, div.text = div.text, None
        div.insert(0, paragraph)
    for child in children:
        if child.tag not in _INLINE_TAGS or any(_is_block_tag(node) for node in child.iter()):
            paragraph = None  # a <br> too
        else:
            if paragraph is None:
                paragraph = div.makeelement("p")
                child.addprevious(paragraph)
            paragraph.append(child)
    for position in range(len(div) - 1, -1, -1):
        child = div[position]
        if child.tail and child.tail.strip():
            loose = div.makeelement("p")
            loose.text, child.tail = child.tail, None
            div.insert(position + 1, loose)
        if child.tag == "br":
            child.drop_tree()


def _light_clean(doc: HtmlElement) -> None:
    xhtml_to_html(doc)
    for element in doc.iter("image"):
        element.tag = "img"
    for element in doc.iter("a"):
        href = element.get("href")
        if href is None:
            continue
        if _SCRIPT_LINK_RE.match(href):
            # The Cleaner blanked these, and a page's <base href> then made each a link to
            # the base: dropped instead.
            del element.attrib["href"]
        elif href != href.strip():
            element.set("href", href.strip())  # as the Cleaner's link rewriting left them
    lxml.etree.strip_attributes(doc, "style")
    for element in list(doc.iter(*_KILLED)):
        element.drop_tree()


def readability_text(page: str | HtmlElement) -> tuple[str, list[str]]:
    """(main text, hrefs in the main text) by readability-lxml alone."""
    if isinstance(page, HtmlElement):
        document: Document = ReadableDocument(page)
    else:
        document = Document(page)
    summary = lxml.html.fromstring(document.summary(html_partial=True))
    hrefs = [a.get("href") for a in summary.iter("a") if a.get("href")]
    return element_text(summary), hrefs
