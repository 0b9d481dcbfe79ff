"""The monitor's settings, typed and checked: where it listens, how long its site stats
may be reused, and who may read it (secrets only from the environment)."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zeroarchive.core.targets import allow_private_targets
from zeroarchive.monitor.clients import Network, trusted_networks
from zeroarchive.monitor.query_limits import QueryLimits

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

TOKEN_ENV = "MONITOR_TOKEN"
USERNAME_ENV = "MONITOR_USERNAME"
PASSWORD_ENV = "MONITOR_PASSWORD"


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach ``host``.

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("localhost")
    (True, True, True)
    >>> is_loopback("0.0.0.0"), is_loopback("192.168.1.5"), is_loopback("monitor.example")
    (False, False, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


#: The names a browser on this machine uses for a loopback monitor.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("0.0.0.0", "::", "")


def host_name(host_header: str) -> str:
    """The name of a ``Host`` header, without its port, lower case.

    >>> host_name("LocalHost:8080"), host_name("[::1]:8080"), host_name("10.0.0.5")
    ('localhost', '::1', '10.0.0.5')
    """
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


@dataclass(frozen=True)
class Limits:
    """What one request may cost the monitor (the docs' "Limits" names each setting; their
    defaults are in settings/base.py only)."""

    #: Bytes of a request's body (413 beyond).
    body_bytes: int
    #: Characters of a GraphQL query (413 beyond); its tokens at most 10 per field allowed.
    query_chars: int
    query: QueryLimits
    #: Seconds a request may run; its work is stopped then (503).
    request_seconds: float
    #: GraphQL requests running at once; more are answered 503 at once.
    workers: int
    #: Connections uvicorn serves at once (503 beyond).
    connections: int
    #: Seconds a stopping server waits for running requests.
    shutdown_seconds: int
    #: Refused requests logged per minute (the rest counted).
    log_refusals_per_minute: int

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Limits:
        return cls(
            body_bytes=settings.getint("MONITOR_MAX_BODY_BYTES"),
            query_chars=settings.getint("MONITOR_MAX_QUERY_CHARS"),
            query=QueryLimits(
                max_depth=settings.getint("MONITOR_MAX_DEPTH"),
                max_aliases=settings.getint("MONITOR_MAX_ALIASES"),
                max_fields=settings.getint("MONITOR_MAX_FIELDS"),
                max_repeats=settings.getint("MONITOR_MAX_REPEATS"),
                max_cost=settings.getint("MONITOR_MAX_COST"),
                max_fragments=settings.getint("MONITOR_MAX_FRAGMENTS"),
            ),
            request_seconds=settings.getfloat("MONITOR_REQUEST_SECONDS"),
            workers=settings.getint("MONITOR_WORKERS"),
            connections=settings.getint("MONITOR_MAX_CONNECTIONS"),
            shutdown_seconds=settings.getint("MONITOR_SHUTDOWN_SECONDS"),
            log_refusals_per_minute=settings.getint("MONITOR_LOG_REFUSALS_PER_MINUTE"),
        )

    def check(self) -> None:
        for name, value in {
            "MONITOR_MAX_BODY_BYTES": self.body_bytes,
            "MONITOR_MAX_QUERY_CHARS": self.query_chars,
            "MONITOR_MAX_DEPTH": self.query.max_depth,
            "MONITOR_MAX_ALIASES": self.query.max_aliases + 1,
            "MONITOR_MAX_FIELDS": self.query.max_fields,
            "MONITOR_MAX_REPEATS": self.query.max_repeats,
            "MONITOR_MAX_COST": self.query.max_cost,
            "MONITOR_MAX_FRAGMENTS": self.query.max_fragments + 1,
            "MONITOR_REQUEST_SECONDS": self.request_seconds,
            "MONITOR_WORKERS": self.workers,
            "MONITOR_MAX_CONNECTIONS": self.connections,
            "MONITOR_SHUTDOWN_SECONDS": self.shutdown_seconds + 1,
            "MONITOR_LOG_REFUSALS_PER_MINUTE": self.log_refusals_per_minute + 1,
        }.items():
            if value <= 0:
                raise ValueError(f"{name} must be positive")


@dataclass(frozen=True)
class MonitorConfig:
    host: str
    port: int
    #: Seconds the dashboard's site stats are reused before they are counted again.
    refresh_seconds: int
    #: Days of new articles the small charts draw.
    chart_days: int
    #: Articles a site page lists.
    site_articles: int
    token: str | None
    username: str | None
    password: str | None
    limits: Limits
    #: Host names clients may use besides the loopback names (``Host`` header, no port).
    allowed_hosts: tuple[str, ...] = ()
    #: Proxies whose ``X-Forwarded-For`` and ``Forwarded`` headers are believed.
    trusted_proxies: tuple[Network, ...] = ()
    #: Pages one client may save in an hour (save page now).
    save_pages_per_hour: int = 60
    #: Saves may reach loopback, private and link-local hosts (ZEROARCHIVE_ALLOW_PRIVATE_TARGETS).
    allow_private_targets: bool = False
    #: Where the media items' bytes are (ZEROARCHIVE_MEDIA_DIR; empty: the database).
    media_dir: str = ""

    @classmethod
    def from_settings(
        cls, settings: BaseSettings, host: str | None = None, port: int | None = None
    ) -> MonitorConfig:
        """The config of settings and the environment; ValueError says what is wrong,
        including a non-loopback address without a token or basic auth."""
        config = cls(
            host=host or settings.get("MONITOR_HOST"),
            port=port if port is not None else settings.getint("MONITOR_PORT"),
            refresh_seconds=settings.getint("MONITOR_REFRESH_SECONDS"),
            chart_days=settings.getint("MONITOR_CHART_DAYS"),
            site_articles=settings.getint("MONITOR_SITE_ARTICLES"),
            token=os.environ.get(TOKEN_ENV) or None,
            username=os.environ.get(USERNAME_ENV) or None,
            password=os.environ.get(PASSWORD_ENV) or None,
            # Compared as a request's Host is: without a port, lower case.
            allowed_hosts=tuple(
                host_name(name) for name in settings.getlist("MONITOR_ALLOWED_HOSTS")
            ),
            limits=Limits.from_settings(settings),
            trusted_proxies=trusted_networks(settings.getlist("MONITOR_TRUSTED_PROXIES")),
            save_pages_per_hour=settings.getint("MONITOR_SAVE_PAGES_PER_HOUR"),
            allow_private_targets=allow_private_targets(settings),
            media_dir=settings.get("ZEROARCHIVE_MEDIA_DIR") or "",
        )
        config.check()
        return config

    def check(self) -> None:
        if not 0 < self.port < 65536:
            raise ValueError(f"port must be 1-65535, got {self.port}")
        if self.refresh_seconds < 1:
            raise ValueError("MONITOR_REFRESH_SECONDS must be at least 1")
        if not 1 <= self.chart_days <= 400:
            raise ValueError("MONITOR_CHART_DAYS must be 1-400")
        if self.site_articles < 1:
            raise ValueError("MONITOR_SITE_ARTICLES must be at least 1")
        if self.save_pages_per_hour < 0:
            raise ValueError("MONITOR_SAVE_PAGES_PER_HOUR must be 0 (saving off) or more")
        if bool(self.username) != bool(self.password):
            raise ValueError(f"basic auth needs both {USERNAME_ENV} and {PASSWORD_ENV}")
        if not is_loopback(self.host) and not self.requires_auth:
            raise ValueError(
                f"refusing to serve {self.host} without auth: set {TOKEN_ENV}, or "
                f"{USERNAME_ENV} and {PASSWORD_ENV}, in the environment (or bind 127.0.0.1)"
            )
        if self.host in WILDCARDS and not self.allowed_hosts:
            raise ValueError(
                f"listening on every address ({self.host or '*'}) needs MONITOR_ALLOWED_HOSTS: "
                "the host names clients use to reach the monitor"
            )
        self.limits.check()

    def host_allowed(self, host_header: str) -> bool:
        """Whether a request's ``Host`` names this monitor (a DNS-rebinding page's does not)."""
        name = host_name(host_header)
        if name in LOOPBACK_NAMES or name in self.allowed_hosts:
            return True
        if self.host not in WILDCARDS and name == self.host.lower():
            return True
        return is_loopback(name) and is_loopback(self.host)

    @property
    def requires_auth(self) -> bool:
        return bool(self.token or (self.username and self.password))
