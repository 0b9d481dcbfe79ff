"""The rows of 0archive's Sites table in Airtable, turned into sites: each approved row's
fields mapped to a SiteSpec and validated by ``zeroarchive.sites.record.parse_spec``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from zeroarchive.sites.record import SiteConfigError, SiteSpec, number_from_text, parse_spec
from zeroarchive.sources import label_types, normalise_label

if TYPE_CHECKING:
    from pyairtable.api.types import RecordDict

#: The Airtable field names (0archive's Sites table), matched case-insensitively; other
#: fields are ignored.
ROW_FIELDS = (
    "name",
    "url",
    "type",
    "approved",
    "is_active",
    "article",
    "following",
    "depth",
    "delay",
    "ua",
    "render",
    "selenium",
    "login_url",
)
#: The fields that become the site config; other config keys of a site (cookies, robots,
#: url_rules, schedule, set with load_sites) are kept when the row changes.
CONFIG_FIELDS = ("article", "following", "depth", "delay", "ua", "render", "selenium", "login_url")
#: An empty type archives the site as news: a wrong schedule can be fixed later, a site
#: skipped for a missing type loses snapshots that can never be taken again.
DEFAULT_TYPE = "news"


class AirtableRowError(ValueError):
    """A row that cannot become a site; names the row, the site and the field."""

    def __init__(self, record_id: str, name: str | None, field: str, message: str) -> None:
        label = f"row {record_id}" + (f" ({name!r})" if name else "")
        super().__init__(f"{label}: {field}: {message}")
        self.record_id = record_id
        self.name = name
        self.field = field
        self.message = message


def type_label(value: Any) -> str:
    """The row's type label as written: a single select's text (0archive), or the one
    choice of a multiple select.

    >>> type_label(" 官媒 "), type_label(["Ptt 看板"]), type_label(None)
    ('官媒', 'Ptt 看板', 'news')
    >>> type_label(["PTT", "Dcard"])
    Traceback (most recent call last):
    ...
    ValueError: one type, not ['PTT', 'Dcard']
    """
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if value is None or value == "" or value == []:
        return DEFAULT_TYPE
    if not isinstance(value, str):
        raise ValueError(f"one type, not {value!r}")
    return value.strip()


def _patterns(value: Any) -> Any:
    """A long-text field may hold one regex a line as well as 0archive's "; " joins.

    >>> _patterns("/news/\\n/story/; /video/")
    ['/news/', '/story/', '/video/']
    >>> _patterns("/news/; /story/")
    '/news/; /story/'
    """
    if not isinstance(value, str) or "\n" not in value:
        return value
    return [part for line in value.splitlines() for part in line.split("; ") if part.strip()]


def row_fields(record: RecordDict) -> dict[str, Any]:
    """The row's known fields by lower-case name, empty values dropped (Airtable omits them).

    >>> row_fields({"id": "rec1", "createdTime": "", "fields": {"Name": "cna", "Notes": "x"}})
    {'name': 'cna'}
    """
    fields: dict[str, Any] = {}
    for key, value in record["fields"].items():
        name = key.strip().lower()
        if name in ROW_FIELDS and name not in fields and value not in (None, "", []):
            fields[name] = value.strip() if isinstance(value, str) else value
    return fields


def is_approved(record: RecordDict) -> bool:
    """Whether the row's ``approved`` checkbox is ticked; AirtableRowError if it is no checkbox.

    >>> is_approved({"id": "rec1", "createdTime": "", "fields": {"approved": True}})
    True
    >>> is_approved({"id": "rec1", "createdTime": "", "fields": {}})
    False
    """
    value = row_fields(record).get("approved", False)
    if not isinstance(value, bool):
        name = row_fields(record).get("name")
        raise AirtableRowError(
            record["id"], name if isinstance(name, str) else None, "approved", "must be a checkbox"
        )
    return value


def row_spec(
    record: RecordDict,
    kept_config: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    active_field: bool = False,
) -> SiteSpec:
    """The SiteSpec of an approved row, validated by parse_spec; AirtableRowError if invalid.

    ``kept_config`` holds the config keys Airtable does not manage (robots, cookies, ...) of
    the site the row already has; ``labels`` maps type labels to site types (default: the
    registry's); with ``active_field`` the table has an ``is_active`` checkbox (0archive's),
    and a row without it ticked is a site kept but not crawled. The type label itself is
    kept as the site's category.
    """
    record_id = record["id"]
    fields = row_fields(record)
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise AirtableRowError(record_id, None, "name", "missing or empty")
    known = labels if labels is not None else label_types()
    try:
        label = type_label(fields.get("type"))
    except ValueError as exc:
        raise AirtableRowError(record_id, name, "type", str(exc)) from exc
    if normalise_label(label) not in known:
        why = f"unknown type {label!r} (known: {', '.join(sorted(known))}; see AIRTABLE_TYPE_MAP)"
        raise AirtableRowError(record_id, name, "type", why)
    config = {k: v for k, v in (kept_config or {}).items() if k not in CONFIG_FIELDS}
    for key in CONFIG_FIELDS:
        if key in fields:
            value = fields[key]
            if key in ("article", "following"):
                value = _patterns(value)
            elif key in ("depth", "delay"):
                value = number_from_text(value)
            config["render" if key == "selenium" else key] = value
    active = fields.get("is_active", False) if active_field else True
    raw = {
        "name": name,
        "url": fields.get("url"),
        "type": label,
        "category": label,
        "config": config,
        "active": active,
        "airtable_id": record_id,
    }
    try:
        return parse_spec(raw, known)
    except SiteConfigError as exc:
        raise AirtableRowError(record_id, name, exc.field, exc.message) from exc
