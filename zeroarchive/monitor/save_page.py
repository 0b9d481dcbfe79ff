"""Save page now in the monitor: a form (/save) and the GraphQL mutation ``save(url,
watch)``, both doing what `scrapy save URL [--watch]` does (zeroarchive/events/saving.py
chooses the site and adds the article, refusing hosts that are not public; a `scrapy save`
process fetches it).

A save fetches pages and writes to the archive. Behind a login (MONITOR_TOKEN or basic
auth) anyone logged in may save; without one only a browser on this machine with nothing
in between (a loopback peer, no forwarding header: clients.py). Each client saves at most
MONITOR_SAVE_PAGES_PER_HOUR pages an hour. Cross-site requests are refused: the form's
POST must carry a token its page was served with (an HMAC of its time, a nonce and the
login under a secret of this process; good once, for ``TOKEN_SECONDS``) and come from this
monitor's own origin; /graphql takes only ``application/json`` from its own origin
(graphql_api.py), which a page of another site cannot send without the browser asking
first.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
import subprocess
import sys
import threading
from collections import deque
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
from zeroarchive.core.targets import ALLOW_SETTING, resolve
from zeroarchive.events.saving import NotSavable, Resolver, SaveTarget, save_targets
from zeroarchive.monitor import pages
from zeroarchive.monitor.clients import SCOPE_KEY, Client
from zeroarchive.monitor.guard import BodyTooLarge
from zeroarchive.monitor.params import BadInput, quoted
from zeroarchive.storage.archive import Archive
from zeroarchive.storage.articles import ArticleStore
from zeroarchive.storage.sites import SiteStore
from zeroarchive.storage.snapshots import SnapshotStore

logger = logging.getLogger(__name__)

#: How long a form's token is good for (once).
TOKEN_SECONDS = 3600
#: A form's token: its time, a nonce and their HMAC with the login (ASCII digits only).
TOKEN = re.compile(r"([0-9]{1,12})\.([0-9a-f]{32})\.([0-9a-f]{64})")
#: The window of MONITOR_SAVE_PAGES_PER_HOUR.
QUOTA_SECONDS = 3600
NO_LOGIN = (
    "saving without a login is only for a browser on this machine (this request came "
    "from elsewhere or through a proxy): set MONITOR_TOKEN, or MONITOR_USERNAME and "
    "MONITOR_PASSWORD"
)
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


class TooMany(SaveRefused):
    """A client over its pages an hour; ``wait`` is the seconds until it may save again."""

    def __init__(self, message: str, wait: int) -> None:
        super().__init__(message)
        self.wait = wait


@dataclass(frozen=True)
class Started:
    targets: list[SaveTarget]


class Quota:
    """Pages each client asked to save in the last ``QUOTA_SECONDS``, on the archive's
    clock; refused asks count too (a login probing which hosts are refused is one)."""

    def __init__(self, per_hour: int) -> None:
        self.per_hour = per_hour
        self._asked: dict[str, deque[tuple[int, int]]] = {}
        self._lock = threading.Lock()

    def take(self, client: str, pages: int, at: int) -> None:
        """Count ``pages`` for ``client``; TooMany (nothing counted) when over the limit."""
        if pages > self.per_hour:
            raise SaveRefused(
                f"{pages} pages are more than one client may save in an hour "
                f"({self.per_hour}, MONITOR_SAVE_PAGES_PER_HOUR)"
            )
        with self._lock:
            since = at - QUOTA_SECONDS
            for key in [key for key, asked in self._asked.items() if asked[-1][0] <= since]:
                del self._asked[key]
            asked = self._asked.setdefault(client, deque())
            while asked and asked[0][0] <= since:
                asked.popleft()
            used = sum(count for _, count in asked)
            if used + pages > self.per_hour:
                if not asked:
                    del self._asked[client]
                wait = (asked[0][0] + QUOTA_SECONDS - at) if asked else QUOTA_SECONDS
                raise TooMany(
                    f"too many saves: {used} of {self.per_hour} pages this hour from "
                    f"{client} (MONITOR_SAVE_PAGES_PER_HOUR); try again in {(wait + 59) // 60} min",
                    wait,
                )
            asked.append((at, pages))


class Saver:
    """Starts saves: checks and files the URLs now, then one `scrapy save` process fetches
    them (at most ``MAX_RUNNING`` at once). ``login``: the monitor asks for one."""

    def __init__(
        self,
        engine: Engine,
        login: bool,
        command: Callable[[list[str], bool], Sequence[str]] | None = None,
        pages_per_hour: int = 60,
        allow_private: bool = False,
        resolver: Resolver = resolve,
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
        self.login = login
        self.command = command or self.scrapy_save
        self.allow_private = allow_private
        self.resolver = resolver
        self.quota = Quota(pages_per_hour)
        self.secret = secrets.token_bytes(32)
        self._running = threading.BoundedSemaphore(MAX_RUNNING)
        #: nonce -> time of the tokens already used (forgotten once they are stale anyway).
        self._spent: dict[str, int] = {}
        self._spent_lock = threading.Lock()

    @staticmethod
    def scrapy_save(urls: list[str], watch: bool) -> list[str]:
        return [sys.executable, "-m", "scrapy", "save", *urls, *(["--watch"] if watch else [])]

    def refusal(self, client: Client | None) -> str | None:
        """Why ``client`` may not save, or None when it may."""
        if self.quota.per_hour == 0:
            return "saving is off in this monitor (MONITOR_SAVE_PAGES_PER_HOUR is 0)"
        if self.login or (client is not None and client.on_this_machine):
            return None
        return NO_LOGIN

    def save(self, urls: list[str], watch: bool, client: Client | None) -> Started:
        """File the URLs and start their fetch; SaveRefused (nothing filed) when it may not."""
        why = self.refusal(client)
        if why is not None:
            raise SaveRefused(why)
        assert client is not None or self.login
        urls = [url.strip() for url in urls if url.strip()]
        if not urls or len(urls) > MAX_URLS:
            raise SaveRefused(f"give between 1 and {MAX_URLS} URLs")
        if not self._running.acquire(blocking=False):
            raise SaveRefused(f"busy: {MAX_RUNNING} saves are running")
        try:
            self.quota.take(client.address if client else "?", len(urls), now())
            targets = save_targets(self.archive, urls, now(), self.allow_private, self.resolver)
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
        if self.allow_private:
            # What this monitor allowed (a -s of its own, say), its `scrapy save` fetches.
            env[ALLOW_SETTING] = "1"
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

    def token(self, login: str, at: int | None = None) -> str:
        """A form's token for ``login`` (clients.Client.login): its time, a nonce, and an
        HMAC of both and the login.

        >>> from sqlalchemy import create_engine
        >>> saver = Saver(create_engine("sqlite://"), True)
        >>> token = saver.token("ann")
        >>> saver.redeem(token, "bob"), saver.redeem(token, "ann"), saver.redeem(token, "ann")
        (False, True, False)
        >>> saver.redeem(saver.token("ann", at=0), "ann")
        False
        """
        at = now() if at is None else at
        nonce = secrets.token_hex(16)
        return f"{at}.{nonce}.{self._mac(at, nonce, login)}"

    def redeem(self, token: str, login: str) -> bool:
        """Whether ``token`` is one of this monitor's, for ``login``, fresh and unused; it
        is used up when it is. BadInput when it is not a token at all.

        >>> from sqlalchemy import create_engine
        >>> Saver(create_engine("sqlite://"), True).redeem("².x", "ann")
        Traceback (most recent call last):
        ...
        zeroarchive.monitor.params.BadInput: token: not a token of this monitor: '².x'
        """
        match = TOKEN.fullmatch(token)
        if match is None:
            raise BadInput(f"token: not a token of this monitor: {quoted(token)}")
        at, nonce, mac = int(match[1]), match[2], match[3]
        current = now()
        if not 0 <= current - at <= TOKEN_SECONDS:
            return False
        if not hmac.compare_digest(mac, self._mac(at, nonce, login)):
            return False
        with self._spent_lock:
            for stale in [n for n, made in self._spent.items() if current - made > TOKEN_SECONDS]:
                del self._spent[stale]
            if nonce in self._spent:
                return False
            self._spent[nonce] = at
        return True

    def _mac(self, at: int, nonce: str, login: str) -> str:
        message = f"save:{at}:{nonce}:{login}".encode()
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()


@mutation.field("save")
def resolve_save(
    _: None, info: GraphQLResolveInfo, url: list[str], watch: bool = False
) -> list[dict[str, Any]]:
    saver: Saver | None = info.context.saver
    if saver is None:
        raise GraphQLError("saving is off in this monitor")
    try:
        started = saver.save(url, watch, info.context.client)
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
    client: Client | None = request.scope.get(SCOPE_KEY)
    why = saver.refusal(client)
    context: dict[str, Any] = {
        "refused": why,
        "token": saver.token(client.login if client else ""),
        "saved": [],
    }
    if request.method == "GET":
        return pages.render(request, "save.html", context)
    refuse = request.app.state.refusals.plain
    if why is not None:
        return refuse(request.scope, 403, why)
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
    token = (fields.get("token") or [""])[0]
    try:
        fresh = bool(token) and saver.redeem(token, client.login if client else "")
    except BadInput as exc:
        return refuse(request.scope, 400, str(exc))
    if not fresh:
        return refuse(
            request.scope, 403, "the form's token is missing, used or stale: reload the page"
        )
    urls = (fields.get("urls") or [""])[0].split()
    watch = (fields.get("watch") or [""])[0] == "on"
    try:
        started = await run_in_threadpool(saver.save, urls, watch, client)
    except SaveRefused as exc:
        status = 429 if isinstance(exc, TooMany) else 400
        request.app.state.refusals.note(
            request.scope, status, masked_url(str(exc)), "answered with errors"
        )
        context["error"] = str(exc)
        response = pages.render(request, "save.html", context, status=status)
        if isinstance(exc, TooMany):
            response.headers["Retry-After"] = str(exc.wait)
        return response
    context["saved"] = started.targets
    context["watch"] = watch
    return pages.render(request, "save.html", context)


def routes() -> list[Route]:
    return [Route("/save", save_form, methods=["GET", "POST"], name="save")]
