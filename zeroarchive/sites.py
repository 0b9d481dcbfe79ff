"""Sites as data: the site record, its typed crawl config, and validation of both.

A site config uses the 0archive keys (``article``, ``following``, ``depth``, ``delay``,
``ua``, ``cookies``, ``render``, ``robots``) plus ``url_rules`` for canonicalisation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zeroarchive.schedule import PLANS, plan_with_overrides
from zeroarchive.urls import UrlRejected, UrlRules, canonicalize_url

GENERIC_TYPES = ("news", "content_farm", "gov", "youtube")
SITE_TYPES = (*GENERIC_TYPES, "ptt", "dcard", "facebook")
DEFAULT_DEPTH = 3
DEFAULT_DELAY = 1.0
MAX_DEPTH = 50
CONFIG_KEYS = ("article", "following", "depth", "delay", "ua", "cookies", "render", "robots")
URL_RULE_KEYS = ("strip_www", "trailing_slash", "ignore_params", "keep_fragment")


class SiteConfigError(ValueError):
    """A site definition that cannot be used; names the site and the field."""

    def __init__(self, site: str, field: str, message: str) -> None:
        super().__init__(f"site {site!r}: {field}: {message}")
        self.site = site
        self.field = field
        self.message = message


@dataclass(frozen=True)
class SiteConfig:
    article: tuple[re.Pattern[str], ...] = ()
    following: tuple[re.Pattern[str], ...] = ()
    depth: int = DEFAULT_DEPTH
    delay: float = DEFAULT_DELAY
    ua: str | None = None
    cookies: Mapping[str, str] = field(default_factory=dict)
    render: bool = False
    robots: bool = True
    url_rules: UrlRules = field(default_factory=UrlRules)
    # Overrides of the site type's schedule plan (zeroarchive.schedule.plan_with_overrides).
    schedule: Mapping[str, Any] = field(default_factory=dict)

    def is_article(self, url: str) -> bool:
        return any(pattern.search(url) for pattern in self.article)

    def is_following(self, url: str) -> bool:
        # An empty `following` never means "follow everything" (0archive crawled whole sites).
        return any(pattern.search(url) for pattern in self.following)


@dataclass(frozen=True)
class Site:
    site_id: int
    name: str
    url: str
    type: str
    config: SiteConfig
    is_active: bool = True


@dataclass(frozen=True)
class SiteSpec:
    """A validated site definition, before it has an id: what load_sites upserts."""

    name: str
    url: str
    type: str
    config: Mapping[str, Any]
    is_active: bool = True
    airtable_id: str | None = None

    def config_json(self) -> str:
        return json.dumps(self.config, ensure_ascii=False, sort_keys=True)


def split_patterns(value: Any, site: str, field_name: str) -> tuple[re.Pattern[str], ...]:
    """Compile a regex field: one string, several joined with "; " (0archive), or a list.

    >>> [p.pattern for p in split_patterns(r"/news/\\d+; /story/", "s", "article")]
    ['/news/\\\\d+', '/story/']
    >>> split_patterns("(unclosed", "demo", "article")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zeroarchive.sites.SiteConfigError: site 'demo': article: bad regex '(unclosed': missing ),...
    """
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        parts = [part.strip() for part in value.split("; ")]
    elif isinstance(value, list) and all(isinstance(part, str) for part in value):
        parts = [part.strip() for part in value]
    else:
        raise SiteConfigError(site, field_name, "must be a regex string or a list of them")
    patterns = []
    for part in parts:
        if not part:
            continue
        try:
            patterns.append(re.compile(part))
        except re.error as exc:
            raise SiteConfigError(site, field_name, f"bad regex {part!r}: {exc}") from exc
    return tuple(patterns)


def _number(value: Any, site: str, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SiteConfigError(site, name, f"must be a number, got {value!r}")
    if not low <= value <= high:
        raise SiteConfigError(site, name, f"must be between {low} and {high}, got {value!r}")
    return value


def _whole(value: float, site: str) -> int:
    if value != int(value):
        raise SiteConfigError(site, "depth", f"must be a whole number, got {value!r}")
    return int(value)


def _flag(value: Any, site: str, name: str) -> bool:
    if not isinstance(value, bool):
        raise SiteConfigError(site, name, f"must be true or false, got {value!r}")
    return value


def parse_config(raw: Mapping[str, Any], site: str) -> SiteConfig:
    """Validate a config mapping into a SiteConfig; raises SiteConfigError naming the field.

    >>> parse_config({"article": "/a/", "depth": 2}, "demo").depth
    2
    >>> parse_config({"dpeth": 2}, "demo")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zeroarchive.sites.SiteConfigError: site 'demo': dpeth: unknown config key (known: article, ...)
    """
    for key in raw:
        if key not in (*CONFIG_KEYS, "url_rules", "schedule"):
            known = ", ".join((*CONFIG_KEYS, "url_rules", "schedule"))
            raise SiteConfigError(site, key, f"unknown config key (known: {known})")
    ua = raw.get("ua")
    if ua is not None and (not isinstance(ua, str) or "\n" in ua):
        raise SiteConfigError(site, "ua", "must be a one-line string")
    cookies = raw.get("cookies") or {}
    if not isinstance(cookies, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str | int) for k, v in cookies.items()
    ):
        raise SiteConfigError(site, "cookies", "must be a mapping of names to values")
    rules_raw = raw.get("url_rules") or {}
    if not isinstance(rules_raw, Mapping):
        raise SiteConfigError(site, "url_rules", "must be a mapping")
    unknown = sorted(set(rules_raw) - set(URL_RULE_KEYS))
    if unknown:
        raise SiteConfigError(site, f"url_rules.{unknown[0]}", "unknown rule")
    try:
        rules = UrlRules(
            strip_www=rules_raw.get("strip_www", False),
            trailing_slash=rules_raw.get("trailing_slash", "keep"),
            # Not tuple(): that would turn a lone string "ref" into ("r", "e", "f").
            ignore_params=rules_raw.get("ignore_params", ()),
            keep_fragment=rules_raw.get("keep_fragment", False),
        )
    except (TypeError, ValueError) as exc:
        raise SiteConfigError(site, "url_rules", str(exc)) from exc
    return SiteConfig(
        article=split_patterns(raw.get("article"), site, "article"),
        following=split_patterns(raw.get("following"), site, "following"),
        depth=_whole(_number(raw.get("depth", DEFAULT_DEPTH), site, "depth", 0, MAX_DEPTH), site),
        delay=float(_number(raw.get("delay", DEFAULT_DELAY), site, "delay", 0, 3600)),
        ua=ua,
        cookies={k: str(v) for k, v in cookies.items()},
        render=_flag(raw.get("render", False), site, "render"),
        robots=_flag(raw.get("robots", True), site, "robots"),
        url_rules=rules,
        schedule=_schedule(raw.get("schedule"), site),
    )


def _schedule(value: Any, site: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SiteConfigError(site, "schedule", "must be a mapping")
    try:
        plan_with_overrides(PLANS["news"], value)
    except ValueError as exc:
        key, _, message = str(exc).partition(": ")
        raise SiteConfigError(site, f"schedule.{key}", message) from exc
    return dict(value)


def parse_spec(raw: Any) -> SiteSpec:
    """Validate one entry of a sites file into a SiteSpec."""
    if not isinstance(raw, Mapping):
        raise SiteConfigError("?", "entry", f"must be a mapping, got {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SiteConfigError(str(raw.get("url", "?")), "name", "missing or empty")
    name = name.strip()
    unknown = sorted(set(raw) - {"name", "url", "type", "config", "active", "airtable_id"})
    if unknown:
        raise SiteConfigError(name, unknown[0], "unknown field")
    site_type = raw.get("type", "news")
    if site_type not in SITE_TYPES:
        raise SiteConfigError(
            name, "type", f"unknown type {site_type!r} (known: {', '.join(SITE_TYPES)})"
        )
    url = raw.get("url")
    if not isinstance(url, str):
        raise SiteConfigError(name, "url", "missing")
    config = raw.get("config") or {}
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError as exc:
            raise SiteConfigError(name, "config", f"not valid JSON: {exc}") from exc
    if not isinstance(config, Mapping):
        raise SiteConfigError(name, "config", "must be a mapping")
    parsed = parse_config(config, name)
    try:
        url = canonicalize_url(url.strip(), parsed.url_rules)
    except UrlRejected as exc:
        raise SiteConfigError(name, "url", f"bad URL {url[:200]!r}: {exc}") from exc
    if site_type in GENERIC_TYPES and not parsed.article:
        raise SiteConfigError(name, "article", "a generic site needs an article regex")
    return SiteSpec(
        name=name,
        url=url,
        type=site_type,
        config=dict(config),
        is_active=_flag(raw.get("active", True), name, "active"),
        airtable_id=raw.get("airtable_id"),
    )
