"""A crawl's start-up detail at DEBUG unless asked for, the stats dump on one line
(zeroarchive/core/quiet_log.py)."""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Iterator

import pytest
from scrapy.settings import Settings

from zeroarchive.core.quiet_log import START_UP, asked_for, quiet_start_up

LOGGERS = {name for name, _ in START_UP} | {"scrapy.statscollectors"}


def _remove_filters() -> None:
    for name in LOGGERS:
        logger = logging.getLogger(name)
        for found in list(logger.filters):
            if type(found).__module__ == "zeroarchive.core.quiet_log":
                logger.removeFilter(found)


@pytest.fixture(autouse=True)
def _no_filters_left() -> Iterator[None]:
    # Before too: a crawl run earlier in this test process may have left its filters.
    _remove_filters()
    yield
    _remove_filters()


def _log_start_up(caplog: pytest.LogCaptureFixture) -> dict[str, int]:
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("alembic.runtime.migration").info("Running upgrade %s", "0001")
        logging.getLogger("scrapy.middleware").info("Enabled extensions:\n[...]")
        logging.getLogger("scrapy.crawler").info("Overridden settings:\n{...}")
        logging.getLogger("scrapy.crawler").info("Received SIGINT, shutting down gracefully")
        logging.getLogger("scrapy.statscollectors").info(
            "Dumping Scrapy stats:\n{'a': 1,\n 'b': 2}"
        )
        logging.getLogger("scrapy.core.engine").warning("Spider opened late")
    return {
        record.getMessage().split(":")[0].split(",")[0]: record.levelno for record in caplog.records
    }


def test_start_up_detail_is_debug_by_default(caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings({"LOG_LEVEL": "INFO"}, priority="project")
    assert quiet_start_up(settings) is True
    levels = _log_start_up(caplog)
    assert levels == {
        "Running upgrade 0001": logging.DEBUG,
        "Enabled extensions": logging.DEBUG,
        "Overridden settings": logging.DEBUG,
        "Received SIGINT": logging.INFO,  # what a user does is still said
        "Dumping Scrapy stats": logging.INFO,
        "Spider opened late": logging.WARNING,
    }
    stats = [r.getMessage() for r in caplog.records if r.name == "scrapy.statscollectors"]
    assert stats == ["Dumping Scrapy stats: {'a': 1, 'b': 2}"]


@pytest.mark.parametrize(
    "asked",
    [
        {"LOG_LEVEL": ("INFO", "cmdline")},
        {"ZEROARCHIVE_LOG_START_UP": (True, "project")},
        {"LOG_FILE": ("crawl.log", "cmdline")},  # scrapyd's jobs
    ],
)
def test_a_level_given_or_the_setting_shows_it_at_info(
    caplog: pytest.LogCaptureFixture, asked: dict[str, tuple[object, str]]
) -> None:
    settings = Settings({"LOG_LEVEL": "INFO", "ZEROARCHIVE_LOG_START_UP": False}, "project")
    for name, (value, priority) in asked.items():
        settings.set(name, value, priority=priority)
    assert quiet_start_up(settings) is False
    levels = _log_start_up(caplog)
    assert levels["Running upgrade 0001"] == levels["Enabled extensions"] == logging.INFO
    assert any("\n" in r.getMessage() for r in caplog.records if r.name.endswith("collectors"))


@pytest.mark.parametrize(("environ", "shown"), [({"LOG_LEVEL": "INFO"}, True), ({}, False)])
def test_a_level_in_production_s_environment_asks_for_it(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], shown: bool
) -> None:
    monkeypatch.setenv("ZEROARCHIVE_DB_URL", "sqlite://")
    monkeypatch.delenv("LOG_LEVEL", raising=False)
    monkeypatch.delenv("ZEROARCHIVE_LOG_START_UP", raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delitem(sys.modules, "settings.prod", raising=False)
    prod = importlib.import_module("settings.prod")
    settings = Settings({k: v for k, v in vars(prod).items() if k.isupper()}, "project")
    assert asked_for(settings) is shown


@pytest.mark.parametrize("shown", [logging.INFO, logging.DEBUG])
def test_scrapys_two_debug_records_a_page_are_made_only_where_debug_is_shown(
    monkeypatch: pytest.MonkeyPatch, shown: int
) -> None:
    """ "Crawled (200)" for each answer and "Scraped from" for each item: made when a handler
    shows DEBUG (-L DEBUG), not at all otherwise (the crawl's handler dropped them)."""
    from scrapy import Spider
    from scrapy.http import HtmlResponse, Request
    from scrapy.utils.test import get_crawler

    from zeroarchive.crawl import log_formatter

    monkeypatch.setattr(log_formatter, "lowest_shown_level", lambda: shown)
    formatter = log_formatter.QuietLogFormatter()
    request = Request("https://a.example/1")
    response = HtmlResponse(request.url, body=b"<p>1</p>", request=request)
    spider = Spider.from_crawler(get_crawler(Spider), "s")
    crawled = formatter.crawled(request, response, spider)
    scraped = formatter.scraped({"page": 1}, response, spider)
    if shown == logging.DEBUG:
        assert crawled is not None and crawled["level"] == logging.DEBUG
        assert scraped is not None and "Scraped from" in scraped["msg"]
    else:
        assert crawled is None and scraped is None
    # Other records are Scrapy's as ever (a dropped item is a warning).
    assert formatter.dropped({"page": 1}, ValueError("x"), response, spider) is not None
