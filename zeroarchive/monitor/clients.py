"""Who sent a request: the peer that connected, or, only when that peer is a proxy the
operator named (``MONITOR_TRUSTED_PROXIES``), the client its ``X-Forwarded-For`` or
``Forwarded`` names. Whether any forwarding header came at all is kept: a monitor without
a login lets only a browser on this machine, with nothing in between, save pages.

uvicorn's own reading of these headers is off (serve.py): it trusts any loopback peer, and
a reverse proxy on the same machine is one."""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
#: Where the client is kept in a request's scope.
SCOPE_KEY = "zeroarchive.client"
#: Headers a proxy (or a client pretending to be behind one) adds to say who asked.
FORWARDING_HEADERS = (
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-real-ip",
    "x-client-ip",
    "true-client-ip",
    "cf-connecting-ip",
    "fastly-client-ip",
    "x-cluster-client-ip",
    "via",
)


def trusted_networks(names: list[str]) -> tuple[Network, ...]:
    """``MONITOR_TRUSTED_PROXIES`` as networks: addresses or CIDR ranges.

    >>> [str(n) for n in trusted_networks(["127.0.0.1", "10.0.0.0/8", "::1"])]
    ['127.0.0.1/32', '10.0.0.0/8', '::1/128']
    >>> trusted_networks(["proxy.example"])
    Traceback (most recent call last):
    ...
    ValueError: MONITOR_TRUSTED_PROXIES: 'proxy.example' is not an address or network
    """
    networks = []
    for name in names:
        try:
            networks.append(ipaddress.ip_network(name.strip(), strict=False))
        except ValueError:
            raise ValueError(
                f"MONITOR_TRUSTED_PROXIES: {name!r} is not an address or network"
            ) from None
    return tuple(networks)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An address as headers write it: bare, ``[v6]:port``, ``v4:port``, quoted.

    >>> [str(_address(t)) for t in ('"[2001:db8::1]:4711"', "192.0.2.60:80", " 10.0.0.1 ")]
    ['2001:db8::1', '192.0.2.60', '10.0.0.1']
    >>> _address("unknown"), _address("_hidden")
    (None, None)
    """
    text = text.strip().strip('"')
    if text.startswith("["):
        text = text[1 : text.find("]")] if "]" in text else text
    elif text.count(":") == 1:
        text = text.split(":")[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _forwarded_chain(headers: Headers) -> list[str]:
    """The addresses a request passed through, first client first: ``X-Forwarded-For``,
    else the ``for=`` of ``Forwarded`` (RFC 7239)."""
    forwarded_for = ",".join(headers.getlist("x-forwarded-for"))
    if forwarded_for.strip():
        return [part.strip() for part in forwarded_for.split(",")]
    chain = []
    for element in ",".join(headers.getlist("forwarded")).split(","):
        for pair in element.split(";"):
            key, _, value = pair.partition("=")
            if key.strip().lower() == "for":
                chain.append(value.strip())
    return chain


@dataclass(frozen=True)
class Client:
    """Who sent a request, as far as the monitor can tell."""

    #: The client: the peer, or whom a trusted proxy says it forwarded for.
    address: str
    #: Who connected to the monitor.
    peer: str
    #: The request carried a forwarding header (whoever sent it).
    forwarded: bool
    #: Who logged in: a digest of the request's credentials ("" without any).
    login: str

    @property
    def on_this_machine(self) -> bool:
        """A loopback peer and no forwarding header: no proxy in between said it relayed
        the request (a proxy that says nothing is the operator's to configure: docs)."""
        address = _address(self.peer)
        return not self.forwarded and address is not None and address.is_loopback


def client_of(scope: Scope, trusted: tuple[Network, ...]) -> Client:
    """The client of a request; ``X-Forwarded-For`` and ``Forwarded`` are read only when
    the peer is one of ``trusted``, and then from the right: the first address that is not
    a trusted proxy is the client (the left is what the client itself wrote).

    >>> chain = [(b"x-forwarded-for", b"6.6.6.6, 10.0.0.9")]
    >>> scope = {"client": ("127.0.0.1", 5), "headers": chain}
    >>> client_of(scope, ()).address, client_of(scope, trusted_networks(["127.0.0.1"])).address
    ('127.0.0.1', '10.0.0.9')
    >>> client_of(scope, trusted_networks(["127.0.0.1", "10.0.0.0/8"])).address
    '6.6.6.6'
    """
    headers = Headers(scope=scope)
    peer = str((scope.get("client") or ("", 0))[0])
    forwarded = any(name in headers for name in FORWARDING_HEADERS)
    authorization = headers.get("authorization", "")
    login = hashlib.sha256(authorization.encode()).hexdigest()[:32] if authorization else ""
    address = peer
    if forwarded and _is_in(peer, trusted):
        for hop in reversed(_forwarded_chain(headers)):
            found = _address(hop)
            if found is None:
                break
            address = str(found)
            if not any(found in network for network in trusted):
                break
    return Client(address=address, peer=peer, forwarded=forwarded, login=login)


def _is_in(text: str, networks: tuple[Network, ...]) -> bool:
    address = _address(text)
    return address is not None and any(address in network for network in networks)


class ClientMiddleware:
    """Outermost: finds each request's client, keeps it in the scope (``SCOPE_KEY``), and
    makes it the scope's ``client`` so that every log line names the client, not the
    proxy."""

    def __init__(self, app: ASGIApp, trusted: tuple[Network, ...]) -> None:
        self.app = app
        self.trusted = trusted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            client = client_of(scope, self.trusted)
            scope[SCOPE_KEY] = client
            if client.address != client.peer:
                scope["client"] = (client.address, 0)
        await self.app(scope, receive, send)
