"""Posts (videos) per minute of the PTT, Dcard and YouTube spiders on their emulators.

Scales the emulators of the tests up, then runs the real `scrapy crawl ptt` / `dcard` /
`youtube` (discover + snapshot) into a fresh SQLite file with the site's delay at 0, so the
figure is what the crawler itself sustains; on the real sites the per-site `delay` bounds
it (one request per `delay` seconds per site: PTT needs one request per post, Dcard two or
more, one per 30 comments, YouTube one per video and one feed per channel).

    python bench/sources.py [--ptt-pages 40] [--dcard-copies 20] [--channels 20] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# Its pages are served on 127.0.0.1, which the archive refuses unless allowed
# (docs/operators/private-targets.md): every crawl it starts inherits this.
os.environ["ZEROARCHIVE_ALLOW_PRIVATE_TARGETS"] = "1"
# Its saved pages name their images on the live sites: media stay off (never the internet).
os.environ["ZEROARCHIVE_MEDIA_ENABLED"] = "0"

from tests.conftest import scrapy  # noqa: E402
from tests.dcard_server import DcardApp  # noqa: E402
from tests.emulator import (  # noqa: E402
    NOT_FOUND,
    EmulatorServer,
    Incoming,
    Reply,
)
from tests.ptt_server import PttApp, build_board  # noqa: E402
from tests.test_generic import write_sites  # noqa: E402
from tests.youtube_server import GOOGLE, HTML, WATCH_PAGES, feed_video_ids, fixture  # noqa: E402

SETTINGS = ("-s", "LOG_LEVEL=INFO")


def stat(output: str, key: str) -> float:
    found = re.search(rf"'{re.escape(key)}': ([\d.]+)", output)
    return float(found.group(1)) if found else 0.0


def ptt_app(pages: int) -> PttApp:
    return PttApp(
        [build_board("Bench", pages=pages, posts_per_page=20, gate="cookie", real_page=True)]
    )


def dcard_app(copies: int) -> DcardApp:
    """The funny forum's 30 real posts, each also served under ``copies`` more ids."""
    app = DcardApp(page_size=100)
    metas = list(app.forums["funny"])
    for copy in range(1, copies + 1):
        for meta in metas:
            post_id = meta["id"] + copy * 1000
            app.forums["funny"].append({**meta, "id": post_id})
            app.posts[post_id] = {**app.posts[meta["id"]], "id": post_id}
            app.comments[post_id] = app.comments[meta["id"]]
    return app


class ManyChannels:
    """``channels`` channels (``/channel/UCbench...``), each with the Google channel's real
    feed under video ids of its own; every watch page is one of the five real ones."""

    def __init__(self, channels: int) -> None:
        self.ids = [f"UCbench{n:017d}" for n in range(channels)]
        self.feed = fixture(f"feed-{GOOGLE}.xml").decode("utf-8")

    @staticmethod
    def video_id(channel: int, original: str) -> str:
        return f"{original[:6]}{channel:05d}"

    def handle(self, request: Incoming) -> Reply:
        path, _, query = request.path.partition("?")
        key, _, value = query.partition("=")
        if path == "/feeds/videos.xml" and key == "channel_id" and value in self.ids:
            n = self.ids.index(value)
            feed = self.feed.replace(GOOGLE, value)
            for original in feed_video_ids():
                feed = feed.replace(original, self.video_id(n, original))
            return Reply(200, (("Content-Type", "text/xml; charset=UTF-8"),), feed.encode())
        if path == "/watch" and key == "v":
            page = WATCH_PAGES[sum(value.encode()) % len(WATCH_PAGES)]
            return Reply(200, HTML, fixture(f"watch-{page}.html.gz"))
        return NOT_FOUND


def run(
    spider: str, sites: list[dict[str, object]], server: EmulatorServer
) -> tuple[int, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        db_url = f"sqlite:///{cwd / 'bench.db'}"
        loaded = scrapy(
            "load_sites", str(write_sites(cwd / "s.yaml", sites)), db_url=db_url, cwd=cwd
        )
        assert loaded.returncode == 0, loaded.output
        started = time.perf_counter()
        done = scrapy("crawl", spider, *SETTINGS, db_url=db_url, cwd=cwd, timeout=1800)
        wall = time.perf_counter() - started
        assert done.returncode == 0 and "Traceback" not in done.output, done.output[-3000:]
        saved = int(stat(done.output, "zeroarchive/snapshots_saved"))
        return saved, stat(done.output, "elapsed_time_seconds"), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ptt-pages", type=int, default=40, help="index pages of 20 posts")
    parser.add_argument("--dcard-copies", type=int, default=20, help="extra copies of 30 posts")
    parser.add_argument("--channels", type=int, default=20, help="YouTube channels of 15 videos")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    results: dict[str, list[tuple[int, float, float]]] = {"ptt": [], "dcard": [], "youtube": []}
    for _ in range(args.rounds):
        with EmulatorServer(ptt_app(args.ptt_pages)) as server:
            site = {
                "name": "bench",
                "url": server.url("/bbs/Bench/index.html"),
                "type": "ptt",
                "config": {"depth": args.ptt_pages, "delay": 0},
            }
            results["ptt"].append(run("ptt", [site], server))
        with EmulatorServer(dcard_app(args.dcard_copies)) as server:
            site = {
                "name": "bench",
                "url": server.url("/f/funny"),
                "type": "dcard",
                "config": {"depth": args.dcard_copies, "delay": 0},
            }
            results["dcard"].append(run("dcard", [site], server))
        app = ManyChannels(args.channels)
        with EmulatorServer(app) as server:
            channels: list[dict[str, object]] = [
                {
                    "name": f"channel-{n}",
                    "url": server.url(f"/channel/{channel_id}"),
                    "type": "youtube",
                    "config": {"delay": 0},
                }
                for n, channel_id in enumerate(app.ids)
            ]
            results["youtube"].append(run("youtube", channels, server))
    for spider, rounds in results.items():
        saved, crawl, wall = max(rounds, key=lambda r: r[0] / r[1])
        print(
            f"{spider:7} {saved:5d} posts: {saved / crawl * 60:8.0f} posts/min in the crawl "
            f"({crawl:.1f} s), {saved / wall * 60:8.0f} posts/min whole process ({wall:.1f} s)"
        )


if __name__ == "__main__":
    main()
