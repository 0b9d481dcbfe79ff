"""Distributed mode: with ``REDIS_URL`` set (environment or setting), every spider takes its
requests from a shared redis queue and de-duplicates through the Bloom filter in redis.

Enabled as a Scrapy add-on (settings/base.py ADDONS), so no spider has code of its own
for it. Without ``REDIS_URL`` nothing changes.
"""

from __future__ import annotations

from scrapy.settings import BaseSettings

from zeroarchive.distributed.redis_client import redis_url_from


class DistributedAddon:
    def update_settings(self, settings: BaseSettings) -> None:
        url = redis_url_from(settings)
        if url is None:
            return
        settings.set("SCHEDULER", "zeroarchive.distributed.scheduler.RedisScheduler", "addon")
        settings.set(
            "DUPEFILTER_CLASS", settings.get("ZEROARCHIVE_DISTRIBUTED_DUPEFILTER"), "addon"
        )
