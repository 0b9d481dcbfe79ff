"""Dcard forums (www.dcard.tw, or any server of the same API): spiders/dcard.py."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from zeroarchive.core.schedule import DAILY_FOR_A_WEEK
from zeroarchive.sources.base import SiteType, SiteUrlError, Source, rebuild

FORUM_PATH = re.compile(r"^(?P<prefix>.*)/f/(?P<forum>[A-Za-z0-9_-]+)/?$")


def forum_of(site_url: str) -> tuple[str, str] | None:
    """``(root, forum)`` of a forum page URL, or None when it is not one.

    >>> forum_of("https://www.dcard.tw/f/funny")
    ('https://www.dcard.tw', 'funny')
    >>> forum_of("http://127.0.0.1:8080/mirror/f/girl/")
    ('http://127.0.0.1:8080/mirror', 'girl')
    >>> forum_of("https://www.dcard.tw/f/funny/p/224362515") is None
    True
    """
    parts = urlsplit(site_url)
    found = FORUM_PATH.match(parts.path)
    if found is None:
        return None
    root = urlunsplit((parts.scheme, parts.netloc, found.group("prefix"), "", ""))
    return root, found.group("forum")


def forum_url(url: str) -> str:
    """A forum's page, from its URL with or without a trailing slash or query.

    >>> forum_url("https://www.dcard.tw/f/trending/?latest=true")
    'https://www.dcard.tw/f/trending'
    >>> forum_url("https://www.dcard.tw/f/funny/p/224362515")
    Traceback (most recent call last):
    ...
    zeroarchive.sources.base.SiteUrlError: not a Dcard forum: expected .../f/<forum>
    """
    found = forum_of(url)
    if found is None:
        raise SiteUrlError("not a Dcard forum: expected .../f/<forum>")
    root, forum = found
    return rebuild(url, f"{urlsplit(root).path}/f/{forum}")


SOURCE = Source(
    name="dcard",
    article_type="Dcard",
    site_types=(SiteType("dcard", DAILY_FOR_A_WEEK),),
    parser="zeroarchive.parser.dcard:parse_dcard",
    site_url=forum_url,
    hosts=("dcard.tw",),
    # 0archive's discussion boards were PTT's and Dcard's; the label alone means PTT.
    labels={"討論區看板": "dcard"},
    assembled=True,
)
