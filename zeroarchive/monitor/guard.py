"""The monitor's front gate, before auth and routing: a ``Host`` that names this monitor
(a DNS-rebinding page's names another), no load by another site's page (403: an
``<img>`` on any page the researcher opens must not start a diff or a search here), and a
body no bigger than the limit (413 on its ``Content-Length``; a body sent in chunks is cut
where it passes the limit)."""

from __future__ import annotations

import asyncio

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from zeroarchive.monitor.config import MonitorConfig
from zeroarchive.monitor.params import is_digits
from zeroarchive.monitor.refusals import Refusals


class BodyTooLarge(Exception):
    """A chunked body passed the limit while it was read."""


class GuardMiddleware:
    def __init__(self, app: ASGIApp, config: MonitorConfig, refusals: Refusals) -> None:
        self.app = app
        self.config = config
        self.refusals = refusals

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not self.config.host_allowed(host):
            response = self.refusals.plain(scope, 400, f"this monitor is not {host!r}")
            await response(scope, receive, send)
            return
        # A browser says where a request comes from and what it is for; a link followed to
        # the monitor (a document) is served, a picture, script, frame or fetch is not.
        # Clients that send no fetch metadata (scripts, curl, older browsers) are served.
        site = headers.get("sec-fetch-site", "")
        destination = headers.get("sec-fetch-dest", "document")
        if site in ("cross-site", "same-site") and destination != "document":
            why = f"a load by another site's page (Sec-Fetch-Dest: {destination})"
            response = self.refusals.plain(scope, 403, why)
            await response(scope, receive, send)
            return
        limit = self.config.limits.body_bytes
        length = headers.get("content-length", "0")
        if not is_digits(length) or int(length) > limit:
            why = f"the body is over {limit} bytes" if is_digits(length) else "bad Content-Length"
            response = self.refusals.plain(scope, 413 if is_digits(length) else 400, why)
            await response(scope, receive, send)
            return
        received = 0

        async def capped() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(f"the body is over {limit} bytes")
            return message

        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, capped, watched)
        except asyncio.CancelledError:
            # A stopping server cancels what is still running after MONITOR_SHUTDOWN_SECONDS
            # (a client sending its body slowly, say): one line, not a traceback.
            self.refusals.note(scope, 503, "cut short: the monitor is stopping")
            if not started:
                await PlainTextResponse("the monitor is stopping", 503)(scope, capped, send)
