"""The known soft-404 probe: now and then each site is asked for a made-up URL, and its
answer, when it is a 200 page, is kept as the site's own "not found" page; an article
that answers with a page like it is a soft 404 (``signs.is_soft_404``).

A site that answers the probe with a 404 (most do) has no soft 404s to find: its row
keeps the status, and nothing is compared.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from urllib.parse import urlsplit

from sqlalchemy import delete, select
from sqlalchemy.engine import Engine

from zeroarchive.events.signs import PROBE_TEXT_CHARS, Probe, page_text
from zeroarchive.sites.record import Site
from zeroarchive.storage.schema import site_probe

#: How often a site is probed again (seconds): sites redesign their error pages.
PROBE_EVERY = 7 * 24 * 3600
#: The made-up path's prefix, so a site's logs tell what the request was.
PROBE_PREFIX = "zeroarchive-probe-"


def probe_url(site_record: Site) -> str:
    """A URL on the site that names no page: the site's host, a random path.

    >>> from zeroarchive.sites.record import SiteConfig
    >>> url = probe_url(Site(1, "s", "https://s.tw/news/list", "news", SiteConfig()))
    >>> url.startswith("https://s.tw/zeroarchive-probe-") and url.endswith(".html")
    True
    """
    parts = urlsplit(site_record.url)
    return f"{parts.scheme}://{parts.netloc}/{PROBE_PREFIX}{secrets.token_hex(6)}.html"


def probes_due(engine: Engine, site_ids: Iterable[int], now: int) -> set[int]:
    """The sites among these not probed within ``PROBE_EVERY``."""
    ids = sorted(set(site_ids))
    if not ids:
        return set()
    with engine.connect() as conn:
        fresh = set(
            conn.execute(
                select(site_probe.c.site_id).where(
                    site_probe.c.site_id.in_(ids), site_probe.c.probed_at > now - PROBE_EVERY
                )
            ).scalars()
        )
    return set(ids) - fresh


def record_probe(
    engine: Engine, site_id: int, at: int, status: int, body: bytes, encoding: str
) -> Probe | None:
    """Keep a site's answer to the probe; the Probe to compare with when it was a 200."""
    text = page_text(body, encoding) if status == 200 else None
    with engine.begin() as conn:
        conn.execute(delete(site_probe).where(site_probe.c.site_id == site_id))
        conn.execute(
            site_probe.insert().values(
                site_id=site_id,
                probed_at=at,
                status=status,
                title=text.title[:512] if text else "",
                text=text.text[:PROBE_TEXT_CHARS] if text else "",
            )
        )
    return Probe(site_id, at, text.title[:512], text.text[:PROBE_TEXT_CHARS]) if text else None


def load_probes(engine: Engine, site_ids: Iterable[int]) -> dict[int, Probe]:
    """The sites' soft-404 pages (only sites whose probe answered 200)."""
    ids = sorted(set(site_ids))
    if not ids:
        return {}
    with engine.connect() as conn:
        rows = conn.execute(
            select(site_probe).where(site_probe.c.site_id.in_(ids), site_probe.c.status == 200)
        ).all()
    return {row.site_id: Probe(row.site_id, row.probed_at, row.title, row.text) for row in rows}
