"""A local Airtable Web API for tests: one base, one table, on 127.0.0.1.

It speaks the REST shapes of https://airtable.com/developers/web/api/list-records:
``GET /v0/{baseId}/{tableIdOrName}?view=&pageSize=&offset=`` (and the POST
``.../listRecords`` form pyairtable falls back to for long URLs) answers
``{"records": [{"id", "createdTime", "fields"}], "offset"?}``, at most ``pageSize``
(<= 100) records a page; ``offset`` names a server-side iterator over the rows as they
were on the first page. Empty fields and unticked checkboxes are left out of ``fields``,
as Airtable does. A wrong token gets 401 AUTHENTICATION_REQUIRED, an unknown base or
table 403 INVALID_PERMISSIONS_OR_MODEL_NOT_FOUND, an unknown view 422 VIEW_NAME_NOT_FOUND.

Tests script failures with ``fail_next(429, None, 500, ...)`` (one status per coming
request, None = answer normally) and ``slow_seconds`` (every answer waits that long first).
"""

from __future__ import annotations

import json
import secrets
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

MAX_PAGE_SIZE = 100
CREATED_TIME = "2024-03-01T08:00:00.000Z"
View = Callable[[Mapping[str, Any]], bool]

_ERRORS: dict[int, Any] = {
    401: {"error": {"type": "AUTHENTICATION_REQUIRED", "message": "Authentication required"}},
    403: {
        "error": {
            "type": "INVALID_PERMISSIONS_OR_MODEL_NOT_FOUND",
            "message": "Invalid permissions, or the requested model was not found.",
        }
    },
    429: {
        "errors": [
            {
                "error": "RATE_LIMIT_REACHED",
                "message": "Rate limit exceeded. Please try again later",
            }
        ]
    },
    500: {"error": {"type": "SERVER_ERROR", "message": "Server error"}},
    503: {"error": {"type": "SERVICE_UNAVAILABLE", "message": "Service unavailable"}},
}


@dataclass(frozen=True)
class Seen:
    """One request the server answered."""

    method: str
    path: str
    params: dict[str, str]
    status: int
    authorization: str | None


def airtable_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The fields as Airtable returns them: empty values and unticked checkboxes left out."""
    return {k: v for k, v in fields.items() if v not in (None, "", [], False)}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        params = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        self._answer("GET", parts.path, params)

    def do_POST(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            body = None
        params = {k: str(v) for k, v in body.items()} if isinstance(body, dict) else {}
        self._answer("POST", parts.path, params)

    def _answer(self, method: str, path: str, params: dict[str, str]) -> None:
        fake = self.server.fake
        status, payload = fake.respond(method, path, params, self.headers.get("Authorization"))
        if fake.slow_seconds and fake.stopping.wait(fake.slow_seconds):
            return
        body = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except ConnectionError:
            pass  # a client that timed out has gone

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeAirtable

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeAirtable:
    """``with FakeAirtable(api_key=...) as fake:`` then point AIRTABLE_ENDPOINT_URL at
    ``fake.endpoint_url``. Rows are edited live with ``add``/``update``/``remove``."""

    def __init__(
        self,
        *,
        api_key: str,
        base_id: str = "appZeroArchive01",
        table: str = "Sites",
        table_id: str = "tblSites00000001",
        views: Mapping[str, View] | None = None,
    ) -> None:
        self.api_key = api_key
        self.base_id = base_id
        self.table = table
        self.table_id = table_id
        self.views: dict[str, View] = dict(views or {"Grid view": lambda fields: True})
        self.records: dict[str, dict[str, Any]] = {}
        self.seen: list[Seen] = []
        self.slow_seconds = 0.0
        self.stopping = threading.Event()
        self._failures: deque[int | None] = deque()
        self._iterators: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- the table ------------------------------------------------------------------------

    def add(self, **fields: Any) -> str:
        record_id = "rec" + secrets.token_hex(7)
        with self._lock:
            self.records[record_id] = dict(fields)
        return record_id

    def update(self, record_id: str, **fields: Any) -> None:
        with self._lock:
            self.records[record_id].update(fields)

    def remove(self, record_id: str) -> None:
        with self._lock:
            del self.records[record_id]

    def fail_next(self, *statuses: int | None) -> None:
        """Answer the coming requests with these statuses, one each (None: normally)."""
        with self._lock:
            self._failures.extend(statuses)

    def list_requests(self) -> list[Seen]:
        with self._lock:
            return list(self.seen)

    # --- the API --------------------------------------------------------------------------

    def respond(
        self, method: str, path: str, params: dict[str, str], authorization: str | None
    ) -> tuple[int, Any]:
        with self._lock:
            status, payload = self._respond(method, path, params, authorization)
            self.seen.append(Seen(method, path, params, status, authorization))
        return status, payload

    def _respond(
        self, method: str, path: str, params: dict[str, str], authorization: str | None
    ) -> tuple[int, Any]:
        if authorization != f"Bearer {self.api_key}":
            return 401, _ERRORS[401]
        status = self._failures.popleft() if self._failures else None
        if status is not None:
            return status, _ERRORS.get(status, {"error": {"type": "ERROR", "message": "error"}})
        parts = [unquote(part) for part in path.split("/")]
        if method == "POST":
            if parts[-1:] != ["listRecords"]:
                return 404, {"error": "NOT_FOUND"}
            parts = parts[:-1]
        if (
            len(parts) != 4
            or parts[:3] != ["", "v0", self.base_id]
            or parts[3] not in (self.table, self.table_id)
        ):
            return 403, _ERRORS[403]
        return self._list(params)

    def _list(self, params: dict[str, str]) -> tuple[int, Any]:
        try:
            page_size = int(params.get("pageSize", MAX_PAGE_SIZE))
        except ValueError:
            page_size = 0
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            message = f"Invalid pageSize {params.get('pageSize')!r}"
            return 422, {"error": {"type": "INVALID_REQUEST_UNKNOWN", "message": message}}
        offset = params.get("offset")
        if offset is None:
            view_name = params.get("view")
            if view_name is not None and view_name not in self.views:
                message = f"Could not find view {view_name!r} in table {self.table!r}"
                return 422, {"error": {"type": "VIEW_NAME_NOT_FOUND", "message": message}}
            shown = self.views[view_name] if view_name is not None else lambda fields: True
            ids = [rid for rid, fields in self.records.items() if shown(fields)]
            iterator = "itr" + secrets.token_hex(7)
            self._iterators[iterator] = ids
            start = 0
        else:
            iterator, _, start_id = offset.partition("/")
            ids = self._iterators.get(iterator, [])
            if start_id not in ids:
                message = "The list records iterator is not available"
                return 422, {
                    "error": {"type": "LIST_RECORDS_ITERATOR_NOT_AVAILABLE", "message": message}
                }
            start = ids.index(start_id)
        page_ids = ids[start : start + page_size]
        records = [
            {
                "id": rid,
                "createdTime": CREATED_TIME,
                "fields": airtable_fields(self.records.get(rid, {})),
            }
            for rid in page_ids
        ]
        payload: dict[str, Any] = {"records": records}
        if start + page_size < len(ids):
            payload["offset"] = f"{iterator}/{ids[start + page_size]}"
        return 200, payload

    # --- the server -----------------------------------------------------------------------

    @property
    def endpoint_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("FakeAirtable is not running")
        return f"http://127.0.0.1:{self._httpd.server_port}"

    def __enter__(self) -> FakeAirtable:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.05,), name="FakeAirtable", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        self._httpd = None
        self._thread = None
