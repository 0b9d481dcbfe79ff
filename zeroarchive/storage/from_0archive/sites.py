"""0archive's sites as the archive's: mapped exactly as ``scrapy sync_sites`` maps the
Airtable rows they came from (0archive's Site table is its copy of those rows), and kept,
inactive, when no spider can crawl them, so their articles and snapshots keep a home."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from zeroarchive.core.urls import UrlRejected, UrlRules, canonicalize_url
from zeroarchive.sites.airtable_rows import CONFIG_FIELDS, AirtableRowError, row_spec
from zeroarchive.sites.record import DEFAULT_TYPE, SiteConfigError, SiteSpec, parse_config
from zeroarchive.sources import normalise_label
from zeroarchive.storage.from_0archive.ids import SITE, known_ids, remember
from zeroarchive.storage.from_0archive.source import OldSite
from zeroarchive.storage.schema import site


@dataclass(frozen=True)
class MappedSite:
    old: OldSite
    spec: SiteSpec
    #: Why the site is kept inactive (no spider can crawl it as 0archive had it), if so.
    problem: str | None = None

    @property
    def url_rules(self) -> UrlRules:
        return site_rules(self.spec.config, self.spec.name)


def site_rules(config: Mapping[str, Any], name: str) -> UrlRules:
    try:
        return parse_config(config, name).url_rules
    except SiteConfigError:
        return UrlRules()


def map_site(old: OldSite, labels: Mapping[str, str]) -> MappedSite:
    """The archive's site for a 0archive Site row: its fields read as the Airtable row
    they were synced from (``row_spec``, the mapping of ``sync_sites``)."""
    broken: str | None = None
    try:
        config = json.loads(old.config or "{}")
    except json.JSONDecodeError as exc:
        config, broken = {}, f"config: not valid JSON: {exc}"
    else:
        broken = None if isinstance(config, dict) else "config: not a JSON object"
        config = config if isinstance(config, dict) else {}
    fields = {
        "name": old.name,
        "url": old.url,
        "type": old.type,
        "approved": True,
        "is_active": old.is_active,
        **{key: value for key, value in config.items() if key in CONFIG_FIELDS},
    }
    record: Any = {"id": old.airtable_id or "", "createdTime": "", "fields": fields}
    try:
        spec = row_spec(record, config, labels, active_field=True)
    except AirtableRowError as exc:
        return MappedSite(old, _kept_inactive(old, config, labels), f"{exc.field}: {exc.message}")
    if broken:
        return MappedSite(old, replace(spec, is_active=False), broken)
    return MappedSite(old, replace(spec, airtable_id=old.airtable_id))


def _kept_inactive(old: OldSite, config: dict[str, Any], labels: Mapping[str, str]) -> SiteSpec:
    """A site no spider can crawl as it is: its type as far as it is known, its config if
    valid, never active."""
    try:
        parse_config(config, old.name)
    except SiteConfigError:
        config = {}
    try:
        url = canonicalize_url(old.url.strip())
    except UrlRejected:
        url = old.url.strip()[:2048]
    return SiteSpec(
        name=old.name or f"0archive site {old.site_id}",
        url=url,
        type=labels.get(normalise_label(old.type), DEFAULT_TYPE),
        config=config,
        is_active=False,
        airtable_id=old.airtable_id,
        category=old.type or None,
    )


@dataclass(frozen=True)
class SiteWrite:
    #: 0archive site id -> archive site id, for every mapped site (old or new).
    ids: dict[int, int]
    added: int
    linked: int
    already: int


def write_sites(
    conn: Connection,
    source: str,
    mapped: Sequence[MappedSite],
    now: int,
    say: Callable[[str], None],
) -> SiteWrite:
    """Add the sites not imported yet, in the caller's transaction. A site the archive
    already has under the same Airtable id (synced before the import) is used as it is."""
    ids = known_ids(conn, source, SITE, [m.old.site_id for m in mapped])
    already = len(ids)
    added = linked = 0
    for item in mapped:
        if item.old.site_id in ids:
            continue
        spec = item.spec
        existing = None
        if spec.airtable_id:
            existing = conn.execute(
                select(site.c.site_id).where(site.c.airtable_id == spec.airtable_id)
            ).scalar()
        if existing is not None:
            new_id = int(existing)
            linked += 1
            label = f"site {item.old.site_id} ({item.old.name})"
            say(f"{label}: the archive has it already as #{new_id}")
        else:
            result = conn.execute(
                site.insert().values(
                    name=spec.name[:255],
                    url=spec.url[:2048],
                    type=spec.type,
                    category=spec.category,
                    config=spec.config_json(),
                    is_active=spec.is_active,
                    airtable_id=spec.airtable_id,
                    created_at=now,
                    updated_at=now,
                    last_crawl_at=item.old.last_crawl_at or 0,
                    next_crawl_at=0,
                )
            )
            assert result.inserted_primary_key is not None
            new_id = int(result.inserted_primary_key[0])
            added += 1
        remember(conn, source, SITE, {item.old.site_id: new_id})
        ids[item.old.site_id] = new_id
    return SiteWrite(ids, added, linked, already)
