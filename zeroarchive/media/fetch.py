"""The crawl's side of media: the requests of a stored page's items, and their answers (or
failures) as ``MediaAnswer`` records for the snapshot writer.

Requests go through the crawl's own scheduler and downloader middlewares (queue,
politeness, proxies, robots rules, private-target refusals) with the page as ``Referer``,
and ``download_maxsize`` set to the site's ``media_max_bytes``, so that Scrapy drops an
item too large by its Content-Length or while it streams. Only the first snapshot of an
article and each changed version get them: the request of a re-snapshot carries the
digest of the last one (``last_hash``), and an unchanged page refers to the earlier set.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from zeroarchive.core.clock import now
from zeroarchive.core.errors import error_kind
from zeroarchive.core.items import FetchedPage, MediaAnswer
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.media.find import CONFIG_KINDS, Found, find_media, stylesheet_items
from zeroarchive.media.sources import sends_referer, source_finder
from zeroarchive.sites.record import Site

if TYPE_CHECKING:
    from scrapy.http import Request, Response
    from twisted.python.failure import Failure

KIND = "media"
TOO_LARGE = "too-large"
TOO_MANY = "too-many"
NOT_MEDIA = "not-media"
#: The first bytes of the image formats browsers show.
_IMAGE_MAGIC = (
    b"\xff\xd8\xff",
    b"\x89PNG\r\n\x1a\n",
    b"GIF87a",
    b"GIF89a",
    b"BM",
    b"\x00\x00\x01\x00",
)
_VIDEO_MAGIC = (b"\x1a\x45\xdf\xa3", b"OggS")


def is_media(kind: str, body: bytes, content_type: str | None) -> bool:
    """Whether an answer is what an item of ``kind`` should be: an image's bytes must be an
    image (its magic bytes, or SVG), whatever its Content-Type says; a stylesheet, font or
    image of a stylesheet must not be an HTML page; a video must be a video.

    >>> is_media("image", b"\\x89PNG\\r\\n\\x1a\\n...", "image/png")
    True
    >>> is_media("image", b"<!doctype html><html>Not found", "image/jpeg")
    False
    >>> is_media("image", b'<?xml version="1.0"?><svg xmlns="..."/>', "image/svg+xml")
    True
    >>> is_media("image", b"RIFF\\x00\\x00\\x00\\x00WEBPVP8 ", None)
    True
    >>> is_media("style", b"body{color:red}", "text/css"), is_media("style", b"<html>", None)
    (True, False)
    >>> is_media("video", b"\\x00\\x00\\x00\\x18ftypmp42", "video/mp4")
    True
    """
    head = body[:1024]
    mime = (content_type or "").split(";")[0].strip().lower()
    if kind == "image":
        if head.startswith(_IMAGE_MAGIC) or (head[8:12] == b"WEBP" and head[:4] == b"RIFF"):
            return True
        if head[4:8] == b"ftyp" and head[8:12] in (b"avif", b"avis", b"heic", b"mif1"):
            return True
        return b"<svg" in head.lower()
    if kind == "video":
        if head[4:8] == b"ftyp" or head.startswith(_VIDEO_MAGIC):
            return True
        return mime.startswith("video/") and not _looks_like_html(head)
    return not _looks_like_html(head)


def _looks_like_html(head: bytes) -> bool:
    start = head.lstrip()[:64].lower()
    return start.startswith((b"<!doctype html", b"<html", b"<head", b"<body"))


def changed(page: FetchedPage, last_hash: str | None) -> bool:
    """Whether ``page`` is a first snapshot or a changed version (its items are fetched),
    not an unchanged re-snapshot (which refers to the earlier set).

    >>> page = FetchedPage(1, 1, "news", 0, 200, "u", {}, "utf-8", b"same")
    >>> changed(page, None), changed(page, hashlib.sha256(b"same").hexdigest())
    (True, False)
    """
    return last_hash is None or hashlib.sha256(page.body).hexdigest() != last_hash


def _is_html(page: FetchedPage) -> bool:
    if page.rendered:
        return True
    for name, values in page.headers.items():
        if name.lower() == "content-type" and values:
            return "html" in values[0].lower()
    return _looks_like_html(page.body[:1024])


def page_media(page: FetchedPage, site: Site, last_hash: str | None) -> list[Found]:
    """The items of ``page`` to fetch: its site's kinds, when the page is new or changed."""
    kinds = [CONFIG_KINDS[kind] for kind in site.media]
    if not kinds or not changed(page, last_hash):
        return []
    finder = source_finder(site.source.name)  # PTT, Dcard, Facebook posts
    if finder is not None:
        return finder(page.body, page.final_url, kinds)
    if not _is_html(page):
        return []
    return find_media(page.body, page.final_url, kinds)


def media_outputs(
    page: FetchedPage, site: Site, last_hash: str | None, spider: Any
) -> Iterator[Request | MediaAnswer]:
    """The requests of a stored page's items, and ``too-many`` records beyond
    ``media_max_items``. The stylesheets share the spare places among them, each its part
    (so a stylesheet's own fonts and images count too, in whichever worker fetches it)."""
    found = page_media(page, site, last_hash)
    cap = site.config.media_max_items
    keep = found[:cap]
    for item in found[cap:]:
        yield refused(page.article_id, page.site_id, page.fetched_at, item, TOO_MANY)
    sheets = sum(1 for item in keep if item.kind == "style")
    spare = cap - len(keep)
    shares = [spare // sheets + (1 if i < spare % sheets else 0) for i in range(sheets)]
    for item in keep:
        share = shares.pop(0) if item.kind == "style" else 0
        yield media_request(
            spider, site, page.article_id, page.fetched_at, item, page.final_url, share
        )


def refused(
    article_id: int, site_id: int, snapshot_at: int, item: Found, reason: str
) -> MediaAnswer:
    return MediaAnswer(article_id, site_id, snapshot_at, item.kind, item.url, now(), reason=reason)


def media_request(
    spider: Any,
    site: Site,
    article_id: int,
    snapshot_at: int,
    item: Found,
    referer: str,
    spare: int = 0,
) -> Request:
    from scrapy.http import Request

    return Request(
        item.url,
        callback=spider.parse_media,
        errback=spider.media_failed,
        headers={"Referer": referer} if sends_referer(item.url, referer) else {},
        meta={
            META_KEY: {
                "site_id": site.site_id,
                "kind": KIND,
                "article_id": article_id,
                "snapshot_at": snapshot_at,
                "media_kind": item.kind,
                "spare": spare,
            },
            "download_maxsize": site.config.media_max_bytes,
            "download_warnsize": 0,
        },
        # One row per snapshot that shows it, however many articles share it.
        dont_filter=True,
    )


def answered(response: Response, site: Site | None, spider: Any) -> Iterator[Request | MediaAnswer]:
    """A media answer as its record, and for a stylesheet the requests of what it
    references (up to its share of the snapshot's places; the rest ``too-many``)."""
    meta = response.meta[META_KEY]
    kind = meta["media_kind"]
    raw_type = response.headers.get("Content-Type")
    content_type = None if raw_type is None else raw_type.decode("latin-1")
    body = response.body
    # The URL the page named, not where a redirect ended: the record is of the page's item.
    url = response.request.url if response.request is not None else response.url
    base = (meta["article_id"], meta["site_id"], meta["snapshot_at"], kind, url)
    if not is_media(kind, body, content_type):
        yield MediaAnswer(*base, now(), content_type=content_type, reason=NOT_MEDIA)
        return
    yield MediaAnswer(*base, now(), body=body, content_type=content_type)
    if kind != "style" or site is None or "css" not in (content_type or "").lower():
        return
    spare = int(meta.get("spare", 0))
    for n, url in enumerate(stylesheet_items(body, response.url)):
        item = Found("style", url)
        if n < spare:
            yield media_request(
                spider, site, meta["article_id"], meta["snapshot_at"], item, response.url
            )
        else:
            yield refused(meta["article_id"], meta["site_id"], meta["snapshot_at"], item, TOO_MANY)


def failed(failure: Failure) -> MediaAnswer:
    """A failed media fetch as its record: ``too-large`` (Scrapy's maxsize), else
    ``failed:<HTTP status>`` or ``failed:<error kind>`` (timeout, dns, ...)."""
    request = failure.request  # type: ignore[attr-defined]
    meta = request.meta[META_KEY]
    kind, status = error_kind(failure)
    if kind == "too_large":
        reason = TOO_LARGE
    elif status is not None:
        reason = f"failed:{status}"
    else:
        reason = f"failed:{kind}"
    return MediaAnswer(
        meta["article_id"],
        meta["site_id"],
        meta["snapshot_at"],
        meta["media_kind"],
        request.url,
        now(),
        reason=reason,
    )
