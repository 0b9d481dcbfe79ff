"""The servers a run depends on (the database, Redis) being away: one clear line for a
command, patient waiting for a worker, growing pauses for everything that retries."""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy.exc import DBAPIError, OperationalError

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: Exit status of a command that could not reach a server it needs.
EXIT_UNREACHABLE = 3
#: The pauses between tries while a server is away: the first, doubled after each failed
#: try up to the longest. The settings ZEROARCHIVE_RETRY_PAUSE_SECONDS and
#: ZEROARCHIVE_RETRY_PAUSE_MAX_SECONDS (these defaults) set them for a process
#: (``set_pauses``): a worker, `scrapy schedule`, a crawl's snapshot writer.
FIRST_PAUSE = 1.0
MAX_PAUSE = 60.0
_pauses = [FIRST_PAUSE, MAX_PAUSE]


class ServiceUnavailable(Exception):
    """A server the run needs did not answer; the message is one line, password hidden."""

    def __init__(self, service: str, url: str, why: str) -> None:
        self.service = service
        self.url = safe_url(url)
        self.why = why
        super().__init__(f"cannot reach {service} at {self.url}: {why}")


def safe_url(url: str) -> str:
    """The URL with its password hidden, for logs and messages.

    >>> safe_url("mysql+pymysql://arch:s3cret@db:3306/archive")
    'mysql+pymysql://arch:***@db:3306/archive'
    >>> safe_url("redis://:s3cret@cache:6379/0")
    'redis://:***@cache:6379/0'
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user_info, _, host = parts.netloc.rpartition("@")
    user = user_info.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def is_unreachable(exc: BaseException) -> bool:
    """Errors a later try may not see: a server away (refused, lost, timed out) or, from a
    database, a lock it gave up on (deadlock, lock wait timeout); not a wrong query."""
    import redis  # here, not at the top: an embedded crawl never loads the client

    if isinstance(exc, redis.ConnectionError | redis.TimeoutError | OperationalError):
        return True
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


def reason(exc: BaseException) -> str:
    """The cause in one line: the driver's own message, without SQLAlchemy's SQL and
    background links."""
    cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    text = " ".join(str(cause).split()) or type(cause).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def set_pauses(first: float, longest: float) -> None:
    """This process's pauses between tries while a server is away (both in seconds, the
    first at most the longest)."""
    if not 0 < first <= longest:
        raise ValueError(
            "ZEROARCHIVE_RETRY_PAUSE_SECONDS must be above 0 and at most "
            f"ZEROARCHIVE_RETRY_PAUSE_MAX_SECONDS, got {first} and {longest}"
        )
    _pauses[:] = [first, longest]


def set_pauses_from(settings: Any) -> None:
    """``set_pauses`` from a run's settings (a crawler a test built without the project's
    settings pauses as the defaults say)."""
    set_pauses(
        settings.getfloat("ZEROARCHIVE_RETRY_PAUSE_SECONDS", FIRST_PAUSE),
        settings.getfloat("ZEROARCHIVE_RETRY_PAUSE_MAX_SECONDS", MAX_PAUSE),
    )


def pauses() -> tuple[float, float]:
    """This process's (first, longest) pause."""
    return _pauses[0], _pauses[1]


def first_pause() -> float:
    return _pauses[0]


def next_pause(pause: float) -> float:
    """The pause after ``pause``: twice as long, up to the longest.

    >>> next_pause(1.0), next_pause(40.0)
    (2.0, 60.0)
    """
    return min(pause * 2, _pauses[1])


def should_wait() -> bool:
    """Whether a crawl waits for its servers instead of exiting: under scrapyd (which
    sets SCRAPY_JOB and restarts nothing) or when ZEROARCHIVE_WAIT_FOR_SERVICES says so."""
    wanted = os.environ.get("ZEROARCHIVE_WAIT_FOR_SERVICES", "").strip().lower()
    if wanted in ("1", "true", "yes"):
        return True
    if wanted in ("0", "false", "no"):
        return False
    return bool(os.environ.get("SCRAPY_JOB"))


def wait_for(check: Callable[[], T], stop: threading.Event | None = None) -> T:
    """``check()``, tried again with growing pauses while it raises ServiceUnavailable,
    logging each failed try; the last error is raised if ``stop`` is set meanwhile."""
    pause = first_pause()
    while True:
        try:
            return check()
        except ServiceUnavailable as exc:
            logger.warning("Waiting: %s; next try in %g s", exc, pause)
            if stop is not None and stop.wait(pause):
                raise
            if stop is None:
                time.sleep(pause)
            pause = next_pause(pause)


def one_line_errors(run: Callable[..., None]) -> Callable[..., None]:
    """For a command's ``run``: a server that is away ends the command with one line on
    stderr and exit status 3, not a traceback."""

    @functools.wraps(run)
    def wrapper(command: Any, *args: Any, **kwargs: Any) -> None:
        try:
            run(command, *args, **kwargs)
        except ServiceUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            command.exitcode = EXIT_UNREACHABLE
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            import redis

            service = "redis" if isinstance(exc, redis.RedisError) else "the database"
            print(f"error: {service} stopped answering: {reason(exc)}", file=sys.stderr)
            command.exitcode = EXIT_UNREACHABLE

    return wrapper
