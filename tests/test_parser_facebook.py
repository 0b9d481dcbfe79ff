"""The Facebook parser on real saved m.facebook.com post pages: one test per field."""

from __future__ import annotations

import gzip
from functools import cache
from pathlib import Path

import pytest

from zeroarchive.parser import Parsed, ParseError, parse_snapshot

FIXTURES = Path(__file__).parent / "fixtures" / "parser"
STORY = "https://m.facebook.com/story.php?story_fbid=3065154550235644&id=119240841493711"
COVER = "https://m.facebook.com/Nintendo/posts/4194934713924283"
GROUP = "https://m.facebook.com/groups/southamericansincomputing/permalink/1629606003787605/"


@cache
def page(name: str, url: str) -> Parsed:
    raw = gzip.decompress((FIXTURES / f"{name}.html.gz").read_bytes())
    return parse_snapshot("FBPost", raw, "utf-8", url)


def story() -> Parsed:
    return page("facebook_story", STORY)


def test_post_text() -> None:
    assert story().text.startswith("Check out these themed wallpapers and many more")


def test_post_time() -> None:
    assert story().published_at == 1589331678
    assert page("facebook_cover_photo", COVER).published_at == 1622853212


def test_author() -> None:
    assert story().author == "Nintendo"
    assert page("facebook_group_permalink", GROUP).author == "Omar U. Florez"


def test_links_leave_facebooks_redirect() -> None:
    assert story().urls == ("https://www.nintendo.com/wallpapers/",)


def test_post_ids_and_counts() -> None:
    assert story().metadata["post_id"] == "3065154550235644"
    assert story().metadata["shares"] == 281
    assert len(story().metadata["photo_ids"]) == 4
    cover = page("facebook_cover_photo", COVER)
    assert cover.metadata["reactions"] == 2
    assert cover.metadata["shares"] == 17


def test_every_comment_on_the_page() -> None:
    assert len(story().comments) == 108
    assert len(page("facebook_cover_photo", COVER).comments) == 30


def test_comment_fields() -> None:
    first = page("facebook_cover_photo", COVER).comments[0]
    assert first["author"] == "Steven Defoe"
    assert first["text"].startswith("Man I’m thirsty for Nintendo news right now")
    assert "#NintendoxMicrosoft" in first["text"]
    assert first["time_text"] == "on Fri"
    assert first["reply_count"] == 9


def test_group_post() -> None:
    group = page("facebook_group_permalink", GROUP)
    assert group.text.startswith("Hola!, This group is aimed to create opportunities")
    assert group.published_at == 1522785762
    assert group.comments[0]["author"] == "Lucía Acurio"


def test_a_page_without_a_post_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_snapshot("FBPost", b"<html><body><p>nothing</p></body></html>", "utf-8", STORY)
