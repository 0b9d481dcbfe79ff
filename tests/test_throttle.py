"""The throttle middleware: growing pauses, Retry-After, giving up, per-request statuses."""

from __future__ import annotations

import doctest
import time

import pytest
from scrapy.http import Request, Response
from scrapy.utils.test import get_crawler

import middlewares.throttle
from middlewares.retry_backoff import NOT_BEFORE
from middlewares.throttle import CODES_META, ThrottleConfig, ThrottleDownloaderMiddleware
from tests.conftest import project_settings
from zeroarchive.core.request_meta import META_KEY

SLOT = "site-7"


def middleware(**settings: object) -> ThrottleDownloaderMiddleware:
    crawler = get_crawler(settings_dict=project_settings(**settings))
    crawler.stats.open_spider()
    return ThrottleDownloaderMiddleware.from_crawler(crawler)


def request(**meta: object) -> Request:
    return Request(
        "http://127.0.0.1:9/_api/posts/1",
        meta={META_KEY: {"site_id": 7}, "download_slot": SLOT, **meta},
    )


def test_doctests() -> None:
    results = doctest.testmod(middlewares.throttle)
    assert results.attempted > 0
    assert results.failed == 0


def test_pauses_grow_honour_retry_after_then_give_up() -> None:
    mw = middleware(THROTTLE_BASE=2.0, THROTTLE_MAX=60.0, THROTTLE_TIMES=3)
    current = request()
    pauses = []
    for retry_after in ("", "", "30"):
        headers = {"Retry-After": retry_after} if retry_after else {}
        before = time.time()
        answer = mw.process_response(current, Response(current.url, status=429, headers=headers))
        assert isinstance(answer, Request)
        assert answer.dont_filter
        pauses.append(round(answer.meta[NOT_BEFORE] - before))
        assert mw.paused_until[SLOT] >= answer.meta[NOT_BEFORE] - 0.01
        current = answer
    assert pauses == [2, 4, 30]
    last = Response(current.url, status=429)
    assert mw.process_response(current, last) is last
    assert current.meta["dont_retry"] is True
    stats = mw.crawler.stats
    assert stats.get_value("zeroarchive/throttled/http_429") == 4
    assert stats.get_value("zeroarchive/site/7/throttled/http_429") == 4
    assert stats.get_value("zeroarchive/throttled/gave_up") == 1


def test_statuses_per_request() -> None:
    mw = middleware()
    forbidden = request()
    response = Response(forbidden.url, status=403)
    assert mw.process_response(forbidden, response) is response
    dcard = request(**{CODES_META: (403, 429)})
    assert isinstance(mw.process_response(dcard, Response(dcard.url, status=403)), Request)
    ok = Response(dcard.url, status=200)
    assert mw.process_response(dcard, ok) is ok


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="THROTTLE_"):
        ThrottleConfig.from_settings(
            get_crawler(settings_dict=project_settings(THROTTLE_BASE=-1)).settings
        )
