"""The robots.txt middleware forgets a failed host, and old rules, after a while."""

from __future__ import annotations

import asyncio

import pytest
from scrapy.exceptions import CannotResolveHostError, IgnoreRequest
from scrapy.http import Request, Response, TextResponse
from scrapy.utils.test import get_crawler

from middlewares.robots import (
    REFRESH_AFTER,
    RETRY_FAILED_AFTER,
    RobotsTxtDownloaderMiddleware,
)
from zeroarchive.core.errors import Unreachable

HOST = "https://news.example"


class FakeEngine:
    """Answers robots.txt fetches from ``answers``, in turn, and counts them."""

    def __init__(self, answers: list[Response | Exception]) -> None:
        self.answers = answers
        self.fetched = 0

    async def download_async(self, request: Request) -> Response:
        answer = self.answers[self.fetched]
        self.fetched += 1
        if isinstance(answer, Exception):
            raise answer
        return answer


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def robots_txt(body: bytes) -> TextResponse:
    return TextResponse(f"{HOST}/robots.txt", body=body, encoding="utf-8")


def middleware(
    answers: list[Response | Exception],
) -> tuple[RobotsTxtDownloaderMiddleware, FakeEngine, FakeClock]:
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True})
    crawler.stats.open_spider()
    engine = FakeEngine(answers)
    crawler.engine = engine  # type: ignore[assignment]
    mw = RobotsTxtDownloaderMiddleware(crawler)
    clock = FakeClock()
    mw._clock = clock
    return mw, engine, clock


def ask(mw: RobotsTxtDownloaderMiddleware, path: str) -> Response | None:
    return asyncio.run(mw.process_request(Request(f"{HOST}{path}")))


def test_a_host_that_failed_is_tried_again_after_a_while() -> None:
    mw, engine, clock = middleware([CannotResolveHostError("gone"), robots_txt(b"User-agent: *\n")])
    with pytest.raises(Unreachable):
        ask(mw, "/a")
    clock.now += RETRY_FAILED_AFTER - 1
    with pytest.raises(Unreachable):
        ask(mw, "/b")
    assert engine.fetched == 1
    clock.now += 1
    assert ask(mw, "/c") is None
    assert engine.fetched == 2


def test_fetched_rules_are_fetched_anew_after_a_day() -> None:
    mw, engine, clock = middleware(
        [robots_txt(b"User-agent: *\nDisallow: /old\n"), robots_txt(b"User-agent: *\n")]
    )
    with pytest.raises(IgnoreRequest):
        ask(mw, "/old")
    clock.now += REFRESH_AFTER - 1
    with pytest.raises(IgnoreRequest):
        ask(mw, "/old")
    assert engine.fetched == 1
    clock.now += 1
    assert ask(mw, "/old") is None
    assert engine.fetched == 2
