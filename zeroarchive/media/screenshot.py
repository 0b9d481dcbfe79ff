"""A full-page screenshot of a rendered page, kept as the snapshot's media item of kind
``screenshot`` (its URL the page's, its bytes stored once by their SHA-256 as any item's).

The browser that rendered the page takes it, before the page is closed, when its site's
``media`` has ``screenshot`` and the page is a first snapshot or a changed version (an
unchanged re-snapshot refers to the earlier one, as its images do). The page is scrolled
down to the height kept, a viewport at a time, so that images loaded on scroll are asked
for, and back up; their loading is awaited up to ``BROWSER_RENDER_WAIT``. Chromium then
draws the whole page at the viewport's width (CDP ``Page.captureScreenshot`` beyond the
viewport), cut at ``SCREENSHOT_MAX_HEIGHT``, as PNG or WebP straight from the browser.
A screenshot that fails is a record with ``stored: false`` and ``failed:<error>``; the
page's snapshot is stored regardless.

What the browser loads for a page it shoots (its pictures and fonts: crawl/browser.py) is
held to the site's ``media_max_bytes`` an item, as the crawl's own media fetches are
(``cap_loads``): an answer that announces more (``Content-Length``) is refused before its
body is read; one that announces no size is read up to the limit, and refused past it.
A refused picture is missing from the shot, and counted (``screenshots/images_too_large``).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import logging
import math
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy.settings import BaseSettings

from zeroarchive.core.clock import now
from zeroarchive.core.items import MediaAnswer
from zeroarchive.core.stats import count

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

KIND = "screenshot"
FORMATS = {"png": "image/png", "webp": "image/webp"}
#: Chromium draws nothing taller in one piece (its largest texture is 16,384 px).
MOST_HEIGHT = 16_384
#: Seconds each scroll step waits for what it made the page ask for to start.
SCROLL_PAUSE = 0.1
#: Seconds the capture itself may take beyond the scroll's wait: a hung renderer costs the
#: screenshot (failed:timeout), never the page's browser slot for good.
CAPTURE_SECONDS = 60.0
#: What ``cap_loads`` holds to the size limit (CDP resource types): what the browser is let
#: load for a shot besides the page's own stylesheets and scripts.
CAPPED_TYPES = ("Image", "Font")
#: Bytes read at a time of an answer that announces no size.
READ_CHUNK = 1 << 16
#: The answers refused as too large, by the page they were loaded for.
_too_large: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
#: Headers that no longer describe a body read whole and handed back decoded.
_BODY_HEADERS = frozenset({"content-length", "content-encoding", "transfer-encoding"})
# Scrolls a viewport at a time down to `limit` px (or the page's end), then back to the top
# (at once, whatever the page's own scroll-behavior), and waits (at most `wait` ms) for the
# images still loading; true when the wait ran out.
SCROLL_JS = """async ({limit, pause, wait}) => {
  const sleep = ms => new Promise(done => setTimeout(done, ms));
  const step = Math.max(window.innerHeight, 100);
  for (let y = step; y < Math.min(document.documentElement.scrollHeight, limit); y += step) {
    window.scrollTo({top: y, left: 0, behavior: "instant"});
    await sleep(pause);
  }
  window.scrollTo({top: 0, left: 0, behavior: "instant"});
  const loading = Array.from(document.images).filter(img => !img.complete).map(img =>
    new Promise(done => {
      img.addEventListener("load", done, {once: true});
      img.addEventListener("error", done, {once: true});
    }));
  const late = await Promise.race([
    Promise.all(loading).then(() => false), sleep(wait).then(() => true)]);
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  return late;
}"""


@dataclass(frozen=True)
class ScreenshotConfig:
    """The ``SCREENSHOT_*`` settings, typed and checked.

    >>> from scrapy.settings import Settings
    >>> settings = Settings()
    >>> settings.setmodule("settings.base")
    >>> config = ScreenshotConfig.from_settings(settings)
    >>> config.format, config.content_type, config.max_height, config.wait
    ('png', 'image/png', 10000, 10.0)
    >>> settings.set("SCREENSHOT_FORMAT", "WebP")
    >>> ScreenshotConfig.from_settings(settings).content_type
    'image/webp'
    >>> settings.set("SCREENSHOT_FORMAT", "jpeg")
    >>> ScreenshotConfig.from_settings(settings)
    Traceback (most recent call last):
    ...
    ValueError: SCREENSHOT_FORMAT must be png or webp, got 'jpeg'
    >>> settings.set("SCREENSHOT_FORMAT", "png")
    >>> settings.set("SCREENSHOT_MAX_HEIGHT", 20000)
    >>> ScreenshotConfig.from_settings(settings)
    Traceback (most recent call last):
    ...
    ValueError: SCREENSHOT_MAX_HEIGHT must be from 1 to 16384 px, got 20000
    """

    format: str
    #: Pixels: a taller page is cut at this height.
    max_height: int
    #: Seconds the images the scroll made the page ask for may take to load.
    wait: float

    @property
    def content_type(self) -> str:
        return FORMATS[self.format]

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> ScreenshotConfig:
        fmt = str(settings.get("SCREENSHOT_FORMAT") or "").strip().lower()
        if fmt not in FORMATS:
            raise ValueError(
                f"SCREENSHOT_FORMAT must be {' or '.join(FORMATS)}, "
                f"got {settings.get('SCREENSHOT_FORMAT')!r}"
            )
        max_height = settings.getint("SCREENSHOT_MAX_HEIGHT")
        if not 1 <= max_height <= MOST_HEIGHT:
            raise ValueError(
                f"SCREENSHOT_MAX_HEIGHT must be from 1 to {MOST_HEIGHT} px, got {max_height}"
            )
        return cls(fmt, max_height, max(0.0, settings.getfloat("BROWSER_RENDER_WAIT")))


def new_version(body: bytes, last_hash: str | None) -> bool:
    """Whether a page whose bytes are ``body`` is a first snapshot or a changed version of
    the one whose SHA-256 (hex) is ``last_hash``: only those get a screenshot.

    >>> new_version(b"page", None), new_version(b"page", hashlib.sha256(b"page").hexdigest())
    (True, False)
    """
    return last_hash is None or hashlib.sha256(body).hexdigest() != last_hash


@dataclass(frozen=True)
class Shot:
    """A screenshot taken (``body``) or why not (``reason``: ``failed:<error>``)."""

    url: str
    taken_at: int
    body: bytes | None = None
    content_type: str | None = None
    #: The page was taller than the height kept.
    cut: bool = False
    #: Images were still loading when the wait after the scroll ran out.
    late: bool = False
    reason: str | None = None
    #: Pictures and fonts the browser was refused as larger than the site's limit.
    too_large: int = 0

    def answer(self, article_id: int, site_id: int, snapshot_at: int) -> MediaAnswer:
        """The snapshot's media record of this screenshot (written with the snapshot)."""
        return MediaAnswer(
            article_id,
            site_id,
            snapshot_at,
            KIND,
            self.url,
            # The page's record is made after its shot, in the same second or the next.
            max(self.taken_at, snapshot_at),
            body=self.body,
            content_type=self.content_type,
            reason=self.reason,
        )


async def take_screenshot(page: Any, config: ScreenshotConfig) -> Shot:
    """A full-page screenshot of the Playwright ``page``: never raises for what the page
    or the browser did (a ``failed:`` record instead)."""
    from playwright.async_api import Error
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    url = page.url
    try:
        shot = await asyncio.wait_for(_take(page, config), config.wait + CAPTURE_SECONDS)
    except (PlaywrightTimeout, TimeoutError):
        shot = Shot(url, now(), reason="failed:timeout")
    except Error as exc:
        kind = "page_crashed" if "crash" in str(exc).lower() else "browser"
        shot = Shot(url, now(), reason=f"failed:{kind}")
    return dataclasses.replace(shot, too_large=_too_large.get(page, 0))


async def _take(page: Any, config: ScreenshotConfig) -> Shot:
    late = await page.evaluate(
        SCROLL_JS,
        {
            "limit": config.max_height,
            "pause": SCROLL_PAUSE * 1000,
            "wait": config.wait * 1000,
        },
    )
    # Detached only once the shot is taken: after a failure the session goes with the page
    # (closed next), and a hung renderer would hang its detach too.
    session = await page.context.new_cdp_session(page)
    metrics = await session.send("Page.getLayoutMetrics")
    viewport = page.viewport_size
    width = viewport["width"] if viewport else metrics["cssLayoutViewport"]["clientWidth"]
    full = math.ceil(metrics["cssContentSize"]["height"])
    height = min(full, config.max_height)
    shot = await session.send(
        "Page.captureScreenshot",
        {
            "format": config.format,
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        },
    )
    await session.detach()
    body = base64.b64decode(shot["data"])
    return Shot(
        page.url,
        now(),
        body=body,
        content_type=config.content_type,
        cut=full > height,
        late=bool(late),
    )


async def cap_loads(page: Any, max_bytes: int) -> None:
    """Hold each picture and font the browser loads for ``page`` (to be shot) to
    ``max_bytes``: its answers wait, headers read, in CDP's Fetch domain (beside
    Playwright's own interception of the requests) until ``_answer`` lets them through
    or refuses them. Called before the page loads anything; should the browser refuse
    the watch, the page is loaded and shot regardless (logged), never lost."""
    from playwright.async_api import Error

    try:
        session = await page.context.new_cdp_session(page)
    except Error as exc:
        logger.warning("Loads for a screenshot not held to %s bytes: %s", max_bytes, exc)
        return
    _too_large[page] = 0
    answering: set[asyncio.Future[None]] = set()

    def paused(event: dict[str, Any]) -> None:
        task = asyncio.ensure_future(_answer(session, page, event, max_bytes))
        answering.add(task)
        task.add_done_callback(answering.discard)

    session.on("Fetch.requestPaused", paused)
    patterns = [{"resourceType": kind, "requestStage": "Response"} for kind in CAPPED_TYPES]
    try:
        await session.send("Fetch.enable", {"patterns": patterns})
    except Error as exc:
        logger.warning("Loads for a screenshot not held to %s bytes: %s", max_bytes, exc)


def declared_size(headers: list[dict[str, str]]) -> int | None:
    """The size an answer announces (CDP's list of headers), None when it names none.

    >>> declared_size([{"name": "Content-Length", "value": "2048"}])
    2048
    >>> declared_size([{"name": "content-type", "value": "image/png"}]) is None
    True
    >>> declared_size([{"name": "content-length", "value": "x"}]) is None
    True
    """
    for header in headers:
        if header["name"].lower() == "content-length":
            value = header["value"].strip()
            return int(value) if value.isdigit() else None
    return None


async def _answer(session: Any, page: Any, event: dict[str, Any], max_bytes: int) -> None:
    from playwright.async_api import Error

    request_id = event["requestId"]
    status = event.get("responseStatusCode")
    headers = event.get("responseHeaders") or []
    try:
        if status is None or not 200 <= status < 300:
            await session.send("Fetch.continueRequest", {"requestId": request_id})
            return
        size = declared_size(headers)
        body = None
        if size is None:
            body = await _read_at_most(session, request_id, max_bytes)
        if (size is not None and size > max_bytes) or (size is None and body is None):
            _too_large[page] = _too_large.get(page, 0) + 1
            logger.debug("Not loaded for a screenshot, over %s bytes: %s", max_bytes, event)
            await session.send(
                "Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"}
            )
        elif body is None:
            await session.send("Fetch.continueRequest", {"requestId": request_id})
        else:
            kept = [h for h in headers if h["name"].lower() not in _BODY_HEADERS]
            await session.send(
                "Fetch.fulfillRequest",
                {
                    "requestId": request_id,
                    "responseCode": status,
                    "responseHeaders": kept,
                    "body": base64.b64encode(body).decode("ascii"),
                },
            )
    except Error as exc:
        # The page was closed (or its load stopped) while its answer waited.
        logger.debug("A load for a screenshot ended early: %s", exc)


async def _read_at_most(session: Any, request_id: str, max_bytes: int) -> bytes | None:
    """The body of an answer that announced no size, or None past ``max_bytes``."""
    stream = (await session.send("Fetch.takeResponseBodyAsStream", {"requestId": request_id}))[
        "stream"
    ]
    chunks: list[bytes] = []
    size = 0
    try:
        while True:
            piece = await session.send("IO.read", {"handle": stream, "size": READ_CHUNK})
            data = piece["data"]
            chunk = base64.b64decode(data) if piece.get("base64Encoded") else data.encode()
            size += len(chunk)
            if size > max_bytes:
                return None
            chunks.append(chunk)
            if piece.get("eof"):
                return b"".join(chunks)
    finally:
        await session.send("IO.close", {"handle": stream})


def shot_taken(stats: StatsCollector | None, shot: Shot, site_id: int) -> None:
    """Count a screenshot (``screenshots/taken``, ``/cut``, ``/images_late``) or its
    failure (``screenshots/failed``, logged), and the pictures and fonts refused to the
    browser as too large for it (``screenshots/images_too_large``)."""
    count(stats, "screenshots/images_too_large", site_id, shot.too_large)
    if shot.body is None:
        count(stats, "screenshots/failed", site_id)
        logger.warning("Screenshot of %s not taken: %s", shot.url, shot.reason)
        return
    count(stats, "screenshots/taken", site_id)
    if shot.cut:
        count(stats, "screenshots/cut", site_id)
    if shot.late:
        count(stats, "screenshots/images_late", site_id)
