"""Imported first by the process that ``scrapy parse_snapshots --workers`` forks its parser
processes from (zeroarchive/parser/run.py, beside every source's parser module): loads
dateparser's languages once, so that no parser process pays for them (about 1.8 CPU s)
before its first undated page. Importing it is its whole work: it has no doctests, and the
test run does not collect it (pyproject.toml).

What it loaded is frozen out of the garbage collector: each parser process would otherwise
walk (and so copy from the forked pages) every pattern on its collections, about 0.17 CPU s
a process before its first page (two processes' start, alternating, 3.4-3.6 -> 3.0-3.2 CPU s
with the server's own 2.8)."""

from __future__ import annotations

import gc

from zeroarchive.parser.dates import load_date_languages

load_date_languages()
gc.freeze()
