"""Sites as data: the site record, its typed crawl config, and validation of both.

A site config uses the 0archive keys (``article``, ``following``, ``depth``, ``delay``,
``ua``, ``cookies``, ``render`` or 0archive's ``selenium``, ``login_url``, ``robots``) plus
``feeds``, ``sitemaps`` and ``discover`` for feeds and sitemaps as list pages, ``url_rules``
for canonicalisation and ``schedule`` for the plan. What a type means, which
URLs a source can archive and which platform a URL is on come from the source registry.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zeroarchive import sources
from zeroarchive.core.schedule import DAY, ListBounds, Plan, plan_with_overrides
from zeroarchive.core.urls import UrlRejected, UrlRules, canonicalize_url
from zeroarchive.sites.proxies import check_proxy
from zeroarchive.sources import SiteUrlError, Source, UnknownSiteType

DEFAULT_TYPE = "news"
#: The long-tail watch: ages (seconds after the first snapshot) at which an article whose
#: plan has ended is checked again, and how many such checks a site gets per UTC day.
DEFAULT_WATCH = (7 * DAY, 30 * DAY, 90 * DAY, 180 * DAY, 365 * DAY)
DEFAULT_WATCH_BUDGET = 1000
MAX_WATCH_AGES = 20
DEFAULT_DEPTH = 3
#: The delay of a site whose config gives none, unless the setting ZEROARCHIVE_SITE_DELAY
#: says otherwise (middlewares/site_policy.py: site_delay).
DEFAULT_DELAY = 1.0
MAX_DEPTH = 50
CONFIG_KEYS = (
    "article",
    "following",
    "depth",
    "delay",
    "ua",
    "cookies",
    "render",
    "login_url",
    "feeds",
    "sitemaps",
    "discover",
    "blocked",
    "proxy",
    "cookies_file",
    "robots",
    "allow_private_targets",
    "url_rules",
    "schedule",
    "watch",
    "watch_budget",
    "daily_requests",
    "media",
    "media_max_bytes",
    "media_max_items",
    "video_keep_days",
)
#: What a site keeps of its pages' media by default (zeroarchive/media/), by site type.
DEFAULT_MEDIA = ("images", "styles")
TYPE_MEDIA = {"youtube": ("images", "styles", "video")}
MEDIA_CONFIG_KINDS = ("images", "styles", "video", "screenshot")
DEFAULT_MEDIA_MAX_BYTES = 20 * 2**20
DEFAULT_MEDIA_MAX_ITEMS = 40
#: Days a video's bytes are kept after the last snapshot that showed it (media/expiry.py).
DEFAULT_VIDEO_KEEP_DAYS = 30
#: 0archive's names of config keys.
CONFIG_ALIASES = {"selenium": "render"}
URL_RULE_KEYS = ("strip_www", "trailing_slash", "ignore_params", "keep_fragment")
SPEC_FIELDS = ("name", "url", "type", "category", "config", "active", "airtable_id")


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
    #: What only this site's block pages say (a login wall's text, say): such an answer is a
    #: failure of kind blocked, never a snapshot (zeroarchive/crawl/blocks.py).
    blocked: tuple[re.Pattern[str], ...] = ()
    depth: int = DEFAULT_DEPTH
    #: Seconds between its requests; None: the config gives none, so the crawl's
    #: ZEROARCHIVE_SITE_DELAY (by default DEFAULT_DELAY) applies.
    delay: float | None = None
    ua: str | None = None
    cookies: Mapping[str, str] = field(default_factory=dict)
    render: bool = False
    #: A login form to submit (credentials from the environment) before walking the site.
    login_url: str | None = None
    #: Feeds and sitemaps read as list pages (zeroarchive/crawl/feeds.py), besides ``url``.
    feeds: tuple[str, ...] = ()
    sitemaps: tuple[str, ...] = ()
    #: Also read the feeds the front page links to and the sitemaps robots.txt names.
    discover: bool = True
    #: Proxies for this site's requests, used in turn (else ZEROARCHIVE_PROXIES).
    proxies: tuple[str, ...] = ()
    #: A browser session's cookies (cookies.txt or JSON) sent with this site's requests.
    cookies_file: str | None = None
    robots: bool = True
    #: Its requests to its own host may reach loopback, private and link-local addresses
    #: (zeroarchive/core/targets.py).
    allow_private_targets: bool = False
    url_rules: UrlRules = field(default_factory=UrlRules)
    # Overrides of the site type's schedule plan (zeroarchive.core.schedule.plan_with_overrides).
    schedule: Mapping[str, Any] = field(default_factory=dict)
    #: Long-tail watch ages in seconds after the first snapshot, ascending (() = off).
    watch: tuple[int, ...] = DEFAULT_WATCH
    #: Long-tail watch checks per UTC day at most.
    watch_budget: int = DEFAULT_WATCH_BUDGET
    #: Tracked list page requests per UTC day at most (zeroarchive/crawl/list_intervals.py);
    #: None: its plan's default.
    daily_requests: int | None = None
    #: The kinds of media its pages keep (images, styles, video, screenshot); None: its
    #: type's default.
    media: tuple[str, ...] | None = None
    media_max_bytes: int = DEFAULT_MEDIA_MAX_BYTES
    media_max_items: int = DEFAULT_MEDIA_MAX_ITEMS
    #: Days its videos' bytes are kept; then `scrapy rotate_snapshots` removes them.
    video_keep_days: int = DEFAULT_VIDEO_KEEP_DAYS

    def is_article(self, url: str, as_found: str | None = None) -> bool:
        """Whether a link is an article: its canonical ``url``, or the link ``as_found`` on
        the page (0archive's regexes were written for the site's own URLs, query order
        and all)."""
        return any(
            pattern.search(url) or (as_found is not None and pattern.search(as_found))
            for pattern in self.article
        )

    def is_following(self, url: str) -> bool:
        # An empty `following` never means "follow everything" (0archive crawled whole sites).
        return any(pattern.search(url) for pattern in self.following)


#: The name of an ad-hoc site `scrapy save` files pages of an unknown host under.
ADHOC_PREFIX = "saved:"


@dataclass(frozen=True)
class Site:
    site_id: int
    name: str
    url: str
    type: str
    config: SiteConfig
    is_active: bool = True
    #: The researchers' category (an Airtable label or 0archive type name), if any.
    category: str | None = None

    @property
    def source(self) -> Source:
        return sources.source_for_type(self.type)

    @property
    def media(self) -> tuple[str, ...]:
        """The kinds of media its snapshots keep: its config's ``media``, else its source's
        default (``images`` and ``styles``; ``video`` too for YouTube; ``screenshot`` too
        for a site whose pages the browser renders: ``render: true``, Facebook)."""
        if self.config.media is not None:
            return self.config.media
        kinds = TYPE_MEDIA.get(self.source.name, DEFAULT_MEDIA)
        if self.config.render or self.source.renders:
            return (*kinds, "screenshot")
        return kinds

    @property
    def adhoc(self) -> bool:
        """Whether this is a site `scrapy save` made for pages of a host not in the table:
        inactive (never walked), yet its saved pages are snapshotted and watched."""
        return self.name.startswith(ADHOC_PREFIX)

    @property
    def plan(self) -> Plan:
        """Its type's plan with the site config's ``schedule`` overrides (validated when
        the config was parsed)."""
        base = sources.plan_for_type(self.type)
        if not self.config.schedule:
            return base
        return plan_with_overrides(base, self.config.schedule)

    @property
    def list_bounds(self) -> ListBounds:
        """Its list pages' interval bounds and daily request budget."""
        return ListBounds.of(self.plan, self.config.daily_requests)


@dataclass(frozen=True)
class SiteSpec:
    """A validated site definition, before it has an id: what load_sites upserts."""

    name: str
    url: str
    type: str
    config: Mapping[str, Any]
    is_active: bool = True
    airtable_id: str | None = None
    category: str | None = None
    #: What validation accepted but a person should know (a label the URL contradicts).
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def config_json(self) -> str:
        return json.dumps(self.config, ensure_ascii=False, sort_keys=True)


def split_patterns(value: Any, site: str, field_name: str) -> tuple[re.Pattern[str], ...]:
    """Compile a regex field: one string, several joined with "; " (0archive), or a list.

    >>> [p.pattern for p in split_patterns(r"/news/\\d+; /story/", "s", "article")]
    ['/news/\\\\d+', '/story/']
    >>> split_patterns("(unclosed", "demo", "article")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zeroarchive.sites.record.SiteConfigError: site 'demo': article: bad regex '(unclosed'...
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
    value = number_from_text(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SiteConfigError(site, name, f"must be a number, got {value!r}")
    if not low <= value <= high:
        raise SiteConfigError(site, name, f"must be between {low} and {high}, got {value!r}")
    return value


def number_from_text(value: Any) -> Any:
    """A number typed as text (Airtable text fields, 0archive's lists) becomes a number;
    anything else is left to validation.

    >>> number_from_text("3"), number_from_text(" 1.5 "), number_from_text(2)
    (3, 1.5, 2)
    >>> number_from_text("3 pages"), number_from_text("nan")
    ('3 pages', 'nan')
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return value
    return number if math.isfinite(number) else value


def _whole(value: float, site: str, name: str = "depth") -> int:
    if value != int(value):
        raise SiteConfigError(site, name, f"must be a whole number, got {value!r}")
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
    zeroarchive.sites.record.SiteConfigError: site 'demo': dpeth: unknown config key (known: ...)
    """
    raw = _unalias(raw, site)
    for key in raw:
        if key not in CONFIG_KEYS:
            known = ", ".join(CONFIG_KEYS)
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
        blocked=split_patterns(raw.get("blocked"), site, "blocked"),
        depth=_whole(_number(raw.get("depth", DEFAULT_DEPTH), site, "depth", 0, MAX_DEPTH), site),
        delay=None if "delay" not in raw else float(_number(raw["delay"], site, "delay", 0, 3600)),
        ua=ua,
        cookies={k: str(v) for k, v in cookies.items()},
        render=_flag(raw.get("render", False), site, "render"),
        login_url=_login_url(raw.get("login_url"), site),
        feeds=_urls(raw.get("feeds"), site, "feeds"),
        sitemaps=_urls(raw.get("sitemaps"), site, "sitemaps"),
        discover=_flag(raw.get("discover", True), site, "discover"),
        proxies=_proxies(raw.get("proxy"), site),
        cookies_file=_cookies_file(raw.get("cookies_file"), site),
        robots=_flag(raw.get("robots", True), site, "robots"),
        allow_private_targets=_flag(
            raw.get("allow_private_targets", False), site, "allow_private_targets"
        ),
        url_rules=rules,
        schedule=_schedule(raw.get("schedule"), site),
        watch=_watch(raw.get("watch", DEFAULT_WATCH), site),
        watch_budget=int(
            _whole(
                _number(
                    raw.get("watch_budget", DEFAULT_WATCH_BUDGET), site, "watch_budget", 0, 10**7
                ),
                site,
                "watch_budget",
            )
        ),
        daily_requests=_daily_requests(raw.get("daily_requests"), site),
        media=_media(raw.get("media"), site),
        media_max_bytes=int(
            _whole(
                _number(
                    raw.get("media_max_bytes", DEFAULT_MEDIA_MAX_BYTES),
                    site,
                    "media_max_bytes",
                    1,
                    2**40,
                ),
                site,
                "media_max_bytes",
            )
        ),
        media_max_items=int(
            _whole(
                _number(
                    raw.get("media_max_items", DEFAULT_MEDIA_MAX_ITEMS),
                    site,
                    "media_max_items",
                    0,
                    10_000,
                ),
                site,
                "media_max_items",
            )
        ),
        video_keep_days=int(
            _whole(
                _number(
                    raw.get("video_keep_days", DEFAULT_VIDEO_KEEP_DAYS),
                    site,
                    "video_keep_days",
                    1,
                    100 * 366,
                ),
                site,
                "video_keep_days",
            )
        ),
    )


def _daily_requests(value: Any, site: str) -> int | None:
    """The ``daily_requests`` budget: a whole number of requests, at least one.

    >>> _daily_requests(None, "demo"), _daily_requests("200", "demo")
    (None, 200)
    >>> _daily_requests(0, "demo")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zeroarchive.sites.record.SiteConfigError: site 'demo': daily_requests: must be between 1 ...
    """
    if value is None:
        return None
    number = _number(value, site, "daily_requests", 1, 10**7)
    return _whole(number, site, "daily_requests")


def _media(value: Any, site: str) -> tuple[str, ...] | None:
    """The ``media`` list: kinds of media to keep, replacing the site type's default.

    >>> _media(["images", "video"], "demo"), _media([], "demo"), _media(None, "demo")
    (('images', 'video'), (), None)
    >>> _media(["screenshots"], "demo")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zeroarchive.sites.record.SiteConfigError: site 'demo': media: unknown kind 'screenshots' ...
    """
    if value is None:
        return None
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list | tuple):
        raise SiteConfigError(site, "media", f"must be a list of kinds, got {value!r}")
    for kind in value:
        if kind not in MEDIA_CONFIG_KINDS:
            raise SiteConfigError(
                site, "media", f"unknown kind {kind!r} (known: {', '.join(MEDIA_CONFIG_KINDS)})"
            )
    return tuple(dict.fromkeys(value))


def _watch(value: Any, site: str) -> tuple[int, ...]:
    """The watch ages: a list of whole seconds (numbers or numeric text), any order.

    >>> _watch([30 * DAY, 7 * DAY, 7 * DAY], "demo")
    (604800, 2592000)
    >>> _watch([], "demo")
    ()
    """
    if not isinstance(value, list | tuple):
        raise SiteConfigError(site, "watch", f"must be a list of ages in seconds, got {value!r}")
    if len(value) > MAX_WATCH_AGES:
        raise SiteConfigError(site, "watch", f"at most {MAX_WATCH_AGES} ages")
    ages = {
        _whole(_number(age, site, "watch", 60, 100 * 365 * DAY), site, "watch") for age in value
    }
    return tuple(sorted(ages))


def _unalias(raw: Mapping[str, Any], site: str) -> Mapping[str, Any]:
    """The config with 0archive's key names (``selenium``) under ours (``render``)."""
    if not any(alias in raw for alias in CONFIG_ALIASES):
        return raw
    out = {k: v for k, v in raw.items() if k not in CONFIG_ALIASES}
    for alias, key in CONFIG_ALIASES.items():
        if alias in raw:
            if key in raw and raw[key] != raw[alias]:
                says = f"says {raw[alias]!r} but {key} says {raw[key]!r}"
                raise SiteConfigError(site, alias, says)
            out[key] = raw[alias]
    return out


def _proxies(value: Any, site: str) -> tuple[str, ...]:
    if value is None or value == "" or value == []:
        return ()
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise SiteConfigError(site, "proxy", "must be a proxy URL or a list of them")
    try:
        return tuple(check_proxy(v) for v in values)
    except ValueError as exc:
        raise SiteConfigError(site, "proxy", str(exc)) from None


def _cookies_file(value: Any, site: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise SiteConfigError(site, "cookies_file", "must be a file path")
    return value


def _login_url(value: Any, site: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise SiteConfigError(site, "login_url", "must be a URL")
    try:
        return canonicalize_url(value.strip())
    except UrlRejected as exc:
        raise SiteConfigError(site, "login_url", f"bad URL {value[:200]!r}: {exc}") from exc


def _urls(value: Any, site: str, field_name: str) -> tuple[str, ...]:
    """A field of URLs: one, or a list of them; each an absolute http(s) URL.

    >>> _urls(["https://x.example/rss", "https://x.example/atom"], "demo", "feeds")
    ('https://x.example/rss', 'https://x.example/atom')
    >>> _urls("/sitemap.xml", "demo", "sitemaps")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zeroarchive.sites.record.SiteConfigError: site 'demo': sitemaps: bad URL '/sitemap.xml': ...
    """
    if value is None or value == "" or value == []:
        return ()
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise SiteConfigError(site, field_name, "must be a URL or a list of URLs")
    urls = []
    for url in values:
        try:
            urls.append(canonicalize_url(url.strip()))
        except UrlRejected as exc:
            raise SiteConfigError(site, field_name, f"bad URL {url[:200]!r}: {exc}") from exc
    return tuple(dict.fromkeys(urls))


def _schedule(value: Any, site: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SiteConfigError(site, "schedule", "must be a mapping")
    try:
        plan_with_overrides(Plan(DAY, ()), value)
    except ValueError as exc:
        key, _, message = str(exc).partition(": ")
        raise SiteConfigError(site, f"schedule.{key}", message) from exc
    return dict(value)


def parse_spec(raw: Any, labels: Mapping[str, str] | None = None) -> SiteSpec:
    """Validate one entry of a sites file (or an Airtable row) into a SiteSpec.

    ``type`` may be a site type, one of 0archive's database type names, or a label of
    ``labels`` (normalised label -> site type; see ``sources.label_types``). A URL on a known
    platform (facebook.com, ptt.cc, dcard.tw, ...) decides the type by itself: a type that
    says otherwise is a warning, not an error. The type as given, when it is not our own
    name of the type, is kept as the site's ``category`` unless one is given.
    """
    if not isinstance(raw, Mapping):
        raise SiteConfigError("?", "entry", f"must be a mapping, got {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise SiteConfigError(str(raw.get("url", "?")), "name", "missing or empty")
    name = name.strip()
    unknown = sorted(set(raw) - set(SPEC_FIELDS))
    if unknown:
        raise SiteConfigError(name, unknown[0], "unknown field")
    given = raw.get("type", DEFAULT_TYPE)
    site_type = _site_type(given, name, labels)
    category = raw.get("category")
    if category is not None and not isinstance(category, str):
        raise SiteConfigError(name, "category", "must be text")
    if not category and given != site_type:
        category = str(given).strip()
    url = raw.get("url")
    if not isinstance(url, str):
        raise SiteConfigError(name, "url", "missing")
    config = raw.get("config") or {}
    if isinstance(config, str):
        config = _config_json(config, name)
    if not isinstance(config, Mapping):
        raise SiteConfigError(name, "config", "must be a mapping")
    parsed = parse_config(config, name)
    warnings: list[str] = []
    try:
        url = canonicalize_url(url.strip(), parsed.url_rules)
        platform = sources.platform_of(url)
        source = sources.source_for_type(site_type)
        if platform is not None and platform is not source:
            # The platform decides; a type that cannot mean it is worth a warning.
            if not sources.fits(str(given), platform):
                warnings.append(
                    f"site {name!r}: type {given!r} means a {source.name} site, but {url} is "
                    f"on {platform.name}: archived as {platform.type_names[0]}"
                )
            site_type, source = platform.type_names[0], platform
        url = canonicalize_url(source.site_url(url), parsed.url_rules)
    except (UrlRejected, SiteUrlError) as exc:
        raise SiteConfigError(name, "url", f"bad URL {url[:200]!r}: {exc}") from exc
    if "screenshot" in (parsed.media or ()) and not source.screenshots:
        raise SiteConfigError(
            name, "media", f"a {source.name} site's pages are not rendered: no screenshot"
        )
    return SiteSpec(
        name=name,
        url=url,
        type=site_type,
        config=dict(config),
        is_active=_flag(raw.get("active", True), name, "active"),
        airtable_id=raw.get("airtable_id"),
        category=category or None,
        warnings=tuple(warnings),
    )


def _site_type(given: Any, name: str, labels: Mapping[str, str] | None) -> str:
    if isinstance(given, str):
        if labels is not None and sources.normalise_label(given) in labels:
            return labels[sources.normalise_label(given)]
        try:
            return sources.resolve_type(given)
        except UnknownSiteType as exc:
            raise SiteConfigError(name, "type", str(exc)) from None
    raise SiteConfigError(name, "type", f"unknown type {given!r}")


def _json_escape(match: re.Match[str]) -> str:
    """A JSON escape as it is, or a backslash that escapes nothing JSON knows, doubled."""
    return match.group(0) if match.group(1) in '\\"/bfnrtu' else "\\" + match.group(0)


def _config_json(text: str, name: str) -> Any:
    r"""A config given as JSON text. 0archive's regexes carry needless escapes (``\&``)
    that are fine in a Python regex but not in JSON: a lone backslash is read as itself.

    >>> _config_json(r'{"article": "a\&b=\d+"}', "x")
    {'article': 'a\\&b=\\d+'}
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        lenient = re.sub(r"\\(.)", _json_escape, text, flags=re.DOTALL)
        try:
            return json.loads(lenient)
        except json.JSONDecodeError:
            raise SiteConfigError(name, "config", f"not valid JSON: {exc}") from exc
