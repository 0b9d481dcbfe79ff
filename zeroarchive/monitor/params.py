"""Numbers, ids and cursors from a request, read one way by every route: ASCII digits only
(``str.isdigit`` also takes "²" and "١٢٣", which ``int`` then refuses or reads), at most
18 of them (no ``int`` of 5,000 digits; every id fits a signed 64-bit column), within the
range the caller names. Anything else is ``BadInput``: the pages answer it 400 in one
refusal line (app.py), the GraphQL API as the field's error (graphql_api.py)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping

#: Digits of the longest number read (10^18 - 1 < 2^63).
MAX_DIGITS = 18
#: Characters of the longest cursor read.
MAX_CURSOR_CHARS = 200


class BadInput(ValueError):
    """A malformed number, id, cursor or token; the message names it, in one line."""


def quoted(value: str, limit: int = 40) -> str:
    """``value`` quoted for a message, cut to ``limit`` characters.

    >>> quoted("²"), quoted("9" * 5000)[-14:]
    ("'²'", "'…(5000 chars)")
    """
    cut = repr(value[:limit])
    return cut if len(value) <= limit else f"{cut}…({len(value)} chars)"


def is_digits(value: str) -> bool:
    """Whether ``value`` is ASCII digits, not too many to read.

    >>> is_digits("42"), is_digits("²"), is_digits("١٢"), is_digits(""), is_digits("9" * 19)
    (True, False, False, False, False)
    """
    return 0 < len(value) <= MAX_DIGITS and value.isascii() and value.isdigit()


def number(value: str, name: str, low: int = 0, high: int = 10**MAX_DIGITS - 1) -> int:
    """``value`` as a whole number from ``low`` to ``high``; BadInput otherwise.

    >>> number("42", "page", 1, 500)
    42
    >>> number("²", "page")
    Traceback (most recent call last):
    ...
    zeroarchive.monitor.params.BadInput: page: a whole number, not '²'
    >>> number("0", "page", 1, 500)
    Traceback (most recent call last):
    ...
    zeroarchive.monitor.params.BadInput: page: 1 to 500, not 0
    """
    if not is_digits(value):
        raise BadInput(f"{name}: a whole number, not {quoted(value)}")
    found = int(value)
    if not low <= found <= high:
        raise BadInput(f"{name}: {low} to {high}, not {found}")
    return found


def optional_number(
    params: Mapping[str, str], name: str, default: int, low: int = 0, high: int = 10**18 - 1
) -> int:
    """The query parameter ``name`` as a number (``number``), ``default`` when absent or
    empty (a form's field left blank).

    >>> optional_number({"page": ""}, "page", 1), optional_number({"page": "3"}, "page", 1)
    (1, 3)
    """
    value = params.get(name, "")
    return default if value == "" else number(value, name, low, high)


def row_id(value: object, name: str) -> int:
    """A GraphQL ``ID`` as a row's id: -1, which no row has, for a negative one or one over
    18 digits (finds nothing, as a path's id over 18 digits is a 404); BadInput when it is
    not a whole number.

    >>> row_id("12", "id"), row_id(12, "id"), row_id("-5", "id"), row_id("9" * 5000, "id")
    (12, 12, -1, -1)
    >>> row_id("１２", "id")
    Traceback (most recent call last):
    ...
    zeroarchive.monitor.params.BadInput: id must be a number, got '１２'
    """
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(text, str):
        raise BadInput(f"{name} must be a number, got {quoted(str(value))}")
    digits = text[1:] if text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit()):
        raise BadInput(f"{name} must be a number, got {quoted(text)}")
    if text.startswith("-") or len(digits) > MAX_DIGITS:
        return -1
    return int(digits)


def cursor_numbers(value: str, name: str, kind: str, parts: int, urlsafe: bool) -> list[int]:
    """The numbers of an opaque cursor: base64 of ``kind:n`` (``kind`` empty: ``n:n...``),
    ``parts`` numbers in all; BadInput for anything else.

    >>> cursor_numbers(base64.b64encode(b"offset:19").decode(), "after", "offset", 1, False)
    [19]
    >>> cursor_numbers(base64.b64encode("offset:²".encode()).decode(), "after", "offset", 1, False)
    Traceback (most recent call last):
    ...
    zeroarchive.monitor.params.BadInput: after: not a cursor from this API: 'b2Zmc2V0OsKy'
    """
    refused = BadInput(f"{name}: not a cursor from this API: {quoted(value)}")
    if len(value) > MAX_CURSOR_CHARS or not value.isascii():
        raise refused
    try:
        raw = value.encode()
        decoded = (
            base64.urlsafe_b64decode(raw) if urlsafe else base64.b64decode(raw, validate=True)
        ).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise refused from None
    fields = decoded.split(":")
    if kind:
        if fields[0] != kind:
            raise refused
        fields = fields[1:]
    if len(fields) != parts or not all(is_digits(field) for field in fields):
        raise refused
    return [int(field) for field in fields]
