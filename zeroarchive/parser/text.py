"""Small text helpers shared by the parsers: element text, hashtags, links."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urljoin

from lxml import etree
from lxml.html import HtmlElement

from zeroarchive.core.urls import canonicalize_url

_BLOCK = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "br",
        "dd",
        "div",
        "dl",
        "dt",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "table",
        "td",
        "th",
        "tr",
        "ul",
    ]
)
_SPACES_RE = re.compile(r"[ \t\r\f\v\u00a0\u3000]+")
# A hashtag is '#' then letters/digits in any script; '#1' alone (a rank) is not a hashtag.
_HASHTAG_RE = re.compile(r"(?:^|(?<=[\s(（,，、]))[#＃](\w*[^\W\d]\w*)")
_URL_RE = re.compile(r"https?://[^\s<>\"'）」』】]+")


def element_text(element: HtmlElement) -> str:
    """The text of ``element`` with a line break around every block element.

    >>> from lxml.html import fragment_fromstring
    >>> element_text(fragment_fromstring("<div><p>One <b>two</b></p><p>three</p></div>"))
    'One two\\nthree'
    """
    parts: list[str] = []

    def walk(node: etree._Element) -> None:
        if not isinstance(node.tag, str):
            parts.append(node.tail or "")
            return
        if node.tag in ("script", "style", "noscript", "template"):
            parts.append(node.tail or "")
            return
        block = node.tag in _BLOCK
        if block:
            parts.append("\n")
        parts.append(node.text or "")
        for child in node:
            walk(child)
        if block:
            parts.append("\n")
        parts.append(node.tail or "")

    walk(element)
    return clean_lines("".join(parts))


def clean_lines(text: str) -> str:
    """Spaces squeezed, lines stripped, empty lines dropped.

    >>> clean_lines("  a  b \\n\\n\\u3000c ")
    'a b\\nc'
    """
    lines = (_SPACES_RE.sub(" ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def hashtags(text: str) -> tuple[str, ...]:
    """The distinct hashtags of ``text``, in order.

    >>> hashtags("Go #台灣 go #taiwan2024, not#this or #1 #台灣")
    ('台灣', 'taiwan2024')
    """
    return tuple(dict.fromkeys(match.group(1) for match in _HASHTAG_RE.finditer(text)))


def text_urls(text: str) -> list[str]:
    """URLs written out in plain text.

    >>> text_urls("see https://a.tw/x?y=1 and http://b.tw/」")
    ['https://a.tw/x?y=1', 'http://b.tw/']
    """
    return [match.group(0).rstrip(".,;:!?)") for match in _URL_RE.finditer(text)]


def link_urls(hrefs: Iterable[str], base: str) -> tuple[str, ...]:
    """Absolute, canonical http(s) URLs of ``hrefs`` (relative to ``base``), distinct, in order.

    >>> link_urls(["/a?utm_source=x", "mailto:x@y", "https://B.tw/c#d", "/a"], "https://t.tw/p")
    ('https://t.tw/a', 'https://b.tw/c')
    """
    out: dict[str, None] = {}
    for href in hrefs:
        absolute = urljoin(base, href.strip())
        if not absolute.startswith(("http://", "https://")):
            continue
        try:
            out[canonicalize_url(absolute)] = None
        except ValueError:
            continue
    return tuple(out)
