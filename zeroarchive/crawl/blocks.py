"""Block pages: answers that are not the page asked for but a bot challenge, a captcha or
a login wall, often with status 200. They are failures of kind ``blocked``: never stored
as a snapshot, never a change, the article backs off like after any failure.

Detection reads the headers and the first bytes of the body for what challenge pages are
made of (Cloudflare's, the common captcha services', other bot managers'), and a site's
own ``blocked`` regex for what only it shows. Ordinary pages carry some of the same
scripts (Cloudflare's bot-management script, a comment form's reCAPTCHA), so a marker
that ordinary pages share counts only on a page with almost no text of its own.

Every fetched page passes through here, so the common case stays cheap: the title is read
with a pattern, and the page is parsed for its text only when a shared marker is there.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

import lxml.etree
import lxml.html

#: How much of a body is searched for markers: challenge pages are small (0.4 to 23 KB in
#: tests/fixtures/block_pages), and every page pays for each byte searched.
MARKER_BYTES = 64 * 1024
#: How much of a body is read for its text and a site's own patterns.
HEAD_BYTES = 256 * 1024
#: A page with less visible text than this, and a shared marker, is a block page.
TINY_TEXT = 300

# Markers only challenge pages carry.
_CHALLENGE_MARKERS: tuple[tuple[bytes, str], ...] = (
    (b"window._cf_chl_opt", "cloudflare_challenge"),
    (b"cf-browser-verification", "cloudflare_challenge"),
    (b"__cf_chl_jschl_tk__", "cloudflare_challenge"),
    (b"__cf_chl_captcha_tk__", "cloudflare_captcha"),
    (b"cf-captcha-container", "cloudflare_captcha"),
    (b"/cdn-cgi/challenge-platform/h/", "cloudflare_challenge"),
    (b"_incapsula_resource", "imperva_challenge"),
    (b"geo.captcha-delivery.com", "datadome_captcha"),
    (b"px-captcha", "perimeterx_captcha"),
)
# Markers ordinary pages share (a reCAPTCHA under a comment form, Cloudflare's
# bot-management script): they count on a page with almost no text.
_SHARED_MARKERS: tuple[tuple[bytes, str], ...] = (
    (b"/cdn-cgi/bm/cv/", "cloudflare_bot_fight"),
    (b"g-recaptcha", "captcha"),
    (b"h-captcha", "captcha"),
    (b"cf-turnstile", "captcha"),
    (b"challenges.cloudflare.com/turnstile", "captcha"),
)
# Words every marker above holds one of. An ordinary page holds none, and searching 64 KB
# for these 6 costs half of searching it for the 14 markers (0.32 -> 0.16 ms a page, on the
# reactor's thread of every crawl); a marker is searched only where its word is.
_MARKER_WORDS = (b"captcha", b"_cf_chl", b"cf-browser", b"cdn-cgi", b"incapsula", b"turnstile")


def _word_of(marker: bytes) -> bytes:
    """The marker word ``marker`` holds.

    >>> _word_of(b"window._cf_chl_opt"), _word_of(b"g-recaptcha")
    (b'_cf_chl', b'captcha')
    """
    return next(word for word in _MARKER_WORDS if word in marker)


# A marker without a word fails here, at import, not silently later.
_MARKER_WORD = {marker: _word_of(marker) for marker, _ in _CHALLENGE_MARKERS + _SHARED_MARKERS}
_TITLES = re.compile(
    r"^\s*(?:just a moment\.\.\.|attention required! \| cloudflare|access denied|"
    r"are you a robot\??|請稍候…?|security check)\s*$",
    re.IGNORECASE,
)
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)


def block_reason(
    headers: dict[str, str],
    body: bytes,
    site_patterns: Sequence[re.Pattern[str]] = (),
    encoding: str = "utf-8",
) -> str | None:
    """Why this answer is a block page, or None for a page to keep. ``headers`` by
    lower-case name; ``site_patterns`` the site's own ``blocked`` regexes, searched in the
    page's text.

    >>> block_reason({"cf-mitigated": "challenge"}, b"<html></html>")
    'cloudflare_challenge'
    >>> block_reason({}, b"<title>Just a moment...</title><p>Checking your browser</p>")
    'challenge_title'
    >>> block_reason({}, b"<p>" + "報導".encode() * 500 + b"</p><div class='g-recaptcha'></div>")
    >>> block_reason({}, b"<div class='g-recaptcha'></div>")
    'captcha'
    >>> block_reason({}, "<p>請登入會員以繼續閱讀</p>".encode(), [re.compile("請登入會員")])
    'site_pattern'
    """
    if headers.get("cf-mitigated", "").lower() == "challenge":
        return "cloudflare_challenge"
    head = body[:HEAD_BYTES]
    lowered = body[:MARKER_BYTES].lower()
    words = {word for word in _MARKER_WORDS if word in lowered}
    for marker, reason in _CHALLENGE_MARKERS:
        if _MARKER_WORD[marker] in words and marker in lowered:
            return reason
    title = _title(head, encoding)
    if title and _TITLES.match(title):
        return "challenge_title"
    shared = [
        reason
        for marker, reason in _SHARED_MARKERS
        if _MARKER_WORD[marker] in words and marker in lowered
    ]
    if shared and len(_text(head, encoding)) < TINY_TEXT:
        return shared[0]
    if site_patterns:
        decoded = head.decode(encoding, errors="replace")
        if any(pattern.search(decoded) for pattern in site_patterns):
            return "site_pattern"
    return None


def _title(head: bytes, encoding: str) -> str:
    """The page's first ``<title>``, entities resolved and spaces collapsed; "" if none.

    >>> _title(b"<head><TITLE lang=en>\\n Just a&nbsp;moment...</TITLE>", "utf-8")
    'Just a moment...'
    """
    found = _TITLE.search(head)
    if found is None:
        return ""
    return " ".join(html.unescape(found.group(1).decode(encoding, errors="replace")).split())


def _text(head: bytes, encoding: str) -> str:
    """The visible text of (the start of) a page; empty for no HTML."""
    try:
        tree = lxml.html.document_fromstring(head.decode(encoding, errors="replace"))
    except (ValueError, lxml.etree.ParserError):
        return ""
    for junk in tree.xpath("//script | //style | //noscript"):
        junk.drop_tree()
    return " ".join(tree.text_content().split())
