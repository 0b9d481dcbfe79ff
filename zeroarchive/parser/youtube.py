"""YouTube watch pages as served: the video's title, description, channel, publish date,
view count and keywords from the player data the page embeds (``ytInitialPlayerResponse``).
No video bytes are ever fetched or needed."""

from __future__ import annotations

import json
import re
from typing import Any
from zoneinfo import ZoneInfo

from zeroarchive.core.encoding import decode_body
from zeroarchive.core.errors import ParseError
from zeroarchive.core.items import Parsed
from zeroarchive.parser.dates import parse_datetime
from zeroarchive.parser.text import hashtags, text_urls

_PLAYER = re.compile(r"ytInitialPlayerResponse\s*=\s*\{")
_PLAYABLE = ("OK", "LIVE_STREAM_OFFLINE")


def player_response(html: str) -> dict[str, Any] | None:
    """The player data a watch page embeds, or None. The JSON is read to its own end (its
    strings hold braces and semicolons, so no regex can find where it stops).

    >>> player_response('<script>var ytInitialPlayerResponse = {"a": "};{"};var x = 1;</script>')
    {'a': '};{'}
    >>> player_response("<p>no player</p>") is None
    True
    """
    decoder = json.JSONDecoder()
    for found in _PLAYER.finditer(html):
        try:
            value, _ = decoder.raw_decode(html, found.end() - 1)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def parse_youtube(raw: bytes, encoding: str, url: str, tz: ZoneInfo) -> Parsed:
    """A watch page's video; ``tz`` reads a publish date given without a zone. A video that
    is no longer playable (private, removed, age-gated) is a publication with its reason
    in ``metadata.playability``: that it went away is worth keeping."""
    player = player_response(decode_body(raw, encoding))
    if player is None:
        raise ParseError("no ytInitialPlayerResponse: not a YouTube watch page")
    status = player.get("playabilityStatus") or {}
    details = player.get("videoDetails") or {}
    micro = (player.get("microformat") or {}).get("playerMicroformatRenderer") or {}
    metadata: dict[str, Any] = {
        "playability": {"status": status.get("status"), "reason": status.get("reason")},
    }
    if not details:
        if status.get("status") in _PLAYABLE:
            raise ParseError("a playable video without videoDetails")
        return Parsed(canonical_url=url, title="", text="", metadata=metadata)
    description = str(details.get("shortDescription") or "")
    published = micro.get("publishDate") or micro.get("uploadDate")
    metadata.update(
        {
            "video_id": details.get("videoId"),
            "channel_id": details.get("channelId"),
            "channel": details.get("author"),
            "view_count": _int(details.get("viewCount")),
            "length_seconds": _int(details.get("lengthSeconds")),
            "is_live": bool(details.get("isLiveContent")),
            "category": micro.get("category"),
            "published_date": published,
        }
    )
    return Parsed(
        canonical_url=url,
        title=str(details.get("title") or ""),
        text=description,
        published_at=parse_datetime(published, tz) if published else None,
        author=details.get("author"),
        hashtags=hashtags(description),
        urls=tuple(text_urls(description)),
        keywords=tuple(str(k) for k in details.get("keywords") or ()),
        metadata=metadata,
    )
