"""Error kinds: one short name per way a fetch can fail, used in stats and stop reasons; and
the parser's ``ParseError``."""

from __future__ import annotations

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

#: The kind of a page that answered but is not the page: a bot challenge, a captcha or a
#: login wall. Never stored as a snapshot; the article backs off like any failure.
BLOCKED = "blocked"

_KINDS: tuple[tuple[type[BaseException], str], ...] = (
    (HttpError, "http"),
    (DownloadTimeoutError, "timeout"),
    (CannotResolveHostError, "dns"),
    (DownloadConnectionRefusedError, "connection_refused"),
    # Scrapy cancels a download that passes DOWNLOAD_MAXSIZE.
    (DownloadCancelledError, "too_large"),
    (ResponseDataLossError, "data_loss"),
    (DownloadFailedError, "download_failed"),
)


class BlockedPage(IgnoreRequest):
    """An answer that is a block page (zeroarchive/crawl/blocks.py), with why."""

    def __init__(self, reason: str, url: str) -> None:
        super().__init__(f"blocked: {reason}")
        self.reason = reason
        self.url = url


class Unreachable(IgnoreRequest):
    """A request not sent because its site's robots.txt could not be fetched this run (the
    site does not resolve or refuses connections); ``kind`` is how that fetch failed."""

    def __init__(self, kind: str, url: str) -> None:
        super().__init__(f"site unreachable ({kind}): {url}")
        self.kind = kind
        self.url = url


#: The kind of a request refused because its host is not on the public internet
#: (middlewares/private_targets.py).
PRIVATE_TARGET = "private_target"


class PrivateTarget(IgnoreRequest):
    """A request not sent: its host is, or resolves to, a loopback, private, link-local,
    multicast or reserved address, and neither its site nor the archive allows that."""

    def __init__(self, reason: str, url: str) -> None:
        super().__init__(f"{PRIVATE_TARGET}: {reason}")
        self.reason = reason
        self.url = url


def error_kind(failure: Failure) -> tuple[str, int | None]:
    """``(kind, http_status)`` of a request failure."""
    if failure.check(BlockedPage):
        return BLOCKED, None
    if failure.check(PrivateTarget):
        return PRIVATE_TARGET, None
    if failure.check(Unreachable):
        assert isinstance(failure.value, Unreachable)
        return failure.value.kind, None
    for exc_type, kind in _KINDS:
        if failure.check(exc_type):
            if kind == "http":
                assert isinstance(failure.value, HttpError)
                status = failure.value.response.status
                return f"http_{status}", status
            return kind, None
    if failure.check(IgnoreRequest):
        message = str(failure.value).lower()
        if "robots.txt" in message:
            return "robots_disallowed", None
        if "max redirect" in message or "redirect" in message:
            return "redirect_loop", None
        return "ignored", None
    return type(failure.value).__name__.lower(), None


class ParseError(ValueError):
    """The snapshot cannot be parsed as its article type (wrong shape, empty, not a post)."""
