"""The dupefilter's path until 2026-11 (``DUPEFILTER_CLASS`` and the README named it): kept
for one release. It is now ``zeroarchive.distributed.dupefilter.BloomDupeFilter``."""

from __future__ import annotations

import warnings

from zeroarchive.distributed.dupefilter import BloomConfig, BloomDupeFilter
from zeroarchive.distributed.redis_bloom import RedisBloom

__all__ = ["BloomConfig", "BloomDupeFilter", "RedisBloom"]

warnings.warn(
    "zeroarchive.bloom_dupefilter moved to zeroarchive.distributed.dupefilter",
    DeprecationWarning,
    stacklevel=2,
)
