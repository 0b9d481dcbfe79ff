"""Opening Redis: the one way the shared queue, the Bloom dupefilter and the commands
connect, always with timeouts (a redis that stops answering must not hang a worker)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.settings import BaseSettings

from zeroarchive.core.environment import from_environment
from zeroarchive.core.services import ServiceUnavailable, reason

if TYPE_CHECKING:
    import redis


def redis_url_from(settings: BaseSettings | None) -> str | None:
    """``REDIS_URL`` from the environment, else from settings; None means embedded mode."""
    return from_environment("REDIS_URL", settings)


def connect(settings: BaseSettings, url: str | None = None) -> redis.Redis:
    """A client of ``url`` (default: REDIS_URL) with the ``ZEROARCHIVE_REDIS_*`` timeouts.

    Each call makes a client with its own connections (the Bloom filter keeps its own, so
    a queue pop never waits behind a filter check).
    """
    import redis  # here, not at the top: an embedded crawl never loads the client

    url = url or redis_url_from(settings)
    if url is None:
        raise ValueError("REDIS_URL is not set (environment or setting)")
    timeout = settings.getfloat("ZEROARCHIVE_REDIS_TIMEOUT")
    connect_timeout = settings.getfloat("ZEROARCHIVE_REDIS_CONNECT_TIMEOUT")
    if timeout <= 0 or connect_timeout <= 0:
        # 0 would make redis-py's sockets non-blocking, not patient.
        raise ValueError("ZEROARCHIVE_REDIS_TIMEOUT and _CONNECT_TIMEOUT must be positive")
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=connect_timeout)


def reachable(settings: BaseSettings, url: str | None = None) -> redis.Redis:
    """A client of ``url`` (default: REDIS_URL) that has just answered a PING; a Redis
    that does not answer raises ServiceUnavailable (one line, password hidden)."""
    import redis

    url = url or redis_url_from(settings)
    server = connect(settings, url)
    try:
        server.ping()
    except redis.RedisError as exc:
        server.close()
        raise ServiceUnavailable("redis", url or "", reason(exc)) from exc
    return server
