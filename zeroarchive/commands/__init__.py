"""The ``scrapy`` commands (``COMMANDS_MODULE``): each parses its arguments and calls the
package that does the work.

May import: every package. Never imported by any: the top of the house.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from scrapy.exceptions import UsageError

from zeroarchive.core.clock import parse_time
from zeroarchive.sites.record import Site
from zeroarchive.storage.archive import Archive
from zeroarchive.storage.sites import AmbiguousSite


def site_option(archive: Archive, name: str) -> Site:
    """The site a ``--site`` option names (its name or id), or a one-line usage error."""
    try:
        site = archive.sites.get(name)
    except AmbiguousSite as exc:
        raise UsageError(str(exc)) from None
    if site is None:
        raise UsageError(f"no site {name!r}: see `scrapy sites`")
    return site


def time_option(*, until: bool = False) -> Callable[[str], int]:
    """An argparse ``type`` for every option that takes a time (``--since``, ``--until``):
    unix seconds, a UTC day or a UTC time (zeroarchive/core/clock.py ``parse_time``)."""

    def parse(value: str) -> int:
        try:
            return parse_time(value, until=until)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


#: The help's words for a time option's value.
TIME_METAVAR = "TIME"
