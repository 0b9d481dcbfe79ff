"""What a snapshot looks like in a WARC: dates, the HTTP head a replay needs, our fields.

Pure functions; the writer and the importer both read and write these fields.
"""

from __future__ import annotations

import datetime as dt
import http
import re
from collections.abc import Mapping, Sequence

from zeroarchive.core.clock import utc_iso

# Our own WARC header fields (the WARC spec allows fields it does not define; the
# ``WARC-`` prefix is left to the spec). They let an import give every snapshot back to
# its article exactly, and let rotation check an export against the database.
ARTICLE_ID = "Zeroarchive-Article-ID"
ARTICLE_URL = "Zeroarchive-Article-URL"
ENCODING = "Zeroarchive-Encoding"
RENDERED = "Zeroarchive-Rendered"
STATUS = "Zeroarchive-Status"

# The fields of the metadata record beside a resource: the answer's status and headers.
HEAD_STATUS = "HTTP-Status"
HEAD_HEADER = "HTTP-Header"

REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
HTML_TYPES = ("text/html", "application/xhtml+xml")

# The stored payload is the body after Scrapy undid the transfer and content codings, so
# these describe bytes the record does not hold. Content-Length is written anew.
_TRANSPORT_HEADERS = frozenset({"content-length", "transfer-encoding"})
_HTML_START = re.compile(rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head)[\s>]", re.I | re.S)


def warc_date(ts: int) -> str:
    """A snapshot time (unix seconds) as a WARC-Date.

    >>> warc_date(1736496000)
    '2025-01-10T08:00:00Z'
    """
    return utc_iso(ts)


def parse_warc_date(value: str) -> int:
    """A WARC-Date (seconds or finer, ``Z``) as unix seconds, fractions dropped.

    >>> parse_warc_date("2025-01-10T08:00:00Z"), parse_warc_date("2025-01-10T08:00:00.734Z")
    (1736496000, 1736496000)
    >>> parse_warc_date("yesterday")
    Traceback (most recent call last):
    ...
    ValueError: bad WARC-Date: 'yesterday'
    """
    text = value.strip()
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"bad WARC-Date: {value!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp())


def status_line(status: int) -> str:
    """The status part of an HTTP/1.1 status line (the reason phrase is not stored).

    >>> status_line(200), status_line(404), status_line(299)
    ('200 OK', '404 Not Found', '299 Unknown')
    """
    try:
        return f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return f"{status} Unknown"


def replay_headers(headers: Mapping[str, Sequence[str]], length: int) -> list[tuple[str, str]]:
    """Stored response headers as a WARC response record carries them: the transfer
    framing dropped, Content-Length that of the stored payload, the rest in order.

    Content-Encoding stays: Scrapy removes it once it has decoded the body, so one that is
    still there names a coding the stored bytes are still in.

    >>> for pair in replay_headers(
    ...     {"Content-Type": ["text/html"], "Transfer-Encoding": ["chunked"],
    ...      "Content-Length": ["120"], "Set-Cookie": ["a=1", "b=2"]}, 512):
    ...     print(pair)
    ('Content-Type', 'text/html')
    ('Set-Cookie', 'a=1')
    ('Set-Cookie', 'b=2')
    ('Content-Length', '512')
    """
    kept = [
        (name, value)
        for name, values in headers.items()
        if name.lower() not in _TRANSPORT_HEADERS
        for value in values
    ]
    return [*kept, ("Content-Length", str(length))]


def head_pairs(headers: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """Stored headers as (name, value) pairs, framing dropped, one line each (a value
    holding a line break would end the warc-fields line).

    >>> head_pairs({"Content-Type": ["text/html"], "Content-Length": ["9"], "X": ["a\\r\\nb"]})
    [('Content-Type', 'text/html'), ('X', 'a b')]
    """
    return [
        (name, " ".join(value.split()))
        for name, values in headers.items()
        if name.lower() not in _TRANSPORT_HEADERS
        for value in values
    ]


def read_head(body: bytes) -> tuple[int | None, dict[str, list[str]]]:
    """The status and headers of a metadata record written by :func:`head_pairs`' export.

    >>> read_head(b"HTTP-Status: 203\\r\\nHTTP-Header: X-A: 1\\r\\nHTTP-Header: X-A: 2\\r\\n")
    (203, {'X-A': ['1', '2']})
    """
    status: int | None = None
    headers: dict[str, list[str]] = {}
    for line in body.decode("utf-8", "replace").splitlines():
        field, _, value = line.partition(": ")
        if field == HEAD_STATUS and value.strip().isdigit():
            status = int(value)
        elif field == HEAD_HEADER and ": " in value:
            name, _, header = value.partition(": ")
            headers.setdefault(name, []).append(header)
    return status, headers


def header_lists(pairs: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """HTTP header pairs as a snapshot stores them (name to values), framing dropped:
    the stored payload is the decoded body.

    >>> header_lists([("content-type", "text/html"), ("Set-Cookie", "a"), ("Set-Cookie", "b"),
    ...               ("Transfer-Encoding", "chunked"), ("Content-Encoding", "gzip")])
    {'content-type': ['text/html'], 'Set-Cookie': ['a', 'b']}
    """
    stored: dict[str, list[str]] = {}
    for name, value in pairs:
        if name.lower() in _TRANSPORT_HEADERS or name.lower() == "content-encoding":
            continue
        stored.setdefault(name, []).append(value)
    return stored


def is_html(content_type: str | None, head: bytes) -> bool:
    """Whether a payload is an HTML page: by its Content-Type, else by its first bytes.

    >>> is_html("text/html; charset=big5", b""), is_html("image/png", b"<html>")
    (True, False)
    >>> is_html(None, b"  <!DOCTYPE html><p>"), is_html(None, b"%PDF-1.4")
    (True, False)
    """
    if content_type:
        return content_type.split(";", 1)[0].strip().lower() in HTML_TYPES
    return _HTML_START.match(head[:1024]) is not None
