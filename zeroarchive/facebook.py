"""Facebook rules shared by the facebook spider and its middleware: post URL normalisation,
login-wall/checkpoint detection and the browser settings, as pure functions and a frozen
config built from settings."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from scrapy.settings import BaseSettings

from zeroarchive.urls import UrlRules, canonicalize_url

__all__ = [
    "ARTICLE_TYPE",
    "BLOCKED_RESOURCE_TYPES",
    "CHROMIUM_ARGS",
    "FacebookConfig",
    "abort_request",
    "gate_kind",
    "post_id_of",
    "post_url",
]

ARTICLE_TYPE = "FBPost"
# Debian's Chromium, never a browser downloaded by `playwright install`.
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
# Pictures, video and fonts are not archived: never downloaded by the browser.
BLOCKED_RESOURCE_TYPES = frozenset({"image", "media", "font"})
# Facebook's mobile site (m.facebook.com) marks its comment pagers with these ids and sigils
# (as recorded in the corpus); the filter menu is found by its English labels.
EXPAND_SELECTOR = ", ".join(
    f"{target}:not([data-zeroarchive-tried])"
    for target in (
        'div[id^="see_next_"] a',
        'div[id^="see_prev_"] a',
        'div[data-sigil="replies-see-more"] a',
    )
)
FILTER_OPEN_SELECTOR = ':is(a, div[role="button"], span[role="button"]):text-is("Most relevant")'
FILTER_ALL_SELECTOR = ':is(a, div[role="menuitem"], div[role="button"]):text-is("All comments")'
_ID = r"(?:\d+|pfbid[0-9A-Za-z]+)"
_POST_PATHS = (
    re.compile(rf"^/[^/]+/posts/(?P<id>{_ID})/?$"),
    re.compile(rf"^/groups/[^/]+/permalink/(?P<id>{_ID})/?$"),
    re.compile(rf"^/(?P<id>{_ID})/?$"),
)
_STORY_PATHS = ("/story.php", "/permalink.php")
_LOGIN_PATHS = ("/login", "/login.php", "/login/")
_LOGIN_FORM = re.compile(r"<form\b[^>]*\bid=[\"']login_form[\"']", re.IGNORECASE)


def post_id_of(url: str) -> str | None:
    """The id of the post a Facebook URL shows, whatever form the link takes, else None.

    >>> post_id_of("https://m.facebook.com/story.php?story_fbid=4193752747375813&id=119240841493711&__tn__=%2As")
    '4193752747375813'
    >>> post_id_of("https://m.facebook.com/Nintendo/posts/4193752747375813/?refsrc=x")
    '4193752747375813'
    >>> post_id_of("https://m.facebook.com/groups/southamericansincomputing/permalink/1629606003787605/")
    '1629606003787605'
    >>> post_id_of("https://m.facebook.com/3065154550235644")
    '3065154550235644'
    >>> post_id_of("https://m.facebook.com/Nintendo/photos/a.1/2/") is None
    True
    >>> post_id_of("https://m.facebook.com/story.php?id=119240841493711") is None
    True
    """
    parts = urlsplit(url)
    if parts.path in _STORY_PATHS:
        values = parse_qs(parts.query).get("story_fbid", [])
        if values and re.fullmatch(_ID, values[0]):
            return values[0]
        return None
    for pattern in _POST_PATHS:
        found = pattern.match(parts.path)
        if found:
            return found.group("id")
    return None


def post_url(url: str, rules: UrlRules | None = None) -> str | None:
    """The one canonical URL of the post ``url`` links to: ``<scheme>://<host>/<post id>``,
    Facebook's own short permalink (it redirects to the post under its current owner), so
    story.php, permalink.php, /<page>/posts/<id> and group permalinks agree. None when
    ``url`` is no post. Raises :class:`zeroarchive.urls.UrlRejected` for a bad URL.

    >>> post_url("https://m.facebook.com/story.php?story_fbid=4193752747375813&id=119240841493711")
    'https://m.facebook.com/4193752747375813'
    >>> post_url("https://M.Facebook.com/Nintendo/posts/4193752747375813?fbclid=x#c")
    'https://m.facebook.com/4193752747375813'
    >>> post_url("http://127.0.0.1:8080/Nintendo/") is None
    True
    """
    post_id = post_id_of(canonicalize_url(url, rules))
    if post_id is None:
        return None
    parts = urlsplit(canonicalize_url(url, rules))
    return f"{parts.scheme}://{parts.netloc}/{post_id}"


def gate_kind(url: str, html: str) -> str | None:
    """``"checkpoint"`` or ``"login_wall"`` when Facebook answered with one instead of the
    page asked for, else None. Public pages link to /login.php everywhere, so only the
    page's own URL or a login form as the page counts.

    >>> gate_kind("https://m.facebook.com/checkpoint/?next=%2FNintendo", "")
    'checkpoint'
    >>> gate_kind("https://m.facebook.com/login.php?next=%2FNintendo", "")
    'login_wall'
    >>> gate_kind("https://m.facebook.com/Nintendo/", '<form method="post" id="login_form">')
    'login_wall'
    >>> gate_kind("https://m.facebook.com/Nintendo/", '<a href="/login.php">Log in</a>') is None
    True
    """
    path = urlsplit(url).path
    if path.startswith("/checkpoint"):
        return "checkpoint"
    if path in _LOGIN_PATHS or path.startswith("/login/"):
        return "login_wall"
    if _LOGIN_FORM.search(html):
        return "login_wall"
    return None


@dataclass(frozen=True)
class FacebookConfig:
    """The facebook spider's ``FACEBOOK_*`` settings, typed and checked.

    >>> from scrapy.settings import Settings
    >>> FacebookConfig.from_settings(Settings({"FACEBOOK_IDLE_SCROLLS": 3})).idle_scrolls
    3
    >>> FacebookConfig.from_settings(Settings({"FACEBOOK_CONTEXT_PAGES": 0}))
    Traceback (most recent call last):
    ...
    ValueError: FACEBOOK_CONTEXT_PAGES must be at least 1, got 0
    """

    chromium: str = "/usr/bin/chromium"
    chromium_args: tuple[str, ...] = CHROMIUM_ARGS
    idle_scrolls: int = 3
    scroll_seconds: float = 300.0
    scroll_wait: float = 2.0
    expand_seconds: float = 180.0
    expand_wait: float = 10.0
    context_pages: int = 20

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> FacebookConfig:
        default = cls()
        config = cls(
            chromium=settings.get("FACEBOOK_CHROMIUM", default.chromium),
            chromium_args=tuple(settings.getlist("FACEBOOK_CHROMIUM_ARGS", list(CHROMIUM_ARGS))),
            idle_scrolls=settings.getint("FACEBOOK_IDLE_SCROLLS", default.idle_scrolls),
            scroll_seconds=settings.getfloat("FACEBOOK_SCROLL_SECONDS", default.scroll_seconds),
            scroll_wait=settings.getfloat("FACEBOOK_SCROLL_WAIT", default.scroll_wait),
            expand_seconds=settings.getfloat("FACEBOOK_EXPAND_SECONDS", default.expand_seconds),
            expand_wait=settings.getfloat("FACEBOOK_EXPAND_WAIT", default.expand_wait),
            context_pages=settings.getint("FACEBOOK_CONTEXT_PAGES", default.context_pages),
        )
        for name in ("idle_scrolls", "context_pages"):
            if getattr(config, name) < 1:
                raise ValueError(
                    f"FACEBOOK_{name.upper()} must be at least 1, got {getattr(config, name)}"
                )
        for name in ("scroll_seconds", "scroll_wait", "expand_seconds", "expand_wait"):
            if getattr(config, name) <= 0:
                raise ValueError(
                    f"FACEBOOK_{name.upper()} must be positive, got {getattr(config, name)}"
                )
        return config

    def launch_options(self) -> dict[str, object]:
        """scrapy-playwright's ``PLAYWRIGHT_LAUNCH_OPTIONS`` for this config."""
        return {
            "executable_path": self.chromium,
            "args": list(self.chromium_args),
            "headless": True,
        }


def abort_request(request: Any) -> bool:
    """``PLAYWRIGHT_ABORT_REQUEST``: skip what the archive does not keep."""
    return bool(request.resource_type in BLOCKED_RESOURCE_TYPES)
