"""What 0archive-era projects ran: a stock scrapy-redis RedisSpider with its set dupefilter
and one INSERT per item. The baseline of bench/crawl_distributed.py (not project code)."""

from __future__ import annotations

import os
import re
from typing import Any

import pymysql
from scrapy.http import Response
from scrapy_redis.spiders import RedisSpider


class StockPipeline:
    def open_spider(self, spider: Any) -> None:
        self.db = pymysql.connect(
            host="127.0.0.1", user="root", database=os.environ["STOCK_DB"], autocommit=True
        )

    def close_spider(self, spider: Any) -> None:
        self.db.close()

    def process_item(self, item: dict[str, Any], spider: Any) -> dict[str, Any]:
        with self.db.cursor() as cursor:
            cursor.execute(
                "INSERT INTO stock_snapshot (url, raw, fetched_at) VALUES (%s, %s, NOW())",
                (item["url"], item["raw"]),
            )
        return item


class StockSpider(RedisSpider):
    name = "stock"
    redis_key = "stock:start_urls"

    def parse(self, response: Response) -> Any:
        if "/list/" in response.url:
            for href in response.css("a::attr(href)").getall():
                if re.search(r"/c\d+/|/list/\d+\.html$", href):
                    yield response.follow(href, callback=self.parse)
            return
        yield {"url": response.url, "raw": response.body}
