"""Save page now in the monitor: a form (/save) and the GraphQL mutation ``save(url,
watch)``, both doing what `scrapy save URL [--watch]` does (zeroarchive/events/saving.py
chooses the site and adds the article; a `scrapy save` process fetches it).

Offered only when the monitor asks for a login or listens on loopback alone (a save
fetches pages and writes to the archive). Cross-site requests are refused: the form's POST
must carry the token its page was served with (an HMAC of the time under a secret of this
process, good for ``TOKEN_SECONDS``) and come from this monitor's own origin; /graphql
takes only ``application/json`` from its own origin (graphql_api.py), which a page of
another site cannot send without the browser asking first.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ariadne import MutationType
from graphql import GraphQLError, GraphQLResolveInfo
from scrapy.utils.conf import closest_scrapy_cfg
from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from zeroarchive.core.clock import now
from zeroarchive.core.shown import masked_url
from zeroarchive.events.saving import NotSavable, SaveTarget, save_targets
from zeroarchive.monitor import pages
from zeroarchive.monitor.guard import BodyTooLarge
from zeroarchive.storage.archive import Archive
from zeroarchive.storage.articles import ArticleStore
from zeroarchive.storage.sites import SiteStore
from zeroarchive.storage.snapshots import SnapshotStore

logger = logging.getLogger(__name__)

#: How long a form's token is good for.
TOKEN_SECONDS = 3600
#: `scrapy save` processes running at once; a save beyond them is refused (busy).
MAX_RUNNING = 2
#: URLs in one save.
MAX_URLS = 20

SAVE_SCHEMA = """
extend schema {
    mutation: Mutation
}
type Mutation {
    "Archive these pages now (`scrapy save`); with watch, keep them under the long-tail watch."
    save(url: [String!]!, watch: Boolean = false): [Saved!]!
}
type Saved {
    "The article's URL as archived."
    url: String!
    site: String!
    siteId: ID!
    "The source whose spider fetches it: generic, ptt, dcard, facebook or youtube."
    source: String!
}
"""

mutation = MutationType()


class SaveRefused(Exception):
    """Why a save is not started, in one line (the answer's message)."""


@dataclass(frozen=True)
class Started:
    targets: list[SaveTarget]


class Saver:
    """Starts saves: checks and files the URLs now, then one `scrapy save` process fetches
    them (at most ``MAX_RUNNING`` at once)."""

    def __init__(
        self,
        engine: Engine,
        allowed: bool,
        command: Callable[[list[str], bool], Sequence[str]] | None = None,
    ) -> None:
        self.engine = engine
        # Not open_archive: the monitor never migrates the database it reads.
        self.archive = Archive(
            str(engine.url),
            engine,
            SiteStore(engine),
            ArticleStore(engine),
            SnapshotStore(engine),
        )
        self.allowed = allowed
        self.command = command or self.scrapy_save
        self.secret = secrets.token_bytes(32)
        self._running = threading.BoundedSemaphore(MAX_RUNNING)

    @staticmethod
    def scrapy_save(urls: list[str], watch: bool) -> list[str]:
        return [sys.executable, "-m", "scrapy", "save", *urls, *(["--watch"] if watch else [])]

    def save(self, urls: list[str], watch: bool) -> Started:
        """File the URLs and start their fetch; SaveRefused (nothing filed) when it may not."""
        if not self.allowed:
            raise SaveRefused("saving needs a login (MONITOR_TOKEN or basic auth) or loopback")
        urls = [url.strip() for url in urls if url.strip()]
        if not urls or len(urls) > MAX_URLS:
            raise SaveRefused(f"give between 1 and {MAX_URLS} URLs")
        if not self._running.acquire(blocking=False):
            raise SaveRefused(f"busy: {MAX_RUNNING} saves are running")
        try:
            targets = save_targets(self.archive, urls, now())
            self._start([target.url for target in targets], watch)
        except NotSavable as exc:
            self._running.release()
            raise SaveRefused(str(exc)) from None
        except BaseException:
            self._running.release()
            raise
        return Started(targets)

    def _start(self, urls: list[str], watch: bool) -> None:
        env = {
            **os.environ,
            "ZEROARCHIVE_DB_URL": self.engine.url.render_as_string(hide_password=False),
        }
        config = closest_scrapy_cfg()
        cwd = Path(config).parent if config else Path(__file__).resolve().parents[2]
        process = subprocess.Popen(
            list(self.command(urls, watch)), cwd=cwd, env=env, stdin=subprocess.DEVNULL
        )
        logger.info("Monitor: saving %d URL(s) (process %d)", len(urls), process.pid)
        threading.Thread(target=self._reap, args=(process,), daemon=True).start()

    def _reap(self, process: subprocess.Popen[bytes]) -> None:
        try:
            code = process.wait()
            if code:
                logger.warning("Monitor: save process %d ended with %d", process.pid, code)
        finally:
            self._running.release()

    def token(self, at: int | None = None) -> str:
        """The form's token: the time it was made and an HMAC of it.

        >>> from sqlalchemy import create_engine
        >>> saver = Saver(create_engine("sqlite://"), True)
        >>> saver.valid(saver.token()), saver.valid("1.00"), saver.valid(saver.token(0))
        (True, False, False)
        """
        at = int(time.time()) if at is None else at
        return f"{at}.{self._mac(at)}"

    def valid(self, token: str) -> bool:
        at, _, mac = token.partition(".")
        if not at.isdigit() or time.time() - int(at) > TOKEN_SECONDS:
            return False
        return hmac.compare_digest(mac, self._mac(int(at)))

    def _mac(self, at: int) -> str:
        return hmac.new(self.secret, f"save:{at}".encode(), hashlib.sha256).hexdigest()


@mutation.field("save")
def resolve_save(
    _: None, info: GraphQLResolveInfo, url: list[str], watch: bool = False
) -> list[dict[str, Any]]:
    saver: Saver | None = info.context.saver
    if saver is None:
        raise GraphQLError("saving is off in this monitor")
    try:
        started = saver.save(url, watch)
    except SaveRefused as exc:
        raise GraphQLError(masked_url(str(exc))) from None
    return [
        {
            "url": masked_url(target.url),
            "site": masked_url(target.site.name),
            "siteId": target.site.site_id,
            "source": target.source.name,
        }
        for target in started.targets
    ]


def _same_origin(request: Request) -> bool:
    """Whether a browser says the request comes from this monitor's own pages. A form's
    POST under ``Referrer-Policy: no-referrer`` carries ``Origin: null``: then the fetch
    metadata decides (and the token, always)."""
    origin = request.headers.get("origin")
    host = request.headers.get("host", "").lower()
    if origin not in (None, "null") and urlsplit(origin).netloc.lower() != host:
        return False
    return request.headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")


async def save_form(request: Request) -> Response:
    saver: Saver = request.app.state.saver
    context: dict[str, Any] = {"allowed": saver.allowed, "token": saver.token(), "saved": []}
    if request.method == "GET":
        return pages.render(request, "save.html", context)
    refuse = request.app.state.refusals.plain
    if not saver.allowed:
        return refuse(request.scope, 403, "saving needs a login or loopback")
    if not _same_origin(request):
        return refuse(request.scope, 403, "a save from another site")
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        return refuse(request.scope, 415, "the save form posts application/x-www-form-urlencoded")
    try:
        body = b"".join([chunk async for chunk in request.stream()])
    except BodyTooLarge as exc:
        return refuse(request.scope, 413, str(exc))
    fields = parse_qs(body.decode("utf-8", errors="replace"))
    if not saver.valid((fields.get("token") or [""])[0]):
        return refuse(request.scope, 403, "the form's token is missing or stale: reload the page")
    urls = (fields.get("urls") or [""])[0].split()
    watch = (fields.get("watch") or [""])[0] == "on"
    try:
        started = await run_in_threadpool(saver.save, urls, watch)
    except SaveRefused as exc:
        request.app.state.refusals.note(
            request.scope, 400, masked_url(str(exc)), "answered with errors"
        )
        context["error"] = str(exc)
        return pages.render(request, "save.html", context, status=400)
    context["saved"] = started.targets
    context["watch"] = watch
    return pages.render(request, "save.html", context)


def routes() -> list[Route]:
    return [Route("/save", save_form, methods=["GET", "POST"], name="save")]
