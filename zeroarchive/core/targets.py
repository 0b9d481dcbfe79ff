"""Which hosts the archive may fetch from: the public internet only, unless an operator says
otherwise (``ZEROARCHIVE_ALLOW_PRIVATE_TARGETS``, a site's ``allow_private_targets``).

A URL whose host is, or resolves to, a loopback, private, link-local (where clouds serve
their metadata), multicast, reserved or unspecified address is refused: a save or a
redirect must not make the archive read this machine, its network or its cloud's
secrets. Every spelling a browser, curl or the C library accepts is read as the address
it names (``2130706433``, ``0x7f.1``, ``0177.0.0.1``, ``127.1``, ``[::ffff:7f00:1]``).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from zeroarchive.core.environment import from_environment

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: The archive-wide switch (a setting, or the environment variable of the same name).
ALLOW_SETTING = "ZEROARCHIVE_ALLOW_PRIVATE_TARGETS"
#: A site's config key that lets its own requests (to its own host) reach such hosts.
SITE_KEY = "allow_private_targets"
_FALSE = ("", "0", "false", "no", "off")


class TargetRefused(ValueError):
    """A URL the archive may not fetch; the message says which address and why, ``kind``
    what the address is (loopback, private, link-local, ...)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def allow_private_targets(settings: BaseSettings | None) -> bool:
    """Whether the whole archive may fetch non-public hosts: the environment variable
    ``ZEROARCHIVE_ALLOW_PRIVATE_TARGETS`` (as ``ZEROARCHIVE_DB_URL``, so one variable
    opens a test or lab deployment) else the setting.

    >>> from scrapy.settings import Settings
    >>> allow_private_targets(Settings({ALLOW_SETTING: True})), allow_private_targets(None)
    (True, False)
    """
    value = from_environment(ALLOW_SETTING, settings)
    return value is not None and value.strip().lower() not in _FALSE


def site_allows(site_url: str, allowed: bool, url: str) -> bool:
    """Whether a site's ``allow_private_targets`` lets ``url`` through: only on the site's
    own host and its subdomains, so a redirect of a lab site on 10.0.0.5 to 169.254.169.254
    (or to 127.0.0.1 spelled another way) is still refused.

    >>> site_allows("http://10.0.0.5:8080/", True, "http://10.0.0.5:8080/news/1")
    True
    >>> site_allows("http://lab.example/", True, "http://cdn.lab.example/a.css")
    True
    >>> site_allows("http://10.0.0.5/", True, "http://169.254.169.254/latest/meta-data/")
    False
    >>> site_allows("http://10.0.0.5/", False, "http://10.0.0.5/news/1")
    False
    """
    if not allowed:
        return False
    try:
        site_host = (urlsplit(site_url).hostname or "").rstrip(".")
        host = (urlsplit(url).hostname or "").rstrip(".")
    except ValueError:
        return False
    return bool(site_host) and (host == site_host or host.endswith(f".{site_host}"))


def _ipv4_number(part: str) -> int | None:
    """One part of a dotted IPv4 host as the URL standard reads it (0x hex, 0 octal).

    >>> [_ipv4_number(p) for p in ("127", "0x7f", "0177", "0", "0x", "08", "1e3")]
    [127, 127, 127, 0, 0, None, None]
    """
    base, digits = 10, part
    if part[:2].lower() == "0x":
        base, digits = 16, part[2:]
    elif len(part) > 1 and part.startswith("0"):
        base, digits = 8, part[1:]
    if not digits:
        return 0
    allowed = "0123456789abcdefABCDEF"[: base + (6 if base == 16 else 0)]
    if not all(char in allowed for char in digits):
        return None
    return int(digits, base)


def host_address(host: str) -> Address | None:
    """The address a URL's host names as a literal, in every spelling that reaches one
    (the URL standard's IPv4 parser, which browsers, curl and inet_aton share); None for a
    name. A host that only looks like a number (``1.2.3.4.5``, ``0x1g``) is a name here:
    no resolver finds it.

    >>> [str(host_address(h)) for h in ("2130706433", "0x7f.1", "0177.0.0.1", "127.1")]
    ['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1']
    >>> str(host_address("0x7f000001")), str(host_address("10.0.0.1.")), str(host_address("0"))
    ('127.0.0.1', '10.0.0.1', '0.0.0.0')
    >>> str(host_address("[::ffff:127.0.0.1]")), str(host_address("fe80::1%eth0"))
    ('::ffff:7f00:1', 'fe80::1%eth0')
    >>> host_address("news.example"), host_address("1.2.3.4.5"), host_address("256.1.1.1.")
    (None, None, None)
    """
    host = host.strip().strip("[]")
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host.replace("%25", "%"))
        except ValueError:
            return None
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if not 1 <= len(parts) <= 4 or not all(parts):
        return None
    numbers = [_ipv4_number(part) for part in parts]
    if any(number is None for number in numbers):
        return None
    *head, last = [number for number in numbers if number is not None]
    if any(number > 255 for number in head) or last >= 256 ** (5 - len(parts)):
        return None
    value = last
    for index, number in enumerate(head):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def non_public(address: Address) -> str | None:
    """Why an address is no public internet host, or None when it is one. An IPv6 address
    that carries an IPv4 one (mapped, 6to4, Teredo) is judged by the IPv4 one too.

    >>> def why(*addresses): return [non_public(ipaddress.ip_address(a)) for a in addresses]
    >>> why("127.0.0.1", "10.1.2.3", "169.254.169.254", "224.0.0.1", "0.0.0.0", "240.0.0.1")
    ['loopback', 'private', 'link-local', 'multicast', 'unspecified', 'reserved']
    >>> why("::1", "fd00::1", "::ffff:10.0.0.1", "100.64.0.1", "2002:7f00:1::")
    ['loopback', 'private', 'private', 'not public', 'loopback']
    >>> why("8.8.8.8", "2606:4700::1")
    [None, None]
    """
    if isinstance(address, ipaddress.IPv6Address):
        carried = [address.ipv4_mapped, address.sixtofour, (address.teredo or (None, None))[1]]
        for inner in carried:
            if inner is not None and (why := non_public(inner)):
                return why
        if address.ipv4_mapped is not None:
            return None
    for kind in ("loopback", "link_local", "multicast", "unspecified", "reserved", "private"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if address.is_global else "not public"


def resolve(host: str) -> list[str]:
    """Every address ``host`` resolves to (IPv4 and IPv6), as the system's resolver says."""
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in infos]


def check_host(host: str, resolver: Callable[[str], Sequence[str]] | None = resolve) -> None:
    """TargetRefused when ``host`` names, or resolves to, an address that is not public.
    A name that does not resolve passes (its fetch fails on its own, counted as dns);
    ``resolver=None`` checks literals only.

    >>> check_host("0x7f.1")
    Traceback (most recent call last):
    ...
    zeroarchive.core.targets.TargetRefused: 0x7f.1 is 127.0.0.1, a loopback address
    >>> check_host("metadata.internal", lambda host: ["169.254.169.254"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zeroarchive.core.targets.TargetRefused: metadata.internal resolves to 169.254.169.254, ...
    >>> check_host("93.184.215.14"), check_host("news.example", lambda host: ["93.184.215.14"])
    (None, None)
    """
    literal = host_address(host)
    if literal is not None:
        why = non_public(literal)
        if why is not None:
            shown = _shown(literal)
            named = f"is {shown}," if shown != host.strip("[]").lower() else "is"
            raise TargetRefused(f"{host} {named} {_a(why)} address", why)
        return
    if not host or resolver is None:
        return
    try:
        addresses = resolver(host.rstrip("."))
    except (OSError, UnicodeError):
        return
    for found in addresses:
        try:
            address = ipaddress.ip_address(found.split("%")[0])
        except ValueError:
            continue
        why = non_public(address)
        if why is not None:
            raise TargetRefused(f"{host} resolves to {_shown(address)}, {_a(why)} address", why)


def _shown(address: Address) -> str:
    """An address as people write it (an IPv4-mapped one with its IPv4 part dotted).

    >>> _shown(ipaddress.ip_address("::ffff:a9fe:a9fe")), _shown(ipaddress.ip_address("::1"))
    ('::ffff:169.254.169.254', '::1')
    """
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return f"::ffff:{address.ipv4_mapped}"
    return str(address)


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"
