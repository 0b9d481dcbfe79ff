"""A YouTube emulator built from real saved pages (tests/fixtures/youtube, see SOURCE.txt):
the Google channel's real Atom feed, two real channel pages and five real watch pages.

- ``/feeds/videos.xml?channel_id=<id>``: the real feed, for the channel ids it knows (the
  feed's own, and those of the two channel pages); 404 for any other id.
- ``/user/TheVolvorocks`` and ``/@volvo``: the real Volvo channel page (its canonical and
  RSS links name UCct7QF2jcWRY6dhXWMSq9LQ); ``/c/ProgrammingKnowledge``: pytube's saved
  channel page (UCs6nmQViDpUw0nuIx9c_WvA).
- ``/watch?v=<id>`` for each of the feed's 15 videos: one of the five real watch pages, in
  turn (the pages keep their own ids inside; the emulator only serves them). ``watched``
  counts what each video was answered with.
"""

from __future__ import annotations

import gzip
from collections import Counter
from functools import cache
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.emulator import NOT_FOUND, Incoming, Reply

FIXTURES = Path(__file__).parent / "fixtures" / "youtube"
GOOGLE = "UCK8sQmJBp8GCxrOtXWBpyEA"
VOLVO = "UCct7QF2jcWRY6dhXWMSq9LQ"
PROGRAMMING = "UCs6nmQViDpUw0nuIx9c_WvA"
WATCH_PAGES = ("2lAe1cqCOXo", "QRS8MkLhQmM", "irauhITDrsE", "5YceQ8YqYMc", "m8uHb5jIGN8")
HTML = (("Content-Type", "text/html; charset=utf-8"),)


@cache
def fixture(name: str) -> bytes:
    data = (FIXTURES / name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


def watch_page(video_id: str) -> bytes:
    return fixture(f"watch-{video_id}.html.gz")


@cache
def feed_video_ids() -> tuple[str, ...]:
    """The feed's own video ids, in its order (read with a plain split: the test's own
    reading, not the spider's)."""
    text = fixture(f"feed-{GOOGLE}.xml").decode("utf-8")
    return tuple(part.split("</yt:videoId>")[0] for part in text.split("<yt:videoId>")[1:])


class YoutubeApp:
    def __init__(self) -> None:
        videos = feed_video_ids()
        self.pages = {vid: WATCH_PAGES[n % len(WATCH_PAGES)] for n, vid in enumerate(videos)}
        self.watched: Counter[str] = Counter()

    def handle(self, request: Incoming) -> Reply:
        parts = urlsplit(request.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        if parts.path == "/feeds/videos.xml":
            if query.get("channel_id") in (GOOGLE, VOLVO, PROGRAMMING):
                body = fixture(f"feed-{GOOGLE}.xml")
                return Reply(200, (("Content-Type", "text/xml; charset=UTF-8"),), body)
            return NOT_FOUND
        if parts.path in ("/user/TheVolvorocks", "/@volvo"):
            return Reply(200, HTML, fixture("channel-TheVolvorocks.html.gz"))
        if parts.path == "/c/ProgrammingKnowledge":
            return Reply(200, HTML, fixture("channel-videos.html.gz"))
        if parts.path == "/watch" and query.get("v") in self.pages:
            self.watched[query["v"]] += 1
            return Reply(200, HTML, watch_page(self.pages[query["v"]]))
        return NOT_FOUND
