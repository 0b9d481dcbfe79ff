"""An archived page as stored, made safe to look at: scripts, event handlers, frames,
embeds, <base> and <meta> (refresh) removed, the URLs of pictures set aside, served under
a Content-Security-Policy that loads nothing at all, in a sandboxed frame. Nothing is
fetched from the live site."""

from __future__ import annotations

import lxml.html
from lxml import etree
from lxml_html_clean import Cleaner

from zeroarchive.core.encoding import decode_body

# Inline styles only; images, fonts, stylesheets, frames and scripts of any origin refused.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'self'; sandbox"
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

_CLEANER = Cleaner(
    scripts=True,
    javascript=True,
    comments=True,
    style=False,
    inline_style=False,
    links=True,
    meta=True,
    page_structure=False,
    processing_instructions=True,
    embedded=True,
    frames=True,
    forms=False,
    annoying_tags=False,
    remove_unknown_tags=False,
    safe_attrs_only=False,
)


def looks_like_html(text: str) -> bool:
    """Dcard's snapshots are JSON and YouTube's feeds XML: shown as text, not as a page.

    >>> looks_like_html("<!doctype html><p>x"), looks_like_html('  {"id": 1}')
    (True, False)
    """
    start = text.lstrip()[:1]
    return start == "<" and not text.lstrip().startswith("<?xml")


# Where an element would fetch something; kept as data-archived-<name> for the reader.
_FETCHING_ATTRIBUTES = ("src", "srcset", "poster", "background", "data")


def _unlink(document: lxml.html.HtmlElement) -> None:
    """Move every fetching attribute that is not a data: URL out of the browser's reach
    (the policy would refuse the fetch anyway; this way it is not even tried)."""
    for element in document.iter():
        if not isinstance(element.tag, str):
            continue
        for name in _FETCHING_ATTRIBUTES:
            value = element.get(name)
            if value is not None and not value.strip().lower().startswith("data:"):
                del element.attrib[name]
                element.set(f"data-archived-{name}", value)


def safe_page(raw: bytes, encoding: str) -> tuple[str, str]:
    """(body, media type) to serve for a stored page: cleaned HTML, or the text itself."""
    text = decode_body(raw, encoding)
    if not looks_like_html(text):
        return text, "text/plain"
    try:
        document = lxml.html.document_fromstring(text)
    except (etree.ParserError, ValueError):
        return text, "text/plain"
    for base in document.iter("base"):
        base.drop_tree()
    cleaned = _CLEANER.clean_html(document)
    _unlink(cleaned)
    return lxml.html.tostring(cleaned, encoding="unicode", doctype="<!DOCTYPE html>"), "text/html"
