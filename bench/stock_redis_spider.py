"""What 0archive-era projects ran: a stock scrapy-redis RedisSpider with its set dupefilter
and one INSERT per item. The baseline of bench/crawl_distributed.py (not project code).

With ``STOCK_MEDIA`` set, an article's images and stylesheets (``<img src>``, ``og:image``,
``<link rel=stylesheet>``) are fetched too and each stored as a row: fewer kinds than the
archive keeps (no srcset, lazy attributes or what stylesheets name), so less work."""

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
        if not os.environ.get("STOCK_MEDIA") or not hasattr(response, "css"):
            return
        items = response.css(
            "img::attr(src), meta[property='og:image']::attr(content),"
            " link[rel=stylesheet]::attr(href)"
        ).getall()
        for url in dict.fromkeys(items):
            if not url.startswith("data:"):
                yield response.follow(url, callback=self.item)

    def item(self, response: Response) -> Any:
        yield {"url": response.url, "raw": response.body}
