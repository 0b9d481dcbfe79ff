"""PTT boards (www.ptt.cc, or any mirror of its web interface): spiders/ptt.py."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from zeroarchive.core.schedule import DAILY_FOR_A_WEEK
from zeroarchive.sources.base import SiteType, SiteUrlError, Source, rebuild

BOARD_INDEX = re.compile(r"/bbs/(?P<board>[A-Za-z0-9_.-]+)/index\d*\.html$")
POST_PATH = re.compile(r"/bbs/(?P<board>[A-Za-z0-9_.-]+)/M\.\d+\.A\.[0-9A-Fa-f]+\.html$")
_BOARD_PAGE = re.compile(
    r"^(?P<prefix>.*?)/bbs/(?P<board>[A-Za-z0-9_.-]+)(?:/(?:index\d*\.html)?)?$"
)


def board_of(url: str) -> str | None:
    """The board of an index page URL, or None when ``url`` is not one.

    >>> board_of("https://www.ptt.cc/bbs/Gossiping/index.html")
    'Gossiping'
    >>> board_of("https://www.ptt.cc/bbs/Gossiping/index39000.html")
    'Gossiping'
    >>> board_of("https://www.ptt.cc/bbs/Gossiping/M.1.A.2.html") is None
    True
    """
    found = BOARD_INDEX.search(urlsplit(url).path)
    return found.group("board") if found else None


def is_post_of(url: str, board: str) -> bool:
    """Whether ``url`` is a post of ``board`` (boards compare case-insensitively, as PTT's).

    >>> is_post_of("https://www.ptt.cc/bbs/LoL/M.1457622282.A.D4F.html", "lol")
    True
    >>> is_post_of("https://www.ptt.cc/bbs/LoL/M.1457622048.A.Z80.html", "LoL")
    False
    >>> is_post_of("https://www.ptt.cc/bbs/Other/M.1457622282.A.D4F.html", "LoL")
    False
    """
    found = POST_PATH.search(urlsplit(url).path)
    return found is not None and found.group("board").lower() == board.lower()


def board_url(url: str) -> str:
    """A board's first index page, from any form of the board's URL.

    >>> board_url("https://www.ptt.cc/bbs/Gossiping")
    'https://www.ptt.cc/bbs/Gossiping/index.html'
    >>> board_url("https://www.ptt.cc/bbs/HatePolitics/index3977.html?x=1")
    'https://www.ptt.cc/bbs/HatePolitics/index.html'
    >>> board_url("https://www.ptt.cc/bbs/HatePolitics/M.1.A.2.html")
    Traceback (most recent call last):
    ...
    zeroarchive.sources.base.SiteUrlError: not a PTT board: expected .../bbs/<Board>/index.html
    """
    found = _BOARD_PAGE.match(urlsplit(url).path)
    if found is None:
        raise SiteUrlError("not a PTT board: expected .../bbs/<Board>/index.html")
    return rebuild(url, f"{found.group('prefix')}/bbs/{found.group('board')}/index.html")


SOURCE = Source(
    name="ptt",
    article_type="PTT",
    site_types=(SiteType("ptt", DAILY_FOR_A_WEEK, aliases=("ptt_board", "discussion_board")),),
    parser="zeroarchive.parser.ptt:parse_ptt",
    site_url=board_url,
    hosts=("ptt.cc",),
    labels={"批踢踢": "ptt", "Ptt 看板": "ptt", "討論區看板": "ptt"},
)
