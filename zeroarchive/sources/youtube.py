"""YouTube channels (www.youtube.com, or any server of the same pages): spiders/youtube.py.

A channel's videos are discovered through its Atom feed, ``/feeds/videos.xml?channel_id=``
on the site URL's own scheme and host; each video is archived as its watch page.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import lxml.html

from zeroarchive.core.schedule import ONCE
from zeroarchive.sources.base import SiteType, SiteUrlError, Source, rebuild

CHANNEL_ID = re.compile(r"UC[0-9A-Za-z_-]{22}")
VIDEO_ID = re.compile(r"[0-9A-Za-z_-]{11}")
PLATFORM_HOSTS = ("youtube.com", "youtu.be")
# The desktop site: its watch pages carry the player and initial-data JSON the parser reads.
WEB_HOST = "www.youtube.com"
_CHANNEL_PATHS = (
    re.compile(r"^/(?P<kind>channel)/(?P<name>UC[0-9A-Za-z_-]{22})(?:/.*)?$"),
    re.compile(r"^/(?P<kind>user|c)/(?P<name>[^/]+)(?:/.*)?$"),
    re.compile(r"^/(?P<kind>@)(?P<name>[^/]+)(?:/.*)?$"),
)
_EXTERNAL_ID = re.compile(r'"(?:externalId|channelId)"\s*:\s*"(UC[0-9A-Za-z_-]{22})"')


def channel_url(url: str) -> str:
    """A channel's own URL (``/channel/UC...``, ``/@handle``, ``/user/...``, ``/c/...``)
    from any of its pages; on YouTube's own hosts, on its desktop site.

    >>> channel_url("https://m.youtube.com/channel/UCct7QF2jcWRY6dhXWMSq9LQ/videos?view=0")
    'https://www.youtube.com/channel/UCct7QF2jcWRY6dhXWMSq9LQ'
    >>> channel_url("https://www.youtube.com/@setnews/featured")
    'https://www.youtube.com/@setnews'
    >>> channel_url("http://127.0.0.1:8080/user/TheVolvorocks")
    'http://127.0.0.1:8080/user/TheVolvorocks'
    >>> channel_url("https://www.youtube.com/watch?v=2lAe1cqCOXo")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zeroarchive.sources.base.SiteUrlError: not a YouTube channel: expected /channel/UC..., ...
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    on_platform = any(host == h or host.endswith("." + h) for h in PLATFORM_HOSTS)
    for pattern in _CHANNEL_PATHS:
        found = pattern.match(parts.path)
        if found:
            kind, name = found.group("kind"), found.group("name")
            path = f"/@{name}" if kind == "@" else f"/{kind}/{name}"
            return rebuild(url, path, netloc=WEB_HOST if on_platform else None)
    raise SiteUrlError(
        "not a YouTube channel: expected /channel/UC..., /@handle, /user/... or /c/..."
    )


def channel_id_of(url: str) -> str | None:
    """The channel id a channel URL holds, or None (``/@handle``, ``/user/...``, ``/c/...``).

    >>> channel_id_of("https://www.youtube.com/channel/UCct7QF2jcWRY6dhXWMSq9LQ")
    'UCct7QF2jcWRY6dhXWMSq9LQ'
    >>> channel_id_of("https://www.youtube.com/user/TheVolvorocks") is None
    True
    """
    found = _CHANNEL_PATHS[0].match(urlsplit(url).path)
    return found.group("name") if found else None


def channel_id_from_page(html: str) -> str | None:
    """The channel id a channel page names: its canonical link, its RSS link, or the
    ``externalId`` of its embedded data (in that order).

    >>> channel_id_from_page('<link rel="canonical" href="https://www.youtube.com/channel/UCct7QF2jcWRY6dhXWMSq9LQ">')
    'UCct7QF2jcWRY6dhXWMSq9LQ'
    >>> channel_id_from_page('<script>var d = {"externalId":"UCBR8-60-B28hp2BmDPdntcQ"};</script>')
    'UCBR8-60-B28hp2BmDPdntcQ'
    >>> channel_id_from_page("<p>nothing</p>") is None
    True
    """
    if html.strip():
        tree = lxml.html.document_fromstring(html)
        for href in tree.xpath('//link[@rel="canonical"]/@href'):
            found = channel_id_of(str(href))
            if found:
                return found
        rss = '//link[@rel="alternate"][@type="application/rss+xml"]/@href'
        for href in tree.xpath(rss):
            ids = parse_qs(urlsplit(str(href)).query).get("channel_id", [])
            if ids and CHANNEL_ID.fullmatch(ids[0]):
                return ids[0]
    embedded = _EXTERNAL_ID.search(html)
    return embedded.group(1) if embedded else None


def feed_url(site_url: str, channel_id: str) -> str:
    """The channel's Atom feed, on the site URL's own scheme and host.

    >>> feed_url("http://127.0.0.1:8080/user/x", "UCct7QF2jcWRY6dhXWMSq9LQ")
    'http://127.0.0.1:8080/feeds/videos.xml?channel_id=UCct7QF2jcWRY6dhXWMSq9LQ'
    """
    return rebuild(site_url, "/feeds/videos.xml", f"channel_id={channel_id}")


def watch_url(site_url: str, video_id: str) -> str:
    """A video's canonical page, on the site URL's own scheme and host.

    >>> watch_url("https://www.youtube.com/@setnews", "2lAe1cqCOXo")
    'https://www.youtube.com/watch?v=2lAe1cqCOXo'
    """
    return rebuild(site_url, "/watch", f"v={video_id}")


SOURCE = Source(
    name="youtube",
    article_type="YTVideo",
    # 0archive's plan: the channel daily, each video page once (override per site).
    site_types=(SiteType("youtube", ONCE, aliases=("youtube_channel", "youtube_user")),),
    parser="zeroarchive.parser.youtube:parse_youtube",
    site_url=channel_url,
    hosts=PLATFORM_HOSTS,
    labels={"YouTube 頻道": "youtube", "YouTube 帳號": "youtube"},
)
