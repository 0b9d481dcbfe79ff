"""The Sites table in Airtable, as 0archive kept it: fetching it and turning rows into sites.

``scrapy sync_sites`` (zeroarchive/commands/sync_sites.py) fetches every row through
pyairtable, maps each to a SiteSpec (validated by ``zeroarchive.sites.parse_spec``) and
plans the changes against the Site table with ``plan_sync``: add, update, reactivate,
deactivate. A site is never deleted.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Self, cast

import requests
from pyairtable import Api
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from zeroarchive.proxies import safe_proxy
from zeroarchive.sites import SiteConfigError, SiteSpec, number_from_text, parse_spec
from zeroarchive.sources import label_types, normalise_label

if TYPE_CHECKING:
    from pyairtable.api.api import TimeoutTuple
    from pyairtable.api.types import RecordDict
    from scrapy.settings import BaseSettings

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
#: The longest Retry-After a 429 may ask for, in seconds.
RETRY_AFTER_MAX = 300

AIRTABLE_SETTINGS = (
    "AIRTABLE_BASE_ID",
    "AIRTABLE_ENDPOINT_URL",
    "AIRTABLE_MAX_RETRIES",
    "AIRTABLE_PAGE_SIZE",
    "AIRTABLE_RATE_LIMIT_WAIT",
    "AIRTABLE_REQUESTS_PER_SECOND",
    "AIRTABLE_TABLE",
    "AIRTABLE_TIMEOUT",
    "AIRTABLE_TYPE_MAP",
    "AIRTABLE_VIEW",
)


class AirtableRowError(ValueError):
    """A row that cannot become a site; names the row, the site and the field."""

    def __init__(self, record_id: str, name: str | None, field: str, message: str) -> None:
        label = f"row {record_id}" + (f" ({name!r})" if name else "")
        super().__init__(f"{label}: {field}: {message}")
        self.record_id = record_id
        self.name = name
        self.field = field
        self.message = message


class AirtableError(RuntimeError):
    """The Sites table could not be read in full; the message never holds the API key."""


# --- Rows -> sites -------------------------------------------------------------------------


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


# --- Planning a sync ----------------------------------------------------------------------


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


# --- Fetching ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AirtableConfig:
    """Where the Sites table is, how to read it politely, and what its type labels mean.
    Built by ``from_settings`` (defaults in settings/base.py)."""

    api_key: str = field(repr=False)
    base_id: str
    table: str
    view: str | None
    endpoint_url: str
    timeout: float
    page_size: int
    requests_per_second: float
    rate_limit_wait: float
    max_retries: int
    #: Normalised type labels to site types: the registry's, with AIRTABLE_TYPE_MAP's.
    labels: Mapping[str, str]

    @classmethod
    def from_settings(
        cls, settings: BaseSettings, environ: Mapping[str, str] | None = None
    ) -> Self:
        """Settings, each overridden by an environment variable of the same name; the API key
        only from ``AIRTABLE_API_KEY`` in the environment. ValueError names a bad setting."""
        env = os.environ if environ is None else environ
        if settings.get("AIRTABLE_API_KEY"):
            # Settings are printed by Scrapy and kept in job logs; a key there would leak.
            raise ValueError("AIRTABLE_API_KEY must come from the environment, not a setting")

        def get(name: str) -> Any:
            value = env.get(name)
            return value if value not in (None, "") else settings.get(name)

        api_key = env.get("AIRTABLE_API_KEY", "").strip()
        if not api_key:
            raise ValueError("AIRTABLE_API_KEY is not set in the environment")
        base_id = str(get("AIRTABLE_BASE_ID") or "").strip()
        if not base_id:
            raise ValueError("AIRTABLE_BASE_ID is not set")
        table = str(get("AIRTABLE_TABLE") or "").strip()
        if not table:
            raise ValueError("AIRTABLE_TABLE is not set")
        view = str(get("AIRTABLE_VIEW") or "").strip() or None
        endpoint_url = str(get("AIRTABLE_ENDPOINT_URL") or "").rstrip("/")
        if not endpoint_url.startswith(("https://", "http://")):
            raise ValueError(f"AIRTABLE_ENDPOINT_URL must be an http(s) URL: {endpoint_url!r}")

        def number(name: str, low: float, high: float) -> float:
            raw = get(name)
            try:
                value = float(raw)
            except (TypeError, ValueError):
                raise ValueError(f"{name} must be a number, got {raw!r}") from None
            if not low <= value <= high:
                raise ValueError(f"{name} must be between {low} and {high}, got {raw!r}")
            return value

        page_size = number("AIRTABLE_PAGE_SIZE", 1, 100)
        max_retries = number("AIRTABLE_MAX_RETRIES", 0, 100)
        if page_size != int(page_size) or max_retries != int(max_retries):
            raise ValueError("AIRTABLE_PAGE_SIZE and AIRTABLE_MAX_RETRIES must be whole numbers")
        return cls(
            api_key=api_key,
            base_id=base_id,
            table=table,
            view=view,
            endpoint_url=endpoint_url,
            timeout=number("AIRTABLE_TIMEOUT", 0.1, 600),
            page_size=int(page_size),
            # Airtable allows 5 requests per second per base.
            requests_per_second=number("AIRTABLE_REQUESTS_PER_SECOND", 0.01, 5),
            rate_limit_wait=number("AIRTABLE_RATE_LIMIT_WAIT", 0, 600),
            max_retries=int(max_retries),
            labels=label_types(_type_map(get("AIRTABLE_TYPE_MAP"))),
        )


def _type_map(value: Any) -> Mapping[str, str]:
    """AIRTABLE_TYPE_MAP as a mapping: a dict setting, or JSON text (``-s`` or environment).

    >>> _type_map('{"部落格": "content_farm"}'), _type_map(None)
    ({'部落格': 'content_farm'}, {})
    """
    if value in (None, ""):
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"AIRTABLE_TYPE_MAP must be a JSON object: {exc}") from None
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError("AIRTABLE_TYPE_MAP must map labels to site types")
    return dict(value)


class RateLimitRetry(Retry):
    """urllib3 retries for 429 that wait ``rate_limit_wait`` seconds first, as Airtable asks
    ("wait 30 seconds before subsequent requests will succeed"); a Retry-After header wins
    (up to RETRY_AFTER_MAX).

    urllib3's own backoff retries the first 429 at once, which Airtable answers with another.
    """

    rate_limit_wait: float = 30.0

    def new(self, **kw: Any) -> Self:
        retry = super().new(**kw)
        retry.rate_limit_wait = self.rate_limit_wait
        return retry

    def get_backoff_time(self) -> float:
        if self.history and self.history[-1].status == 429:
            return self.rate_limit_wait
        return super().get_backoff_time()


def rate_limit_retry(max_retries: int, rate_limit_wait: float) -> RateLimitRetry:
    """Retry 429 only; an error, a 5xx or a timeout fails the sync at once (cron runs it again)."""
    retry = RateLimitRetry(
        total=max_retries,
        status=max_retries,
        connect=False,
        read=False,
        other=False,
        redirect=0,
        status_forcelist=(429,),
        allowed_methods=None,
        respect_retry_after_header=True,
        # A Retry-After of hours would hold a cron slot; the next run can try again instead.
        retry_after_max=int(max(RETRY_AFTER_MAX, rate_limit_wait)),
        raise_on_status=True,
    )
    retry.rate_limit_wait = rate_limit_wait
    return retry


def pause_before(last: float | None, now: float, interval: float) -> float:
    """Seconds to wait so requests start at least ``interval`` apart.

    >>> pause_before(None, 10.0, 0.2), pause_before(10.0, 10.05, 0.2), pause_before(10.0, 11.0, 0.2)
    (0.0, 0.15, 0.0)
    """
    if last is None:
        return 0.0
    return round(max(0.0, last + interval - now), 6)


class PacedHTTPAdapter(HTTPAdapter):
    """Starts requests at most ``requests_per_second`` a second, across threads."""

    def __init__(self, requests_per_second: float, max_retries: Retry) -> None:
        super().__init__(max_retries=max_retries)
        self._interval = 1.0 / requests_per_second
        self._last: float | None = None
        self._pace_lock = threading.Lock()

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        with self._pace_lock:
            wait = pause_before(self._last, time.monotonic(), self._interval)
            if wait:
                time.sleep(wait)
            self._last = time.monotonic()
        return super().send(request, *args, **kwargs)


def _describe_failure(exc: Exception) -> str:
    if isinstance(exc, requests.exceptions.Timeout):
        return "timed out"
    if isinstance(exc, requests.exceptions.RetryError):
        return "still rate limited (429) after every retry"
    if isinstance(exc, requests.exceptions.HTTPError) and exc.response is not None:
        extra = f" {exc.args[-1]}" if len(exc.args) > 1 else ""
        return f"HTTP {exc.response.status_code} {exc.response.reason}{extra}"
    if isinstance(exc, requests.exceptions.ConnectionError):
        return f"connection failed: {exc}"
    return f"{type(exc).__name__}: {exc}"


def fetch_records(config: AirtableConfig) -> list[RecordDict]:
    """Every row of the table (and view), all pages; AirtableError if any request fails."""
    retry = rate_limit_retry(config.max_retries, config.rate_limit_wait)
    timeout = cast("TimeoutTuple", (config.timeout, config.timeout))
    api = Api(
        config.api_key, timeout=timeout, retry_strategy=retry, endpoint_url=config.endpoint_url
    )
    adapter = PacedHTTPAdapter(config.requests_per_second, retry)
    api.session.mount("https://", adapter)
    api.session.mount("http://", adapter)
    options: dict[str, Any] = {"page_size": config.page_size}
    if config.view:
        options["view"] = config.view
    where = f"table {config.table!r}" + (f" view {config.view!r}" if config.view else "")
    try:
        return api.table(config.base_id, config.table).all(**options)
    except Exception as exc:
        # Any failure, however odd (a bad JSON page, a proxy's HTML), must stop the sync.
        key = config.api_key
        message = _describe_failure(exc).replace(key, "***") if key else _describe_failure(exc)
        raise AirtableError(f"cannot read Airtable {where}: {message}") from None
    finally:
        api.session.close()
