"""Videos of stored pages, downloaded with yt-dlp into a file, never into memory.

A video item (``<video src>``, ``<video><source>``, ``og:video``, or a YouTube watch page
itself) is a request like any media item: it rides the crawl's queue, robots rules, proxies
and private-target refusals (middlewares/video.py answers it at the end of the downloader
middlewares). There yt-dlp takes its URL: its YouTube extractor for a watch page, its
generic extractor for a video file or a player page (HTML5 ``<video>`` and the embeds it
knows). It writes the video to a file of its own directory; the file goes to the snapshot
writer with the item's record (``MediaAnswer.spooled``), which stores it by content and
removes it. ``download`` runs in a thread of its own: it blocks, the crawl does not.

The outcome is the item's record: the file, or ``too-large`` (``media_max_bytes``, by the
size announced or as it streams), ``not-media`` (no video at the URL, or what came is not a
video), ``failed:<HTTP status>``, ``failed:timeout``, ``failed:dns`` and the other error
kinds of zeroarchive/core/errors.py.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zeroarchive.media.sniff import is_media

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

#: The request meta key of a download's ``VideoOutcome`` (middlewares/video.py).
VIDEO_META = "zeroarchive_video"
TOO_LARGE = "too-large"
NOT_MEDIA = "not-media"
#: The prefix of the directories yt-dlp writes into (one per download): only these are
#: removed with the file the writer took.
WORK_PREFIX = "zeroarchive-video-"
#: What yt-dlp says of a video that is gone or hidden (YouTube's words, as it passes them on).
_UNAVAILABLE = (
    "Video unavailable",
    "Private video",
    "has been removed",
    "This video is no longer available",
    "account associated with this video has been terminated",
)
#: What yt-dlp says when there is no video at a URL.
_NOT_VIDEO = ("Unsupported URL", "No video formats found", "is unusual and will be skipped")
_HTTP_STATUS = re.compile(r"HTTP Error (\d{3})")
_CONTENT_TYPES = {
    "mp4": "video/mp4",
    "m4v": "video/mp4",
    "webm": "video/webm",
    "mkv": "video/x-matroska",
    "mov": "video/quicktime",
    "ogv": "video/ogg",
    "ogg": "video/ogg",
    "flv": "video/x-flv",
    "3gp": "video/3gpp",
    "ts": "video/mp2t",
}


@dataclass(frozen=True)
class VideoConfig:
    """The crawl's video settings (``ZEROARCHIVE_VIDEO_*``)."""

    #: The tallest format kept (0: no limit); the best format up to it is downloaded.
    max_height: int
    #: Videos downloaded at once by one crawl process.
    concurrency: int
    #: Seconds one video's download may take in all (its connections time out sooner,
    #: at the request's ``download_timeout`` without a byte).
    timeout: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> VideoConfig:
        """
        >>> from scrapy.settings import Settings
        >>> VideoConfig.from_settings(Settings({"ZEROARCHIVE_VIDEO_MAX_HEIGHT": 720,
        ...     "ZEROARCHIVE_VIDEO_CONCURRENCY": 2, "ZEROARCHIVE_VIDEO_TIMEOUT": 3600}))
        VideoConfig(max_height=720, concurrency=2, timeout=3600.0)
        >>> VideoConfig.from_settings(Settings({"ZEROARCHIVE_VIDEO_MAX_HEIGHT": 720,
        ...     "ZEROARCHIVE_VIDEO_CONCURRENCY": 0, "ZEROARCHIVE_VIDEO_TIMEOUT": 3600}))
        Traceback (most recent call last):
        ...
        ValueError: ZEROARCHIVE_VIDEO_CONCURRENCY must be at least 1, not 0
        """
        config = cls(
            max_height=settings.getint("ZEROARCHIVE_VIDEO_MAX_HEIGHT"),
            concurrency=settings.getint("ZEROARCHIVE_VIDEO_CONCURRENCY"),
            timeout=settings.getfloat("ZEROARCHIVE_VIDEO_TIMEOUT"),
        )
        if config.max_height < 0:
            raise ValueError(
                f"ZEROARCHIVE_VIDEO_MAX_HEIGHT must be 0 or more, not {config.max_height}"
            )
        if config.concurrency < 1:
            raise ValueError(
                f"ZEROARCHIVE_VIDEO_CONCURRENCY must be at least 1, not {config.concurrency}"
            )
        if config.timeout <= 0:
            raise ValueError(f"ZEROARCHIVE_VIDEO_TIMEOUT must be positive, not {config.timeout}")
        return config


@dataclass(frozen=True)
class VideoJob:
    """One video to download: what the crawl's request says about it."""

    url: str
    #: The request's headers as the site's requests send them (User-Agent, Referer,
    #: Cookie, Accept-Language).
    headers: Mapping[str, str]
    #: The proxy the crawl chose for the request (credentials included), or None.
    proxy: str | None
    #: Seconds a connection may wait for a byte (the request's ``download_timeout``).
    socket_timeout: float
    #: ``media_max_bytes`` of the site.
    max_bytes: int
    retries: int


@dataclass(frozen=True)
class VideoOutcome:
    """A download's result: the file (and its type), or why there is none."""

    path: str | None = None
    content_type: str | None = None
    reason: str | None = None


def format_spec(max_height: int, can_merge: bool) -> str:
    """yt-dlp's format selection: the best up to ``max_height`` (a format of unknown height,
    a plain file, passes), else the smallest there is; separate video and audio streams
    (YouTube's above 360p) only where ffmpeg can merge them.

    >>> format_spec(720, True)
    'bv*[height<=?720]+ba/b[height<=?720]/wv*+ba/w'
    >>> format_spec(720, False)
    'b[height<=?720]/w'
    >>> format_spec(0, False)
    'b'
    """
    if not max_height:
        return "bv*+ba/b" if can_merge else "b"
    limit = f"[height<=?{max_height}]"
    if can_merge:
        return f"bv*{limit}+ba/b{limit}/wv*+ba/w"
    return f"b{limit}/w"


def can_merge() -> bool:
    """Whether ffmpeg is there to merge separate video and audio streams."""
    return shutil.which("ffmpeg") is not None and shutil.which("ffprobe") is not None


class _TooLarge(Exception):
    pass


class _TimedOut(Exception):
    pass


def ytdlp_options(job: VideoJob, workdir: str, config: VideoConfig, hook: Any) -> dict[str, Any]:
    """yt-dlp's options for ``job``: one video (a page's first), written under ``workdir``,
    with the crawl's headers, proxy and timeouts, quiet (our log says what happened).

    >>> job = VideoJob("https://v.example/a.mp4", {"Referer": "https://v.example/p"}, None,
    ...                30, 2**20, 3)
    >>> options = ytdlp_options(job, "/tmp/w", VideoConfig(720, 1, 60), None)
    >>> options["http_headers"], options["proxy"], options["socket_timeout"]
    ({'Referer': 'https://v.example/p'}, '', 30)
    >>> options["paths"], options["playlist_items"]
    ({'home': '/tmp/w', 'temp': '/tmp/w'}, '1')
    """
    return {
        "format": format_spec(config.max_height, can_merge()),
        "outtmpl": {"default": "video.%(ext)s"},
        "paths": {"home": workdir, "temp": workdir},
        "http_headers": dict(job.headers),
        # Empty: no proxy, not even one from the environment (the crawl decided).
        "proxy": job.proxy or "",
        "socket_timeout": job.socket_timeout,
        "retries": job.retries,
        "fragment_retries": job.retries,
        "extractor_retries": job.retries,
        "noplaylist": True,
        "playlist_items": "1",
        "progress_hooks": [hook] if hook is not None else [],
        "logger": _YtdlpLog(),
        "quiet": True,
        "no_warnings": True,
        "noprogress": True,
        "color": {"stdout": "never", "stderr": "never"},
        "cachedir": False,
        "overwrites": True,
        "continuedl": False,
        "updatetime": False,
        "check_formats": False,
        # A broadcast still on air never ends as a file: recorded failed:live, not waited for.
        "match_filter": _not_live,
    }


def _not_live(info: Mapping[str, Any], *, incomplete: bool = False) -> str | None:
    """yt-dlp's match filter: skip a live broadcast (the reason it logs), else None.

    >>> _not_live({"is_live": True}), _not_live({"is_live": False})
    ('a live broadcast', None)
    """
    return "a live broadcast" if info.get("is_live") else None


class _YtdlpLog:
    """yt-dlp's messages at DEBUG: the outcome is logged once, by the caller."""

    def debug(self, message: str) -> None:
        logger.debug("yt-dlp: %s", message)

    info = warning = error = debug


def download(job: VideoJob, config: VideoConfig, spool_dir: str | None) -> VideoOutcome:
    """Download ``job``'s video into a new directory under ``spool_dir`` (the system's
    temporary directory if None); blocking. The file is the caller's to remove
    (``discard``), as is nothing else: on failure, the directory is gone."""
    import yt_dlp

    workdir = tempfile.mkdtemp(prefix=WORK_PREFIX, dir=spool_dir)
    deadline = time.monotonic() + config.timeout

    def hook(progress: dict[str, Any]) -> None:
        size = progress.get("total_bytes") or progress.get("downloaded_bytes") or 0
        if size > job.max_bytes or (progress.get("downloaded_bytes") or 0) > job.max_bytes:
            raise _TooLarge
        if time.monotonic() > deadline:
            raise _TimedOut

    try:
        with yt_dlp.YoutubeDL(ytdlp_options(job, workdir, config, hook)) as ydl:
            info = ydl.extract_info(job.url, download=True)
        path = _written(info, workdir)
        if path is None:
            outcome = VideoOutcome(reason="failed:live" if _live(info) else NOT_MEDIA)
        elif os.path.getsize(path) > job.max_bytes:
            outcome = VideoOutcome(reason=TOO_LARGE)
        elif not _is_video(path):
            outcome = VideoOutcome(reason=NOT_MEDIA)
        else:
            extension = path.rsplit(".", 1)[-1].lower()
            return VideoOutcome(path, _CONTENT_TYPES.get(extension, "video/" + extension))
    except Exception as exc:  # yt-dlp raises many kinds; each is a record, never a crash
        outcome = VideoOutcome(reason=reason_of(exc))
    shutil.rmtree(workdir, ignore_errors=True)
    return outcome


def _live(info: Mapping[str, Any] | None) -> bool:
    entries = (info or {}).get("entries") or [info or {}]
    return any(entry and entry.get("is_live") for entry in entries)


def _written(info: Mapping[str, Any] | None, workdir: str) -> str | None:
    """The file yt-dlp wrote (the merged one when it merged), or None."""
    if not info:
        return None
    entries = info.get("entries")
    if entries:
        info = next((entry for entry in entries if entry), None)
        if not info:
            return None
    for done in info.get("requested_downloads") or ():
        path = done.get("filepath")
        if path and os.path.isfile(path):
            return str(path)
    return None


def _is_video(path: str) -> bool:

    with open(path, "rb") as handle:
        head = handle.read(1024)
    return is_media("video", head, None) or _looks_like_stream(head)


def _looks_like_stream(head: bytes) -> bool:
    """An MPEG transport stream or FLV file (HLS pieces joined, old players): no magic of
    the ISO, Matroska or Ogg kinds that ``is_media`` knows.

    >>> _looks_like_stream(b"G" + bytes(187) + b"G"), _looks_like_stream(b"FLV\\x01")
    (True, True)
    >>> _looks_like_stream(b"<html>")
    False
    """
    return (len(head) > 188 and head[0] == head[188] == 0x47) or head.startswith(b"FLV\x01")


def reason_of(exc: BaseException) -> str:
    """The record's reason for an exception yt-dlp raised (or its hook did): the HTTP status
    or the error kind found along its causes, else ``failed:download_failed``.

    >>> reason_of(_TooLarge()), reason_of(_TimedOut())
    ('too-large', 'failed:timeout')
    >>> reason_of(RuntimeError("ERROR: Unsupported URL: https://v.example/x"))
    'not-media'
    >>> reason_of(RuntimeError("Got error: HTTP Error 403: Forbidden"))
    'failed:403'
    >>> reason_of(RuntimeError("x.example: Read timed out."))
    'failed:timeout'
    >>> reason_of(RuntimeError("ERROR: [youtube] abc: Private video. Sign in if you've been ..."))
    'failed:unavailable'
    """
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 10:
        seen.append(current)
        exc_info = getattr(current, "exc_info", None)
        following = getattr(current, "cause", None) or current.__cause__ or current.__context__
        if following is None and exc_info and isinstance(exc_info[1], BaseException):
            following = exc_info[1]
        current = following if isinstance(following, BaseException) else None
    for error in seen:
        if isinstance(error, _TooLarge):
            return TOO_LARGE
        if isinstance(error, _TimedOut | TimeoutError | socket.timeout):
            return "failed:timeout"
        if isinstance(error, socket.gaierror):
            return "failed:dns"
        if isinstance(error, ConnectionRefusedError):
            return "failed:connection_refused"
        status = getattr(error, "status", None)
        if type(error).__name__ == "HTTPError" and isinstance(status, int):
            return f"failed:{status}"
    message = " ".join(str(error) for error in seen)
    # Its refusal to write a file named .html (say) is a page, not a video, too.
    if any(type(error).__name__ == "_UnsafeExtensionError" for error in seen) or any(
        sign in message for sign in _NOT_VIDEO
    ):
        return NOT_MEDIA
    if any(sign in message for sign in _UNAVAILABLE):
        return "failed:unavailable"
    if match := _HTTP_STATUS.search(message):
        return f"failed:{match.group(1)}"
    lowered = message.lower()
    if "timed out" in lowered:
        return "failed:timeout"
    if "failed to resolve" in lowered or "name or service not known" in lowered:
        return "failed:dns"
    if "connection refused" in lowered:
        return "failed:connection_refused"
    if "incompleteread" in lowered or "incomplete read" in lowered:
        return "failed:data_loss"
    return "failed:download_failed"


def discard(path: str) -> None:
    """Remove a downloaded file and the directory ``download`` made for it."""
    directory = os.path.dirname(path)
    if os.path.basename(directory).startswith(WORK_PREFIX):
        shutil.rmtree(directory, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
