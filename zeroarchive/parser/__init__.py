"""Stage B: turn a stored snapshot (bytes, encoding, URL) into a publication.

``PARSER_VERSION`` names what the parsers produce: change it whenever a change to any
parser (or to the libraries it relies on) changes their output, and ``scrapy
parse_snapshots`` parses every snapshot again under the new version.

The extractors (``generic``, ``ptt``, ``dcard``, ``facebook``, ``youtube``, with
``text``, ``dates`` and ``metadata``) are pure: bytes in, a ``Parsed`` out. ``run`` is
``scrapy parse_snapshots``' work: the snapshots not parsed yet, parsed and stored.

May import: ``storage``, ``sources``, ``core``.
Never imported by: ``storage``, ``crawl`` or anything below them: the crawl never waits
for a parse.
"""

from __future__ import annotations

from collections.abc import Callable
from zoneinfo import ZoneInfo

from scrapy.utils.misc import load_object

from zeroarchive.core.errors import ParseError
from zeroarchive.core.items import Parsed
from zeroarchive.sources import source_for_article_type

PARSER_VERSION = "2026.12"
DEFAULT_TIMEZONE = "Asia/Taipei"

__all__ = ["DEFAULT_TIMEZONE", "PARSER_VERSION", "ParseError", "Parsed", "parse_snapshot"]

_parsers: dict[str, Callable[[bytes, str, str, ZoneInfo], Parsed]] = {}


def parse_snapshot(
    article_type: str, raw: bytes, encoding: str, url: str, tz: str = DEFAULT_TIMEZONE
) -> Parsed:
    """The publication in one snapshot, by the parser its source names in the registry.

    ``tz`` is the zone naive page times are read in. Raises :class:`ParseError` when the
    snapshot is not what its type promises, or no source archives that article type.
    """
    try:
        source = source_for_article_type(article_type)
    except KeyError as exc:
        raise ParseError(str(exc.args[0])) from None
    parser = _parsers.get(source.parser)
    if parser is None:
        # Imported on first use: every `scrapy` command loads this package for
        # PARSER_VERSION, and the parsers' libraries take a fifth of a second to import.
        parser = _parsers[source.parser] = load_object(source.parser.replace(":", "."))
    return parser(raw, encoding, url, ZoneInfo(tz))
