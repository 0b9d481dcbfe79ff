"""A site's article patterns when its config gives no ``article`` regex: which links are
articles, decided from the URL (zeroarchive/crawl/url_evidence.py), the site's own repeated
link shapes, and the pages fetched (zeroarchive/crawl/page_evidence.py), converging on
shapes (zeroarchive/core/url_shapes.py) stored with the site.

A shape is decided once enough fetched pages of it agree; from then on its links are
decided by the shape alone, no page fetched. A shape a person set is never overruled.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from zeroarchive.core.url_shapes import SLUG, path_and_query, url_shape
from zeroarchive.crawl.page_evidence import ARTICLE, LIST
from zeroarchive.crawl.url_evidence import ARTICLE_SCORE, depth, url_score
from zeroarchive.sites.patterns import ARTICLE_VERDICT, SET, UNDECIDED, Pattern

#: Links of one shape on a site that make it one of the site's repeated patterns.
REPEATED = 3
#: URL features of a shape whose repetition counts.
STRONG_FEATURES = frozenset(("date", "id", "slug", "id-param"))
_VARYING = re.compile(r"\\d\+|" + re.escape(SLUG) + r"|\[\^&\]\*")


def varies(shape: str) -> bool:
    """Whether a shape has a part that changes from link to link (an id, a date, a slug).

    >>> varies(r"^/story/[^/]+/$"), varies("^/about/$")
    (True, False)
    """
    return bool(_VARYING.search(shape))


@dataclass
class SitePatterns:
    """The patterns of one site, as the crawl knows them."""

    patterns: dict[str, Pattern] = field(default_factory=dict)

    @classmethod
    def of(cls, patterns: Iterable[Pattern]) -> SitePatterns:
        return cls({p.shape: p for p in patterns})

    def decided(self, url: str) -> str:
        """The verdict of the URL's shape (``UNDECIDED`` when the shape is not decided):
        a decided shape needs no score and no page."""
        pattern = self.patterns.get(url_shape(url))
        if pattern is not None and pattern.verdict:
            return pattern.verdict
        text = path_and_query(url)
        for other in self.patterns.values():
            if other.origin == SET and other.verdict and re.search(other.shape, text):
                return other.verdict
        return UNDECIDED

    def articles(self, urls: Iterable[str]) -> list[str]:
        """The article links among a list page's on-site links, in their order; counts each
        link under its shape."""
        urls = list(dict.fromkeys(urls))
        shapes = {url: url_shape(url) for url in urls}
        on_page = Counter(shapes.values())
        found = []
        for url in urls:
            shape = shapes[url]
            pattern = self.patterns.get(shape)
            if pattern is None:
                pattern = self.patterns[shape] = Pattern(shape, example=url)
            pattern.links += 1
            pattern.dirty = True
            if self.is_article(url, shape, on_page[shape]):
                found.append(url)
        return found

    def is_article(self, url: str, shape: str | None = None, siblings: int = 1) -> bool:
        """Whether a link is an article: its shape's verdict when decided, else its URL's
        score, one point more when its shape is one of the site's repeated patterns."""
        verdict = self.decided(url)
        if verdict:
            return verdict == ARTICLE_VERDICT
        shape = shape or url_shape(url)
        score, features = url_score(url)
        pattern = self.patterns.get(shape)
        seen = max(siblings, pattern.links if pattern is not None else 0)
        # Only a shape that varies by an id, a date or a headline: one that varies by a word
        # is a site's sections (/realtimenews/article/politics/), and a shallow one by a
        # number as often its sections by code (/focus/260501).
        if (
            seen >= REPEATED
            and score >= 0
            and STRONG_FEATURES.intersection(features)
            and (depth(url) >= 3 or SLUG in shape)
        ):
            score += 1
        return score >= ARTICLE_SCORE

    def record_page(self, url: str, verdict: str) -> Pattern | None:
        """What a fetched page of ``url`` said of itself (``page_evidence``'s verdict)
        counted for its shape; the shape when the page said anything."""
        if verdict not in (ARTICLE, LIST):
            return None
        shape = url_shape(url)
        pattern = self.patterns.get(shape)
        if pattern is None:
            pattern = self.patterns[shape] = Pattern(shape, example=url)
        if verdict == ARTICLE:
            pattern.article_pages += 1
        else:
            pattern.other_pages += 1
        pattern.settle()
        pattern.dirty = True
        return pattern

    def dirty(self) -> list[Pattern]:
        """The patterns with counts not yet written, marked written."""
        out = [p for p in self.patterns.values() if p.dirty]
        for pattern in out:
            pattern.dirty = False
        return out
