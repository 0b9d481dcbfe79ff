"""Publication dates: declared metadata first, then htmldate, with the time of day read off
the page when a source gives only the day."""

from __future__ import annotations

import datetime as dt
import logging
import re
from zoneinfo import ZoneInfo

from htmldate import find_date
from lxml.html import HtmlElement

from zeroarchive.parser.metadata import PageMetadata

logger = logging.getLogger(__name__)

_PUBLISHED_META = (
    "article:published_time",
    "og:article:published_time",
    "datepublished",
    "pubdate",
    "publishdate",
    "publish-date",
    "dc.date.issued",
    "dcterms.created",
    "sailthru.date",
    "parsely-pub-date",
    "date",
)
_MODIFIED_META = ("article:modified_time", "og:updated_time", "datemodified", "lastmod")
_ISO_RE = re.compile(
    r"(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:[T\s]+(\d{1,2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?"
    r"\s*(Z|[+-]\d{2}:?\d{2})?)?"
)
# 2013/06/29 22:54, 2013年06月29日19:35, 2013.06.29 04:17 pm, 2014年 03月 21日 20:36
_TEXT_RE = re.compile(
    r"(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})\s*日?\s*"
    r"(?:[(（][^)）]{1,8}[)）]\s*|星期.\s*)?(上午|下午)?\s*(\d{1,2})[:：](\d{2})(?:[:：](\d{2}))?"
    r"(?:\s*([AaPp])\.?[Mm]\.?)?"
)


def parse_datetime(value: str, tz: ZoneInfo) -> int | None:
    """Unix seconds of an ISO-like date(time); naive ones are read in ``tz``.

    >>> taipei = ZoneInfo("Asia/Taipei")
    >>> parse_datetime("2018-09-16T15:31:57+08:00", taipei)
    1537083117
    >>> parse_datetime("2013-06-29T18:24:27+0800", taipei) == parse_datetime(
    ...     "2013/06/29 18:24:27", taipei)
    True
    >>> parse_datetime("2016-05-21T11:44Z", taipei)
    1463831040
    >>> parse_datetime("yesterday", taipei) is None
    True
    """
    match = _ISO_RE.search(value)
    if match is None:
        return None
    year, month, day, hour, minute, second, zone = match.groups()
    try:
        moment = dt.datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0)
        )
    except ValueError:
        return None
    if zone:
        if zone == "Z":
            offset = dt.timedelta(0)
        else:
            sign = -1 if zone[0] == "-" else 1
            digits = zone[1:].replace(":", "")
            offset = sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        return int(moment.replace(tzinfo=dt.timezone(offset)).timestamp())
    return int(moment.replace(tzinfo=tz).timestamp())


def _has_time(value: str) -> bool:
    match = _ISO_RE.search(value)
    return bool(match and match.group(4) is not None)


def text_datetime(text: str, day: dt.date | None, tz: ZoneInfo) -> int | None:
    """The first date with a time of day written in ``text`` (on ``day`` when given).

    >>> taipei = ZoneInfo("Asia/Taipei")
    >>> t = text_datetime("更新：2013.06.29 04:17 pm", dt.date(2013, 6, 29), taipei)
    >>> dt.datetime.fromtimestamp(t, taipei).isoformat()
    '2013-06-29T16:17:00+08:00'
    >>> t = text_datetime("2014年\\n03月\\n21日\\xa0\\n20:36", None, taipei)
    >>> dt.datetime.fromtimestamp(t, taipei).isoformat()
    '2014-03-21T20:36:00+08:00'
    >>> text_datetime("2014/03/21 20:36", dt.date(2014, 3, 22), taipei) is None
    True
    """
    for match in _TEXT_RE.finditer(text):
        year, month, day_, half, hour, minute, second, ampm = match.groups()
        try:
            found = dt.date(int(year), int(month), int(day_))
        except ValueError:
            continue
        if day is not None and found != day:
            continue
        h = int(hour)
        if (half == "下午" or (ampm and ampm.lower() == "p")) and h < 12:
            h += 12
        elif (half == "上午" or (ampm and ampm.lower() == "a")) and h == 12:
            h = 0
        try:
            moment = dt.datetime.combine(found, dt.time(h, int(minute), int(second or 0)))
        except ValueError:
            continue
        return int(moment.replace(tzinfo=tz).timestamp())
    return None


def published_at(
    meta: PageMetadata, tree: HtmlElement, html: str, url: str, body_text: str, tz: ZoneInfo
) -> int | None:
    """When the page was first published, as unix seconds (None when it does not say)."""
    declared = _declared(meta, ("datePublished", "dateCreated"), _PUBLISHED_META, tree)
    if declared is not None and _has_time(declared):
        return parse_datetime(declared, tz)
    day: dt.date | None = None
    if declared is not None:
        stamp = parse_datetime(declared, tz)
        day = dt.datetime.fromtimestamp(stamp, tz).date() if stamp is not None else None
    found: str | None = None
    if day is None:
        try:
            found = find_date(
                # htmldate downloads a page that is only a URL; the tree it never downloads.
                tree if html.startswith("http") and " " not in html else html,
                url=url,
                original_date=True,
                extensive_search=True,
                outputformat="%Y-%m-%dT%H:%M:%S",
            )
        except ValueError:
            logger.debug("htmldate failed on %s", url, exc_info=True)
        if found:
            day = dt.date.fromisoformat(found[:10])
    if day is None:
        return None
    visible = _visible_text(tree)
    timed = text_datetime(visible, day, tz) or text_datetime(body_text, day, tz)
    if timed is not None:
        return _with_seconds(timed, html)
    return parse_datetime(found or day.isoformat(), tz)


_EPOCH_RE = re.compile(r"(?<![\d.])1\d{9}(?![\d.])")


def load_date_languages() -> None:
    """Have dateparser load every language's patterns now, not on its first date.

    htmldate hands dateparser the dates it cannot read itself (a fifth of the CJK pages
    with no declared date), and dateparser loads its ~200 languages' patterns as it first
    tries each: about 1.8 CPU seconds, once per process. A text no language reads tries them
    all; the parser processes are forked from one that did this. DateDataParser keeps no
    other state between dates (``try_previous_locales`` is off), so later dates parse the
    same.
    """
    from htmldate.extractors import get_external_parser

    get_external_parser().get_date_data("xx 1 yy 2020")


def _with_seconds(minute: int, html: str) -> int:
    """``minute`` made exact by a unix timestamp in the page (a script's publish time) that
    falls within that minute; pages show minutes, scripts often keep the seconds.

    >>> _with_seconds(1398840540, "<script>var newsTime = '1398840577';</script>")
    1398840577
    >>> _with_seconds(1398840540, "<script>var t = 1398840600;</script>")
    1398840540
    """
    if minute % 60:
        return minute
    for match in _EPOCH_RE.finditer(html):
        value = int(match.group(0))
        if minute <= value < minute + 60:
            return value
    return minute


def modified_at(meta: PageMetadata, tz: ZoneInfo) -> int | None:
    """When the page says it was last edited, as unix seconds, if it says so."""
    value = meta.jsonld_value("dateModified")
    if not isinstance(value, str):
        value = meta.first(*_MODIFIED_META)
    return parse_datetime(value, tz) if value else None


def _declared(
    meta: PageMetadata, jsonld_keys: tuple[str, ...], names: tuple[str, ...], tree: HtmlElement
) -> str | None:
    for key in jsonld_keys:
        value = meta.jsonld_value(key)
        if isinstance(value, str) and _ISO_RE.search(value):
            return value
    value = meta.first(*names)
    if value and _ISO_RE.search(value):
        return value
    for element in tree.xpath("//time[@pubdate][@datetime] | //*[@itemprop='datePublished']"):
        value = element.get("datetime") or element.get("content")
        if value and _ISO_RE.search(value):
            return value
    return None


def _visible_text(tree: HtmlElement) -> str:
    body = tree.find("body")
    root = body if body is not None else tree
    if next(root.iter("script", "style"), None) is None:
        # The generic parser took them out before: the text is walked in C, not by an XPath
        # that looks for a script above every text node (a fortieth of a parse).
        return " ".join(root.itertext())
    return " ".join(
        text for text in root.xpath(".//text()[not(ancestor::script) and not(ancestor::style)]")
    )
