"""What a source record holds. The records themselves live one a module beside this one;
``zeroarchive.sources`` gathers them into the registry every other part reads."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from zeroarchive.core.schedule import Plan
from zeroarchive.core.urls import host_of

# List pages go ahead of snapshots in every queue: one list page leads to many articles,
# and a walk goes one page at a time, so a list page that waited behind every snapshot
# queued before it would set the pace of discovery (and of the whole crawl).
LIST_PRIORITY = 10


class SiteUrlError(ValueError):
    """A site URL the source cannot archive; the message says what it expects."""


@dataclass(frozen=True)
class SiteType:
    """A kind of site a source serves, with its default schedule plan."""

    name: str
    plan: Plan
    #: Other names that mean this type: 0archive's database type names.
    aliases: tuple[str, ...] = ()


def any_site_url(url: str) -> str:
    """The site URL rule of sources that take any web page as a site's first list page."""
    return url


@dataclass(frozen=True)
class Source:
    """One source of the archive: everything the rest of the code needs to know of it."""

    #: The spider's name too: ``scrapy crawl <name>``.
    name: str
    #: ``Article.article_type`` of what its spider archives.
    article_type: str
    #: The site types it serves; the first is what a site on its platform becomes when
    #: nothing else says which.
    site_types: tuple[SiteType, ...]
    #: Its parser, ``module:function`` taking (raw, encoding, url, tz) -> Parsed; imported
    #: only when a snapshot of this source is parsed.
    parser: str
    #: Checks a site URL and returns the form the spider works from; SiteUrlError if the
    #: source cannot archive it. Applied on every host, so a mirror or a local server works.
    site_url: Callable[[str], str] = any_site_url
    #: Hosts that are this source's platform (their subdomains too): a site URL on one of
    #: them belongs to this source whatever type it was given.
    hosts: tuple[str, ...] = ()
    #: Airtable labels (researchers' categories) that mean a site type of this source.
    labels: Mapping[str, str] = field(default_factory=dict)
    #: Whether its spider needs a browser for every page.
    renders: bool = False
    #: Whether its spider can render a snapshot's page in the browser for a screenshot
    #: (media kind ``screenshot``).
    screenshots: bool = False
    #: Whether a snapshot is a document its spider assembled from several answers (Dcard's
    #: post and comment pages as one JSON), not one answer as served: a WARC export writes
    #: it as a ``resource`` record, not a ``response``.
    assembled: bool = False
    #: Queue priority of its list pages (snapshots have 0).
    list_priority: int = LIST_PRIORITY

    def __post_init__(self) -> None:
        names = [site_type.name for site_type in self.site_types]
        if not names:
            raise ValueError(f"source {self.name!r} serves no site type")
        unknown = sorted(set(self.labels.values()) - set(names))
        if unknown:
            raise ValueError(f"source {self.name!r}: labels name unknown types {unknown}")

    @property
    def type_names(self) -> tuple[str, ...]:
        return tuple(site_type.name for site_type in self.site_types)

    def is_platform_url(self, url: str) -> bool:
        """Whether ``url`` is on this source's platform.

        >>> ptt = Source("x", "X", (SiteType("x", Plan(60, ())),), "m:f", hosts=("ptt.cc",))
        >>> ptt.is_platform_url("https://www.PTT.cc/bbs/Gossiping/index.html")
        True
        """
        host = host_of(url)
        return any(host == known or host.endswith("." + known) for known in self.hosts)


def normalise_label(label: str) -> str:
    """How labels and type names are compared: case and spaces do not count.

    >>> normalise_label(" Fb 專頁 "), normalise_label("FB專頁"), normalise_label("YouTube  頻道")
    ('fb專頁', 'fb專頁', 'youtube頻道')
    """
    return re.sub(r"\s+", "", label).casefold()


def rebuild(url: str, path: str, query: str = "", netloc: str | None = None) -> str:
    """``url`` with a new path and query (and host), no fragment.

    >>> rebuild("https://www.ptt.cc/bbs/LoL?x=1#y", "/bbs/LoL/index.html")
    'https://www.ptt.cc/bbs/LoL/index.html'
    """
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc if netloc is None else netloc, path, query, ""))
