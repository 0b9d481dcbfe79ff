"""Distributed mode: everything that lives in redis. The connection (``redis_client``),
the shared request queue (``queue``) and the workers' scheduler over it (``scheduler``),
the workers' heartbeats (``heartbeat``), each walk's pages not answered yet (``walks``),
the Bloom filter's sizing (``bloom``) and bits (``redis_bloom``), the dupefilter
(``dupefilter``), and the add-on that switches them on when ``REDIS_URL`` is set
(``addon``).

May import: ``core`` only: this package knows requests and redis, not sites or the
database. Deciding what goes into the queue is ``crawl.dispatch``'s job.
Never imported by: ``core``, ``sources``, ``sites``, ``storage``.
"""

from __future__ import annotations

import warnings
from typing import Any


def __getattr__(name: str) -> Any:
    # zeroarchive.distributed.DistributedAddon was a module's class until 2026-11; settings
    # that name it keep working for one release.
    if name == "DistributedAddon":
        warnings.warn(
            "zeroarchive.distributed.DistributedAddon moved to "
            "zeroarchive.distributed.addon.DistributedAddon",
            DeprecationWarning,
            stacklevel=2,
        )
        from zeroarchive.distributed.addon import DistributedAddon

        return DistributedAddon
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
