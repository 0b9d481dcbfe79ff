"""The YouTube parser on real saved watch pages (tests/fixtures/youtube)."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.youtube_server import watch_page
from zeroarchive.parser import Parsed, ParseError, parse_snapshot
from zeroarchive.parser.youtube import player_response

TAIPEI = "Asia/Taipei"
# What each page's player says of the video, as saved in 2021.
PLAYABILITY = {
    "2lAe1cqCOXo": {"status": "OK", "reason": None},
    "QRS8MkLhQmM": {"status": "OK", "reason": None},
    "irauhITDrsE": {"status": "LOGIN_REQUIRED", "reason": "Sign in to confirm your age"},
    "5YceQ8YqYMc": {
        "status": "UNPLAYABLE",
        "reason": "This live stream recording is not available.",
    },
}


def parse(video_id: str) -> Parsed:
    url = f"https://www.youtube.com/watch?v={video_id}"
    return parse_snapshot("YTVideo", watch_page(video_id), "utf-8", url, TAIPEI)


def taipei_midnight(day: str) -> int:
    zone = dt.timezone(dt.timedelta(hours=8))
    return int(dt.datetime.fromisoformat(day).replace(tzinfo=zone).timestamp())


@pytest.mark.parametrize(
    ("video_id", "title", "channel", "views", "keyword", "published", "starts"),
    [
        (
            "2lAe1cqCOXo",
            "YouTube Rewind 2019: For the Record | #YouTubeRewind",
            "YouTube",
            115965063,
            "Rewind 2019",
            "2019-12-05",
            "In 2018, we made something you didn\u2019t like.",
        ),
        (
            "QRS8MkLhQmM",
            "YouTube Captions and Subtitles",
            "YouTube",
            1739256,
            "Captions",
            "2008-09-22",
            "",
        ),
        (
            "irauhITDrsE",
            "THE MOST AGE RESTRICTED VIDEO EVER",
            "OfficialDuckStudios",
            714918,
            "duck",
            "2016-12-29",
            "",
        ),
        ("5YceQ8YqYMc", "Vatican Media Live", "Vatican News", 6318998, "live", "2019-10-31", ""),
    ],
)
def test_a_watch_page_gives_its_video(
    video_id: str,
    title: str,
    channel: str,
    views: int,
    keyword: str,
    published: str,
    starts: str,
) -> None:
    page = parse(video_id)
    assert page.title == title
    assert page.author == channel
    assert page.metadata["channel"] == channel
    assert page.metadata["video_id"] == video_id
    assert page.metadata["channel_id"].startswith("UC")
    assert page.metadata["view_count"] == views
    assert keyword in page.keywords
    assert page.published_at == taipei_midnight(published)
    assert page.text.startswith(starts)
    assert page.metadata["playability"] == PLAYABILITY[video_id]


def test_the_description_gives_its_links_and_hashtags() -> None:
    page = parse("2lAe1cqCOXo")
    assert "https://rewind.youtube/about" in page.urls
    assert page.metadata["is_live"] is False
    assert parse("5YceQ8YqYMc").metadata["is_live"] is True


def test_a_private_video_is_kept_with_its_reason() -> None:
    page = parse("m8uHb5jIGN8")
    assert (page.title, page.text) == ("", "")
    playability = page.metadata["playability"]
    assert playability["status"] == "LOGIN_REQUIRED"


def test_a_page_without_the_player_is_refused() -> None:
    with pytest.raises(ParseError, match="not a YouTube watch page"):
        parse_snapshot("YTVideo", b"<html><body>consent</body></html>", "utf-8", "u", TAIPEI)


def test_the_player_json_is_read_to_its_own_end() -> None:
    player = player_response(watch_page("2lAe1cqCOXo").decode("utf-8"))
    assert player is not None and player["videoDetails"]["lengthSeconds"] == "337"
