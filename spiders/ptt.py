"""PTT boards (www.ptt.cc, or any mirror of its web interface): every post of a board,
with every push, snapshotted on the ptt schedule.

    scrapy crawl ptt                   every due ptt site
    scrapy crawl ptt -a site=gossiping one site, due or not

A site's url is a board index, ``https://www.ptt.cc/bbs/<Board>/index.html``; discovery
walks the previous-page (上頁) links from there, ``depth`` older pages at most, and stops
early after ``ZEROARCHIVE_STALE_LIST_PAGES`` pages in a row with no new post. Posts
(``/bbs/<Board>/M.<n>.A.<hex>.html``) become Articles of type PTT; index rows of deleted
posts ("(本文已被刪除) [user]") are counted (``ptt/deleted_rows``) and skipped. Every
request sends ``over18=1``; when a server still redirects to its over-18 page
(``/ask/over18?from=...``), the spider answers the form ("yes") and goes on to ``from``.
A snapshot is the whole post page as served, pushes included.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from scrapy.http import FormRequest, Request, Response, TextResponse

from zeroarchive.core.clock import now
from zeroarchive.core.encoding import detect_encoding
from zeroarchive.core.items import FailedFetch, FetchedPage, header_lists
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.core.stats import count
from zeroarchive.core.urls import UrlRejected, canonicalize_url
from zeroarchive.crawl.list_walk import ListWalkSpider
from zeroarchive.sites.record import Site
from zeroarchive.sources.ptt import SOURCE, board_of, is_post_of
from zeroarchive.storage.articles import DueArticle

logger = logging.getLogger(__name__)

OVER18_PATH = "/ask/over18"
ANSWERED = "ptt_over18_answered"
# "(本文已被刪除) [user]" when the author deleted it, "(已被xxx刪除) <user>" for a moderator.
DELETED = "刪除"


def over18_cookie() -> dict[str | bytes, str | bytes | bool | float | int]:
    # A new dict per request: middlewares add the site's own cookies to it.
    return {"over18": "1"}


def is_over18_gate(response: Response) -> bool:
    return urlsplit(response.url).path.endswith(OVER18_PATH)


class PttSpider(ListWalkSpider):
    name = "ptt"
    source = SOURCE

    def discovery_requests(self, site: Site) -> Iterator[Request]:
        if board_of(site.url) is None:
            logger.error(
                "Site %s (#%d): url %s is not a board index (.../bbs/<Board>/index.html)",
                site.name,
                site.site_id,
                site.url,
            )
            crawler = getattr(self, "crawler", None)
            count(crawler.stats if crawler else None, "errors/bad_site_url", site.site_id)
            return
        yield self.first_list_request(site, site.url)

    def list_request(self, site: Site, url: str, walk: Mapping[str, Any]) -> Request:
        return Request(
            url,
            callback=self.parse_index,
            errback=self.list_failed,
            cookies=over18_cookie(),
            meta=self.list_meta(site, walk),
            priority=self.source.list_priority,
        )

    def parse_index(self, response: Response) -> Iterator[Any]:
        if is_over18_gate(response):
            yield from self.answer_over18(response)
            return
        site = self.response_site(response)
        stats = self.crawler.stats
        self.list_page_answered(site, response)
        board = board_of(site.url) or ""
        posts: list[str] = []
        for row in response.css("div.r-ent"):
            href = row.css("div.title a::attr(href)").get()
            if href is None:
                title = " ".join(row.css("div.title ::text").getall()).strip()
                if DELETED in title:
                    count(stats, "ptt/deleted_rows", site.site_id)
                else:
                    count(stats, "ptt/rows_without_link", site.site_id)
                    logger.warning("A row without a post link on %s: %r", response.url, title)
                continue
            try:
                url = canonicalize_url(response.urljoin(href), site.config.url_rules)
            except UrlRejected as exc:
                count(stats, f"urls_rejected/{exc.reason}", site.site_id)
                logger.warning("Ignoring a link on %s: %s", response.url, exc)
                continue
            if not is_post_of(url, board):
                count(stats, "ptt/bad_post_links", site.site_id)
                logger.warning(
                    "Not a post of board %s, skipped: %s on %s", board, url, response.url
                )
                continue
            posts.append(url)
        previous = response.xpath(
            '//div[contains(@class, "action-bar")]//a[contains(., "上頁")]/@href'
        ).get()
        next_url = response.urljoin(previous) if previous else None
        yield from self.walked(site, response.url, posts, next_url, response.meta[META_KEY])

    def answer_over18(self, response: Response) -> Iterator[Request]:
        """Say yes on the over-18 page; the server then sets the cookie and redirects to
        ``from``, which reaches the callback that asked for it."""
        request = response.request
        assert request is not None and isinstance(response, TextResponse)
        site = self.response_site(response)
        if response.meta.get(ANSWERED):
            logger.error(
                "Site %s (#%d): still sent to the over-18 page after answering it; giving up %s",
                site.name,
                site.site_id,
                response.url,
            )
            count(self.crawler.stats, "ptt/over18_refused", site.site_id)
            return
        count(self.crawler.stats, "ptt/over18_answered", site.site_id)
        logger.info("Site %s (#%d): answering the over-18 page", site.name, site.site_id)
        fields = {k: v for k, v in response.meta[META_KEY].items() if k not in ("site_id", "kind")}
        try:
            answer = FormRequest.from_response(
                response,
                formxpath=f'//form[contains(@action, "{OVER18_PATH}")]',
                clickdata={"name": "yes"},
                callback=request.callback,
                errback=request.errback,
                cookies=over18_cookie(),
                meta={
                    **self.request_meta(site, response.meta[META_KEY]["kind"], **fields),
                    ANSWERED: True,
                },
                # The redirect back to `from` repeats a URL already seen: it must not be
                # dropped as a duplicate.
                dont_filter=True,
            )
        except ValueError as exc:
            logger.error(
                "Site %s (#%d): no over-18 form on %s: %s",
                site.name,
                site.site_id,
                response.url,
                exc,
            )
            count(self.crawler.stats, "ptt/over18_refused", site.site_id)
            return
        yield answer

    def snapshot_request(self, site: Site, article: DueArticle) -> Request:
        return Request(
            article.url,
            callback=self.parse_post,
            errback=self.snapshot_failed,
            cookies=over18_cookie(),
            meta=self.snapshot_meta(site, article),
            # Snapshots are taken again on schedule: never drop one as a duplicate.
            dont_filter=True,
        )

    def parse_post(self, response: Response) -> Iterator[Any]:
        if is_over18_gate(response):
            answered = list(self.answer_over18(response))
            if answered:
                yield from answered
                return
            meta = response.meta[META_KEY]
            yield FailedFetch(meta["article_id"], meta["site_id"], now(), "over18_refused")
            return
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
