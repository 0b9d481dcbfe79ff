"""A Dcard API emulator built from real API JSON (tests/fixtures/dcard, see SOURCE.txt).

Forum ``funny``: the 30 real post metas of ``GET /_api/forums/funny/posts``, each post's
``GET /_api/posts/<id>`` and comments from posts.json. Forum ``girl``: the real post
224341009 with all its 375 real comments. Served like the real API:

- ``/_api/forums/<forum>/posts?popular=false&limit=N[&before=ID]``: newest first, ids below
  ``before``, at most ``min(N, page_size)`` (a server may send fewer than asked for);
- ``/_api/posts/<id>``; ``/_api/posts/<id>/comments[?after=FLOOR]``: the next 30 comments
  after that floor, ``[]`` past the last.

``faults`` maps a path+query to answers served (once each, in order) before the real one:
a 429 with ``Retry-After``, a 403, a truncated JSON body.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.emulator import Incoming, Reply

FIXTURES = Path(__file__).parent / "fixtures" / "dcard"
COMMENTS_PER_PAGE = 30
JSON = (("Content-Type", "application/json; charset=utf-8"),)


def _load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@cache
def _data() -> tuple[dict[str, list[dict[str, Any]]], dict[int, dict[str, Any]], dict[int, list]]:
    forums: dict[str, list[dict[str, Any]]] = {"funny": _load("post_metas.json")}
    posts: dict[int, dict[str, Any]] = {}
    comments: dict[int, list[dict[str, Any]]] = {}
    for entry in _load("posts.json"):
        posts[entry["content"]["id"]] = entry["content"]
        comments[entry["content"]["id"]] = entry["comments"]
    single = _load("single_post_content.json")
    posts[single["id"]] = single
    comments[single["id"]] = _load("single_post_comments.json")
    # The forum list of `girl` shows the post's meta: the post without its full text.
    forums[single["forumAlias"]] = [{k: v for k, v in single.items() if k != "content"}]
    return forums, posts, comments


def json_reply(value: Any, status: int = 200) -> Reply:
    return Reply(status, JSON, json.dumps(value, ensure_ascii=False).encode("utf-8"))


class DcardApp:
    def __init__(self, page_size: int = 10) -> None:
        forums, posts, comments = _data()
        self.forums = forums
        self.posts = posts
        self.comments = comments
        self.page_size = page_size
        self.faults: dict[str, list[Reply]] = defaultdict(list)
        self._lock = threading.Lock()

    def forum_posts(self, forum: str) -> list[int]:
        return [meta["id"] for meta in self.forums[forum]]

    def handle(self, request: Incoming) -> Reply:
        with self._lock:
            queued = self.faults.get(request.path)
            if queued:
                return queued.pop(0)
        parts = urlsplit(request.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        segments = parts.path.strip("/").split("/")
        try:
            if segments[:2] == ["_api", "forums"] and len(segments) == 4 and segments[3] == "posts":
                return self._posts_page(segments[2], query)
            if segments[:2] == ["_api", "posts"] and len(segments) == 3:
                return json_reply(self.posts[int(segments[2])])
            if segments[:2] == ["_api", "posts"] and segments[3:] == ["comments"]:
                return self._comments_page(int(segments[2]), query)
        except (KeyError, ValueError):
            pass
        return json_reply({"error": {"code": 1202, "message": "Not found"}}, 404)

    def _posts_page(self, forum: str, query: dict[str, str]) -> Reply:
        metas = sorted(self.forums[forum], key=lambda m: m["id"], reverse=True)
        if "before" in query:
            metas = [m for m in metas if m["id"] < int(query["before"])]
        limit = min(int(query.get("limit", 30)), self.page_size)
        return json_reply(metas[:limit])

    def _comments_page(self, post_id: int, query: dict[str, str]) -> Reply:
        after = int(query.get("after", 0))
        page = [c for c in self.comments[post_id] if c["floor"] > after]
        return json_reply(page[:COMMENTS_PER_PAGE])
