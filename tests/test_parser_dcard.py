"""The Dcard parser on a real saved post (API JSON, all 375 comments): one test per field."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from zeroarchive.parser import Parsed, ParseError, parse_snapshot

FIXTURE = Path(__file__).parent / "fixtures" / "parser" / "dcard_224341009.json"
URL = "https://www.dcard.tw/_api/posts/224341009"


@cache
def post() -> Parsed:
    return parse_snapshot("Dcard", FIXTURE.read_bytes(), "utf-8", URL)


def test_title_and_hashtags() -> None:
    assert post().title == "#圖 1件比基尼征服8種男人的眼👀"
    assert post().hashtags == ("圖",)


def test_text() -> None:
    assert post().text.startswith("每到夏天我要去！海～邊～（去海邊！🌊")


def test_times() -> None:
    assert post().published_at == 1468186362  # 2016-07-10T21:32:42.884Z
    assert post().modified_at == 1469019307  # 2016-07-20T12:55:07.721Z


def test_author_is_the_school() -> None:
    assert post().author == "逢甲大學"


def test_canonical_url_and_forum() -> None:
    assert post().canonical_url == "https://www.dcard.tw/f/girl/p/224341009"
    assert post().metadata["forumName"] == "女孩"
    assert post().metadata["likeCount"] == 14933


def test_tags() -> None:
    assert post().tags == ("交叉", "比基尼", "董事長", "圖", "泳衣", "男人")


def test_every_comment_in_floor_order() -> None:
    comments = post().comments
    assert len(comments) == 375
    assert [c["floor"] for c in comments] == sorted(c["floor"] for c in comments)


def test_comment_fields() -> None:
    first = post().comments[0]
    assert first["floor"] == 1
    assert first["author"] == "普渡大學"
    assert first["text"] == "好有創意XD"
    assert first["likes"] == 59
    assert first["time"] == 1468186505


def test_hidden_comments_are_kept_and_marked() -> None:
    hidden = [c for c in post().comments if c["hidden"]]
    assert hidden
    assert all(c["text"] == "" for c in hidden)


def test_not_a_post_document_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_snapshot("Dcard", json.dumps({"comments": []}).encode(), "utf-8", URL)
    with pytest.raises(ParseError):
        parse_snapshot("Dcard", b"<html>", "utf-8", URL)
