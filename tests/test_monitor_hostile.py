"""Hostile values in every place the monitor reads one (issue 37): every route of the app
(taken from the Starlette app itself, so a new route is walked too) with each query
parameter its module reads, and every argument of the GraphQL schema (taken from the
schema), set in turn to Unicode digits, huge, negative, empty and wrong-typed values. None
is a 500, an "internal error" or a traceback; a malformed number, cursor or token is a 400
in one short log line."""

from __future__ import annotations

import ast
import base64
import inspect
import logging
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from graphql import (
    GraphQLField,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    get_named_type,
    print_ast,
)
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from tests.monitor_archive import NOW, Built
from tests.test_monitor import config
from tests.test_search_monitor import indexed
from zeroarchive.monitor import graphql_api, save_page
from zeroarchive.monitor.app import create_app
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.site_stats import SiteStatsConfig

#: Text no number, id, cursor or token may be read from without a 400.
HOSTILE_TEXT = (
    "²",  # str.isdigit says yes, int() says no
    "١٢٣",  # Arabic-Indic digits: int() reads them
    "１２",  # full-width digits: int() reads them too
    "9" * 5000,  # past int()'s 4,300 digits
    "9" * 19,  # past a signed 64-bit column
    "-1",
    "",
    " 1",
    "1.5",
    "0x10",
    "\x00",
    "\u202e1",
)
#: Cursors: ours with a bad number in them, and nonsense.
HOSTILE_CURSORS = (
    base64.b64encode("offset:²".encode()).decode(),
    base64.b64encode(b"offset:-1").decode(),
    base64.b64encode(b"offset:" + b"9" * 5000).decode(),
    base64.urlsafe_b64encode("²:²".encode()).decode(),
    base64.urlsafe_b64encode(b"-1:-1").decode(),
    base64.urlsafe_b64encode(b"1:2:3").decode(),
    "!!!",
)
#: Save tokens: a time, a dot and an HMAC, each part broken.
HOSTILE_TOKENS = ("².x", "9" * 5000, "9" * 5000 + ".x", f"{NOW}." + "²" * 64, "1." + "g" * 64)
#: JSON values of the wrong type for any GraphQL argument, and huge or negative numbers.
WRONG_TYPES: tuple[Any, ...] = (2**31, 10**30, -(2**31), 0, 1.5, True, {}, None)


@dataclass(frozen=True)
class Walked:
    client: TestClient
    built: Built


@pytest.fixture(scope="module")
def walked(module_db_url: str) -> Iterator[Walked]:
    """The monitor over the small test archive, indexed, built once per engine; saves
    start a process that does nothing."""
    built = indexed(module_db_url)
    engine = open_archive(url=module_db_url).engine
    saver = save_page.Saver(engine, True, lambda _urls, _watch: [sys.executable, "-c", "pass"])
    app = create_app(engine, config(), SiteStatsConfig(3, 3600), clock=lambda: NOW, saver=saver)
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        yield Walked(client, built)


def read_names(handler: Any) -> set[str]:
    """The query or form parameters a handler reads: the string keys of its ``.get(...)``
    calls on parameters and of its ``optional_number(params, NAME, ...)`` calls, and those
    of the functions of its module it calls (``_site(request)``), and theirs."""
    module = sys.modules[handler.__module__]
    names: set[str] = set()
    todo, done = [handler], set()
    while todo:
        function = todo.pop()
        if function in done:
            continue
        done.add(function)
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(function)))):
            if not isinstance(node, ast.Call):
                continue
            called = node.func
            if isinstance(called, ast.Name):
                helper = getattr(module, called.id, None)
                if inspect.isfunction(helper) and helper.__module__ == module.__name__:
                    todo.append(helper)
            key = None
            if isinstance(called, ast.Attribute) and called.attr == "get" and node.args:
                owner = ast.unparse(called.value)
                key = node.args[0] if "params" in owner or owner == "fields" else None
            elif isinstance(called, ast.Name) and called.id == "optional_number":
                key = node.args[1]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                names.add(key.value)
    return names


def filled(route: Route, built: Built, **hostile: str) -> str:
    """The route's path with real ids in it (the page exists), or the values given."""
    values: dict[str, Any] = {
        "site_id": built.sites["ltn"],
        "article_id": built.article_id,
        "snapshot_at": built.snapshots[0],
        "event_id": 1,
        "digest": "0" * 64,  # /media/<sha256>: an item the archive does not hold
    }
    values.update(hostile)
    return route.path_format.format(**{name: values[name] for name in route.param_convertors})


def problems(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Log records that are not one short line of a refusal: errors, tracebacks."""
    return [
        record.getMessage()[:300]
        for record in caplog.records
        if record.exc_info is not None
        or record.levelno >= logging.ERROR
        or "\n" in record.getMessage()
    ]


def one_line(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    """Clear the log, and this minute's lines of refusals (the walk used them up)."""
    caplog.clear()
    log = client.app.state.refusals  # type: ignore[attr-defined]
    log._window_start, log._logged, log._unlogged = log.clock(), 0, 0


def assert_answered(answer: Any, what: str) -> None:
    assert answer.status_code < 500 or answer.status_code == 503, (what, answer.status_code)
    assert "internal error" not in answer.text, (what, answer.text[:300])
    assert "Traceback" not in answer.text, what


def answers(client: TestClient, requests: list[tuple[str, str, dict[str, Any]]]) -> list[Any]:
    """The app's answers to ``requests`` (method, URL, the client's keyword arguments), sent
    one after another from one task in the client's own event loop. The walks send about a
    thousand: TestClient hands each between its thread and the loop's eight times, which
    cost about a third of their CPU. Sent as TestClient sends them: from its client address
    and user agent, redirects followed, an exception in the app answered as a 500."""

    async def send() -> list[Any]:
        transport = httpx2.ASGITransport(
            app=client.app, raise_app_exceptions=False, client=("testclient", 50000)
        )
        async with httpx2.AsyncClient(
            transport=transport,
            base_url=str(client.base_url),
            headers={"user-agent": "testclient"},
            follow_redirects=True,
        ) as http:
            return [await http.request(method, url, **kwargs) for method, url, kwargs in requests]

    return client.portal.call(send)  # type: ignore[no-any-return]


def test_every_route_with_hostile_parameters(
    walked: Walked, caplog: pytest.LogCaptureFixture
) -> None:
    client, built = walked.client, walked.built
    routes = [route for route in client.app.routes if isinstance(route, Route)]  # type: ignore[attr-defined]
    assert {route.path for route in routes} >= {"/search", "/articles/{article_id:id}", "/save"}
    assert any(isinstance(route, Mount) for route in client.app.routes)  # type: ignore[attr-defined]
    walked_names = set()
    gets: list[tuple[str, str, dict[str, Any]]] = []  # what, URL, the client's arguments
    for route in routes:
        path = filled(route, built)
        names = read_names(inspect.unwrap(route.endpoint))
        walked_names |= {(route.path, name) for name in names}
        gets.append((path, path, {}))
        for name in sorted(names):
            for value in HOSTILE_TEXT:
                params = {"q": "禁食", name: value}
                gets.append((f"GET {path}?{name}={value[:20]!r}", path, {"params": params}))
        for name in route.param_convertors:
            for value in ("²", "9" * 5000, "-1", "%C2%B2", "0", "1.5"):
                hostile = filled(route, built, **{name: value})
                gets.append((hostile[:80], hostile, {}))
    got = answers(client, [("GET", url, kwargs) for _, url, kwargs in gets])
    for (what, _, _), answer in zip(gets, got, strict=True):
        assert_answered(answer, what)
    # The pages that take numbers read them: the walk reached them.
    assert {
        ("/search", "page"),
        ("/articles/{article_id:id}", "a"),
        ("/events", "site"),
        ("/save", "token"),
    } <= walked_names
    assert problems(caplog) == []


def post_form(client: TestClient, token: str) -> Any:
    return client.post(
        "/save",
        content=f"token={token}&urls=https%3A%2F%2Fnews.ltn.com.tw%2Fnews%2Fx",
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Origin": "http://127.0.0.1",
            "Sec-Fetch-Site": "same-origin",
        },
    )


def test_malformed_save_tokens_are_400(walked: Walked, caplog: pytest.LogCaptureFixture) -> None:
    for token in (*HOSTILE_TOKENS, *HOSTILE_TEXT[:-3]):
        if not token:
            continue
        one_line(walked.client, caplog)
        answer = post_form(walked.client, token)
        assert answer.status_code == 400, (token[:20], answer.status_code, answer.text[:200])
        [line] = [r.getMessage() for r in caplog.records]
        assert "token:" in line and len(line) < 400 and "\n" not in line
    # A missing or stale token is not malformed: still the form's 403.
    stale = "1." + "0" * 32 + "." + "0" * 64
    assert [post_form(walked.client, t).status_code for t in ("", stale)] == [403, 403]


def test_the_reviews_requests_are_400_in_one_line(
    walked: Walked, caplog: pytest.LogCaptureFixture
) -> None:
    client = walked.client
    for path, said in (
        ("/search?q=x&page=²", "page: a whole number, not '²'"),
        ("/search?q=x&page=0", "page: 1 to 500, not 0"),
        (f"/articles/{walked.built.article_id}?a=1&b=" + "9" * 5000, "b: a whole number"),
        ("/events?site=١", "site: a whole number"),
    ):
        one_line(client, caplog)
        answer = client.get(path)
        assert answer.status_code == 400 and said in answer.text, (path, answer.text[:200])
        [record] = caplog.records
        assert said in record.getMessage() and record.exc_info is None
    after = base64.b64encode("offset:²".encode()).decode()
    one_line(client, caplog)
    answer = client.post(
        "/graphql",
        json={
            "query": 'query($a: String) { search(query: "x", after: $a) { totalCount } }',
            "variables": {"a": after},
        },
    )
    assert answer.status_code == 400
    assert answer.json()["errors"][0]["message"].startswith("after: not a cursor from this API")
    [record] = caplog.records
    assert "after: not a cursor" in record.getMessage() and record.levelno == logging.WARNING


def type_name(of_type: GraphQLInputType) -> str:
    return str(of_type)


def argument_paths(schema: GraphQLSchema) -> Iterator[tuple[str, list[tuple[str, GraphQLField]]]]:
    """Every field that takes arguments, reachable from Query or Mutation: (operation, the
    fields from the root down to it)."""
    for operation, root in (("query", schema.query_type), ("mutation", schema.mutation_type)):
        assert root is not None
        seen: set[tuple[str, str]] = set()
        stack: list[tuple[GraphQLObjectType, list[tuple[str, GraphQLField]]]] = [(root, [])]
        while stack:
            parent, path = stack.pop()
            for name, field in parent.fields.items():
                if (parent.name, name) in seen:
                    continue
                seen.add((parent.name, name))
                here = [*path, (name, field)]
                if field.args:
                    yield operation, here
                named = get_named_type(field.type)
                if isinstance(named, GraphQLObjectType):
                    stack.append((named, here))


def document(
    operation: str, path: list[tuple[str, GraphQLField]], target: str, valid: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """The query that reaches the last field of ``path`` with ``$v`` as its argument
    ``target``, every other required argument on the way filled with a valid value."""
    declared = []
    variables: dict[str, Any] = {}
    selection = ""
    for depth, (name, field) in reversed(list(enumerate(path))):
        arguments = []
        for arg_name, arg in field.args.items():
            if depth == len(path) - 1 and arg_name == target:
                declared.append(f"$v: {type_name(arg.type)}")
                arguments.append(f"{arg_name}: $v")
            elif isinstance(arg.type, GraphQLNonNull):
                variable = f"v{depth}_{arg_name}"
                declared.append(f"${variable}: {type_name(arg.type)}")
                arguments.append(f"{arg_name}: ${variable}")
                variables[variable] = valid[arg_name]
        named = get_named_type(field.type)
        inner = selection or ("" if isinstance(named, GraphQLScalarType) else "{ __typename }")
        called = f"{name}({', '.join(arguments)})" if arguments else name
        selection = f"{{ {called} {inner} }}"
    return f"{operation}({', '.join(declared)}) {selection}", variables


def hostile_values(of_type: GraphQLInputType) -> list[Any]:
    """Values to try for an argument of this type: hostile text, cursors and numbers of
    the right JSON type, then every wrong type."""
    inner = of_type.of_type if isinstance(of_type, GraphQLNonNull) else of_type
    named = get_named_type(inner)
    values: list[Any] = [*HOSTILE_TEXT, *WRONG_TYPES]
    if named.name == "String":
        values += HOSTILE_CURSORS
    if isinstance(inner, GraphQLList):
        values += [[value] for value in values[:6]]
    return values


def test_every_graphql_argument_with_hostile_values(
    walked: Walked, caplog: pytest.LogCaptureFixture
) -> None:
    client, built = walked.client, walked.built
    routes = client.app.routes  # type: ignore[attr-defined]
    endpoint = next(r for r in routes if getattr(r, "path", "") == "/graphql").endpoint
    schema: GraphQLSchema = endpoint.__self__.schema  # the app's own
    valid = {
        "siteId": str(built.sites["ltn"]),
        "articleId": str(built.article_id),
        "id": str(built.article_id),
        "query": "禁食",
        "url": ["not a page"],
    }
    reached = set()
    started = time.monotonic()
    posts: list[tuple[str, dict[str, Any]]] = []  # the query, the JSON sent
    for operation, path in argument_paths(schema):
        field_name, field = path[-1]
        for target, arg in field.args.items():
            reached.add((field_name, target))
            query, variables = document(operation, path, target, valid)
            for value in hostile_values(arg.type):
                posts.append((query, {"query": query, "variables": {**variables, "v": value}}))
    got = answers(client, [("POST", "/graphql", {"json": sent}) for _, sent in posts])
    for (query, sent), answer in zip(posts, got, strict=True):
        assert_answered(answer, f"{query} with {str(sent['variables']['v'])[:30]!r}")
        assert answer.status_code in (200, 400), (query, answer.text[:200])
    assert {("search", "after"), ("events", "after"), ("hist", "days"), ("save", "url")} <= reached
    assert problems(caplog) == []
    assert time.monotonic() - started < 120


def test_a_query_is_validated_once_and_checked_with_every_value(
    walked: Walked, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The validation of a query's text is kept (graphql_api.VALIDATED_QUERIES): sent again
    with other variables, hostile or not, it is not validated again, its variables are still
    checked each time, and an invalid query is refused each time it comes."""
    validated: list[str] = []
    real = graphql_api.validate

    def counted(schema: GraphQLSchema, document: Any, **kwargs: Any) -> Any:
        validated.append(print_ast(document))
        return real(schema, document, **kwargs)

    monkeypatch.setattr(graphql_api, "validate", counted)
    # A text of its own: the module's other tests may have validated any other.
    query = "query Kept($id: ID!) { kept: article(id: $id) { url } }"
    article_id = str(walked.built.article_id)
    sent = [{"query": query, "variables": {"id": value}} for value in (article_id, "²", [1])]
    unknown = "query Wrong { kept: article(id: 1) { noSuchField } }"
    sent += [{"query": unknown}, {"query": unknown}]
    got = answers(walked.client, [("POST", "/graphql", {"json": body}) for body in sent])
    assert [answer.status_code for answer in got] == [200, 200, 400, 400, 400], [
        answer.text[:200] for answer in got
    ]
    assert got[0].json()["data"]["kept"]["url"]
    assert got[1].json()["data"]["kept"] is None
    assert "noSuchField" in got[3].text and got[3].json() == got[4].json()
    assert len(validated) == 2, validated
