"""Stage B: turn a stored snapshot (bytes, encoding, URL) into a publication.

``PARSER_VERSION`` names what the parsers produce: change it whenever a change to any
parser (or to the libraries it relies on) changes their output, and ``scrapy
parse_snapshots`` parses every snapshot again under the new version.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

from zeroarchive.parser.result import Parsed, ParseError

PARSER_VERSION = "2026.1"
DEFAULT_TIMEZONE = "Asia/Taipei"

__all__ = ["DEFAULT_TIMEZONE", "PARSER_VERSION", "ParseError", "Parsed", "parse_snapshot"]


def parse_snapshot(
    article_type: str, raw: bytes, encoding: str, url: str, tz: str = DEFAULT_TIMEZONE
) -> Parsed:
    """The publication in one snapshot, by the parser for its article type.

    ``tz`` is the zone naive page times are read in. Raises :class:`ParseError` when the
    snapshot is not what its type promises.
    """
    # Imported here: every `scrapy` command loads this package for PARSER_VERSION, and the
    # parsers' libraries (readability, trafilatura, htmldate) take a fifth of a second.
    from zeroarchive.parser.dcard import parse_dcard
    from zeroarchive.parser.facebook import parse_facebook
    from zeroarchive.parser.generic import parse_generic
    from zeroarchive.parser.ptt import parse_ptt

    if article_type == "PTT":
        return parse_ptt(raw, encoding, url)
    if article_type == "Dcard":
        return parse_dcard(raw, encoding, url)
    if article_type == "FBPost":
        return parse_facebook(raw, encoding, url)
    return parse_generic(raw, encoding, url, ZoneInfo(tz))
