"""Dcard forums (www.dcard.tw, or any server of the same API): every post of a forum with
all its comments, snapshotted on the dcard schedule.

    scrapy crawl dcard                  every due dcard site
    scrapy crawl dcard -a site=funny    one site, due or not

A site's url is a forum page, ``https://www.dcard.tw/f/<forum>``; every other URL is
derived from it (``<root>`` is what comes before ``/f/<forum>``, so a mirror or a local
server works the same):

- discovery pages ``<root>/_api/forums/<forum>/posts?popular=false&limit=100``, then
  ``&before=<smallest id so far>``, ``depth`` more pages at most, stopping at an empty
  page or after ``ZEROARCHIVE_STALE_LIST_PAGES`` pages in a row with no new post;
- each post is an Article of type Dcard with URL ``<root>/f/<forum>/p/<id>``;
- a snapshot fetches ``<root>/_api/posts/<id>``, then the comment pages
  ``<root>/_api/posts/<id>/comments``, ``...?after=<last floor>``, ... until one is empty,
  and stores ONE JSON document (UTF-8) as the snapshot body::

      {"post": <the JSON of /_api/posts/<id>, as served>,
       "comments": [<every comment object of every comment page, in order>]}

403 and 429 answers pause the site with growing delays (``Retry-After`` honoured; see
middlewares/throttle.py) and are counted (``throttled/http_403``, ``throttled/http_429``).
A body that is not the JSON expected is logged and counted (``dcard/malformed_json``); the
post's snapshot then fails and is retried later on the failure back-off.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

from scrapy.http import Request, Response

from middlewares.throttle import CODES_META
from zeroarchive.core.clock import now
from zeroarchive.core.items import FailedFetch, FetchedPage
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.core.stats import count
from zeroarchive.core.urls import UrlRejected, canonicalize_url
from zeroarchive.crawl.list_walk import ListWalkSpider
from zeroarchive.sites.record import Site
from zeroarchive.sources.dcard import SOURCE, forum_of
from zeroarchive.storage.articles import DueArticle

logger = logging.getLogger(__name__)

POST_PATH = re.compile(r"/f/(?P<forum>[A-Za-z0-9_-]+)/p/(?P<id>\d+)$")
THROTTLE_CODES = (403, 429)
PAGE_SIZE = 100
JSON_HEADERS = {"Accept": "application/json"}


class MalformedJson(ValueError):
    """A body that is not the JSON document an API URL answers with."""


def posts_api(root: str, forum: str, before: int | None = None) -> str:
    """A page of a forum's posts, newest first.

    >>> posts_api("https://www.dcard.tw", "funny", 224362147)
    'https://www.dcard.tw/_api/forums/funny/posts?popular=false&limit=100&before=224362147'
    """
    query: dict[str, Any] = {"popular": "false", "limit": PAGE_SIZE}
    if before is not None:
        query["before"] = before
    return f"{root}/_api/forums/{forum}/posts?{urlencode(query)}"


def post_api(root: str, post_id: int) -> str:
    return f"{root}/_api/posts/{post_id}"


def comments_api(root: str, post_id: int, after: int | None) -> str:
    """A page of a post's comments: the first, or those after floor ``after``.

    >>> comments_api("https://www.dcard.tw", 1, 30)
    'https://www.dcard.tw/_api/posts/1/comments?after=30'
    """
    url = f"{post_api(root, post_id)}/comments"
    return url if after is None else f"{url}?after={after}"


def post_url(root: str, forum: str, post_id: int) -> str:
    return f"{root}/f/{forum}/p/{post_id}"


def post_id_of(url: str) -> int | None:
    """The post id of an Article URL.

    >>> post_id_of("https://www.dcard.tw/f/funny/p/224362515")
    224362515
    """
    found = POST_PATH.search(urlsplit(url).path)
    return int(found.group("id")) if found else None


def json_list(body: bytes) -> list[Any]:
    """A JSON array body, or MalformedJson.

    >>> json_list(b'[{"id": 1}]')
    [{'id': 1}]
    >>> json_list(b'[{"id": 1}')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    spiders.dcard.MalformedJson: not JSON: ...
    """
    value = _json(body)
    if not isinstance(value, list):
        raise MalformedJson(f"expected a JSON array, got {type(value).__name__}")
    return value


def json_object(body: bytes) -> dict[str, Any]:
    value = _json(body)
    if not isinstance(value, dict):
        raise MalformedJson(f"expected a JSON object, got {type(value).__name__}")
    return value


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError as exc:
        raise MalformedJson(f"not JSON: {exc}") from None


def snapshot_document(post: Mapping[str, Any], comments: list[Any]) -> bytes:
    """The stored snapshot: the post and all its comments as one UTF-8 JSON document.

    >>> snapshot_document({"id": 1}, [{"floor": 1}])
    b'{"post":{"id":1},"comments":[{"floor":1}]}'
    """
    document = {"post": post, "comments": comments}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class DcardSpider(ListWalkSpider):
    name = "dcard"
    source = SOURCE

    def discovery_requests(self, site: Site) -> Iterator[Request]:
        forum = forum_of(site.url)
        if forum is None:
            logger.error(
                "Site %s (#%d): url %s is not a forum page (.../f/<forum>)",
                site.name,
                site.site_id,
                site.url,
            )
            crawler = getattr(self, "crawler", None)
            count(crawler.stats if crawler else None, "errors/bad_site_url", site.site_id)
            return
        yield self.first_list_request(site, posts_api(*forum))

    def list_request(self, site: Site, url: str, walk: Mapping[str, Any]) -> Request:
        return Request(
            url,
            callback=self.parse_posts,
            errback=self.list_failed,
            headers=JSON_HEADERS,
            meta={**self.list_meta(site, walk), CODES_META: THROTTLE_CODES},
            priority=self.source.list_priority,
        )

    def parse_posts(self, response: Response) -> Iterator[Any]:
        site = self.response_site(response)
        stats = self.crawler.stats
        forum = forum_of(site.url)
        assert forum is not None
        root, alias = forum
        try:
            metas = json_list(response.body)
        except MalformedJson as exc:
            self._malformed(site, response, exc)
            count(stats, "list_page_failures", site.site_id)
            return
        self.list_page_answered(site, response)
        ids: list[int] = []
        for meta in metas:
            post_id = meta.get("id") if isinstance(meta, dict) else None
            if isinstance(post_id, int) and not isinstance(post_id, bool):
                ids.append(post_id)
            else:
                count(stats, "dcard/bad_post_metas", site.site_id)
                logger.warning("A post without an id on %s: %.200r", response.url, meta)
        urls: list[str] = []
        for post_id in ids:
            try:
                urls.append(canonicalize_url(post_url(root, alias, post_id), site.config.url_rules))
            except UrlRejected as exc:
                count(stats, f"urls_rejected/{exc.reason}", site.site_id)
        next_url = posts_api(root, alias, before=min(ids)) if ids else None
        yield from self.walked(site, response.url, urls, next_url, response.meta[META_KEY])

    def snapshot_request(self, site: Site, article: DueArticle) -> Request:
        forum = forum_of(site.url)
        post_id = post_id_of(article.url)
        root = forum[0] if forum else ""
        return Request(
            post_api(root, post_id or 0),
            callback=self.parse_post,
            errback=self.snapshot_failed,
            headers=JSON_HEADERS,
            meta={
                **self.request_meta(
                    site,
                    "snapshot",
                    article_id=article.article_id,
                    article_url=article.url,
                    article_type=article.article_type,
                    post_id=post_id,
                ),
                CODES_META: THROTTLE_CODES,
            },
            # Snapshots are taken again on schedule: never drop one as a duplicate.
            dont_filter=True,
        )

    def parse_post(self, response: Response) -> Iterator[Any]:
        site = self.response_site(response)
        meta = response.meta[META_KEY]
        try:
            post = json_object(response.body)
        except MalformedJson as exc:
            yield self._malformed(site, response, exc)
            return
        headers = {
            key.decode("latin-1"): [v.decode("latin-1") for v in values]
            for key, values in response.headers.items()
            if key.lower() != b"content-type"
        }
        yield self._comments_request(
            site,
            meta,
            after=None,
            post=post,
            comments=[],
            status=response.status,
            final_url=response.url,
            headers=headers,
        )

    def _comments_request(
        self, site: Site, meta: Mapping[str, Any], after: int | None, **state: Any
    ) -> Request:
        forum = forum_of(site.url)
        assert forum is not None
        fields = {k: v for k, v in meta.items() if k not in ("site_id", "kind")}
        return Request(
            comments_api(forum[0], meta["post_id"], after),
            callback=self.parse_comments,
            errback=self.snapshot_failed,
            headers=JSON_HEADERS,
            meta={
                **self.request_meta(site, "snapshot", **{**fields, **state, "after": after}),
                CODES_META: THROTTLE_CODES,
            },
            dont_filter=True,
        )

    def parse_comments(self, response: Response) -> Iterator[Any]:
        site = self.response_site(response)
        meta = response.meta[META_KEY]
        try:
            page = json_list(response.body)
            floors = [c["floor"] for c in page if isinstance(c, dict)]
            if len(floors) != len(page) or not all(isinstance(f, int) for f in floors):
                raise MalformedJson("a comment without a whole-number floor")
        except (MalformedJson, KeyError) as exc:
            yield self._malformed(site, response, MalformedJson(str(exc)))
            return
        comments = [*meta["comments"], *page]
        after = max(floors) if floors else None
        if page and (meta["after"] is None or after > meta["after"]):
            yield self._comments_request(
                site,
                meta,
                after=after,
                post=meta["post"],
                comments=comments,
                status=meta["status"],
                final_url=meta["final_url"],
                headers=meta["headers"],
            )
            return
        if page:
            # The server ignored `after`: stop rather than fetch the same page for ever.
            count(self.crawler.stats, "dcard/comment_paging_stuck", site.site_id)
            logger.warning("Comment paging did not advance at %s; keeping what came", response.url)
            comments = meta["comments"]
        yield FetchedPage(
            article_id=meta["article_id"],
            site_id=site.site_id,
            article_type=meta["article_type"],
            fetched_at=now(),
            status=meta["status"],
            final_url=meta["final_url"],
            headers={**meta["headers"], "Content-Type": ["application/json; charset=utf-8"]},
            encoding="utf-8",
            body=snapshot_document(meta["post"], comments),
        )

    def _malformed(self, site: Site, response: Response, exc: Exception) -> FailedFetch | None:
        count(self.crawler.stats, "dcard/malformed_json", site.site_id)
        logger.error(
            "Malformed JSON from %s (%d, %d bytes): %s",
            response.url,
            response.status,
            len(response.body),
            exc,
        )
        meta = response.meta[META_KEY]
        if "article_id" not in meta:
            return None
        count(self.crawler.stats, "snapshot_failures", site.site_id)
        return FailedFetch(meta["article_id"], site.site_id, now(), "malformed_json", None)
