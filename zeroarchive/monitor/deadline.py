"""A time limit that really stops a request's work: the work runs in a thread of its own
with a deadline; the database statements it runs are cut at the deadline (SQLite: a
progress handler that interrupts the statement; MariaDB: ``SET STATEMENT
max_statement_time``), GraphQL resolvers check it before they start, and a server told
to stop makes every deadline pass at once (on MariaDB it also kills the statements still
running: ``stop_running``). The threads are daemons: a stopping server
never waits for one. The thread's deadline itself is ``zeroarchive.core.deadline``, which
work below the monitor (snippets, diffs) checks in its loops."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.engine import Engine

from zeroarchive.core.deadline import TimeUp, check, deadline, expired
from zeroarchive.core.deadline import until as deadline_until

T = TypeVar("T")
# SQLite calls the progress handler every this many virtual machine steps (~1 ms).
PROGRESS_STEPS = 10_000
#: Per engine, the server thread ids of MariaDB connections running a statement under a
#: deadline (``stop_running`` kills them when the server stops).
_RUNNING: dict[int, set[int]] = {}
_RUNNING_LOCK = threading.Lock()
__all__ = [
    "TimeUp",
    "bounded",
    "check",
    "deadline",
    "expired",
    "guard_engine",
    "run_in_daemon",
    "run_with_deadline",
    "stop_running",
]


def _progress() -> int:
    return 1 if expired() else 0


def guard_engine(engine: Engine) -> None:
    """Make the engine's statements obey the deadline of the thread that runs them (and
    nothing else: without a deadline a statement runs as before)."""
    if getattr(engine, "_zeroarchive_deadline", False):
        return
    engine._zeroarchive_deadline = True  # type: ignore[attr-defined]
    sqlite = engine.dialect.name == "sqlite"

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def _before(
        _conn: Any, cursor: Any, statement: str, parameters: Any, _context: Any, _many: bool
    ) -> tuple[str, Any]:
        until = deadline_until()
        if until is None:
            return statement, parameters
        check()
        if sqlite:
            cursor.connection.set_progress_handler(_progress, PROGRESS_STEPS)
        else:
            left = max(until - time.monotonic(), 0.001)
            # Known once the first connection has asked the server what it is.
            mariadb = bool(getattr(engine.dialect, "is_mariadb", False))
            statement = bounded(statement, left, mariadb)
            thread_id = cursor.connection.thread_id()
            with _RUNNING_LOCK:
                _RUNNING.setdefault(id(engine), set()).add(thread_id)
            if _context is not None:
                _context.info_thread_id = thread_id
        return statement, parameters

    if sqlite:
        return

    def _done(context: Any) -> None:
        thread_id = getattr(context, "info_thread_id", None)
        if thread_id is not None:
            with _RUNNING_LOCK:
                _RUNNING.get(id(engine), set()).discard(thread_id)

    event.listen(engine, "after_cursor_execute", lambda *args: _done(args[4]))
    event.listen(engine, "handle_error", lambda error: _done(error.execution_context))


def stop_running(engine: Engine) -> None:
    """Kill the statements still running under a deadline (a server told to stop): a
    statement already running when its deadline passes would run on to its own limit."""
    with _RUNNING_LOCK:
        running = sorted(_RUNNING.pop(id(engine), set()))
    if not running or engine.dialect.name == "sqlite":
        return
    with engine.connect() as conn:
        for thread_id in running:
            with contextlib.suppress(Exception):  # it may have ended meanwhile
                conn.exec_driver_sql(f"KILL QUERY {int(thread_id)}")


def bounded(statement: str, seconds: float, mariadb: bool) -> str:
    """``statement`` told to stop after ``seconds`` when it is a read: MariaDB's SET
    STATEMENT for a SELECT or a WITH (recursive or not), MySQL's optimizer hint for a
    SELECT (MySQL has none for a statement that starts with WITH).

    >>> bounded("  with x as (select 1) select * from x", 1.5, True)[:47]
    'SET STATEMENT max_statement_time=1.500 FOR   wi'
    >>> bounded("SELECT a FROM t", 0.25, False)
    'SELECT /*+ MAX_EXECUTION_TIME(250) */ a FROM t'
    >>> bounded("UPDATE t SET a = 1", 1.0, True)
    'UPDATE t SET a = 1'
    """
    head = statement.lstrip()[:6].upper()
    if mariadb and (head == "SELECT" or head.startswith("WITH")):
        return f"SET STATEMENT max_statement_time={seconds:.3f} FOR {statement}"
    if not mariadb and head == "SELECT":
        start = len(statement) - len(statement.lstrip()) + 6
        milliseconds = max(int(seconds * 1000), 1)
        return f"{statement[:start]} /*+ MAX_EXECUTION_TIME({milliseconds}) */{statement[start:]}"
    return statement


def _in_daemon(
    work: Callable[[], T], seconds: float | None, stopping: threading.Event
) -> asyncio.Future[T]:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            if seconds is None:
                result = work()
            else:
                with deadline(seconds, stopping):
                    result = work()
        except Exception as exc:  # handed to the awaiting request, not lost
            error = exc
        with contextlib.suppress(RuntimeError):  # a closed loop: the server has stopped
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=run, name="monitor-work", daemon=True).start()
    return future


async def run_with_deadline(work: Callable[[], T], seconds: float, stopping: threading.Event) -> T:
    """``work()`` in a daemon thread under a deadline; TimeUp after ``seconds`` even if the
    thread has not noticed yet (it stops at its next statement or resolver)."""
    future = _in_daemon(work, seconds, stopping)
    try:
        return await asyncio.wait_for(asyncio.shield(future), seconds + 0.5)
    except TimeoutError:
        raise TimeUp("the request ran out of time") from None


async def run_in_daemon(work: Callable[[], T]) -> T:
    """``work()`` in a daemon thread with no deadline (the background count of site stats):
    a stopping server does not wait for it."""
    return await _in_daemon(work, None, threading.Event())
