"""Plain Scrapy on the many polite sites of bench/many_sites.py: each site's list page,
then its articles, each site in a download slot of its own (run with `scrapy runspider`,
DOWNLOAD_DELAY and SCHEDULER_PRIORITY_QUEUE set by the bench)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import scrapy


class PoliteSpider(scrapy.Spider):
    name = "polite"

    def __init__(self, lists_file: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lists = Path(lists_file).read_text().split()

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for number, url in enumerate(self.lists):
            yield scrapy.Request(url, callback=self.parse, meta={"download_slot": f"s{number}"})

    def parse(self, response: scrapy.http.Response) -> Iterator[scrapy.Request]:
        self.crawler.stats.inc_value("polite/lists")
        for href in response.css("a::attr(href)").getall():
            yield response.follow(
                href,
                callback=self.parse_article,
                meta={"download_slot": response.meta["download_slot"]},
            )

    def parse_article(self, response: scrapy.http.Response) -> None:
        self.crawler.stats.inc_value("polite/articles")
