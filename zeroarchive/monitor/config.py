"""The monitor's settings, typed and checked: where it listens, how long its site stats
may be reused, and who may read it (secrets only from the environment)."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

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
        if bool(self.username) != bool(self.password):
            raise ValueError(f"basic auth needs both {USERNAME_ENV} and {PASSWORD_ENV}")
        if not is_loopback(self.host) and not self.requires_auth:
            raise ValueError(
                f"refusing to serve {self.host} without auth: set {TOKEN_ENV}, or "
                f"{USERNAME_ENV} and {PASSWORD_ENV}, in the environment (or bind 127.0.0.1)"
            )

    @property
    def requires_auth(self) -> bool:
        return bool(self.token or (self.username and self.password))
