"""Proxies and logged-in sessions, as sites configure them: which proxy a site's requests
go through (its own ``proxy``, one URL or a list used in turn, else the shared pool
``ZEROARCHIVE_PROXIES``), and the cookies of a session exported from a browser
(``cookies_file``: a cookies.txt or a JSON export). Proxy credentials and cookie values
are secrets: only ``safe_proxy`` forms of them are ever logged."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from zeroarchive.core.stats import count

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

PROXY_SCHEMES = ("http", "https")


class CookiesFileError(ValueError):
    """A cookies file that cannot be read; the message names the file, never a value."""


def check_proxy(url: str) -> str:
    """A proxy URL as given, or ValueError saying what is wrong (without its password).

    >>> check_proxy("http://user:s3cret@10.0.0.5:3128")
    'http://user:s3cret@10.0.0.5:3128'
    >>> check_proxy("socks5://10.0.0.5:1080")
    Traceback (most recent call last):
    ...
    ValueError: proxy socks5://10.0.0.5:1080: scheme must be http or https
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in PROXY_SCHEMES:
        raise ValueError(f"proxy {safe_proxy(url)}: scheme must be http or https")
    if not parts.hostname or parts.port is None:
        raise ValueError(f"proxy {safe_proxy(url)}: needs a host and a port")
    return url.strip()


def safe_proxy(url: str) -> str:
    """A proxy URL for logs: its password (and user) never shown.

    >>> safe_proxy("http://user:s3cret@10.0.0.5:3128")
    'http://***@10.0.0.5:3128'
    """
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def browser_proxy(url: str) -> dict[str, str]:
    """A proxy URL as Playwright's ``proxy`` option of a browser context.

    >>> browser_proxy("http://user:p%40ss@10.0.0.5:3128")
    {'server': 'http://10.0.0.5:3128', 'username': 'user', 'password': 'p@ss'}
    """
    parts = urlsplit(url)
    server = f"{parts.scheme}://{parts.hostname}:{parts.port}"
    proxy = {"server": server}
    if parts.username is not None:
        proxy["username"] = unquote(parts.username)
        proxy["password"] = unquote(parts.password or "")
    return proxy


@dataclass(frozen=True)
class Cookie:
    name: str
    value: str
    domain: str
    path: str = "/"
    expires: int = -1
    secure: bool = False
    http_only: bool = False

    def playwright(self) -> dict[str, Any]:
        """The cookie as a browser context's ``storage_state`` holds it."""
        return {
            "name": self.name,
            "value": self.value,
            "domain": self.domain,
            "path": self.path,
            "expires": self.expires,
            "secure": self.secure,
            "httpOnly": self.http_only,
            "sameSite": "Lax",
        }


def read_cookies_file(path: Path) -> tuple[Cookie, ...]:
    """The cookies of a session exported from a browser: a cookies.txt (Netscape format,
    as curl and browser extensions write it) or JSON (a list of cookies, or Playwright's
    storage state ``{"cookies": [...]}``). CookiesFileError names the file, never a value."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CookiesFileError(f"cannot read cookies file {path}: {exc.strerror}") from None
    if text.lstrip().startswith(("[", "{")):
        return _json_cookies(text, path)
    return _netscape_cookies(text, path)


def _netscape_cookies(text: str, path: Path) -> tuple[Cookie, ...]:
    r"""cookies.txt: one cookie a line, seven tab-separated fields (domain, subdomains flag,
    path, secure, expires, name, value); ``#HttpOnly_`` before the domain marks httpOnly.

    >>> (c,) = _netscape_cookies("#HttpOnly_.fb.com\tTRUE\t/\tTRUE\t0\tc_user\t100", Path("x"))
    >>> c.name, c.value, c.domain, c.secure, c.http_only, c.expires
    ('c_user', '100', '.fb.com', True, True, -1)
    """
    cookies = []
    for number, line in enumerate(text.splitlines(), start=1):
        http_only = line.startswith("#HttpOnly_")
        if http_only:
            line = line[len("#HttpOnly_") :]
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 7:
            raise CookiesFileError(f"cookies file {path}: line {number} is not a cookies.txt line")
        domain, _subdomains, cookie_path, secure, expires, name, value = fields
        cookies.append(
            Cookie(
                name,
                value,
                domain,
                cookie_path or "/",
                int(expires) if expires.isdigit() and int(expires) > 0 else -1,
                secure.upper() == "TRUE",
                http_only,
            )
        )
    return tuple(cookies)


def _json_cookies(text: str, path: Path) -> tuple[Cookie, ...]:
    try:
        data = json.loads(text)
    except ValueError:
        raise CookiesFileError(f"cookies file {path} is not valid JSON") from None
    if isinstance(data, dict):
        data = data.get("cookies")
    if not isinstance(data, list):
        raise CookiesFileError(f"cookies file {path}: expected a list of cookies")
    cookies = []
    for n, item in enumerate(data):
        if not isinstance(item, dict) or not {"name", "value", "domain"} <= set(item):
            raise CookiesFileError(f"cookies file {path}: cookie {n} lacks name, value or domain")
        expires = item.get("expires", item.get("expirationDate", -1))
        cookies.append(
            Cookie(
                str(item["name"]),
                str(item["value"]),
                str(item["domain"]),
                str(item.get("path", "/")),
                int(expires) if isinstance(expires, int | float) else -1,
                bool(item.get("secure", False)),
                bool(item.get("httpOnly", False)),
            )
        )
    return tuple(cookies)


def proxies_for(site_proxies: Sequence[str], pool: Sequence[str]) -> tuple[str, ...]:
    """The proxies a site's requests go through: its own, else the shared pool.

    >>> proxies_for([], ["http://a:1", "http://b:2"]), proxies_for(["http://s:3"], ["http://a:1"])
    (('http://a:1', 'http://b:2'), ('http://s:3',))
    """
    return tuple(site_proxies) or tuple(pool)


def proxy_pool(settings: BaseSettings) -> tuple[str, ...]:
    """ZEROARCHIVE_PROXIES: the environment variable (comma-separated), else the setting (a
    list or comma-separated text). Scrapy logs the settings it was given, so a proxy with
    credentials is refused there: it belongs in the environment.

    >>> from scrapy.settings import Settings
    >>> proxy_pool(Settings({"ZEROARCHIVE_PROXIES": "http://a:1, http://b:2"}))
    ('http://a:1', 'http://b:2')
    >>> proxy_pool(Settings({"ZEROARCHIVE_PROXIES": ["http://u:p@a:1"]}))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ZEROARCHIVE_PROXIES: a proxy with credentials (http://***@a:1) must come from ...
    """
    from_env = os.environ.get("ZEROARCHIVE_PROXIES")
    value = from_env if from_env else settings.get("ZEROARCHIVE_PROXIES")
    if isinstance(value, str):
        value = [part for part in value.split(",") if part.strip()]
    pool = tuple(check_proxy(url) for url in value or ())
    if not from_env:
        for url in pool:
            if urlsplit(url).password is not None:
                raise ValueError(
                    f"ZEROARCHIVE_PROXIES: a proxy with credentials ({safe_proxy(url)}) must "
                    "come from the environment"
                )
    return pool


_cookie_cache: dict[tuple[str, int], tuple[Cookie, ...]] = {}


def session_cookies(path: str) -> tuple[Cookie, ...]:
    """The cookies of a site's ``cookies_file``, read again only when the file changes."""
    try:
        stamp = Path(path).stat().st_mtime_ns
    except OSError as exc:
        raise CookiesFileError(f"cannot read cookies file {path}: {exc.strerror}") from None
    key = (path, stamp)
    if key not in _cookie_cache:
        _cookie_cache[key] = read_cookies_file(Path(path))
    return _cookie_cache[key]


class SessionCookies:
    """The sites' cookies files for one crawl (plain requests and the browser alike): a
    file that cannot be read is counted each time, logged once per site, and the site is
    crawled without it."""

    def __init__(self) -> None:
        self._bad: set[int] = set()

    def read(
        self, stats: StatsCollector | None, site_id: int, site_name: str, path: str
    ) -> tuple[Cookie, ...] | None:
        try:
            return session_cookies(path)
        except CookiesFileError as exc:
            count(stats, "errors/cookies_file", site_id)
            if site_id not in self._bad:
                self._bad.add(site_id)
                logger.error("Site %s (#%d): %s", site_name, site_id, exc)
            return None


def cookies_for(cookies: Sequence[Cookie], host: str) -> dict[str, str]:
    """The cookies a request to ``host`` carries, by name.

    >>> jar = [Cookie("c_user", "1", ".facebook.com"), Cookie("x", "2", "a.tw")]
    >>> cookies_for(jar, "m.facebook.com")
    {'c_user': '1'}
    """
    sent = {}
    for cookie in cookies:
        domain = cookie.domain.lstrip(".").lower()
        if host == domain or host.endswith("." + domain):
            sent[cookie.name] = cookie.value
    return sent
