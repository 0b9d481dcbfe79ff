"""An archived page as stored, made safe to look at: scripts, event handlers, frames,
embeds, <base> and <meta> (refresh) removed, its pictures, videos and stylesheets pointed
at the archive's own copies (``media``: ``/media/<sha256>``) and every other fetching attribute
set aside, served under a Content-Security-Policy that loads nothing but those copies
(``page_headers``), in a sandboxed frame that runs no script. Nothing is fetched from the
live site."""

from __future__ import annotations

import re
from urllib.parse import urljoin

import lxml.html
from lxml import etree
from lxml_html_clean import Cleaner

from zeroarchive.core.encoding import decode_body
from zeroarchive.monitor.media import PREFIX, ShownItems

# For answers that are no page (a 404, an error): nothing loads at all.
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

# A page: pictures, stylesheets, fonts, video and audio from the monitor's media route
# alone (its origin and path), no script, no frame, no form. The sandbox keeps the
# monitor's origin (without scripts that grants nothing) so the pictures load as
# same-origin requests, which the guard serves and other sites' pages cannot make.
_PAGE_POLICY = (
    "default-src 'none'; img-src {media} data:; style-src {media} 'unsafe-inline'; "
    "font-src {media} data:; media-src {media}; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'self'; sandbox allow-same-origin"
)
_ORIGIN = re.compile(
    r"https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?|https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?"
)


def page_headers(origin: str) -> dict[str, str]:
    """The headers of an archived page served from ``origin`` (the monitor's own, as the
    request named it; anything odd and the page loads nothing at all).

    >>> page_headers("http://127.0.0.1:8000")["Content-Security-Policy"][:52]
    "default-src 'none'; img-src http://127.0.0.1:8000/me"
    >>> page_headers("http://x; script-src *")["Content-Security-Policy"][:20]
    "default-src 'none'; "
    >>> "script-src" in page_headers("http://x; script-src *")["Content-Security-Policy"]
    False
    """
    if not _ORIGIN.fullmatch(origin):
        return HEADERS
    return {**HEADERS, "Content-Security-Policy": _PAGE_POLICY.format(media=origin + PREFIX)}


# <link> elements are taken care of by ShownItems (stylesheets pointed at the archive,
# every other link dropped).
_CLEANER = Cleaner(
    scripts=True,
    javascript=True,
    comments=True,
    style=False,
    inline_style=False,
    links=False,
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
            if value is None or value.startswith(PREFIX):
                continue  # an archived copy (ShownItems.rewrite)
            if not value.strip().lower().startswith("data:"):
                del element.attrib[name]
                element.set(f"data-archived-{name}", value)


def safe_page(
    raw: bytes, encoding: str, url: str = "", items: ShownItems | None = None
) -> tuple[str, str]:
    """(body, media type) to serve for a stored page: cleaned HTML, or the text itself.
    ``url`` is the page's (its relative references resolve against it and its ``<base>``);
    ``items`` the snapshot's media, its pictures and stylesheets (none: all left out)."""
    text = decode_body(raw, encoding)
    if not looks_like_html(text):
        return text, "text/plain"
    try:
        document = lxml.html.document_fromstring(text)
    except (etree.ParserError, ValueError):
        return text, "text/plain"
    base = url
    for element in document.iter("base"):
        if element.get("href") and base == url:
            base = urljoin(url, element.get("href").strip())
    for element in list(document.iter("base")):
        element.drop_tree()
    items = items or ShownItems([])
    styles = items.stylesheets(document, base)
    cleaned = _CLEANER.clean_html(document)
    items.rewrite(cleaned, base, styles)
    _unlink(cleaned)
    return lxml.html.tostring(cleaned, encoding="unicode", doctype="<!DOCTYPE html>"), "text/html"
