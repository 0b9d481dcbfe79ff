"""The registry of sources: one record per source (zeroarchive/sources/<name>.py), read by
site validation, schedules, the Airtable mapping, parser dispatch, the spiders' queues and
the monitor. None of them keeps its own list of types.

Adding a source: a module here with its ``SOURCE`` record, listed in ``SOURCES`` below;
a spider ``spiders/<name>.py`` whose ``source`` is that record; a parser module named by
the record; and their tests (README, "Adding a source").

May import: ``core`` only.
Never imported by: ``core``; every other package may read the registry.

May import: ``core`` only.
Never imported by: ``core``; every other package may read the registry.
"""

from __future__ import annotations

from collections.abc import Mapping

from zeroarchive.core.schedule import Plan
from zeroarchive.sources import dcard, facebook, generic, ptt, youtube
from zeroarchive.sources.base import (
    LIST_PRIORITY,
    SiteType,
    SiteUrlError,
    Source,
    normalise_label,
)

__all__ = [
    "LIST_PRIORITY",
    "SOURCES",
    "SiteType",
    "SiteUrlError",
    "Source",
    "UnknownSiteType",
    "fits",
    "label_types",
    "normalise_label",
    "platform_of",
    "resolve_type",
    "site_type",
    "site_type_names",
    "source_for_article_type",
    "source_for_type",
    "source_named",
]

SOURCES: tuple[Source, ...] = (
    generic.SOURCE,
    ptt.SOURCE,
    dcard.SOURCE,
    facebook.SOURCE,
    youtube.SOURCE,
)


class UnknownSiteType(ValueError):
    """A type name that is neither a site type, nor an alias, nor a known label."""


def _index() -> tuple[dict[str, Source], dict[str, SiteType], dict[str, str]]:
    by_type: dict[str, Source] = {}
    types: dict[str, SiteType] = {}
    names: dict[str, str] = {}
    for source in SOURCES:
        for kind in source.site_types:
            if kind.name in by_type:
                raise ValueError(f"site type {kind.name!r} served by two sources")
            by_type[kind.name] = source
            types[kind.name] = kind
            for name in (kind.name, *kind.aliases):
                names[normalise_label(name)] = kind.name
    return by_type, types, names


_BY_TYPE, _TYPES, _TYPE_NAMES = _index()
_BY_NAME = {source.name: source for source in SOURCES}
_BY_ARTICLE_TYPE = {source.article_type: source for source in SOURCES}
#: Airtable labels of every source, normalised, to site types; type names and aliases too.
#: A label two sources claim means the first one's type (registry order) when the URL is
#: on no platform.
_LABELS = {
    **{normalise_label(label): kind for s in reversed(SOURCES) for label, kind in s.labels.items()},
    **_TYPE_NAMES,
}


def site_type_names() -> tuple[str, ...]:
    """Every site type, in registry order.

    >>> site_type_names()[:3]
    ('news', 'content_farm', 'gov')
    """
    return tuple(_TYPES)


def source_named(name: str) -> Source:
    """The source (and spider) of this name; KeyError names the known ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no source {name!r} (known: {', '.join(_BY_NAME)})") from None


def resolve_type(name: str) -> str:
    """The site type a type name or one of its aliases (0archive's database names) means.

    >>> resolve_type("news"), resolve_type("official_media"), resolve_type("fb_public_group")
    ('news', 'news', 'facebook')
    >>> resolve_type("blog")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zeroarchive.sources.UnknownSiteType: unknown type 'blog' (known: news, content_farm, ...
    """
    found = _TYPE_NAMES.get(normalise_label(name))
    if found is None:
        aliases = [alias for kind in _TYPES.values() for alias in kind.aliases]
        raise UnknownSiteType(
            f"unknown type {name!r} (known: {', '.join(_TYPES)}; or 0archive's "
            f"{', '.join(aliases)})"
        )
    return found


def site_type(name: str) -> SiteType:
    """The record of a site type (aliases resolved)."""
    return _TYPES[resolve_type(name)]


def plan_for_type(name: str) -> Plan:
    """The default schedule plan of a site type.

    >>> plan_for_type("news").list_interval, plan_for_type("gov").steps
    (600, ())
    """
    return site_type(name).plan


def source_for_type(name: str) -> Source:
    """The source that serves a site type.

    >>> source_for_type("content_farm").name, source_for_type("ptt_board").name
    ('generic', 'ptt')
    """
    return _BY_TYPE[resolve_type(name)]


def source_for_article_type(article_type: str) -> Source:
    """The source whose spider archives articles of this type (KeyError if none)."""
    try:
        return _BY_ARTICLE_TYPE[article_type]
    except KeyError:
        raise KeyError(f"no source archives articles of type {article_type!r}") from None


def platform_of(url: str) -> Source | None:
    """The source whose platform ``url`` is on, or None for the open web.

    >>> platform_of("https://m.facebook.com/groups/1/").name, platform_of("https://cna.com.tw/")
    ('facebook', None)
    """
    return next((source for source in SOURCES if source.is_platform_url(url)), None)


def fits(given: str, source: Source) -> bool:
    """Whether a type name or label may mean a site of ``source`` (a URL on its platform
    given this type says nothing against it).

    >>> fits("討論區看板", source_named("dcard")), fits("新聞網站", source_named("dcard"))
    (True, False)
    """
    label = normalise_label(given)
    if label in {normalise_label(own) for own in source.labels}:
        return True
    return _LABELS.get(label) in source.type_names


def label_types(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Labels (normalised) to site types: every source's labels, type names and aliases,
    then ``extra`` (the AIRTABLE_TYPE_MAP setting), which adds or overrides labels.
    ValueError when ``extra`` maps a label to no known type.

    >>> labels = label_types({"部落格": "content_farm"})
    >>> labels["官媒"], labels["ptt看板"], labels["部落格"], labels["fb_page"]
    ('news', 'ptt', 'content_farm', 'facebook')
    """
    labels = dict(_LABELS)
    for label, kind in (extra or {}).items():
        try:
            labels[normalise_label(str(label))] = resolve_type(str(kind))
        except UnknownSiteType as exc:
            raise ValueError(f"AIRTABLE_TYPE_MAP: label {label!r}: {exc}") from None
    return labels
