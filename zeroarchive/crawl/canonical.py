"""Which URL a fetched page belongs to: the server's redirect target or the page's own
``og:url`` / ``rel=canonical`` claim, when that claim is credible."""

from __future__ import annotations

import functools
import re
from urllib.parse import urljoin, urlsplit

import lxml.etree

from zeroarchive.core.encoding import decode_body
from zeroarchive.core.urls import UrlRejected, UrlRules, canonicalize_url, is_on_site

HEAD_END = re.compile(rb"</head\s*>", re.IGNORECASE)
HEAD_LIMIT = 256 * 1024
_LINK_AND_META_TAGS = re.compile(rb"<(?:link|meta)\b[^>]*>", re.IGNORECASE)
_DECLARED = (
    "//link[contains(concat(' ', normalize-space(@rel), ' '), ' canonical ')]/@href"
    " | //meta[@property='og:url']/@content"
)


def declared_urls(body: bytes, encoding: str) -> list[str]:
    """The page's ``rel=canonical`` and ``og:url`` values, in that order.

    Only the head is decoded and parsed: both live there, and the body can be megabytes.

    >>> html = '<link rel="canonical" href="/a?x=1"><meta property="og:url" content="https://s/a">'
    >>> declared_urls(html.encode(), "utf-8")
    ['/a?x=1', 'https://s/a']
    >>> head = (b'<meta name="about" content="canonical"><link rel="canonical" href="/c">'
    ...         b'<meta name="x" content="y"><meta property="og:url" content="/o">')
    >>> declared_urls(head, "utf-8")
    ['/c', '/o']
    >>> page = '<head><link rel=canonical href="/新聞/1"></head><p>台灣</p>'
    >>> declared_urls(page.encode("cp950"), "cp950"), declared_urls(page.encode("utf-16"), "utf-16")
    (['/新聞/1'], ['/新聞/1'])
    """
    if encoding.startswith(("utf-16", "utf-32")):
        body, encoding = decode_body(body, encoding).encode("utf-8"), "utf-8"
    # Work on bytes before decoding: in the ASCII-compatible codecs "<" and ">" are never
    # part of a multibyte character. Only the head's <link> and <meta> tags are parsed:
    # heads carry tens of KB of scripts, and every fetched page comes through here.
    end = HEAD_END.search(body, 0, HEAD_LIMIT)
    found_tags = _LINK_AND_META_TAGS.findall(body, 0, end.start() if end else HEAD_LIMIT)
    # Only the tags that can be claims: heads carry dozens of other <meta> tags, and parsing
    # them was most of this function's time.
    tags = b"".join(tag for tag in found_tags if b"canonical" in tag or b"og:url" in tag)
    if not tags:
        return []
    head = lxml.etree.HTML(f"<head>{decode_body(tags, encoding)}</head>")
    found = head.xpath(_DECLARED)
    return [value.strip() for value in found if value.strip()]


def moved_to(
    article_url: str,
    final_url: str,
    declared: list[str],
    site_url: str,
    rules: UrlRules,
) -> str | None:
    """The canonical URL the page belongs to if it is not ``article_url``, else None.

    A server redirect (``final_url``) counts first; then a declared URL, but only one on the
    site's own domain that is not the site's front page (some sites declare their home page
    as the canonical of every article).

    >>> site, rules = "http://s.tw/", UrlRules()
    >>> moved_to("http://s.tw/a/1", "http://s.tw/a/1", ["/a/1?ref=x"], site, rules)
    'http://s.tw/a/1?ref=x'
    >>> moved_to("http://s.tw/a/1", "http://s.tw/a/1", ["http://s.tw/"], site, rules) is None
    True
    >>> moved_to("http://s.tw/a/1", "http://s.tw/a/2", [], site, rules)
    'http://s.tw/a/2'
    """
    candidates = [final_url, *(_absolute(final_url, value) for value in declared)]
    front_pages = _front_pages(site_url, rules)
    for index, candidate in enumerate(candidates):
        canonical = _canonical(candidate, rules)
        if canonical is None or canonical == article_url:
            continue
        if index > 0 and (not is_on_site(canonical, site_url) or canonical in front_pages):
            continue
        return canonical
    return None


@functools.lru_cache(maxsize=1024)
def _front_pages(site_url: str, rules: UrlRules) -> frozenset[str | None]:
    # The same few sites for every page of a crawl: canonicalised once each.
    return frozenset({_canonical(site_url, rules), _canonical(_root(site_url), rules)})


def _canonical(url: str, rules: UrlRules) -> str | None:
    try:
        return canonicalize_url(url, rules)
    except UrlRejected:
        return None


def _absolute(base: str, value: str) -> str:
    return urljoin(base, value)


def _root(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/"
