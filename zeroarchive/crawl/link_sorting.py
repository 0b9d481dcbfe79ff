"""Which of a list page's links are articles, which list pages to walk on to, and which
matched nothing, for one crawl.

A site whose config gives ``article`` is sorted by its regexes, and the same-site links that
matched neither ``article`` nor ``following`` are counted by shape: what a wrong regex
leaves out, shown by site_stats. A site without one is sorted by its learnt patterns
(zeroarchive/crawl/article_patterns.py), which the pages fetched from it confirm or refute.
What was counted is written to the archive every ZEROARCHIVE_SITE_REFRESH_SECONDS and when the
crawl closes, and the patterns are read again then (a person's edit applies without a
restart; other workers' counts join in).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sqlalchemy.exc import SQLAlchemyError

from zeroarchive.core.clock import now as clock_now
from zeroarchive.core.stats import count
from zeroarchive.core.url_shapes import PAGE_EXTENSIONS, segment_shape, url_shape
from zeroarchive.crawl.article_patterns import REPEATED, SitePatterns
from zeroarchive.crawl.page_evidence import page_evidence
from zeroarchive.crawl.url_evidence import url_score
from zeroarchive.sites.patterns import OTHER_VERDICT, SET, Pattern
from zeroarchive.sites.record import Site
from zeroarchive.storage.patterns import PatternStore

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)
#: Fetched pages of one shape read for evidence at most (a shape they disagree on stays
#: undecided: more pages would not settle it, and each costs a parse).
MAX_PAGES = 10
#: Shapes sampled on one list page at most (two pages each: MIN_PAGES).
MAX_SAMPLED_SHAPES = 3
#: A shape is sampled when its last segment varies: a number or a name.
_SAMPLED_PART = re.compile(r"(?:\\d\+|\[\^/\]\+)[^/]*/?\$$|\\\?.*\\d\+")
#: URL features that rule a sample out: what is plainly no article.
_NO_SAMPLE = frozenset(("list-word", "list-param", "asset", "front"))
#: Letters and digits run together (item12): one word.
_MIXED = re.compile(r"(?:\\[wd]\+){2,}")
_LETTERS = re.compile(r"[^\W\d_]+")
_PARTS = re.compile(r"\d+|[^\W\d_]+|[\W_]")


def loose_shape(url: str) -> str:
    """The shape unmatched links are reported by: ``url_shape`` with the last path segment
    cut to its skeleton (digits, words, the marks between them) unless it is a headline, so
    the files of one folder count together.

    >>> loose_shape("https://x.example/news/2026-11-29.foo.html")
    '^/news/\\\\d+\\\\-\\\\d+\\\\-\\\\d+\\\\.\\\\w+\\\\.html$'
    >>> loose_shape("https://x.example/news/2026-11-28.item12.html")
    '^/news/\\\\d+\\\\-\\\\d+\\\\-\\\\d+\\\\.\\\\w+\\\\.html$'
    >>> loose_shape("https://x.example/tag/politics?page=2")
    '^/tag/\\\\w+\\\\?page=\\\\d+$'
    >>> loose_shape("https://x.example/story/a-long-headline-of-the-day")
    '^/story/[^/]+$'
    """
    shape = url_shape(url)
    _, query_mark, query = shape[1:-1].partition(r"\?")
    parts = urlsplit(url)
    folder, _, last = parts.path.rpartition("/")
    head = "/".join(segment_shape(segment) for segment in folder.split("/"))
    name, dot, ext = last.rpartition(".")
    if not dot or ext.lower() not in PAGE_EXTENSIONS:
        name, ext = last, ""
    if not name or len(_LETTERS.findall(name)) >= 3:
        return shape
    skeleton = "".join(
        r"\d+" if part.isdigit() else r"\w+" if part[0].isalnum() else re.escape(part)
        for part in _PARTS.findall(name)
    )
    skeleton = _MIXED.sub(r"\\w+", skeleton)
    tail = re.escape("." + ext) if ext else ""
    return f"^{head}/{skeleton}{tail}{query_mark}{query}$"


@dataclass(frozen=True)
class SortedLinks:
    articles: list[str]
    follow: list[str]


class LinkSorter:
    def __init__(
        self, store: PatternStore, stats: Callable[[], StatsCollector | None], every: float
    ) -> None:
        self.store = store
        #: The crawl's stats (which exist only once the crawl has started).
        self._stats = stats
        self.every = every
        self.patterns: dict[int, SitePatterns] = {}
        #: Per site: shape -> [links, an example] of links that matched no regex.
        self.unmatched: dict[int, dict[str, list[object]]] = {}
        self._read_at: dict[int, float] = {}
        #: (site id, shape) sampled this crawl.
        self._sampled: set[tuple[int, str]] = set()
        self._saved_at = time.monotonic()

    @property
    def stats(self) -> StatsCollector | None:
        return self._stats()

    def site_patterns(self, site_id: int) -> SitePatterns:
        patterns = self.patterns.get(site_id)
        if patterns is None:
            patterns = self.patterns[site_id] = SitePatterns.of(self.store.load(site_id))
            self._read_at[site_id] = time.monotonic()
        return patterns

    def sort(self, site: Site, links: Iterable[tuple[str, str]], may_follow: bool) -> SortedLinks:
        """A list page's same-site links (canonical URL, as found on the page) sorted into
        articles and list pages to walk on to."""
        config = site.config
        articles: list[str] = []
        follow: list[str] = []
        if config.article:
            for url, found in links:
                if config.is_article(url, as_found=found):
                    articles.append(url)
                elif config.is_following(url):
                    if may_follow:
                        follow.append(url)
                else:
                    self._unmatched(site.site_id, url)
        else:
            rest = []
            for url, _ in links:
                if config.is_following(url):
                    if may_follow:
                        follow.append(url)
                else:
                    rest.append(url)
            patterns = self.site_patterns(site.site_id)
            articles = patterns.articles(rest)
            count(self.stats, "article_links/learnt", site.site_id, len(articles))
        self.maybe_save()
        return SortedLinks(articles, follow)

    def is_article(self, site: Site, url: str, found: str, in_feed: bool = False) -> bool:
        """Whether a feed's or sitemap's entry is an article of the site: by its regex, else
        by its patterns; a feed's entry is one unless its shape was decided otherwise (a
        feed lists stories; a sitemap lists every page)."""
        if site.config.article:
            return site.config.is_article(url, as_found=found)
        patterns = self.site_patterns(site.site_id)
        if in_feed:
            return patterns.decided(url) != OTHER_VERDICT
        return patterns.is_article(url)

    def _unmatched(self, site_id: int, url: str) -> None:
        count(self.stats, "links_unmatched", site_id)
        shapes = self.unmatched.setdefault(site_id, {})
        entry = shapes.setdefault(loose_shape(url), [0, url])
        entry[0] = int(entry[0]) + 1  # type: ignore[call-overload]

    def samples(
        self, site: Site, links: Iterable[str], articles: Iterable[str]
    ) -> dict[str, list[str]]:
        """The undecided shapes of a list page worth fetching a page or two of, with their
        links on the page: repeated there (a list of like links), varying by a number or a
        name, no list's word in them, and not taken for articles by their URLs (a small
        site's ``/news/4521``; a site's sections by code look the same, which is why a page
        must say). Each shape is sampled once a crawl, ``MAX_SAMPLED_SHAPES`` a page at most."""
        if site.config.article:
            return {}
        taken = set(articles)
        patterns = self.site_patterns(site.site_id)
        by_shape: dict[str, list[str]] = {}
        for url in links:
            if url not in taken:
                by_shape.setdefault(url_shape(url), []).append(url)
        out: dict[str, list[str]] = {}
        for shape, urls in by_shape.items():
            key = (site.site_id, shape)
            if len(urls) < REPEATED or key in self._sampled or not _SAMPLED_PART.search(shape):
                continue
            pattern = patterns.patterns.get(shape)
            if pattern is not None and (
                pattern.verdict or pattern.article_pages + pattern.other_pages
            ):
                continue
            score, features = url_score(urls[0])
            if score < -1 or _NO_SAMPLE.intersection(features):
                continue
            self._sampled.add(key)
            out[shape] = urls
            if len(out) >= MAX_SAMPLED_SHAPES:
                break
        return out

    def page_fetched(self, site: Site, url: str, page: str) -> Pattern | None:
        """What a fetched page of a site without a regex (a snapshot, or a sample of a
        shape) says of itself, counted for its shape while the shape is undecided (a
        decided one needs no more pages); the shape's pattern."""
        if site.config.article:
            return None
        patterns = self.site_patterns(site.site_id)
        pattern = patterns.patterns.get(url_shape(url))
        if patterns.decided(url) or (
            pattern is not None and pattern.article_pages + pattern.other_pages >= MAX_PAGES
        ):
            return pattern
        evidence = page_evidence(page)
        if not evidence.verdict:
            count(self.stats, "page_evidence/unknown", site.site_id)
            return pattern
        count(self.stats, f"page_evidence/{evidence.verdict}", site.site_id)
        pattern = patterns.record_page(url, evidence.verdict)
        if pattern is not None and pattern.verdict:
            logger.info(
                "Site %s (#%d): links like %s are %s (%d page(s) said article, %d not)",
                site.name,
                site.site_id,
                pattern.shape,
                "articles" if pattern.verdict == "article" else "no articles",
                pattern.article_pages,
                pattern.other_pages,
            )
        self.maybe_save()
        return pattern

    def maybe_save(self, force: bool = False) -> None:
        clock = time.monotonic()
        if not force and clock - self._saved_at < self.every:
            return
        self._saved_at = clock
        try:
            self._save(clock_now())
        except SQLAlchemyError as exc:
            logger.warning("Could not write the sites' link patterns (kept for later): %s", exc)

    def _save(self, now: int) -> None:
        for site_id, patterns in self.patterns.items():
            worth = [
                p
                for p in patterns.dirty()
                if p.links >= REPEATED or p.article_pages or p.other_pages or p.origin == SET
            ]
            if worth:
                try:
                    self.store.save(site_id, worth, now)
                except SQLAlchemyError:
                    for pattern in worth:
                        pattern.dirty = True  # written with the next save
                    raise
            fresh = SitePatterns.of(self.store.load(site_id))
            # What this crawl counted but did not write yet (one-off shapes) is kept.
            for shape, pattern in patterns.patterns.items():
                fresh.patterns.setdefault(shape, pattern)
            self.patterns[site_id] = fresh
        unmatched, self.unmatched = self.unmatched, {}
        for site_id, shapes in unmatched.items():
            self.store.save_unmatched(
                site_id,
                {shape: (int(n), str(example)) for shape, (n, example) in shapes.items()},  # type: ignore[call-overload]
            )
