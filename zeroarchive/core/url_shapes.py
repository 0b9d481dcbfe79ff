"""The shape of a URL: its path and query with the parts that vary from page to page (ids,
dates, slugs) turned into regex classes, so the links of one kind on a site share a shape.

Shapes are what a site's learnt article patterns are made of (zeroarchive/crawl/
article_patterns.py) and how links that matched no regex are reported (site_stats). A shape
is a regex anchored to the path: ``re.search(shape, url)`` matches every URL of the shape.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

#: Extensions of pages (kept literal in a shape; a name before one is generalised alone).
PAGE_EXTENSIONS = frozenset(
    ("html", "htm", "shtml", "xhtml", "php", "asp", "aspx", "jsp", "cms", "ece", "cfm")
)
SLUG = r"[^/]+"
INDEX_NAMES = frozenset(("index", "default", "main", "home"))
_DIGITS = re.compile(r"\d+")
_WORDS = re.compile(r"[^\W\d_]+|\d+")
#: Separators of a slug's words.
_SEPARATORS = re.compile(r"[-_+.,]|%20")


def is_slug(name: str) -> bool:
    """Whether a path segment (without its extension) is a slug: three words or more and 16
    characters (``read-it-later`` is a page of the site, not a headline), or a
    long run of percent-encoded (non-ASCII) text, as a headline in a URL is (ten CJK
    characters: a section's name is shorter).

    >>> is_slug("russia-invaded-ukraine-choice"), is_slug("buying-guides"), is_slug("mh17")
    (True, False, False)
    >>> is_slug("%E5%8D%B3%E6%99%82-%E4%B8%AD%E5%9C%8B"), is_slug("%E5%8D%B3%E6%99%82" * 5)
    (False, True)
    """
    if name.count("%") >= 30:
        return True
    words = [part for part in _SEPARATORS.split(name) if part]
    return len(words) >= 3 and len(name) >= 16


def segment_shape(segment: str, last: bool = False) -> str:
    """The shape of one path segment: digits become ``\\d+``, a slug ``[^/]+``, words stay;
    the ``last`` segment of a path made of words alone is a slug too (``/linked/2016/03/05/
    igloo``: a one-word headline), except a folder's index page.

    >>> segment_shape("20180916001767-260402")
    '\\\\d+\\\\-\\\\d+'
    >>> segment_shape("867195.htm"), segment_shape("world")
    ('\\\\d+\\\\.htm', 'world')
    >>> segment_shape("algeria-passenger-plane-093510948.html")
    '[^/]+\\\\.html'
    >>> segment_shape("NAT4"), segment_shape("igloo", last=True)
    ('NAT\\\\d+', '[^/]+')
    >>> segment_shape("index.html", last=True)
    'index\\\\.html'
    """
    name, dot, ext = segment.rpartition(".")
    if not dot or ext.lower() not in PAGE_EXTENSIONS:
        name, ext = segment, ""
    tail = re.escape("." + ext) if ext else ""
    if is_slug(name):
        return SLUG + tail
    if last and not _DIGITS.search(name) and name.lower() not in INDEX_NAMES and name:
        return SLUG + tail
    parts = []
    start = 0
    for match in _DIGITS.finditer(name):
        parts.append(re.escape(name[start : match.start()]))
        parts.append(r"\d+")
        start = match.end()
    parts.append(re.escape(name[start:]))
    return "".join(parts) + tail


def url_shape(url: str) -> str:
    """The shape of a URL's path and query (host left out: shapes are kept per site).

    Query values become ``\\d+`` (digits) or ``[^&]*``; the names stay, in the URL's order.

    >>> url_shape("https://news.ltn.com.tw/news/life/breakingnews/2504351")
    '^/news/life/breakingnews/\\\\d+$'
    >>> url_shape("https://www.setn.com/News.aspx?NewsID=350370")
    '^/News\\\\.aspx\\\\?NewsID=\\\\d+$'
    >>> url_shape("https://www.wired.com/story/reddit-power-users-ipo/")
    '^/story/[^/]+/$'
    >>> url_shape("https://example.org/")
    '^/$'
    >>> url_shape("https://www.wired.com/category/gear/")
    '^/category/[^/]+/$'
    """
    parts = urlsplit(url)
    segments = (parts.path or "/").split("/")
    last = max((i for i, segment in enumerate(segments) if segment), default=-1)
    shape = "/".join(
        # A script's name before a query (News.aspx?NewsID=1) is no headline.
        segment_shape(segment, last=i == last and not parts.query) if segment else ""
        for i, segment in enumerate(segments)
    )
    query = parse_qsl(parts.query, keep_blank_values=True)
    if query:
        shape += r"\?" + "&".join(
            re.escape(key) + "=" + (r"\d+" if value.isdigit() else "[^&]*") for key, value in query
        )
    return f"^{shape}$"


def path_and_query(url: str) -> str:
    """What a shape is matched against: the URL without its scheme and host.

    >>> path_and_query("https://x.example/a/1?b=2#c")
    '/a/1?b=2'
    """
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def readable(shape: str) -> str:
    """A shape as a person reads it in a report: the escapes and anchors dropped.

    >>> readable(r"^/news/\\d+\\-\\d+\\-\\d+\\.foo\\.html$")
    '/news/\\\\d+-\\\\d+-\\\\d+.foo.html'
    """
    text = shape.removeprefix("^").removesuffix("$")
    return re.sub(r"\\([^dw])", r"\1", text)


def words_of(segment: str) -> list[str]:
    """The words and numbers of a path segment.

    >>> words_of("overview-daily-20140724.html")
    ['overview', 'daily', '20140724', 'html']
    """
    return _WORDS.findall(segment)
