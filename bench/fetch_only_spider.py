"""The limit the archive is measured against: plain Scrapy fetching the same article URLs
and keeping nothing. Run by bench/crawl_embedded.py with `scrapy runspider`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import scrapy


class FetchOnlySpider(scrapy.Spider):
    name = "fetch_only"

    def __init__(self, urls_file: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = Path(urls_file).read_text().split()

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.urls:
            yield scrapy.Request(url, callback=self.parse, dont_filter=True)

    def parse(self, response: scrapy.http.Response) -> None:
        self.crawler.stats.inc_value("fetch_only/pages")
