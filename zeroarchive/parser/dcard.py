"""Dcard posts: one stored JSON document, ``{"post": <GET /_api/posts/{id}>, "comments":
[<comment>, ...]}`` (every comment page joined), as spiders/dcard.py stores it."""

from __future__ import annotations

import json
from typing import Any
from zoneinfo import ZoneInfo

from zeroarchive.core.encoding import decode_body
from zeroarchive.core.errors import ParseError
from zeroarchive.core.items import Parsed
from zeroarchive.parser.dates import parse_datetime
from zeroarchive.parser.text import hashtags, link_urls, text_urls

_UTC = ZoneInfo("UTC")
_POST_FIELDS = (
    "id",
    "forumName",
    "forumAlias",
    "school",
    "department",
    "gender",
    "anonymousSchool",
    "anonymousDepartment",
    "likeCount",
    "commentCount",
    "replyId",
    "replyTitle",
    "pinned",
)


def _time(value: object) -> int | None:
    return parse_datetime(value, _UTC) if isinstance(value, str) else None


def _author(item: dict[str, Any]) -> str | None:
    """Dcard shows a school (and department) instead of a name, unless anonymous."""
    parts = [item.get("school"), item.get("department")]
    named = " ".join(p for p in parts if isinstance(p, str) and p)
    return named or None


def _comment(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": item.get("id"),
        "floor": item.get("floor"),
        "author": _author(item),
        "gender": item.get("gender"),
        "host": bool(item.get("host")),
        "anonymous": bool(item.get("anonymous")),
        "hidden": bool(item.get("hidden")),
        "text": item.get("content") or "",
        "likes": item.get("likeCount"),
        "time": _time(item.get("createdAt")),
        "updated_at": _time(item.get("updatedAt")),
        "parent_id": item.get("subCommentParentId") or item.get("parentId"),
    }


def parse_dcard(raw: bytes, encoding: str, url: str, _tz: ZoneInfo | None = None) -> Parsed:
    """A Dcard snapshot (the post and all its comments); Dcard states its times in UTC."""
    try:
        document = json.loads(decode_body(raw, encoding))
    except ValueError as exc:
        raise ParseError(f"not JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise ParseError("not a Dcard post document")
    post = document.get("post", document.get("content"))
    comments = document.get("comments", [])
    if not isinstance(post, dict) or "id" not in post:
        raise ParseError("no post object in the Dcard document")
    if not isinstance(comments, list):
        raise ParseError("comments is not a list")
    text = post.get("content") or ""
    title = post.get("title") or ""
    topics = [t for t in post.get("topics", []) or [] if isinstance(t, str)]
    tags = [t for t in post.get("tags", []) or [] if isinstance(t, str)]
    floors = sorted(
        (_comment(c) for c in comments if isinstance(c, dict)),
        key=lambda c: (c["floor"] is None, c["floor"] or 0),
    )
    return Parsed(
        canonical_url=f"https://www.dcard.tw/f/{post.get('forumAlias')}/p/{post['id']}"
        if post.get("forumAlias")
        else url,
        title=title,
        text=text,
        language="zh-Hant-TW",
        published_at=_time(post.get("createdAt")),
        modified_at=_time(post.get("updatedAt")),
        author=_author(post),
        hashtags=tuple(dict.fromkeys([*hashtags(title), *hashtags(text)])),
        urls=link_urls(text_urls(text), url),
        keywords=tuple(dict.fromkeys(topics)),
        tags=tuple(dict.fromkeys(tags)),
        metadata={key: post.get(key) for key in _POST_FIELDS if key in post},
        comments=tuple(floors),
    )
