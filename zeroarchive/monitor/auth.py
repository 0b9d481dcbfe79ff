"""Who may read the monitor: a bearer token, or basic auth (a browser asks for it), when
either is configured; every request checked, pages and /graphql alike."""

from __future__ import annotations

import base64
import binascii
import hmac

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from zeroarchive.monitor.refusals import Refusals

REALM = "zeroarchive monitor"


def _basic_credentials(value: str) -> tuple[str, str] | None:
    """The user and password of a basic ``Authorization`` value.

    >>> _basic_credentials("Basic " + base64.b64encode(b"ann:pw:1").decode())
    ('ann', 'pw:1')
    >>> _basic_credentials("Basic !!") is None, _basic_credentials("Bearer x") is None
    (True, True)
    """
    scheme, _, encoded = value.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, colon, password = decoded.partition(":")
    return (user, password) if colon else None


class AuthMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        token: str | None,
        username: str | None,
        password: str | None,
        refusals: Refusals,
    ) -> None:
        self.app = app
        self.refusals = refusals
        self.token = token
        self.username = username
        self.password = password

    def allowed(self, authorization: str) -> bool:
        scheme, _, value = authorization.partition(" ")
        if self.token and scheme.lower() == "bearer":
            return hmac.compare_digest(value.strip().encode(), self.token.encode())
        credentials = _basic_credentials(authorization)
        if self.username and self.password and credentials is not None:
            user_ok = hmac.compare_digest(credentials[0].encode(), self.username.encode())
            password_ok = hmac.compare_digest(credentials[1].encode(), self.password.encode())
            return user_ok and password_ok
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.allowed(Headers(scope=scope).get("authorization", "")):
            await self.app(scope, receive, send)
            return
        challenge = f'Basic realm="{REALM}"' if self.username else f'Bearer realm="{REALM}"'
        response = self.refusals.plain(
            scope, 401, "authentication required", **{"WWW-Authenticate": challenge}
        )
        await response(scope, receive, send)
