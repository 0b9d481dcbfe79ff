"""Canonical URLs: one string, and one hash, per archived page.

Everything here is a pure function: the dupefilter, the pipelines and the
spiders all call :func:`canonicalize_url` and :func:`url_hash` and must agree.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

__all__ = [
    "MAX_URL_LENGTH",
    "TRACKING_PARAMS",
    "TRACKING_PREFIXES",
    "UrlRejected",
    "UrlRules",
    "canonicalize_url",
    "host_of",
    "is_on_site",
    "url_hash",
]

MAX_URL_LENGTH = 2048

TRACKING_PARAMS = frozenset(
    {
        "fbclid",
        "gclid",
        "dclid",
        "msclkid",
        "yclid",
        "mc_cid",
        "mc_eid",
        "_ga",
        "igshid",
        "spm",
        "fb_action_ids",
        "fb_action_types",
        "fb_ref",
        "fb_source",
    }
)
TRACKING_PREFIXES = ("utm_",)

_DEFAULT_PORTS = {"http": 80, "https": 443}
_TRAILING_SLASH_MODES = ("keep", "strip", "add")

# RFC 3986: an escaped unreserved character equals the character itself, while an
# escaped reserved character may mean something else than the raw one (%2F vs "/"),
# so only the former are decoded and reserved characters stay as they were written.
# Except "[" and "]" everywhere, "'" in the query and "#" in the fragment: they delimit
# nothing there and Scrapy's Request escapes them, so the escaped form is canonical.
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _escapes(kept_raw: str) -> re.Pattern[str]:
    return re.compile(r"%([0-9A-Fa-f]{2})|[^A-Za-z0-9\-._~" + re.escape(kept_raw) + "]")


_PATH_ESCAPES = _escapes(":/?#@!$&'()*+,;=")
_QUERY_ESCAPES = _escapes(":/?@!$&()*+,;=")
_FRAGMENT_ESCAPES = _escapes(":/?@!$&'()*+,;=")
_C0_OR_SPACE = "".join(map(chr, range(0x21)))
_TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")
_HOST = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?")
_IPV6_HOSTPORT = re.compile(r"\[([0-9A-Fa-f:.]+)\](?::([0-9]*))?")


class UrlRejected(ValueError):
    """A URL that cannot be archived; ``reason`` is a short stats key suffix.

    >>> try:
    ...     canonicalize_url("mailto:editor@example.com")
    ... except UrlRejected as exc:
    ...     exc.reason
    'bad_scheme'
    """

    REASONS = frozenset({"too_long", "bad_scheme", "no_host", "malformed"})

    def __init__(self, reason: str, url: str = "") -> None:
        if reason not in self.REASONS:
            raise ValueError(f"unknown UrlRejected reason {reason!r}")
        super().__init__(reason, url)
        self.reason = reason
        self.url = url

    def __str__(self) -> str:
        shown = self.url if len(self.url) <= 100 else self.url[:100] + "..."
        return f"{self.reason}: {shown!r}"


@dataclass(frozen=True)
class UrlRules:
    """Per-site canonicalisation rules.

    ``ignore_params`` entries ending in ``*`` match every parameter name with that
    prefix; a list is accepted and stored as a tuple.

    >>> UrlRules(strip_www=True, ignore_params=["ref", "from_*"]).ignore_params
    ('ref', 'from_*')
    >>> UrlRules(trailing_slash="remove")
    Traceback (most recent call last):
    ...
    ValueError: UrlRules.trailing_slash must be one of ('keep', 'strip', 'add'), not 'remove'
    """

    strip_www: bool = False
    trailing_slash: str = "keep"
    ignore_params: tuple[str, ...] = ()
    keep_fragment: bool = False

    def __post_init__(self) -> None:
        for name in ("strip_www", "keep_fragment"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"UrlRules.{name} must be a bool, not {getattr(self, name)!r}")
        if self.trailing_slash not in _TRAILING_SLASH_MODES:
            raise ValueError(
                f"UrlRules.trailing_slash must be one of {_TRAILING_SLASH_MODES}, "
                f"not {self.trailing_slash!r}"
            )
        params = self.ignore_params
        if isinstance(params, str) or not isinstance(params, (tuple, list)):
            raise ValueError(f"UrlRules.ignore_params must be a tuple of names, not {params!r}")
        for param in params:
            if not isinstance(param, str) or not param or "*" in param[:-1]:
                raise ValueError(
                    f"UrlRules.ignore_params entries must be non-empty names with an "
                    f"optional trailing '*', not {param!r}"
                )
        object.__setattr__(self, "ignore_params", tuple(params))


_DEFAULT_RULES = UrlRules()


def canonicalize_url(url: str, rules: UrlRules | None = None) -> str:
    """Return the canonical form of an http(s) URL, or raise :class:`UrlRejected`.

    >>> canonicalize_url("HTTP://WWW.Example.COM:80/a/./b/../c?utm_source=fb&b=2&a=1#top")
    'http://www.example.com/a/c?a=1&b=2'
    >>> canonicalize_url("https://news.ltn.com.tw/search?keyword=中文&page=2")
    'https://news.ltn.com.tw/search?keyword=%E4%B8%AD%E6%96%87&page=2'
    >>> canonicalize_url("https://www.ptt.cc/bbs/Gossiping/M.1459688662.A.CFE.html")
    'https://www.ptt.cc/bbs/Gossiping/M.1459688662.A.CFE.html'
    >>> site = UrlRules(strip_www=True, trailing_slash="strip", ignore_params=("from_*",))
    >>> canonicalize_url("http://www.example.com/a/?from_home=1&id=7", site)
    'http://example.com/a?id=7'
    >>> canonicalize_url("ftp://example.com/")
    Traceback (most recent call last):
    ...
    zeroarchive.core.urls.UrlRejected: bad_scheme: 'ftp://example.com/'
    """
    rules = rules or _DEFAULT_RULES
    if len(url) > MAX_URL_LENGTH:
        raise UrlRejected("too_long", url)
    cleaned = _clean(url)
    try:
        parts = urlsplit(cleaned)
    except ValueError:
        raise UrlRejected("malformed", url) from None
    scheme = parts.scheme
    if scheme not in _DEFAULT_PORTS:
        raise UrlRejected("bad_scheme", url)
    try:
        userinfo, host, port = _split_netloc(parts.netloc, url)
        if not host:
            raise UrlRejected("no_host", url)
        host = _encode_host(host, url)
        if rules.strip_www:
            host = _strip_www(host)
        netloc = host
        if userinfo:
            netloc = f"{_normalise_escapes(userinfo, _PATH_ESCAPES)}@{netloc}"
        if port is not None and port != _DEFAULT_PORTS[scheme]:
            netloc = f"{netloc}:{port}"
        path = _normalise_escapes(parts.path, _PATH_ESCAPES)
        path = _normalise_path(path, rules.trailing_slash)
        query = _normalise_query(parts.query, rules.ignore_params)
        fragment = ""
        if rules.keep_fragment:
            fragment = _normalise_escapes(parts.fragment, _FRAGMENT_ESCAPES)
    except UnicodeError:
        # Lone surrogates cannot be UTF-8 encoded, so they cannot be escaped either.
        raise UrlRejected("malformed", url) from None
    result = f"{scheme}://{netloc}{path}"
    if query:
        result = f"{result}?{query}"
    if fragment:
        result = f"{result}#{fragment}"
    if len(result) > MAX_URL_LENGTH:
        raise UrlRejected("too_long", url)
    return result


def url_hash(canonical_url: str) -> bytes:
    """Return the 16-byte identity of a URL: the first 16 bytes of its SHA-256.

    Callers pass the canonical URL (see :func:`canonicalize_url`); the hash of a raw
    URL would make equal pages look different.

    >>> url_hash("https://www.ptt.cc/bbs/Gossiping/M.1459688662.A.CFE.html").hex()
    'f8098d0d206261688e19ac84f100284f'
    >>> len(url_hash(""))
    16
    """
    return hashlib.sha256(canonical_url.encode("utf-8")).digest()[:16]


def host_of(url: str) -> str:
    """Return the lower-cased host of ``url`` without its port, or "" if it has none.

    Internationalised hosts come back in punycode, as in canonical URLs.

    >>> host_of("http://127.0.0.1:8080/page")
    '127.0.0.1'
    >>> host_of("https://News.LTN.com.tw/news/life")
    'news.ltn.com.tw'
    >>> host_of("http://中文.tw/")
    'xn--fiq228c.tw'
    >>> host_of("mailto:someone@example.com")
    ''
    """
    try:
        _, host, _ = _split_netloc(urlsplit(_clean(url)).netloc, url)
        return _encode_host(host, url).strip("[]") if host else ""
    except (ValueError, UnicodeError):
        return ""


def is_on_site(url: str, site_url: str) -> bool:
    """Tell whether ``url`` is on the site at ``site_url`` or one of its subdomains.

    A leading "www." on the site's host is ignored, and ports are not compared.

    >>> is_on_site("https://news.ltn.com.tw/news/1", "http://www.ltn.com.tw/")
    True
    >>> is_on_site("https://ltn.com.tw/", "http://www.ltn.com.tw/")
    True
    >>> is_on_site("https://notltn.com.tw/", "http://www.ltn.com.tw/")
    False
    >>> is_on_site("http://127.0.0.1:8001/a", "http://127.0.0.1:8000/")
    True
    """
    host = host_of(url)
    site_host = host_of(site_url)
    if not host or not site_host:
        return False
    if _is_ip_address(site_host):
        return host == site_host
    site_host = _strip_www(site_host)
    return host == site_host or host.endswith("." + site_host)


def _clean(url: str) -> str:
    """Trim a URL the way browsers and w3lib do: outer C0 controls and spaces, every
    tab/newline, and "\\" before the query read as "/" (as in http URLs)."""
    url = url.strip(_C0_OR_SPACE).translate(_TAB_OR_NEWLINE)
    end = len(url.partition("?")[0].partition("#")[0])
    return url[:end].replace("\\", "/") + url[end:]


def _split_netloc(netloc: str, url: str) -> tuple[str | None, str, int | None]:
    """Split ``userinfo@host:port``; an IPv6 host keeps its brackets."""
    userinfo: str | None
    userinfo, at, hostport = netloc.rpartition("@")
    if not at:
        userinfo = None
    if hostport.startswith("["):
        match = _IPV6_HOSTPORT.fullmatch(hostport)
        if match is None:
            raise UrlRejected("malformed", url)
        host, port_text = f"[{match.group(1)}]", match.group(2) or ""
    else:
        host, _, port_text = hostport.partition(":")
    if port_text and not (port_text.isascii() and port_text.isdigit()):
        raise UrlRejected("malformed", url)
    port = int(port_text) if port_text else None
    if port is not None and port > 65535:
        raise UrlRejected("malformed", url)
    return userinfo, host, port


def _encode_host(host: str, url: str) -> str:
    """Lower-case ``host``, with IDN labels in punycode and IPv6 in RFC 5952 form."""
    if host.startswith("["):
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1])}]"
        except ValueError:
            raise UrlRejected("malformed", url) from None
    if not host.isascii():
        # NFKC + IDNA 2003 is what w3lib, so Scrapy, sends: the host actually fetched.
        try:
            host = unicodedata.normalize("NFKC", host).encode("idna").decode("ascii")
        except UnicodeError:
            raise UrlRejected("malformed", url) from None
    host = host.lower()
    if not _HOST.fullmatch(host):
        raise UrlRejected("malformed", url)
    return host


def _strip_www(host: str) -> str:
    # Repeated so that the result is stable; "www.com" is a domain, not the www of "com".
    while host.startswith("www.") and "." in host[4:].rstrip("."):
        host = host[4:]
    return host


def _is_ip_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _normalise_escapes(text: str, escapes: re.Pattern[str]) -> str:
    """Upper-case escapes, decode unreserved ones, escape what may not appear raw."""
    return escapes.sub(_normalise_match, text)


def _normalise_match(match: re.Match[str]) -> str:
    hex_digits = match.group(1)
    if hex_digits is None:
        return "".join(f"%{byte:02X}" for byte in match.group(0).encode("utf-8"))
    char = chr(int(hex_digits, 16))
    return char if char in _UNRESERVED else "%" + hex_digits.upper()


def _normalise_path(path: str, trailing_slash: str) -> str:
    path = _remove_dot_segments(path) if path else "/"
    if path != "/":
        if trailing_slash == "strip":
            path = path.rstrip("/") or "/"
        elif trailing_slash == "add" and not path.endswith("/"):
            path += "/"
    return path


def _remove_dot_segments(path: str) -> str:
    """Resolve "." and ".." in a path that starts with "/" (RFC 3986, 5.2.4)."""
    segments = path.split("/")[1:]
    output: list[str] = []
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
            continue
        if index == last:
            output.append("")
    return "/" + "/".join(output)


def _normalise_query(query: str, ignore_params: tuple[str, ...]) -> str:
    """Drop tracking parameters and sort the rest by name, keeping each name's order."""
    exact = TRACKING_PARAMS.union(p for p in ignore_params if not p.endswith("*"))
    prefixes = TRACKING_PREFIXES + tuple(p[:-1] for p in ignore_params if p.endswith("*"))
    kept: list[tuple[str, str]] = []
    for pair in query.split("&"):
        if not pair:
            continue
        pair = _normalise_escapes(pair, _QUERY_ESCAPES)
        name = pair.partition("=")[0]
        decoded = unquote(name)
        if decoded in exact or decoded.startswith(prefixes):
            continue
        kept.append((name, pair))
    kept.sort(key=lambda item: item[0])
    return "&".join(pair for _, pair in kept)
