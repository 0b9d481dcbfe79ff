"""Imported first by the process that ``scrapy parse_snapshots --workers`` forks its parser
processes from (zeroarchive/parser/run.py, beside every source's parser module): loads
dateparser's languages once, so that no parser process pays for them (about 1.8 CPU s)
before its first undated page. Importing it is its whole work: it has no doctests, and the
test run does not collect it (pyproject.toml)."""

from __future__ import annotations

from zeroarchive.parser.dates import load_date_languages

load_date_languages()
