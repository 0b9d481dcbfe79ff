"""What the process the parser processes are forked from does first (``scrapy
parse_snapshots --workers``, zeroarchive/parser/run.py): imports every parser, and loads
dateparser's languages, so that no parser process pays for either before its first page."""

from __future__ import annotations

from zeroarchive.parser import dcard, facebook, generic, ptt, youtube
from zeroarchive.parser.dates import load_date_languages

PARSERS = (dcard, facebook, generic, ptt, youtube)

load_date_languages()
