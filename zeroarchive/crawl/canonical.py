"""Which URL a fetched page belongs to: the server's redirect target or the page's own
``og:url`` / ``rel=canonical`` claim, when that claim is credible.

A claim is only the page's word: a claim that cannot be used (empty, not http(s), a
relative path naming another page, off the site, the front page, a list page, not an
article by the site's rules) is ignored with its reason, and the page stays its article's.
A claim never says that the article is gone: only the server can (``events/signs.py``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import lxml.etree

from zeroarchive.core.encoding import decode_body
from zeroarchive.core.urls import (
    MAX_URL_LENGTH,
    UrlRejected,
    UrlRules,
    canonicalize_url,
    is_on_site,
)
from zeroarchive.sites.record import Site

HEAD_END = re.compile(rb"</head\s*>", re.IGNORECASE)
HEAD_LIMIT = 256 * 1024
_LINK_AND_META_TAGS = re.compile(rb"<(?:link|meta)\b[^>]*>", re.IGNORECASE)
_DECLARED = (
    "//link[contains(concat(' ', normalize-space(@rel), ' '), ' canonical ')]/@href"
    " | //meta[@property='og:url']/@content"
)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_FIRST_SEGMENT = re.compile(r"[^/?#]+")
_LONG_NUMBER = re.compile(r"\d{5,}")
#: Why a claim was not used, as counted (``canonical/ignored/<why>``): the reasons of
#: ``UrlRejected`` and these.
IGNORED = UrlRejected.REASONS | {
    "empty",
    "relative",
    "off_site",
    "front_page",
    "list_page",
    "not_article",
    "other_article",
}


@dataclass(frozen=True)
class Claims:
    """Where a fetched page belongs: ``moved_to`` (a canonical URL on the site) when the
    server or a credible claim says it is not its article's own page, else None; and the
    claims that were ignored, each as written with why."""

    moved_to: str | None
    ignored: tuple[tuple[str, str], ...] = ()


def declared_urls(body: bytes, encoding: str) -> list[str]:
    """The page's ``rel=canonical`` and ``og:url`` values, in that order, stripped (an
    empty one included: it is a claim that cannot be used).

    Only the head is decoded and parsed: both live there, and the body can be megabytes.

    >>> html = '<link rel="canonical" href="/a?x=1"><meta property="og:url" content="https://s/a">'
    >>> declared_urls(html.encode(), "utf-8")
    ['/a?x=1', 'https://s/a']
    >>> head = (b'<meta name="about" content="canonical"><link rel="canonical" href="/c">'
    ...         b'<meta name="x" content="y"><meta property="og:url" content=" ">')
    >>> declared_urls(head, "utf-8")
    ['/c', '']
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
    return [value.strip() for value in head.xpath(_DECLARED)]


def read_claims(article_url: str, final_url: str, declared: list[str], site: Site) -> Claims:
    """Where the page fetched for ``article_url`` (answered at ``final_url``) belongs.

    A server redirect counts first. Then the claims in order: the first usable one
    decides (naming the page itself, it stays). A claim is used only when it is an
    absolute, protocol- or root-relative http(s) URL, or the page's own host written
    without a scheme (``std.stheadline.com/daily/...``, read as that host's URL); on the
    site; not its front page; not one of its list pages (its URL, feeds, sitemaps, or a
    URL its ``following`` rules match and its ``article`` rules do not); when the site
    has ``article`` rules, an article by them; and the same story (``same_story``): a
    claim naming another article (a template's fixed or latest story) moves nothing.

    >>> from zeroarchive.sites.record import parse_config
    >>> site = Site(1, "s", "https://s.tw/list", "news", parse_config({"article": "/a/"}, "s"))
    >>> read_claims("https://s.tw/a/1", "https://s.tw/a/1", ["/a/1?ref=x"], site)
    Claims(moved_to='https://s.tw/a/1?ref=x', ignored=())
    >>> read_claims("https://s.tw/a/1", "https://s.tw/a/2", [], site).moved_to
    'https://s.tw/a/2'
    >>> read_claims("https://s.tw/a/1", "https://s.tw/a/1", ["s.tw/a/1", "/a/1/amp"], site)
    Claims(moved_to=None, ignored=())
    >>> read_claims("https://s.tw/a/1", "https://s.tw/a/1", ["https://s.tw/", "a/2"], site)
    Claims(moved_to=None, ignored=(('https://s.tw/', 'front_page'), ('a/2', 'relative')))
    >>> read_claims("https://s.tw/a/1", "https://s.tw/a/1", ["/a/2"], site).ignored
    (('/a/2', 'other_article'),)
    """
    rules = site.config.url_rules
    redirected = _canonical(final_url, rules)
    if redirected is not None and redirected != article_url:
        return Claims(redirected)
    ignored = []
    for value in declared:
        url, why = _claimed(value, final_url, article_url, site)
        if why is not None:
            ignored.append((value, why))
            continue
        return Claims(None if url == article_url else url, tuple(ignored))
    return Claims(None, tuple(ignored))


def _claimed(value: str, page_url: str, article_url: str, site: Site) -> tuple[str, str | None]:
    """The canonical URL ``value`` names, or why it cannot be used."""
    if not value:
        return "", "empty"
    if len(value) > MAX_URL_LENGTH:
        return "", "too_long"
    try:
        absolute, relative = _absolute(page_url, value)
    except ValueError:
        # urljoin refuses some malformed authorities ("//[": an unclosed IPv6 literal).
        return "", "malformed"
    rules = site.config.url_rules
    try:
        url = canonicalize_url(absolute, rules)
    except UrlRejected as exc:
        return "", exc.reason
    if url == article_url:
        return url, None
    if relative:
        # A path relative to the page that names another page is most often a URL written
        # without its scheme (og:url must be absolute): never enough to move a page.
        return url, "relative"
    if not is_on_site(url, site.url):
        return url, "off_site"
    front, lists = _site_pages(site.url, site.config.feeds, site.config.sitemaps, rules)
    if url in front:
        return url, "front_page"
    if url in lists:
        return url, "list_page"
    config = site.config
    if config.article and not config.is_article(url, as_found=absolute):
        return url, "list_page" if config.is_following(url) else "not_article"
    if not config.article and config.is_following(url):
        return url, "list_page"
    return url, None if same_story(article_url, url) else "other_article"


def same_story(page_url: str, claimed: str) -> bool:
    """Whether ``claimed`` names the story of ``page_url`` in another spelling: every long
    number of the page's path and query (its ids and dates) kept; or, with none, the same
    path (another host of the site, scheme or query), give or take a segment before or
    after it (``/amp``), or the same last path segment (its slug). Sites whose template
    names one story on every page (the latest, a featured one) name another story: that
    is no move.

    >>> same_story("https://s.tw/news/998126?from=rss", "https://m.s.tw/news/life/998126/amp")
    True
    >>> same_story("https://s.tw/story.php?id=998126", "https://s.tw/news/998126")
    True
    >>> same_story("https://s.tw/news/20131129/302433.htm", "https://s.tw/news/20131129/302434.htm")
    False
    >>> same_story("https://s.tw/a/some-title", "https://s.tw/2020/01/some-title/")
    True
    >>> same_story("https://s.tw/a/some-title?x=1", "https://s.tw/a/some-title")
    True
    >>> same_story("https://s.tw/a/some-title", "https://s.tw/a/latest")
    False
    >>> same_story("https://s.tw/a/1", "https://s.tw/amp/a/1"), same_story("https://s/a/1", "/a/9")
    (True, False)
    """
    page, claim = urlsplit(page_url), urlsplit(claimed)
    numbers = _LONG_NUMBER.findall(f"{page.path}?{page.query}")
    if numbers:
        named = f"{claim.path}?{claim.query}"
        return all(number in named for number in numbers)
    mine = [part for part in page.path.split("/") if part]
    theirs = [part for part in claim.path.split("/") if part]
    if not mine or not theirs:
        return mine == theirs
    short, long = sorted((mine, theirs), key=len)
    # The same path with a segment before or after it (/amp/news/a, /news/a/amp), or the
    # same slug under other folders.
    return short in (long[: len(short)], long[-len(short) :]) or mine[-1] == theirs[-1]


def _absolute(page_url: str, value: str) -> tuple[str, bool]:
    """``value`` made absolute against the page, and whether it was a relative path.

    >>> _absolute("https://s.tw/d/a?id=1", "s.tw/d/a?id=1")
    ('https://s.tw/d/a?id=1', False)
    >>> _absolute("http://127.0.0.1:8000/d/a", "127.0.0.1/d/b")
    ('http://127.0.0.1:8000/d/b', False)
    >>> _absolute("https://s.tw/d/a", "other.tw/d/a"), _absolute("https://s.tw/d/a", "//o.tw/x")
    (('https://s.tw/d/other.tw/d/a', True), ('https://o.tw/x', False))
    """
    page = urlsplit(page_url)
    segment = _FIRST_SEGMENT.match(value)
    end = segment.end() if segment else 0
    named, _, port = value[:end].lower().partition(":")
    host = (page.hostname or "").lower()
    if named and (not port or (port.isascii() and port.isdigit())) and _bare(named) == _bare(host):
        if named == host and not port:
            # The host without the page's port: the page's own host and port.
            return f"{page.scheme}://{page.netloc}{value[end:]}", False
        return f"{page.scheme}://{value}", False
    if _SCHEME.match(value):
        return value, False
    return urljoin(page_url, value), not value.startswith("/")


def _bare(host: str) -> str:
    return host.removeprefix("www.")


@functools.lru_cache(maxsize=1024)
def _site_pages(
    site_url: str, feeds: tuple[str, ...], sitemaps: tuple[str, ...], rules: UrlRules
) -> tuple[frozenset[str | None], frozenset[str | None]]:
    """The site's front pages (its URL and its host's root) and its own list pages (its
    URL, feeds and sitemaps), canonical: the same few sites for every page of a crawl."""
    front = {_canonical(site_url, rules), _canonical(_root(site_url), rules)}
    lists = {_canonical(url, rules) for url in (site_url, *feeds, *sitemaps)}
    return frozenset(front), frozenset(lists)


def _canonical(url: str, rules: UrlRules) -> str | None:
    try:
        return canonicalize_url(url, rules)
    except UrlRejected:
        return None


def _root(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/"
