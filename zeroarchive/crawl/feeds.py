"""Feeds (RSS, RDF, Atom) and sitemaps (urlsets, indexes, news sitemaps, text sitemaps,
gzipped or not) as list pages of generic sites: what they list, with the publication
time they give, and where a site names them (its front page's feed links, its
robots.txt's ``Sitemap:`` lines).

Feeds are read by feedparser (which decodes Big5 and GB2312 feeds by their XML
declaration and survives much broken XML), sitemaps by lxml's incremental parser (entities
never resolved, elements dropped once read). A document that is not what was expected
raises ``BadListDocument`` with a short ``kind`` for the stats.
"""

from __future__ import annotations

import calendar
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from io import BytesIO

import lxml.etree
from scrapy.http import TextResponse
from scrapy.settings import BaseSettings
from scrapy.utils.sitemap import sitemap_urls_from_robots

#: Link types of the feeds a page names (``<link rel="alternate" type=...>``).
FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml", "application/rdf+xml"})
_GZIP_MAGIC = b"\x1f\x8b"


class BadListDocument(ValueError):
    """A feed or sitemap that cannot be read; ``kind`` names why (for the stats)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class ListedLink:
    """One entry of a feed or sitemap: its link, and times the document gives for it."""

    url: str
    #: The entry's title, as the feed or news sitemap gives it.
    title: str = ""
    #: When the feed or news sitemap says it was published (unix seconds).
    published: int | None = None
    #: A sitemap's ``lastmod`` (unix seconds): which children of an index are newest.
    modified: int | None = None


@dataclass(frozen=True)
class SitemapDocument:
    #: A sitemap index lists sitemaps; any other sitemap lists pages.
    is_index: bool
    links: tuple[ListedLink, ...]
    #: The XML was broken: what came before the break is in ``links``.
    recovered: bool = False


@dataclass(frozen=True)
class FeedsConfig:
    """How much of a feed or sitemap is read, from the ``FEEDS_*`` settings."""

    max_bytes: int
    sitemaps_per_index: int

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> FeedsConfig:
        config = cls(
            settings.getint("FEEDS_MAX_BYTES"), settings.getint("FEEDS_SITEMAPS_PER_INDEX")
        )
        if config.max_bytes < 1:
            raise ValueError("FEEDS_MAX_BYTES must be at least 1")
        if config.sitemaps_per_index < 1:
            raise ValueError("FEEDS_SITEMAPS_PER_INDEX must be at least 1")
        return config


def feed_links(page: TextResponse) -> list[str]:
    """Absolute URLs of the RSS and Atom feeds a page names in its ``<head>``.

    >>> page = TextResponse("https://news.example/", body=b'<html><head>'
    ...     b'<link rel="alternate" type="application/rss+xml" href="/rss.xml">'
    ...     b'<link rel="alternate" hreflang="en" href="/en/">'
    ...     b'<link rel="Alternate" type="Application/Atom+XML" href="atom"></head></html>',
    ...     encoding="utf-8")
    >>> feed_links(page)
    ['https://news.example/rss.xml', 'https://news.example/atom']
    """
    found = []
    for link in page.xpath("//link[@href and @type and @rel]"):
        rel = (link.attrib.get("rel") or "").lower().split()
        kind = (link.attrib.get("type") or "").strip().lower()
        if "alternate" in rel and kind in FEED_TYPES:
            found.append(page.urljoin(link.attrib["href"].strip()))
    return list(dict.fromkeys(found))


def sitemaps_in_robots(body: bytes, robots_url: str) -> list[str]:
    """The sitemaps a robots.txt names, as absolute URLs.

    >>> sitemaps_in_robots(b"User-agent: *\\nSitemap: /news.xml\\nsitemap: https://x.example/s.xml.gz",
    ...                    "https://x.example/robots.txt")
    ['https://x.example/news.xml', 'https://x.example/s.xml.gz']
    """
    return list(dict.fromkeys(sitemap_urls_from_robots(body, base_url=robots_url)))


def gunzipped(body: bytes, max_bytes: int) -> bytes:
    """``body`` decompressed when it is gzip data (a ``.xml.gz`` sitemap served as it is),
    refusing more than ``max_bytes`` in or out (a small file can inflate a thousandfold).

    >>> import gzip
    >>> gunzipped(gzip.compress(b"<urlset/>"), 100), gunzipped(b"<urlset/>", 100)
    (b'<urlset/>', b'<urlset/>')
    >>> gunzipped(gzip.compress(b"x" * 1000), 100)
    Traceback (most recent call last):
    ...
    zeroarchive.crawl.feeds.BadListDocument: more than 100 bytes once decompressed
    """
    if len(body) > max_bytes:
        raise BadListDocument("too_large", f"more than {max_bytes} bytes")
    if not body.startswith(_GZIP_MAGIC):
        return body
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise BadListDocument("bad_gzip", f"broken gzip data: {exc}") from None
    if len(data) > max_bytes:
        raise BadListDocument("too_large", f"more than {max_bytes} bytes once decompressed")
    if not data and not inflater.eof:
        raise BadListDocument("bad_gzip", "broken gzip data: it ends before any content")
    return data


def parse_feed(body: bytes, url: str, content_type: str | None = None) -> list[ListedLink]:
    """The entries of an RSS, RDF or Atom feed: each one's link (relative links resolved
    against ``url`` or the feed's own base) and the time it was published (else updated).

    A feed broken past some point still gives the entries before it; an HTML page, or a
    document with no feed in it, raises BadListDocument.
    """
    headers = {"content-location": url}
    if content_type:
        headers["content-type"] = content_type
    # Imported here: it takes 40 ms, and every crawl imports this module at start.
    import feedparser

    # A stream, not bytes: feedparser opens bytes that name a file on this machine.
    parsed = feedparser.parse(BytesIO(body), response_headers=headers)
    if not parsed.version:
        if _looks_like_html(body):
            raise BadListDocument("not_a_feed", "an HTML page, not a feed")
        reason = parsed.get("bozo_exception") or "no RSS, RDF or Atom root element"
        raise BadListDocument("not_a_feed", f"not a feed: {reason}")
    links = []
    for entry in parsed.entries:
        link = (entry.get("link") or "").strip()
        if not link:
            continue
        # dict.get: feedparser's own get() answers a missing updated_parsed with
        # published_parsed, and warns.
        when = dict.get(entry, "published_parsed") or dict.get(entry, "updated_parsed")
        links.append(
            ListedLink(
                link,
                title=(entry.get("title") or "").strip(),
                published=calendar.timegm(when) if when else None,
            )
        )
    return links


def _looks_like_html(body: bytes) -> bool:
    head = body[:2048].lower()
    return any(tag in head for tag in (b"<!doctype html", b"<html", b"<head", b"<body"))


def parse_sitemap(body: bytes) -> SitemapDocument:
    """A sitemap (``<urlset>``), a sitemap index (``<sitemapindex>``) or a text sitemap
    (one URL a line), already decompressed.

    Entries keep ``lastmod`` as ``modified`` and a news sitemap's ``publication_date`` as
    ``published``. XML broken part way gives what came before the break (``recovered``);
    anything else (an HTML page, a feed, no XML at all) raises BadListDocument.
    """
    text_links = _text_sitemap(body)
    if text_links is not None:
        return SitemapDocument(False, text_links)
    events = lxml.etree.iterparse(
        BytesIO(body),
        events=("start", "end"),
        recover=True,
        resolve_entities=False,
        no_network=True,
        remove_comments=True,
        remove_pis=True,
        huge_tree=False,
    )
    try:
        _, root = next(events)
        kind = _local_name(root)
        if kind not in ("urlset", "sitemapindex"):
            raise BadListDocument("not_a_sitemap", f"root element <{kind}>, not a sitemap")
        links = tuple(_sitemap_entries(events, root))
    except (lxml.etree.XMLSyntaxError, StopIteration) as exc:
        reason = str(exc) or "no XML element in it"
        raise BadListDocument("bad_xml", f"not well-formed XML: {reason}") from None
    recovered = bool(events.error_log.filter_from_errors())
    if recovered and not links:
        raise BadListDocument("bad_xml", f"not well-formed XML: {events.error_log.last_error}")
    return SitemapDocument(kind == "sitemapindex", links, recovered)


def _sitemap_entries(
    events: Iterator[tuple[str, lxml.etree._Element]], root: lxml.etree._Element
) -> Iterator[ListedLink]:
    for event, element in events:
        if event != "end" or _local_name(element) not in ("url", "sitemap"):
            continue
        fields: dict[str, str] = {}
        for child in element:
            # A news sitemap's date is <news:news><news:publication_date>; a video's
            # publication_date is the video's, not the page's.
            parts = list(child) if _local_name(child) == "news" else [child]
            for part in parts:
                name = _local_name(part)
                if name and name not in fields and part.text and part.text.strip():
                    fields[name] = part.text.strip()
        # Some indexes write a child's URL as the <sitemap> element's own text.
        loc = fields.get("loc") or (element.text or "").strip()
        element.clear()
        while element.getprevious() is not None:
            del root[0]
        if loc:
            yield ListedLink(
                loc,
                title=fields.get("title", ""),
                published=w3c_time(fields.get("publication_date")),
                modified=w3c_time(fields.get("lastmod")),
            )


def _text_sitemap(body: bytes) -> tuple[ListedLink, ...] | None:
    """The links of a text sitemap, None when ``body`` is not one (every line that is not
    blank must be an absolute http(s) URL)."""
    text = body.decode("utf-8-sig", errors="replace").strip()
    if not text.lower().startswith(("http://", "https://")):
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not all(line.lower().startswith(("http://", "https://")) for line in lines):
        return None
    return tuple(ListedLink(line) for line in lines)


def _local_name(element: lxml.etree._Element) -> str:
    tag = element.tag
    if not isinstance(tag, str):
        return ""
    return tag.rpartition("}")[2]


def w3c_time(value: str | None) -> int | None:
    """Unix seconds of a sitemap's W3C datetime (a date alone is midnight UTC, a time
    without a zone is taken as UTC), None when absent or unreadable.

    >>> w3c_time("2017-04-25T10:00:36+00:00"), w3c_time("2008-12-23")
    (1493114436, 1229990400)
    >>> w3c_time("2015-05-03T18:51:50+01:00"), w3c_time("2004-12-23T18:00:15Z")
    (1430675510, 1103824815)
    >>> w3c_time("last tuesday") is None
    True
    """
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp())


def newest(links: tuple[ListedLink, ...], limit: int) -> tuple[list[ListedLink], int]:
    """The ``limit`` children of a sitemap index with the latest ``lastmod`` (those without
    one after all dated ones, in document order), and how many were left out.

    >>> links = (ListedLink("a", modified=1), ListedLink("b"), ListedLink("c", modified=3))
    >>> [link.url for link in newest(links, 2)[0]], newest(links, 2)[1]
    (['c', 'a'], 1)
    """
    ordered = sorted(
        links, key=lambda link: -link.modified if link.modified is not None else float("inf")
    )
    return ordered[:limit], max(0, len(ordered) - limit)
