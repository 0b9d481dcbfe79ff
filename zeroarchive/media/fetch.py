"""The crawl's side of media: the requests of a stored page's items, and their answers (or
failures) as ``MediaAnswer`` records for the snapshot writer.

Requests go through the crawl's own scheduler and downloader middlewares (queue,
politeness, proxies, robots rules, private-target refusals) with the page as ``Referer``,
and ``download_maxsize`` set to the site's ``media_max_bytes``, so that Scrapy drops an
item too large by its Content-Length or while it streams. Only the first snapshot of an
article and each changed version get them: the request of a re-snapshot carries the
digest of the last one (``last_hash``), and an unchanged page refers to the earlier set.

An item whose URL this crawl fetched and kept within ``ZEROARCHIVE_MEDIA_REUSE_SECONDS``
(``MediaReuse``: a site's logo, stylesheets and fonts on every article) is not fetched
again: its record names the bytes already held, as a browser's cache serves a page's
repeated images. A Scrapy request costs the crawl about as much CPU as a page's own
parsing, so this is most of what media cost a crawl of one site's articles.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from zeroarchive.core.clock import now
from zeroarchive.core.errors import error_kind
from zeroarchive.core.items import FetchedPage, MediaAnswer, MediaAnswers
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.media.find import CONFIG_KINDS, Found, find_media, stylesheet_items
from zeroarchive.media.sniff import is_media, looks_like_html
from zeroarchive.media.sources import sends_referer, source_finder
from zeroarchive.media.video import VIDEO_META
from zeroarchive.sites.record import Site

if TYPE_CHECKING:
    from scrapy.http import Request, Response
    from twisted.python.failure import Failure

KIND = "media"
TOO_LARGE = "too-large"
TOO_MANY = "too-many"
NOT_MEDIA = "not-media"
#: Items of one host a media request stands for at most. Each request costs the crawl a
#: round through Scrapy (about 0.8 ms of CPU here, bench/README.md): 16 halves the rounds
#: of a page's many pictures on one CDN against 8, and its 40 items still come on three
#: connections at once (a browser opens six to a host).
BATCH_ITEMS = 16
#: Where the batch's middleware leaves what it fetched, in the request's meta.
RESULTS = "media_results"
#: Items a crawl remembers for reuse (about 200 bytes each).
REUSE_CAPACITY = 50_000


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
    return looks_like_html(page.body[:1024])


def page_media(page: FetchedPage, site: Site, last_hash: str | None) -> list[Found]:
    """The items of ``page`` to fetch: its site's kinds, when the page is new or changed."""
    # A screenshot is taken by the browser that rendered the page (media/screenshot.py).
    kinds = [CONFIG_KINDS[kind] for kind in site.media if kind in CONFIG_KINDS]
    if not kinds or not changed(page, last_hash):
        return []
    finder = source_finder(site.source.name)  # PTT, Dcard, Facebook posts
    if finder is not None:
        return finder(page.body, page.final_url, kinds)
    if not _is_html(page):
        return []
    found = find_media(page.body, page.final_url, kinds)
    if "video" in kinds and site.source.name == "youtube":
        # A watch page is its video: yt-dlp's YouTube extractor takes the page's own URL
        # (its og:video is the embedded player of the same video).
        # First: the places media_max_items leaves go to the video before the images.
        found = [Found("video", page.final_url), *(f for f in found if f.kind != "video")]
    return found


@dataclass(frozen=True)
class Held:
    """An item this crawl fetched and kept: what a later snapshot showing it records."""

    sha256: bytes
    size: int
    content_type: str | None
    fetched_at: int
    #: A stylesheet's own items (its fonts and images), in its order.
    children: tuple[str, ...] = ()


class MediaReuse:
    """The items this crawl fetched and kept lately, by the URL a page named: at most
    ``capacity`` of them (the oldest forgotten first), each reused for ``seconds`` after
    its fetch.

    >>> reuse = MediaReuse(60, capacity=2)
    >>> for n in range(3):
    ...     reuse.keep(f"u{n}", Held(b"d", 1, None, now()))
    >>> reuse.get("u0") is None, reuse.get("u2").size
    (True, 1)
    """

    def __init__(self, seconds: float, capacity: int = REUSE_CAPACITY) -> None:
        self.seconds = seconds
        self.capacity = capacity
        self._held: OrderedDict[str, Held] = OrderedDict()

    def get(self, url: str) -> Held | None:
        held = self._held.get(url)
        if held is not None and now() - held.fetched_at > self.seconds:
            del self._held[url]
            return None
        return held

    def keep(self, url: str, held: Held) -> None:
        self._held[url] = held
        self._held.move_to_end(url)
        while len(self._held) > self.capacity:
            self._held.popitem(last=False)


def media_outputs(
    page: FetchedPage,
    site: Site,
    last_hash: str | None,
    spider: Any,
    reuse: MediaReuse | None = None,
) -> Iterator[Request | MediaAnswer]:
    """The requests of a stored page's items (records of those ``reuse`` holds), and
    ``too-many`` records beyond ``media_max_items``. The stylesheets share the spare
    places among them, each its part (so a stylesheet's own fonts and images count too,
    in whichever worker fetches it)."""
    found = page_media(page, site, last_hash)
    cap = site.config.media_max_items
    keep = found[:cap]
    for item in found[cap:]:
        yield refused(page.article_id, page.site_id, page.fetched_at, item, TOO_MANY)
    sheets = sum(1 for item in keep if item.kind == "style")
    spare = cap - len(keep)
    shares = [spare // sheets + (1 if i < spare % sheets else 0) for i in range(sheets)]
    snapshot = (page.article_id, page.site_id, page.fetched_at)
    wanted: list[tuple[Found, int]] = []
    for item in keep:
        share = shares.pop(0) if item.kind == "style" else 0
        held = reuse.get(item.url) if reuse is not None else None
        if held is None:
            wanted.append((item, share))
        else:
            yield from reused(snapshot, item, held, share, site, spider, reuse)
    yield from batched(spider, site, snapshot, wanted, page.final_url)


def grouped(
    outputs: Iterable[Request | MediaAnswer],
) -> Iterator[Request | MediaAnswer | MediaAnswers]:
    """``outputs``' requests as they come, then their records as one ``MediaAnswers``
    (a lone record as it is).

    >>> a, b = (MediaAnswer(1, 1, 5, "image", u, 5, reason="too-many") for u in "ab")
    >>> [type(o).__name__ for o in grouped([a, b])], list(grouped([a])) == [a]
    (['MediaAnswers'], True)
    """
    records = []
    for output in outputs:
        if isinstance(output, MediaAnswer):
            records.append(output)
        else:
            yield output
    if len(records) == 1:
        yield records[0]
    elif records:
        yield MediaAnswers(tuple(records))


def reused(
    snapshot: tuple[int, int, int],
    item: Found,
    held: Held,
    spare: int,
    site: Site,
    spider: Any,
    reuse: MediaReuse | None,
) -> Iterator[Request | MediaAnswer]:
    """The record of an item this crawl holds, and a stylesheet's own items as if it had
    been fetched again (reused too, or requested)."""
    article_id, site_id, snapshot_at = snapshot
    yield MediaAnswer(
        article_id,
        site_id,
        snapshot_at,
        item.kind,
        item.url,
        now(),
        content_type=held.content_type,
        sha256=held.sha256,
        size=held.size,
    )
    yield from _sheet_items(snapshot, held.children, spare, item.url, site, spider, reuse)


def _sheet_items(
    snapshot: tuple[int, int, int],
    urls: Sequence[str],
    spare: int,
    sheet_url: str,
    site: Site,
    spider: Any,
    reuse: MediaReuse | None,
) -> Iterator[Request | MediaAnswer]:
    """A stylesheet's own items: up to its ``spare`` places fetched (or reused), the rest
    ``too-many``."""
    article_id, site_id, snapshot_at = snapshot
    wanted: list[tuple[Found, int]] = []
    for n, url in enumerate(urls):
        item = Found("style", url)
        if n >= spare:
            yield refused(article_id, site_id, snapshot_at, item, TOO_MANY)
            continue
        held = reuse.get(url) if reuse is not None else None
        if held is None:
            wanted.append((item, 0))
        else:
            yield from reused(snapshot, item, held, 0, site, spider, reuse)
    yield from batched(spider, site, snapshot, wanted, sheet_url)


def batched(
    spider: Any,
    site: Site,
    snapshot: tuple[int, int, int],
    items: Sequence[tuple[Found, int]],
    referer: str,
) -> Iterator[Request]:
    """The requests of a snapshot's items to fetch: the items of one host, up to
    ``BATCH_ITEMS`` of them, share one request (``batch`` in its meta), which rides the
    scheduler, the queue and every downloader middleware once for all of them; the last
    middleware (``middlewares/media.py``) fetches them one after the other in its slot.
    A host's lone item goes as a request of its own, as Scrapy fetches a page: a batch
    that is not answered 2xx (a tracker's pixel redirected, a missing picture) asks for
    its item again alone, so a lone one would be asked for twice. A video goes alone, to
    yt-dlp (middlewares/video.py), never inside a batch."""
    article_id, _, snapshot_at = snapshot
    by_host: dict[str, list[tuple[Found, int]]] = {}
    for item, spare in items:
        if item.kind == "video":
            yield media_request(spider, site, article_id, snapshot_at, item, referer, spare)
            continue
        by_host.setdefault(urlsplit(item.url).netloc, []).append((item, spare))
    for group in by_host.values():
        for start in range(0, len(group), BATCH_ITEMS):
            part = group[start : start + BATCH_ITEMS]
            item, spare = part[0]
            request = media_request(spider, site, article_id, snapshot_at, item, referer, spare)
            if len(part) > 1:
                request.meta[META_KEY]["batch"] = [[i.kind, i.url, n] for i, n in part]
            yield request


def batch_items(request: Request) -> list[tuple[Found, int]]:
    """The (item, spare) pairs a media request stands for: its batch, or itself."""
    meta = request.meta[META_KEY]
    batch = meta.get("batch")
    if not batch:
        return [(Found(meta["media_kind"], request.url), int(meta.get("spare", 0)))]
    return [(Found(str(kind), str(url)), int(spare)) for kind, url, spare in batch]


def item_meta(batch: Request, item: Found, spare: int) -> dict[str, Any]:
    """The archive's meta of one item of a batch (its kind and places)."""
    meta = {k: v for k, v in batch.meta[META_KEY].items() if k != "batch"}
    meta.update(media_kind=item.kind, spare=spare)
    return meta


def single_request(batch: Request, item: Found, spare: int) -> Request:
    """One item of a batch as a request of its own (through the scheduler and every
    middleware: redirects, retries and refusals are theirs)."""
    return batch.replace(
        url=item.url,
        headers={"Referer": batch.headers.get("Referer") or b""},
        meta={
            META_KEY: item_meta(batch, item, spare),
            "download_maxsize": batch.meta.get("download_maxsize"),
            "download_warnsize": 0,
        },
    )


@dataclass(frozen=True)
class Fetched:
    """An item of a batch its middleware fetched (2xx): what its record is made of."""

    url: str
    content_type: str | None
    body: bytes
    #: The item's archive meta (``item_meta``).
    meta: dict[str, Any]


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
    video = response.meta.get(VIDEO_META)
    if video is not None:
        # Downloaded by yt-dlp into a file (middlewares/video.py): the writer stores it.
        yield MediaAnswer(
            meta["article_id"],
            meta["site_id"],
            meta["snapshot_at"],
            kind,
            response.url,
            now(),
            content_type=video.content_type,
            reason=video.reason,
            spooled=video.path,
        )
        return
    raw_type = response.headers.get("Content-Type")
    content_type = None if raw_type is None else raw_type.decode("latin-1")
    # The URL the page named, not where a redirect ended: the record is of the page's item.
    url = response.request.url if response.request is not None else response.url
    yield from kept(meta, url, response.url, content_type, response.body, site, spider)


def kept(
    meta: dict[str, Any],
    url: str,
    final_url: str,
    content_type: str | None,
    body: bytes,
    site: Site | None,
    spider: Any,
) -> Iterator[Request | MediaAnswer]:
    """The record of an item fetched (2xx) from ``final_url`` for ``url``, and a
    stylesheet's own items."""
    kind = meta["media_kind"]
    base = (meta["article_id"], meta["site_id"], meta["snapshot_at"], kind, url)
    if not is_media(kind, body, content_type):
        yield MediaAnswer(*base, now(), content_type=content_type, reason=NOT_MEDIA)
        return
    digest = hashlib.sha256(body).digest()
    fetched_at = now()
    yield MediaAnswer(*base, fetched_at, body=body, content_type=content_type, sha256=digest)
    children: tuple[str, ...] = ()
    if kind == "style" and "css" in (content_type or "").lower():
        children = tuple(stylesheet_items(body, final_url))
    reuse: MediaReuse | None = getattr(spider, "media_reuse", None)
    if reuse is not None:
        reuse.keep(url, Held(digest, len(body), content_type, fetched_at, children))
    if not children or site is None:
        return
    snapshot = (meta["article_id"], meta["site_id"], meta["snapshot_at"])
    spare = int(meta.get("spare", 0))
    yield from _sheet_items(snapshot, children, spare, final_url, site, spider, reuse)


def batch_answered(
    response: Response, site: Site | None, spider: Any
) -> Iterator[Request | MediaAnswer]:
    """The records of a media request's answer: each item of its batch that the batch's
    middleware fetched (``media_results``), the requests of those it left to the whole
    stack; a request no such middleware saw is its first item's answer, and the others
    are asked for one by one."""
    results = response.meta.get(RESULTS)
    if results is None:
        yield from answered(response, site, spider)
        request = response.request
        if request is not None:
            for item, spare in batch_items(request)[1:]:
                yield single_request(request, item, spare)
        return
    from scrapy.http import Request

    for result in results:
        if isinstance(result, Request):
            yield result
        else:
            yield from kept(
                result.meta, result.url, result.url, result.content_type, result.body, site, spider
            )


def batch_failed(failure: Failure) -> Iterator[Request | MediaAnswer]:
    """A media request that failed before its batch was fetched (a robots.txt rule of its
    first URL, the host refused or unreachable): its first item's record, and the others
    asked for one by one, each judged on its own."""
    yield failed(failure)
    request = failure.request  # type: ignore[attr-defined]
    for item, spare in batch_items(request)[1:]:
        yield single_request(request, item, spare)


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
