"""What every archive request carries in its meta, read by spiders, middlewares and the
scheduler alike: the site it belongs to and what kind of page it asks for."""

from __future__ import annotations

from typing import Any

from scrapy.http import Request

META_KEY = "zeroarchive"
# List pages go ahead of snapshots in every queue: one list page leads to many articles,
# and a walk goes one page at a time, so a list page that waited behind every snapshot
# queued before it would set the pace of discovery (and of the whole crawl).
LIST_PRIORITY = 10


def site_id_of(request: Request) -> int | None:
    """The id of the site a request belongs to, None for a request of no site."""
    site_id = request.meta.get(META_KEY, {}).get("site_id")
    return None if site_id is None else int(site_id)


def archive_meta(request: Request) -> dict[str, Any]:
    """The request's archive fields (site id, kind, article ...); empty for other requests."""
    meta: dict[str, Any] = request.meta.get(META_KEY, {})
    return meta
