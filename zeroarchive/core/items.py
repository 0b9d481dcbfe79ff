"""The records that pass from one stage to the next: found article links, fetched pages and
failed fetches (spiders to the pipelines), and what the parser makes of a snapshot (``Parsed``,
stored as a publication)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.http import Headers


@dataclass(frozen=True)
class ArticleLinks:
    """Canonical article URLs found on one list page."""

    site_id: int
    article_type: str
    source_url: str
    urls: tuple[str, ...]
    #: Publication times (unix seconds) the list gave for some of the URLs (a feed, a
    #: sitemap, a video list).
    published: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class FetchedPage:
    """One successful fetch of an article, as the spider saw it."""

    article_id: int
    site_id: int
    article_type: str
    fetched_at: int
    status: int
    final_url: str
    headers: Mapping[str, Sequence[str]]
    encoding: str
    body: bytes = field(repr=False)
    # The canonical URL the page belongs to, when it differs from the article's own URL:
    # the server's redirect, or a credible og:url / rel=canonical claim (crawl/canonical.py).
    moved_to: str | None = None
    # The DOM a browser built (scripts run), not the bytes the server sent.
    rendered: bool = False
    # Set by a spider that leaves the page's encoding (then "") and its canonical claims
    # (``moved_to``) to the snapshot writer, off the crawl's thread: the URL of the
    # article the page was fetched for. None once settled (crawl/snapshot_batches.py).
    unsettled_for: str | None = None


@dataclass(frozen=True)
class FailedFetch:
    """A snapshot fetch that failed after retries; ``reason`` is an error kind."""

    article_id: int
    site_id: int
    failed_at: int
    reason: str
    status: int | None = None


@dataclass(frozen=True)
class MediaAnswer:
    """One media item of a snapshot as the crawl got it (zeroarchive/media/): its bytes to
    store, or why it was not kept (``reason``: too-large, too-many, not-media,
    failed:<status or error>). ``sha256`` is the digest of ``body`` when the crawl hashed
    it; with no ``body`` and no ``reason`` the item is one the crawl fetched a moment ago
    for another snapshot (the same URL, ``size`` bytes) and reuses, not fetched again."""

    article_id: int
    site_id: int
    snapshot_at: int
    kind: str
    url: str
    fetched_at: int
    body: bytes | None = field(default=None, repr=False)
    content_type: str | None = None
    reason: str | None = None
    #: A file holding the bytes instead of ``body`` (a video: zeroarchive/media/video.py),
    #: removed by the snapshot writer once the batch is written (or cannot be).
    spooled: str | None = None
    sha256: bytes | None = None
    size: int | None = None


@dataclass(frozen=True)
class MediaAnswers:
    """The media records one callback gives (a page's reused and refused items, a batch's
    answers) as one item: Scrapy's path for an item (the spider middlewares, the
    pipelines, a signal and a log record) cost about as much CPU as a small fetch, and a
    page has about 20 records."""

    answers: tuple[MediaAnswer, ...]


def header_lists(headers: Headers) -> dict[str, list[str]]:
    """Response headers as stored with a snapshot: names to lists of values, as text."""
    return {
        key.decode("latin-1"): [value.decode("latin-1") for value in values]
        for key, values in headers.items()
    }


@dataclass(frozen=True)
class Parsed:
    """What a parser makes of one snapshot: the fields of a publication."""

    canonical_url: str
    title: str
    text: str
    language: str | None = None
    published_at: int | None = None
    # The time the page itself says it was last edited, when it says so.
    modified_at: int | None = None
    author: str | None = None
    hashtags: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    comments: tuple[dict[str, Any], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("hashtags", "urls", "keywords", "tags", "comments"):
            data[key] = list(data[key])
        return data

    def digest(self) -> bytes:
        """SHA-256 of every field: equal digests mean the same publication version."""
        blob = json.dumps(self.as_dict(), ensure_ascii=False, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode("utf-8")).digest()
