"""A page's video items downloaded with yt-dlp (zeroarchive/media/video.py), in a thread of
their own, into a file: never the whole video in the crawl's memory, never the reactor
blocked.

It sits last among the middlewares that prepare a request (after the private-target
refusals, site policy, robots rules, proxies, user agent and cookies; before Scrapy's
HttpProxyMiddleware, which would take the proxy's credentials out of ``meta["proxy"]``), so
yt-dlp goes out as the site's own requests do: its proxy, user agent, cookies and the page
as ``Referer``. It answers a video request itself: an empty response whose
``meta[VIDEO_META]`` carries the outcome (the file, or why there is none), which the
spider's ``parse_media`` turns into the item's record. At most
``ZEROARCHIVE_VIDEO_CONCURRENCY`` downloads run at once; the rest wait their turn.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Request, Response

from middlewares.media import media_enabled
from zeroarchive.core.request_meta import archive_meta
from zeroarchive.core.stats import count
from zeroarchive.media.fetch import KIND
from zeroarchive.media.store import DirectoryBlobs
from zeroarchive.media.video import VIDEO_META, VideoConfig, VideoJob, download

logger = logging.getLogger(__name__)
#: The request headers yt-dlp sends as the crawl would (the rest are yt-dlp's own).
PASSED_HEADERS = ("User-Agent", "Referer", "Cookie", "Accept-Language")


class VideoDownloaderMiddleware:
    def __init__(self, crawler: Crawler, config: VideoConfig, spool_dir: str | None) -> None:
        self.crawler = crawler
        self.config = config
        self.spool_dir = spool_dir
        self.executor = ThreadPoolExecutor(config.concurrency, thread_name_prefix="video")
        self._turns: asyncio.Semaphore | None = None
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> VideoDownloaderMiddleware:
        settings = crawler.settings
        if not media_enabled(settings):
            # Without a message: the media spider middleware's line already says so.
            raise NotConfigured()
        media_dir = settings.get("ZEROARCHIVE_MEDIA_DIR") or ""
        # Beside the media directory, a finished video is linked into place, not copied
        # across filesystems.
        spool_dir = DirectoryBlobs(media_dir).spool_dir() if media_dir else None
        return cls(crawler, VideoConfig.from_settings(settings), spool_dir)

    def _closed(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)

    async def process_request(self, request: Request) -> Response | None:
        meta = archive_meta(request)
        if meta.get("kind") != KIND or meta.get("media_kind") != "video":
            return None
        job = VideoJob(
            url=request.url,
            headers={
                name: value.decode("latin-1")
                for name in PASSED_HEADERS
                if (value := request.headers.get(name))
            },
            proxy=request.meta.get("proxy"),
            socket_timeout=float(request.meta.get("download_timeout") or 30),
            max_bytes=int(request.meta.get("download_maxsize") or 0) or 2**63,
            retries=int(self.crawler.settings.getint("RETRY_TIMES")),
        )
        logger.debug("Video %s: downloading", request.url)
        if self._turns is None:
            self._turns = asyncio.Semaphore(self.config.concurrency)
        async with self._turns:
            outcome = await asyncio.wrap_future(
                self.executor.submit(download, job, self.config, self.spool_dir)
            )
        site_id = meta.get("site_id")
        if outcome.path is not None:
            count(self.crawler.stats, "media/video/downloaded", site_id)
            logger.debug("Video %s downloaded to %s", request.url, outcome.path)
        else:
            count(self.crawler.stats, "media/video/refused", site_id)
            logger.info("Video %s not kept: %s", request.url, outcome.reason)
        request.meta[VIDEO_META] = outcome
        headers = {"Content-Type": outcome.content_type} if outcome.content_type else {}
        return Response(request.url, status=200, headers=headers, request=request)
