"""Public Facebook pages and groups, read on Facebook's mobile site (m.facebook.com) by a
browser: spiders/facebook.py. What identifies a page, a group and a post, and what a
login wall looks like."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, unquote, urlsplit

from zeroarchive.core.schedule import DAILY_FOR_A_WEEK
from zeroarchive.core.urls import UrlRules, canonicalize_url
from zeroarchive.sources.base import SiteType, SiteUrlError, Source, rebuild

ARTICLE_TYPE = "FBPost"
PLATFORM_HOSTS = ("facebook.com", "fb.com")
# The spider reads the mobile site, whose markup its selectors were written for.
MOBILE_HOST = "m.facebook.com"
# First path segments that are Facebook's own features, never a page's name.
_NOT_PAGES = frozenset(
    {
        "ads", "bookmarks", "business", "checkpoint", "events", "friends", "gaming", "hashtag",
        "help", "home.php", "l.php", "login", "login.php", "marketplace", "messages",
        "notifications", "pages", "permalink.php", "pg", "photo", "photo.php", "policies",
        "privacy", "profile.php", "groups", "recover", "reel", "reels", "search", "settings",
        "sharer", "sharer.php", "stories", "story.php", "watch",
    }
)  # fmt: skip
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


def is_group(site_url: str) -> bool:
    """Whether a facebook site is a group (its posts are group permalinks), not a page.

    >>> is_group("https://m.facebook.com/groups/twgov/"), is_group("https://m.facebook.com/x/posts/")
    (True, False)
    """
    return urlsplit(site_url).path.startswith("/groups/")


def is_group_post(url: str) -> bool:
    """Whether a link is a group post's permalink (a group's listing also links the posts
    its members shared, which belong to their pages, not to the group).

    >>> is_group_post("/groups/southamericansincomputing/permalink/1629606003787605/?refid=18")
    True
    >>> is_group_post("/story.php?story_fbid=815014312772561&id=101291573906616")
    False
    """
    return _POST_PATHS[1].match(urlsplit(url).path) is not None


def post_url(url: str, rules: UrlRules | None = None) -> str | None:
    """The one canonical URL of the post ``url`` links to: ``<scheme>://<host>/<post id>``,
    Facebook's own short permalink (it redirects to the post under its current owner), so
    story.php, permalink.php, /<page>/posts/<id> and group permalinks agree. None when
    ``url`` is no post. Raises :class:`zeroarchive.core.urls.UrlRejected` for a bad URL.

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


def site_url(url: str) -> str:
    """The page's posts list (``/<page>/posts/``) or the group (``/groups/<id>/``) that a
    Facebook URL names, without tracking junk; on Facebook's own hosts, on its mobile site.

    >>> site_url("https://www.facebook.com/TaiwanNoOne/?__tn__=%2Cd%2CP-R&eid=ARB")
    'https://m.facebook.com/TaiwanNoOne/posts/'
    >>> site_url("https://www.facebook.com/pg/TaiwanNoOne/posts/?ref=page_internal")
    'https://m.facebook.com/TaiwanNoOne/posts/'
    >>> site_url("https://facebook.com/groups/117507531664134/permalink/1/?ref=share")
    'https://m.facebook.com/groups/117507531664134/'
    >>> site_url("https://www.facebook.com/pages/%E5%8F%B0%E7%81%A3/123456789/")
    'https://m.facebook.com/123456789/posts/'
    >>> site_url("https://www.facebook.com/profile.php?id=100064&sk=about")
    'https://m.facebook.com/profile.php?id=100064'
    >>> site_url("https://www.facebook.com/pages/SomePage")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zeroarchive.sources.base.SiteUrlError: not a Facebook page or group: /pages/SomePage ...
    >>> site_url("http://127.0.0.1:8080/Nintendo/posts/")
    'http://127.0.0.1:8080/Nintendo/posts/'
    >>> site_url("https://www.facebook.com/search/top?q=%E5%8F%B0%E7%81%A3")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zeroarchive.sources.base.SiteUrlError: not a Facebook page or group: /search/top ...
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    on_platform = any(host == h or host.endswith("." + h) for h in PLATFORM_HOSTS)
    netloc = MOBILE_HOST if on_platform else parts.netloc
    # Raw segments: a page name keeps the percent-encoding it came with.
    segments = [segment for segment in parts.path.split("/") if segment]
    first = unquote(segments[0]).lower() if segments else ""
    if first == "profile.php":
        ids = parse_qs(parts.query).get("id", [])
        if len(segments) == 1 and ids and ids[0].isdigit():
            return rebuild(url, "/profile.php", f"id={ids[0]}", netloc)
    elif first == "groups" and len(segments) >= 2:
        return rebuild(url, f"/groups/{segments[1]}/", netloc=netloc)
    elif first == "pages" and len(segments) >= 3 and segments[2].isdigit():
        return rebuild(url, f"/{segments[2]}/posts/", netloc=netloc)
    elif first == "pg" and len(segments) >= 2:
        return rebuild(url, f"/{segments[1]}/posts/", netloc=netloc)
    elif first and first not in _NOT_PAGES:
        return rebuild(url, f"/{segments[0]}/posts/", netloc=netloc)
    raise SiteUrlError(
        f"not a Facebook page or group: {parts.path or '/'} (expected /<page>/ or /groups/<id>/)"
    )


SOURCE = Source(
    name="facebook",
    article_type=ARTICLE_TYPE,
    site_types=(SiteType("facebook", DAILY_FOR_A_WEEK, aliases=("fb_page", "fb_public_group")),),
    parser="zeroarchive.parser.facebook:parse_facebook",
    site_url=site_url,
    hosts=PLATFORM_HOSTS,
    labels={
        "fb": "facebook",
        "fb粉專": "facebook",
        "粉專": "facebook",
        "Fb 專頁": "facebook",
        "Fb 公開社團": "facebook",
    },
    renders=True,
    screenshots=True,
)
