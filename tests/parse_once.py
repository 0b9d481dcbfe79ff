"""The parser's reading of a real page, parsed once per test run however many test processes
ask for it.

The parser tests assert on the same real pages from many tests (a page's title, text and
date are three tests), and ``pytest -n 4`` hands them to its processes one at a time: each
process parsed each page again, and each paid for dateparser's ~200 languages on its first
undated page (about 1.8-4.5 CPU s a process). Here the first process to parse a page keeps
the result in the run's own temporary directory (which the test processes of one run share
and the next run does not see), keyed by every input the parser gets; the others read it
back. Each result still comes from the parser of this run: a broken parser fails the tests
that assert on it as before.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

import pytest

from zeroarchive.core.items import Parsed
from zeroarchive.parser import DEFAULT_TIMEZONE, parse_snapshot

_directory: Path | None = None
_parsed: dict[str, Parsed] = {}


def share_in(factory: pytest.TempPathFactory) -> None:
    """Keep the results under this run's temporary directory: under pytest-xdist the
    processes' own directories (``popen-gw0`` ...) sit in the run's, which they share."""
    global _directory
    base = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    _directory = base / "parsed-pages"
    _directory.mkdir(exist_ok=True)


def parsed(
    article_type: str, raw: bytes, encoding: str, url: str, tz: str = DEFAULT_TIMEZONE
) -> Parsed:
    """``parse_snapshot(article_type, raw, encoding, url, tz)``, parsed once per run (once
    per process where no test asked for :func:`share_in`)."""
    digest = hashlib.sha256(raw)
    digest.update(repr((article_type, encoding, url, tz)).encode())
    key = digest.hexdigest()
    if key in _parsed:
        return _parsed[key]
    path = _directory / f"{key}.pickle" if _directory is not None else None
    try:
        result = pickle.loads(path.read_bytes()) if path is not None else None
    except FileNotFoundError:
        result = None
    if result is None:
        result = parse_snapshot(article_type, raw, encoding, url, tz)
        if path is not None:
            # Written whole under another name, then renamed: a process reading it at the
            # same time sees the whole result or none.
            partial = path.with_suffix(f".{os.getpid()}")
            partial.write_bytes(pickle.dumps(result))
            partial.replace(path)
    _parsed[key] = result
    return result
