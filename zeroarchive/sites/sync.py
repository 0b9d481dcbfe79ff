"""Planning a sync: the changes (add, update, reactivate, deactivate) that make the Site
table follow the Airtable rows. A site is never deleted. ``scrapy sync_sites`` fetches the
rows (zeroarchive/sites/airtable.py) and applies the plan."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from zeroarchive.sites.airtable_rows import AirtableRowError, is_approved, row_fields, row_spec
from zeroarchive.sites.proxies import safe_proxy
from zeroarchive.sites.record import SiteSpec
from zeroarchive.sources import label_types

if TYPE_CHECKING:
    from pyairtable.api.types import RecordDict


@dataclass(frozen=True)
class Change:
    """One thing a sync does to a site. ``site_id`` is None for a site still to be added."""

    action: str  # add | update | reactivate | deactivate
    site_id: int | None
    spec: SiteSpec
    details: tuple[str, ...] = ()

    def describe(self) -> str:
        site_id = "new" if self.site_id is None else f"#{self.site_id}"
        kind = self.spec.type
        if self.spec.category and self.spec.category != kind:
            kind += f", {self.spec.category}"
        text = f"{self.action:10} {site_id:>5} {self.spec.name} ({kind}) {self.spec.url}"
        text += f" [{self.spec.airtable_id}]"
        return text + (": " + "; ".join(self.details) if self.details else "")


@dataclass(frozen=True)
class SyncPlan:
    changes: tuple[Change, ...]
    errors: tuple[AirtableRowError, ...]
    unchanged: int
    #: Unapproved rows with no active site: nothing to do.
    not_approved: int
    #: Rows synced with something a person should know (a label the URL contradicts).
    warnings: tuple[str, ...] = ()

    def count(self, action: str) -> int:
        return sum(1 for change in self.changes if change.action == action)

    def summary(self) -> str:
        counts = ", ".join(
            f"{self.count(action)} {past}"
            for action, past in (
                ("add", "added"),
                ("update", "updated"),
                ("reactivate", "reactivated"),
                ("deactivate", "deactivated"),
            )
        )
        return (
            f"{counts}, {self.unchanged} unchanged, {self.not_approved} not approved, "
            f"{len(self.errors)} invalid, {len(self.warnings)} warning(s)"
        )


def _differences(old: SiteSpec, new: SiteSpec) -> tuple[str, ...]:
    """What an update changes, for people reading the sync's output.

    >>> a = SiteSpec("cna", "https://a/", "news", {"depth": 2}, False, None)
    >>> _differences(a, SiteSpec("cna", "https://a/", "gov", {"depth": 3}, True, "rec1"))
    ('type news -> gov', 'depth 2 -> 3', 'active no -> yes', 'linked to Airtable row rec1')
    """
    out = []
    for attr in ("name", "url", "type", "category"):
        if getattr(old, attr) != getattr(new, attr):
            out.append(f"{attr} {getattr(old, attr)} -> {getattr(new, attr)}")
    for key in sorted({*old.config, *new.config}):
        if old.config.get(key) != new.config.get(key):
            before = _shown(key, old.config.get(key, "(unset)"))
            after = _shown(key, new.config.get(key, "(unset)"))
            out.append(f"{key} {before} -> {after}")
    if old.is_active != new.is_active:
        flags = ("no", "yes")
        out.append(f"active {flags[old.is_active]} -> {flags[new.is_active]}")
    if old.airtable_id != new.airtable_id:
        out.append(f"linked to Airtable row {new.airtable_id}")
    return tuple(out)


def _shown(key: str, value: Any) -> Any:
    """A config value as the sync prints it: a proxy's credentials never.

    >>> _shown("proxy", ["http://u:p@10.0.0.5:3128"]), _shown("depth", 3)
    (['http://***@10.0.0.5:3128'], 3)
    """
    if key != "proxy":
        return value
    if isinstance(value, list):
        return [safe_proxy(str(v)) for v in value]
    return safe_proxy(str(value))


def _same(old: SiteSpec, new: SiteSpec) -> bool:
    return old == new and old.config_json() == new.config_json()


def plan_sync(
    records: Sequence[RecordDict],
    sites: Iterable[tuple[int, SiteSpec]],
    labels: Mapping[str, str] | None = None,
) -> SyncPlan:
    """The changes that make the Site table follow the Airtable rows.

    ``sites`` is every stored site as (id, spec). A synced site is known by its Airtable
    record id; names need not be unique (one operator runs several content farms under one
    name). An approved row whose record id is unknown adopts the one site of its name that
    no row owns (a site loaded from a file before Airtable was used), if there is exactly
    one. Unapproved rows and rows gone from Airtable deactivate their sites; invalid rows
    are reported and leave their sites as they are. ``labels``: type labels to site types.
    """
    known = labels if labels is not None else label_types()
    # Airtable leaves unticked checkboxes out of a row: is_active counts when any row has it.
    active_field = any("is_active" in row_fields(record) for record in records)
    by_record: dict[str, tuple[int, SiteSpec]] = {}
    unowned: dict[str, list[tuple[int, SiteSpec]]] = {}
    for site_id, spec in sites:
        if spec.airtable_id:
            by_record[spec.airtable_id] = (site_id, spec)
        else:
            unowned.setdefault(spec.name, []).append((site_id, spec))
    changes: list[Change] = []
    errors: list[AirtableRowError] = []
    warnings: list[str] = []
    unchanged = not_approved = 0
    seen: set[str] = set()
    adopted: set[int] = set()

    def deactivate(record_id: str, why: str, *, row: bool) -> None:
        nonlocal not_approved
        if record_id not in by_record or not by_record[record_id][1].is_active:
            not_approved += row
            return
        site_id, old = by_record[record_id]
        changes.append(Change("deactivate", site_id, replace(old, is_active=False), (why,)))

    for record in records:
        record_id = record["id"]
        seen.add(record_id)
        try:
            if not is_approved(record):
                deactivate(record_id, "not approved", row=True)
                continue
            current = by_record.get(record_id)
            if current is None:
                namesakes = unowned.get(str(row_fields(record).get("name")), [])
                if len(namesakes) == 1 and namesakes[0][0] not in adopted:
                    current = namesakes[0]
                    adopted.add(current[0])
            spec = row_spec(record, current[1].config if current else None, known, active_field)
        except AirtableRowError as exc:
            errors.append(exc)
            continue
        warnings.extend(f"row {record_id}: {warning}" for warning in spec.warnings)
        if current is None:
            changes.append(Change("add", None, spec))
        elif _same(current[1], spec):
            unchanged += 1
        else:
            old = current[1]
            action = "update"
            if old.is_active != spec.is_active:
                action = "reactivate" if spec.is_active else "deactivate"
            changes.append(Change(action, current[0], spec, _differences(old, spec)))
    for record_id in sorted(set(by_record) - seen):
        deactivate(record_id, "gone from Airtable", row=False)
    return SyncPlan(tuple(changes), tuple(errors), unchanged, not_approved, tuple(warnings))
