"""``/graphql``: a POST of ``application/json`` from this monitor's own origin (or from no
browser at all), checked against the limits before graphql-core sees it, validated and run
in a thread under a deadline. Every refusal is one log line; no traceback, no raw input."""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from graphql import (
    DocumentNode,
    GraphQLError,
    GraphQLSchema,
    execute_sync,
    parse,
    validate,
)
from graphql.error import GraphQLSyntaxError
from graphql.pyutils import Undefined
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from zeroarchive.monitor import deadline
from zeroarchive.monitor.config import Limits
from zeroarchive.monitor.guard import BodyTooLarge
from zeroarchive.monitor.params import BadInput
from zeroarchive.monitor.query_limits import ListSizes, QueryRefused, check_query
from zeroarchive.monitor.refusals import Refusals, escaped

logger = logging.getLogger(__name__)
#: Tokens a query may hold per field it may select (``hist(days: 3)`` is 6).
TOKENS_PER_FIELD = 10
MAX_VALIDATION_ERRORS = 10
#: Queries whose validation is kept, by their text: validation depends on the schema and
#: the query alone, not on its variables or operation, and the monitor's pages send the
#: same few queries again and again. Validating took three quarters of a small query's
#: CPU (py-spy over the ~1,000 queries of tests/test_monitor_hostile.py).
VALIDATED_QUERIES = 256
OUT_OF_TIME = "the request ran out of time (MONITOR_REQUEST_SECONDS)"


def _deadline_middleware(next_: Callable[..., Any], root: Any, info: Any, **args: Any) -> Any:
    deadline.check()
    # An explicit null for an argument with a default (``first: null``) means the default:
    # the resolvers, typed as the schema's defaults are, never see a None there.
    field = info.parent_type.fields.get(info.field_name)  # none for __typename
    for name, value in args.items():
        default = field.args[name].default_value if field is not None else None
        if value is None and default not in (None, Undefined):
            args[name] = default
    return next_(root, info, **args)


def _message(error: GraphQLError) -> str:
    original = error.original_error
    if original is None or isinstance(original, GraphQLError | BadInput):
        return error.message
    if isinstance(original, deadline.TimeUp) or deadline.expired():
        return OUT_OF_TIME
    return "internal error (see the monitor's log)"


def _formatted(error: GraphQLError) -> dict[str, Any]:
    formatted: dict[str, Any] = {"message": _message(error)}
    if error.path:
        formatted["path"] = error.path
    return formatted


class GraphQLEndpoint:
    def __init__(
        self,
        schema: GraphQLSchema,
        context: Callable[[Scope], Any],
        sizes: Callable[[], ListSizes],
        limits: Limits,
        refusals: Refusals,
        stopping: threading.Event,
        running: threading.BoundedSemaphore,
    ) -> None:
        self.schema = schema
        self.context = context
        self.sizes = sizes
        self.limits = limits
        self.refusals = refusals
        self.stopping = stopping
        #: MONITOR_WORKERS, shared with the pages (pages.timed).
        self.running = running
        self._validated: OrderedDict[str, list[GraphQLError]] = OrderedDict()
        self._validated_lock = threading.Lock()

    async def handle(self, request: Request) -> Response:
        scope, refuse = request.scope, self.refusals.graphql
        if request.method != "POST":
            return refuse(scope, 405, "/graphql answers a POST of application/json", Allow="POST")
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            return refuse(scope, 415, "/graphql takes Content-Type: application/json only")
        origin = request.headers.get("origin")
        host = request.headers.get("host", "").lower()
        if origin is not None and urlsplit(origin).netloc.lower() != host:
            return refuse(scope, 403, f"a request from another origin ({origin})")
        if request.headers.get("sec-fetch-site") in ("cross-site", "same-site"):
            return refuse(scope, 403, "a request from another site")
        body = bytearray()
        try:
            async for chunk in request.stream():
                body += chunk
        except BodyTooLarge as exc:
            return refuse(scope, 413, str(exc))
        try:
            data = json.loads(body)
            if isinstance(data, dict) and isinstance(data.get("variables"), str):
                data["variables"] = json.loads(data["variables"])
        except (ValueError, RecursionError):
            return refuse(scope, 400, "the body is not JSON (or nested too deep)")
        if not isinstance(data, dict) or not isinstance(data.get("query"), str):
            return refuse(scope, 400, 'the body must be {"query": "...", "variables": {...}}')
        variables = data.get("variables")
        operation = data.get("operationName")
        if variables is not None and not isinstance(variables, dict):
            return refuse(scope, 400, "variables must be an object")
        if operation is not None and not isinstance(operation, str):
            return refuse(scope, 400, "operationName must be a string")
        query: str = data["query"]
        if len(query) > self.limits.query_chars:
            return refuse(scope, 413, f"the query is over {self.limits.query_chars} characters")
        try:
            document = parse(
                query, no_location=True, max_tokens=TOKENS_PER_FIELD * self.limits.query.max_fields
            )
            check_query(document, self.schema, variables, self.limits.query, self.sizes())
        except GraphQLSyntaxError as exc:
            return refuse(scope, 400, exc.message)
        except RecursionError:
            return refuse(scope, 400, "the query is nested too deep")
        except QueryRefused as exc:
            return refuse(scope, 400, f"the query is over a limit: {exc}")
        if not self.running.acquire(blocking=False):
            return refuse(scope, 503, f"busy: {self.limits.workers} requests are running")

        def work() -> tuple[int, dict[str, Any], bool]:
            try:
                return self._run(query, document, variables, operation, self.context(scope))
            except RecursionError:
                return 400, {"errors": [{"message": "the query is nested too deep"}]}, False
            finally:
                self.running.release()

        try:
            status, answer, timed_out = await deadline.run_with_deadline(
                work, self.limits.request_seconds, self.stopping
            )
        except deadline.TimeUp:
            status, answer, timed_out = 503, {}, True
        if timed_out:
            return refuse(scope, 503, OUT_OF_TIME)
        if "errors" in answer:
            first = answer["errors"][0]["message"]
            self.refusals.note(
                scope,
                status,
                f"{len(answer['errors'])} error(s), the first: {first}",
                "answered with errors",
            )
        return JSONResponse(answer, status_code=status)

    def _validation_errors(self, query: str, document: DocumentNode) -> list[GraphQLError]:
        """graphql-core's validation of ``document`` (parsed from ``query``), kept for the
        last VALIDATED_QUERIES texts."""
        with self._validated_lock:
            errors = self._validated.get(query)
            if errors is not None:
                self._validated.move_to_end(query)
                return errors
        errors = validate(self.schema, document, max_errors=MAX_VALIDATION_ERRORS)
        with self._validated_lock:
            self._validated[query] = errors
            while len(self._validated) > VALIDATED_QUERIES:
                self._validated.popitem(last=False)
        return errors

    def _run(
        self,
        query: str,
        document: DocumentNode,
        variables: dict[str, Any] | None,
        operation: str | None,
        context: Any,
    ) -> tuple[int, dict[str, Any], bool]:
        """(status, answer, out of time) of a checked query, in the request's thread."""
        errors = self._validation_errors(query, document)
        if errors:
            return 400, {"errors": [_formatted(error) for error in errors]}, False
        result = execute_sync(
            self.schema,
            document,
            context_value=context,
            variable_values=variables,
            operation_name=operation,
            middleware=[_deadline_middleware],
        )
        if deadline.expired():
            return 503, {}, True
        answer: dict[str, Any] = {"data": result.data}
        if result.errors:
            answer["errors"] = [_formatted(error) for error in result.errors]
            unexpected = [
                error.original_error
                for error in result.errors
                if error.original_error is not None
                and not isinstance(error.original_error, GraphQLError | BadInput)
            ]
            if unexpected:
                logger.error(
                    "Monitor: /graphql met %d unexpected error(s), the first: %s: %s",
                    len(unexpected),
                    type(unexpected[0]).__name__,
                    escaped(str(unexpected[0]), 200),
                )
        return (200 if result.data is not None else 400), answer, False


def route(endpoint: GraphQLEndpoint) -> Route:
    # GET is routed here too, so that it is refused with one log line, not silently.
    return Route("/graphql", endpoint.handle, methods=["GET", "POST"])
