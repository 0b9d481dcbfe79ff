"""YouTube channels: every video of a channel, discovered through the channel's Atom feed,
archived as its watch page as served (its embedded player and initial-data JSON hold the
title, description, channel, publish date and counts; no video bytes).

    scrapy crawl youtube                    every due youtube site
    scrapy crawl youtube -a site=setn       one channel, due or not

A site's url is a channel: ``/channel/UC...``, ``/@handle``, ``/user/...`` or ``/c/...``.
When it holds no channel id, the channel page is fetched first and the id read from it
(canonical link, RSS link, embedded ``externalId``). The feed is
``/feeds/videos.xml?channel_id=UC...`` on the site URL's own scheme and host, so a mirror
or a local server works the same. Each video is an Article of type YTVideo at
``/watch?v=<id>``, with the publication time the feed gives.
"""

from __future__ import annotations

import calendar
import io
import logging
from collections.abc import Iterator
from typing import Any

from scrapy.http import Request, Response

from zeroarchive.core.clock import now
from zeroarchive.core.encoding import decode_body, detect_encoding
from zeroarchive.core.items import ArticleLinks, FetchedPage, header_lists
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.core.stats import count
from zeroarchive.core.urls import UrlRejected, canonicalize_url
from zeroarchive.crawl.spider import ArchiveSpider
from zeroarchive.sites.record import Site
from zeroarchive.sources.youtube import (
    SOURCE,
    VIDEO_ID,
    channel_id_from_page,
    channel_id_of,
    feed_url,
    watch_url,
)
from zeroarchive.storage.articles import DueArticle

logger = logging.getLogger(__name__)


def consent_cookie() -> dict[str | bytes, str | bytes | bool | float | int]:
    # YouTube sends European visitors to a consent page first; this is the answer its own
    # consent page sets. A new dict per request: middlewares add the site's cookies to it.
    return {"CONSENT": "YES+"}


def feed_videos(body: bytes) -> list[tuple[str, int | None]]:
    """(video id, published unix time or None) of each entry of a channel feed.

    feedparser reads what a strict XML parser refuses (a feed saved with a blank line
    before its XML declaration, say); entries without a valid video id are left out.
    """
    import feedparser  # here: every crawl imports every spider at start

    videos = []
    # A stream, not bytes: feedparser opens bytes that name a file on this machine.
    for entry in feedparser.parse(io.BytesIO(body)).entries:
        video_id = entry.get("yt_videoid", "")
        if not VIDEO_ID.fullmatch(video_id):
            continue
        published = entry.get("published_parsed") or entry.get("updated_parsed")
        videos.append((video_id, calendar.timegm(published) if published else None))
    return videos


class YoutubeSpider(ArchiveSpider):
    name = "youtube"
    source = SOURCE

    def _list_request(self, site: Site, url: str, callback: Any) -> Request:
        return Request(
            url,
            callback=callback,
            errback=self.list_failed,
            cookies=consent_cookie(),
            # The feed is the site's tracked list page (its own interval); the channel page
            # only leads to it.
            meta=self.request_meta(site, "list", **self._tracked(callback)),
            priority=self.source.list_priority,
            # The channel's page and feed are read again every round.
            dont_filter=True,
        )

    def _tracked(self, callback: Any) -> dict[str, str]:
        return {"page_kind": "feed"} if callback == self.parse_feed else {}

    def discovery_requests(self, site: Site) -> Iterator[Request]:
        channel = channel_id_of(site.url)
        if channel is not None:
            yield self._list_request(site, feed_url(site.url, channel), self.parse_feed)
        else:
            yield self._list_request(site, site.url, self.parse_channel_page)

    def parse_channel_page(self, response: Response) -> Iterator[Request]:
        site = self.response_site(response)
        content_type = response.headers.get("Content-Type")
        encoding = detect_encoding(
            response.body, content_type.decode("latin-1") if content_type else None
        )
        channel = channel_id_from_page(decode_body(response.body, encoding))
        if channel is None:
            count(self.crawler.stats, "youtube/no_channel_id", site.site_id)
            count(self.crawler.stats, "list_page_failures", site.site_id)
            logger.error(
                "Site %s (#%d): no channel id on %s (no canonical or RSS link, no externalId)",
                site.name,
                site.site_id,
                response.url,
            )
            return
        yield self._list_request(site, feed_url(site.url, channel), self.parse_feed)

    def parse_feed(self, response: Response) -> Iterator[ArticleLinks]:
        site = self.response_site(response)
        videos = feed_videos(response.body)
        if not videos:
            count(self.crawler.stats, "youtube/empty_feed", site.site_id)
            logger.warning("No video in the feed %s (%d bytes)", response.url, len(response.body))
        self.list_page_answered(site, response)
        urls: list[str] = []
        published: dict[str, int] = {}
        for video_id, at in videos:
            try:
                url = canonicalize_url(watch_url(site.url, video_id), site.config.url_rules)
            except UrlRejected as exc:
                count(self.crawler.stats, f"urls_rejected/{exc.reason}", site.site_id)
                continue
            urls.append(url)
            if at is not None:
                published[url] = at
        if urls:
            yield ArticleLinks(
                site.site_id, self.source.article_type, response.url, tuple(urls), published
            )

    def snapshot_request(self, site: Site, article: DueArticle) -> Request:
        return Request(
            article.url,
            callback=self.parse_watch,
            errback=self.snapshot_failed,
            cookies=consent_cookie(),
            meta=self.snapshot_meta(site, article),
            # Snapshots are taken again on schedule: never drop one as a duplicate.
            dont_filter=True,
        )

    def parse_watch(self, response: Response) -> Iterator[FetchedPage]:
        site = self.response_site(response)
        meta = response.meta[META_KEY]
        content_type = response.headers.get("Content-Type")
        yield FetchedPage(
            article_id=meta["article_id"],
            site_id=site.site_id,
            article_type=meta["article_type"],
            fetched_at=now(),
            status=response.status,
            final_url=response.url,
            headers=header_lists(response.headers),
            encoding=detect_encoding(
                response.body, content_type.decode("latin-1") if content_type else None
            ),
            body=response.body,
        )
