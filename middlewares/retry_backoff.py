"""Scrapy's retries, with a growing pause before each retry (``RETRY_BACKOFF_BASE`` seconds,
doubled each time, at most ``RETRY_BACKOFF_MAX``), so a struggling server gets air."""

from __future__ import annotations

import asyncio
import time

from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.http import Request

NOT_BEFORE = "retry_not_before"


def backoff_seconds(retry_times: int, base: float, cap: float) -> float:
    """Pause before the ``retry_times``-th retry.

    >>> [backoff_seconds(n, 2.0, 10.0) for n in (1, 2, 3, 4)]
    [2.0, 4.0, 8.0, 10.0]
    """
    return min(base * 2 ** (retry_times - 1), cap)


class BackoffRetryDownloaderMiddleware(RetryMiddleware):
    def _retry(self, request: Request, reason: str | Exception | type[Exception]) -> Request | None:
        retry = super()._retry(request, reason)
        if retry is not None:
            settings = self.crawler.settings
            pause = backoff_seconds(
                retry.meta.get("retry_times", 1),
                settings.getfloat("RETRY_BACKOFF_BASE"),
                settings.getfloat("RETRY_BACKOFF_MAX"),
            )
            retry.meta[NOT_BEFORE] = time.time() + pause
        return retry

    async def process_request(self, request: Request) -> None:
        wait = request.meta.get(NOT_BEFORE, 0) - time.time()
        if wait > 0:
            await asyncio.sleep(wait)
