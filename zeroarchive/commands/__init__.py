"""The ``scrapy`` commands (``COMMANDS_MODULE``): each parses its arguments and calls the
package that does the work.

May import: every package. Never imported by any: the top of the house.
"""

from __future__ import annotations

from scrapy.exceptions import UsageError

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
