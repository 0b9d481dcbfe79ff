"""What the crawls of a person's request (`scrapy save`, `scrapy recheck`) answered for the
articles asked about: the fetched page or the failed fetch of each, and why a crawl ended,
so that a page that was not saved is reported with its reason in one line."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from scrapy import signals

from zeroarchive.core.errors import PRIVATE_TARGET
from zeroarchive.core.items import FailedFetch, FetchedPage

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

#: Why a crawl ended, as a person reads it (Scrapy's close reasons and ours).
_CLOSE_REASONS = {
    "site_locked": "another run is crawling its site: ask again when it has finished",
    "shutdown": "the run was stopped",
}


class AskedAnswers:
    """The answers for ``article_ids``, gathered from the crawls it watches."""

    def __init__(self, article_ids: Iterable[int]) -> None:
        self.article_ids = frozenset(article_ids)
        self.answers: dict[int, FetchedPage | FailedFetch] = {}
        self.close_reasons: list[str] = []

    def watch(self, crawler: Crawler) -> None:
        crawler.signals.connect(self._item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    def _item_scraped(self, item: Any) -> None:
        if isinstance(item, FetchedPage | FailedFetch) and item.article_id in self.article_ids:
            self.answers[item.article_id] = item

    def _spider_closed(self, reason: str) -> None:
        self.close_reasons.append(reason)

    def pages(self) -> list[FetchedPage]:
        return [item for item in self.answers.values() if isinstance(item, FetchedPage)]

    def failures(self) -> list[FailedFetch]:
        return [item for item in self.answers.values() if isinstance(item, FailedFetch)]

    def why_not(self, article_id: int) -> str:
        """Why the article's page was not stored, in a few words.

        >>> asked = AskedAnswers([1, 2])
        >>> asked.answers[1] = FailedFetch(1, 7, 0, "http_503", 503)
        >>> asked.why_not(1)
        'the fetch failed: http_503'
        >>> asked.answers[3] = FailedFetch(3, 7, 0, PRIVATE_TARGET, None)
        >>> asked.why_not(3)  # doctest: +ELLIPSIS
        'refused: it led to a host that is not on the public internet ...'
        >>> asked.close_reasons.append("site_locked")
        >>> asked.why_not(2)
        'another run is crawling its site: ask again when it has finished'
        """
        answer = self.answers.get(article_id)
        if isinstance(answer, FailedFetch) and answer.reason == PRIVATE_TARGET:
            return (
                "refused: it led to a host that is not on the public internet (a redirect "
                "or a meta refresh; the log says which)"
            )
        if isinstance(answer, FailedFetch):
            return f"the fetch failed: {answer.reason}"
        if isinstance(answer, FetchedPage):
            return "the page was fetched but could not be stored (the log says why)"
        for reason in self.close_reasons:
            if reason in _CLOSE_REASONS:
                return _CLOSE_REASONS[reason]
        return "it was not fetched (another process holds it, or the log says why)"
