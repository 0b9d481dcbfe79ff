"""Reading 0archive's Sites table from Airtable: where it is (``AIRTABLE_*`` settings), and
every row of it, politely (paced requests, 429s waited out) and with errors that never
hold the API key. Rows become sites in zeroarchive/sites/airtable_rows.py."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self, cast

import requests
from pyairtable import Api
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from zeroarchive.core.progress import Progress
from zeroarchive.sources import label_types

if TYPE_CHECKING:
    from pyairtable.api.api import TimeoutTuple
    from pyairtable.api.types import RecordDict
    from scrapy.settings import BaseSettings

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


class AirtableError(RuntimeError):
    """The Sites table could not be read in full; the message never holds the API key."""


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
            labels=label_types(type_map(get("AIRTABLE_TYPE_MAP"))),
        )


def type_map(value: Any) -> Mapping[str, str]:
    """AIRTABLE_TYPE_MAP as a mapping: a dict setting, or JSON text (``-s`` or environment).

    >>> type_map('{"部落格": "content_farm"}'), type_map(None)
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


def fetch_records(config: AirtableConfig, progress: Progress | None = None) -> list[RecordDict]:
    """Every row of the table (and view), all pages; AirtableError if any request fails.
    ``progress``, when given, counts the rows as their pages come."""
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
    records: list[RecordDict] = []
    try:
        for page in api.table(config.base_id, config.table).iterate(**options):
            records.extend(page)
            if progress is not None:
                progress.advance(len(page))
        return records
    except Exception as exc:
        # Any failure, however odd (a bad JSON page, a proxy's HTML), must stop the sync.
        key = config.api_key
        message = _describe_failure(exc).replace(key, "***") if key else _describe_failure(exc)
        raise AirtableError(f"cannot read Airtable {where}: {message}") from None
    finally:
        api.session.close()
