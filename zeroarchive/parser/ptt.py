"""PTT posts (www.ptt.cc/bbs/<board>/M.*.html): header, body, signature, every push."""

from __future__ import annotations

import datetime as dt
import re
from zoneinfo import ZoneInfo

import lxml.html
from lxml.html import HtmlElement

from zeroarchive.core.encoding import decode_body
from zeroarchive.core.errors import ParseError
from zeroarchive.core.items import Parsed
from zeroarchive.parser.text import clean_lines, hashtags, link_urls, text_urls

# PTT prints every time in Taiwan's time, whatever the reader's.
PTT_TZ = ZoneInfo("Asia/Taipei")
_AUTHOR_RE = re.compile(r"^\s*(\S+)\s*(?:\((.*)\))?\s*$")
_PUSH_TIME_RE = re.compile(
    r"(?:(?P<ip>\d{1,3}(?:\.\d{1,3}){3})\s+)?(?P<month>\d{1,2})/(?P<day>\d{1,2})"
    r"(?:\s+(?P<hour>\d{1,2}):(?P<minute>\d{2}))?"
)
_FROM_RE = re.compile(r"來自:\s*(\d{1,3}(?:\.\d{1,3}){3})")
_EDIT_RE = re.compile(r"※ 編輯: (\S+) \(([^)]*)\)(?:, (\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2}))?")


def header_time(value: str) -> int | None:
    """Unix seconds of a post header time such as ``Sun Apr  3 21:04:15 2016`` (Taipei).

    >>> header_time("Sun Apr  3 21:04:15 2016")
    1459688655
    >>> header_time("not a time") is None
    True
    """
    try:
        moment = dt.datetime.strptime(" ".join(value.split()), "%a %b %d %H:%M:%S %Y")
    except ValueError:
        return None
    return int(moment.replace(tzinfo=PTT_TZ).timestamp())


def push_time(month: int, day: int, hour: int, minute: int, post_at: int | None) -> int | None:
    """A push's time: pushes show no year, so it is the first such moment from the post on.

    >>> post = header_time("Sat Dec 30 23:00:00 2017")
    >>> dt.datetime.fromtimestamp(push_time(1, 2, 8, 5, post), PTT_TZ).isoformat()
    '2018-01-02T08:05:00+08:00'
    """
    if post_at is None:
        return None
    posted = dt.datetime.fromtimestamp(post_at, PTT_TZ)
    for year in (posted.year, posted.year + 1):
        try:
            moment = dt.datetime(year, month, day, hour, minute, tzinfo=PTT_TZ)
        except ValueError:
            continue
        # A push can carry the minute of the post itself (seconds are not shown).
        if moment.timestamp() >= post_at - 60:
            return int(moment.timestamp())
    return None


def decode_cfemail(encoded: str) -> str:
    """An address hidden by Cloudflare's email obfuscation (``data-cfemail``).

    >>> decode_cfemail("30467052")
    'v@b'
    """
    data = bytes.fromhex(encoded)
    return bytes(b ^ data[0] for b in data[1:]).decode("utf-8", "replace")


def parse_ptt(raw: bytes, encoding: str, url: str, _tz: ZoneInfo | None = None) -> Parsed:
    """A PTT post with every push. PTT prints Taipei time whatever zone ``_tz`` names."""
    html = decode_body(raw, encoding)
    tree = lxml.html.document_fromstring(html) if html.strip() else None
    main = tree.get_element_by_id("main-content", None) if tree is not None else None
    if main is None:
        raise ParseError("no #main-content: not a PTT post page")
    for protected in main.xpath(".//*[@data-cfemail]"):
        protected.text = decode_cfemail(protected.get("data-cfemail"))
        del protected[:]
    header = _header(main)
    posted = header_time(header.get("時間", ""))
    comments = tuple(_pushes(main, posted))
    body, quoted, signature, footer = _split_body(_body_text(main))
    author, nickname = _author(header.get("作者", ""))
    post_url = next((u for u in text_urls(footer) if "/bbs/" in u), url)
    ip = _FROM_RE.search(footer)
    edits = [
        {"user": m.group(1), "ip": m.group(2), "time": m.group(3)}
        for m in _EDIT_RE.finditer(footer + "\n" + main.text_content())
    ]
    return Parsed(
        canonical_url=post_url,
        title=header.get("標題", ""),
        text=body,
        language="zh-Hant-TW",
        published_at=posted,
        author=author,
        hashtags=hashtags(body),
        urls=link_urls(text_urls(body), url),
        tags=tuple(t for t in (_category(header.get("標題", "")),) if t),
        metadata={
            "board": header.get("看板"),
            "author_nickname": nickname,
            "ip": ip.group(1) if ip else None,
            "quoted": quoted,
            "signature": signature,
            "edits": edits,
            "push_counts": {
                kind: sum(1 for c in comments if c["type"] == kind) for kind in ("推", "噓", "→")
            },
        },
        comments=comments,
    )


def _header(main: HtmlElement) -> dict[str, str]:
    header: dict[str, str] = {}
    for line in main.xpath(
        "./div[contains(@class, 'article-metaline') or contains(@class, 'article-metaline-right')]"
    ):
        tag = line.xpath("string(./span[contains(@class, 'article-meta-tag')])").strip()
        value = line.xpath("string(./span[contains(@class, 'article-meta-value')])").strip()
        if tag:
            header[tag] = value
    return header


def _author(value: str) -> tuple[str | None, str | None]:
    """('senyek9527', None) from 'senyek9527 ()'."""
    match = _AUTHOR_RE.match(value)
    if not match:
        return None, None
    return match.group(1), (match.group(2) or None)


def _category(title: str) -> str | None:
    match = re.match(r"^(?:Re:\s*|Fw:\s*)*\[([^\]]+)\]", title)
    return match.group(1).strip() if match else None


def _body_text(main: HtmlElement) -> str:
    parts = [main.text or ""]
    for child in main:
        classes = child.get("class") or ""
        if "article-metaline" in classes or "push" in classes.split():
            parts.append(child.tail or "")
            continue
        if child.tag == "div" and child.get("id") == "article-polling":
            parts.append(child.tail or "")
            continue
        parts.append(child.text_content())
        parts.append(child.tail or "")
    return "".join(parts)


def _split_body(text: str) -> tuple[str, str, str, str]:
    """(body, quoted reply, signature, footer) of the post's own text."""
    lines = text.split("\n")
    footer_at = next(
        (i for i in range(len(lines) - 1, -1, -1) if lines[i].startswith("※ 發信站")), len(lines)
    )
    footer = "\n".join(lines[footer_at:])
    own = lines[:footer_at]
    while own and own[-1].strip() in ("", "--"):
        own.pop()
    separator = next((i for i, line in enumerate(own) if line.strip() == "--"), None)
    signature = "\n".join(own[separator + 1 :]) if separator is not None else ""
    if separator is not None:
        own = own[:separator]
    body, quoted = [], []
    for line in own:
        if line.startswith((": ", "※ 引述")) or line.strip() == ":":
            quoted.append(line)
        else:
            body.append(line)
    return clean_lines("\n".join(body)), "\n".join(quoted), clean_lines(signature), footer


def _pushes(main: HtmlElement, posted: int | None) -> list[dict[str, object]]:
    pushes = []
    for push in main.xpath("./div[contains(concat(' ', @class, ' '), ' push ')]"):
        kind = push.xpath("string(./span[contains(@class, 'push-tag')])").strip()
        user = push.xpath("string(./span[contains(@class, 'push-userid')])").strip()
        content = push.xpath("string(./span[contains(@class, 'push-content')])")
        stamp = push.xpath("string(./span[contains(@class, 'push-ipdatetime')])").strip()
        match = _PUSH_TIME_RE.search(stamp)
        at = None
        if match and match.group("hour"):
            at = push_time(
                int(match.group("month")),
                int(match.group("day")),
                int(match.group("hour")),
                int(match.group("minute")),
                posted,
            )
        pushes.append(
            {
                "type": kind,
                "user": user,
                "text": content[2:] if content.startswith(": ") else content.lstrip(":").strip(),
                "ip": match.group("ip") if match else None,
                "time_text": stamp,
                "time": at,
            }
        )
    return pushes
