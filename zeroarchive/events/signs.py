"""Whether one answer says the article is gone, and why (the event's ``evidence``).

Gone: a 404 or 410; a server redirect to the site's front page, to a list page or to
another host's root (a redirect to another article is a move, kept as one; to another
host's page, a failure; a page's own ``og:url`` or ``rel=canonical`` claim is never a
sign); a soft 404 (a 200 page like the site's answer to
a made-up URL, ``SiteProbe``); a removal notice (``notices.page_notice``); a platform's
own sign (a deleted PTT post, a deleted or hidden Dcard post, an unavailable Facebook
post, a removed or private YouTube video). A 5xx, a timeout or a block page is never a
sign: those are failures and back off as before.
"""

from __future__ import annotations

import difflib
import html
import json
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import lxml.etree
import lxml.html

from zeroarchive.core.encoding import decode_body
from zeroarchive.core.items import FetchedPage
from zeroarchive.core.urls import UrlRejected, canonicalize_url, is_on_site
from zeroarchive.events.notices import might_be_notice, notice_phrase, page_notice
from zeroarchive.sites.record import Site

#: HTTP statuses that say the page is gone.
GONE_STATUSES = frozenset({404, 410})
#: How much of a page is read for its text.
TEXT_BYTES = 256 * 1024
#: How far into a page its title and first heading are looked for.
HEAD_BYTES = 64 * 1024
#: Pages up to this size have their whole text searched for a removal notice; a larger page
#: is one only when its title or first heading says so (``notices.page_notice``): a bare
#: notice page (no layout) is a few KB, a notice in the site's layout names itself in its
#: title or heading, and searching every page's first 64 KB cost 50-70 % of saving it.
SHORT_PAGE_BYTES = 16 * 1024
#: A page of its last snapshot's size taken this long after the site's probe answered was
#: held against that probe when it was stored: it is not held against it again.
PROBE_SETTLED = 3600
#: A page within this many bytes (and this share) of its article's last snapshot is that
#: article again (noise: counters, tokens, ads), not a notice put in its place: a notice
#: page drops the article's text, more than this on all but the shortest articles.
SAME_SIZE_BYTES = 512
SAME_SIZE_SHARE = 0.01
#: A page this much like the site's not-found page (difflib ratio of their texts, equal
#: titles) is that page.
SOFT_404_SIMILARITY = 0.9
#: ... unless it has more text than that page by this many characters, or this many
#: characters the not-found page lacks: an article in a layout of menus and links, on a
#: site whose every page has the same title, is 90 % like the site's not-found page.
SOFT_404_EXTRA = 200
#: How much of the probe's text is kept (``probe.record_probe``).
PROBE_TEXT_CHARS = 8000

_YOUTUBE_STATUS = re.compile(
    r'"playabilityStatus"\s*:\s*\{\s*"status"\s*:\s*"([A-Z_]+)"\s*(?:,\s*"reason"\s*:\s*"([^"]*)")?'
)
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_HEADING = re.compile(rb"<h1(?:\s[^>]*)?>", re.IGNORECASE)
_HEADING_END = re.compile(rb"</h1\s*>", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")
#: Elements whose text is the site's, not the page's: ``NoticeText.own_text`` leaves it out.
_LAYOUT = "//a | //nav | //aside | //header | //footer | //form | //select | //button"
_PATH = re.compile(r"\S*/\S*")
_FACEBOOK_UNAVAILABLE = (
    "this content isn't available",
    "this content isn't available right now",
    "this page isn't available",
    "此內容目前無法顯示",
    "此內容目前無法使用",
)
_FACEBOOK_MARKERS = tuple(
    variant.encode()
    for marker in _FACEBOOK_UNAVAILABLE
    for variant in dict.fromkeys((marker, marker.replace("'", "\u2019")))
)


@dataclass(frozen=True)
class PageText:
    """A page's title and visible text, spaces collapsed."""

    title: str
    text: str


@dataclass(frozen=True)
class NoticeText:
    """What decides whether a page is a removal notice: its title, its first heading
    (``<h1>``), its visible text and its own text (outside ``_LAYOUT``), spaces collapsed."""

    title: str
    heading: str
    text: str
    own_text: str


@dataclass(frozen=True)
class Probe:
    """A site's answer (status 200) to a made-up URL: its own "not found" page."""

    site_id: int
    probed_at: int
    title: str
    text: str


def status_sign(status: int | None) -> str | None:
    """The evidence of a failed fetch's status, or None when it says nothing of deletion.

    >>> status_sign(404), status_sign(410), status_sign(503), status_sign(None)
    ('404', '410', None, None)
    """
    return str(status) if status in GONE_STATUSES else None


def page_text(body: bytes, encoding: str) -> PageText:
    """The title and visible text of (the start of) an HTML page.

    >>> html = "<title> 找不到 </title><p>頁面 <b>不存在</b></p><script>x()</script>"
    >>> page_text(html.encode(), "utf-8")
    PageText(title='找不到', text='找不到 頁面 不存在')
    """
    tree = _tree(body, encoding)
    if tree is None:
        return PageText("", "")
    title = " ".join(" ".join(tree.xpath("//title//text()")).split())
    return PageText(title, " ".join(tree.text_content().split()))


def _tree(body: bytes, encoding: str) -> lxml.html.HtmlElement | None:
    """The parsed start of a page (``TEXT_BYTES``) without what is never shown."""
    decoded = decode_body(body[:TEXT_BYTES], encoding)
    try:
        tree = lxml.html.document_fromstring(decoded)
    except (ValueError, lxml.etree.ParserError):
        return None
    for junk in tree.xpath("//script | //style | //noscript | //template"):
        junk.drop_tree()
    return tree


def page_sign(
    page: FetchedPage,
    site: Site,
    probe: Probe | None = None,
    last_size: int | None = None,
    last_at: int | None = None,
) -> str | None:
    """The evidence that a fetched (2xx) page means its article is gone, or None.

    ``last_size`` and ``last_at`` are the size and time of the article's last snapshot
    (None: no snapshot yet, or not known). Every page comes through here, so its text is
    parsed only when a cheap test says it may be a not-found page: its title is the
    probe's; or its title holds a removal notice's words; or, unless it is plainly its
    article again (``same_size``: noise changes a page by a few bytes), its first heading
    does, or it is short (``SHORT_PAGE_BYTES``) and its bytes do. A page of exactly the last
    snapshot's size is taken for that snapshot again (most re-snapshots are unchanged):
    only its title is held against the probe, and only when that snapshot was stored
    before the probe answered (``PROBE_SETTLED``), so that a soft 404 stored in a site's
    first crawl (which asks both at once) is still caught at its next fetch.
    """
    redirect = redirect_sign(page, site)
    if redirect:
        return redirect
    size = len(page.body)
    title: str | None = None
    if (
        probe is not None
        and page.article_type not in ("Dcard", "YTVideo")
        and not (
            last_size == size and last_at is not None and last_at >= probe.probed_at + PROBE_SETTLED
        )
    ):
        title = _title(page.body, page.encoding)
        if title == probe.title and is_soft_404(page_text(page.body, page.encoding), probe):
            return "soft-404"
    if last_size == size:
        return None  # its last snapshot again: no sign then, none now
    platform = platform_sign(page)
    if platform:
        return platform
    if page.article_type in ("Dcard", "YTVideo"):
        return None  # JSON and player pages: only their platform's signs count
    title = _title(page.body, page.encoding) if title is None else title
    may_be_notice = notice_phrase(title) or (
        not same_size(size, last_size)
        and (
            notice_phrase(_heading(page.body, page.encoding))
            or (size <= SHORT_PAGE_BYTES and might_be_notice(page.body, page.encoding))
        )
    )
    if may_be_notice:
        found = notice_text(page.body, page.encoding)
        if page_notice(found.title, found.heading, found.text, found.own_text):
            return "removed-notice"
    return None


def notice_text(body: bytes, encoding: str) -> NoticeText:
    """A page's title, first heading, visible text and own text (``NoticeText``).

    >>> page = "<title>無</title><nav><a>首頁</a></nav><h1><a>抱歉</a></h1><p>沒有</p>"
    >>> notice_text(page.encode(), "utf-8")
    NoticeText(title='無', heading='抱歉', text='無首頁抱歉沒有', own_text='無沒有')
    """
    tree = _tree(body, encoding)
    if tree is None:
        return NoticeText("", "", "", "")
    title = " ".join(" ".join(tree.xpath("//title//text()")).split())
    headings = tree.xpath("//h1")
    heading = " ".join(headings[0].text_content().split()) if headings else ""
    text = " ".join(tree.text_content().split())
    for layout in tree.xpath(_LAYOUT):
        layout.drop_tree()
    return NoticeText(title, heading, text, " ".join(tree.text_content().split()))


def same_size(size: int, last_size: int | None) -> bool:
    """Whether a page is plainly its article's last snapshot again, by size alone.

    >>> same_size(40_000, 40_000), same_size(40_300, 40_000), same_size(40_000, None)
    (True, True, False)
    >>> same_size(39_000, 40_000), same_size(1_000, 1_020)
    (False, False)
    """
    if last_size is None:
        return False
    return abs(size - last_size) <= min(SAME_SIZE_BYTES, last_size * SAME_SIZE_SHARE)


def _title(body: bytes, encoding: str) -> str:
    """The page's first title (in its first ``HEAD_BYTES``), entities resolved, spaces
    collapsed (as ``page_text``).

    >>> _title(b"<head><TITLE lang=x> Not&nbsp;found </TITLE>", "utf-8")
    'Not found'
    """
    if encoding.lower().startswith(("utf-16", "utf-32")):
        body, encoding = decode_body(body[:HEAD_BYTES], encoding).encode("utf-8"), "utf-8"
    found = _TITLE.search(body, 0, HEAD_BYTES)
    if found is None:
        return ""
    return " ".join(html.unescape(decode_body(found.group(1), encoding)).split())


def _heading(body: bytes, encoding: str) -> str:
    """The text of the page's first ``<h1>`` (in its first ``HEAD_BYTES``), tags dropped,
    entities resolved, spaces collapsed.

    >>> _heading(b"<h1 class=x><a href='/'>Page&nbsp;<b>not</b> found</a></H1><h1>b</h1>", "utf-8")
    'Page not found'
    >>> _heading(b"<h2>No first heading</h2>", "utf-8")
    ''
    """
    if encoding.lower().startswith(("utf-16", "utf-32")):
        body, encoding = decode_body(body[:HEAD_BYTES], encoding).encode("utf-8"), "utf-8"
    start = _HEADING.search(body, 0, HEAD_BYTES)
    if start is None:
        return ""
    # A heading is a line: a missing end tag must not make it the rest of the page.
    end = _HEADING_END.search(body, start.end(), start.end() + 4096)
    inner = body[start.end() : end.start() if end else start.end() + 4096]
    return " ".join(html.unescape(_TAG.sub(" ", decode_body(inner, encoding))).split())


def redirect_sign(page: FetchedPage, site: Site) -> str | None:
    """``redirect:<url>`` when the server redirected the page to the site's front page, to
    a URL of the site that is not an article of it (a list page), or to another host's
    root; None for a move to an article, for a redirect to another host's page (a failure:
    ``off_site_redirect``), and for a move the page only claims (``og:url``,
    ``rel=canonical``): a page that answers with its content is never gone for what it
    says of itself."""
    target = server_redirect(page, site)
    if target is None:
        return None
    if not is_on_site(target, site.url):
        return f"redirect:{page.final_url}" if urlsplit(target).path in ("", "/") else None
    if target in front_pages(site) or (site.config.article and not site.config.is_article(target)):
        return f"redirect:{page.final_url}"
    return None


def off_site_redirect(page: FetchedPage, site: Site) -> bool:
    """Whether the server sent the page to another host's page (not its root): not the
    article, nor a sign that it is gone (a site that moved, a consent or login wall), so
    the fetch failed, and is tried again later.

    >>> from zeroarchive.sites.record import SiteConfig
    >>> farm = Site(1, "farm", "https://farm.example/", "news", SiteConfig())
    >>> def fetched(url):
    ...     return FetchedPage(1, 1, "Article", 0, 200, url, {}, "utf-8", b"", moved_to=url)
    >>> off_site_redirect(fetched("https://new.example/news/1"), farm)
    True
    >>> off_site_redirect(fetched("https://new.example/"), farm)
    False
    >>> off_site_redirect(fetched("https://m.farm.example/news/1"), farm)
    False
    """
    target = server_redirect(page, site)
    return (
        target is not None
        and not is_on_site(target, site.url)
        and urlsplit(target).path not in ("", "/")
    )


def server_redirect(page: FetchedPage, site: Site) -> str | None:
    """Where the server redirected the page (its ``moved_to``), None when it did not: a
    ``moved_to`` that is not the answer's own URL is only the page's claim."""
    if page.moved_to is None:
        return None
    try:
        redirected = canonicalize_url(page.final_url, site.config.url_rules) == page.moved_to
    except UrlRejected:
        redirected = False
    return page.moved_to if redirected else None


def front_pages(site: Site) -> frozenset[str]:
    """The site's front page and its host's root, canonical."""
    parts = urlsplit(site.url)
    found = set()
    for url in (site.url, f"{parts.scheme}://{parts.netloc}/"):
        try:
            found.add(canonicalize_url(url, site.config.url_rules))
        except UrlRejected:
            continue
    return frozenset(found)


def is_soft_404(text: PageText, probe: Probe) -> bool:
    """Whether a page is the site's not-found page: the same title, and text that differs
    from the probe's answer by little more than the URL it names: 90 % alike, and no more
    than ``SOFT_404_EXTRA`` characters of its own (an article's body is more).

    >>> probe = Probe(1, 0, "Not here", "Not here Sorry, /x-1 is not here. Home")
    >>> is_soft_404(PageText("Not here", "Not here Sorry, /news/123 is not here. Home"), probe)
    True
    >>> is_soft_404(PageText("Not here", "A long article " * 40), probe)
    False
    """
    if text.title != probe.title:
        return False
    mine, theirs = _without_paths(text.text), _without_paths(probe.text)
    if not mine and not theirs:
        return True
    if len(probe.text) < PROBE_TEXT_CHARS and len(mine) > len(theirs) + SOFT_404_EXTRA:
        return False
    matcher = difflib.SequenceMatcher(None, mine[:4000], theirs[:4000], autojunk=False)
    if matcher.quick_ratio() < SOFT_404_SIMILARITY or matcher.ratio() < SOFT_404_SIMILARITY:
        return False
    matched = sum(block.size for block in matcher.get_matching_blocks())
    return len(mine[:4000]) - matched <= SOFT_404_EXTRA


def _without_paths(text: str) -> str:
    """Text without the URLs and paths a not-found page repeats from the request.

    >>> _without_paths("Sorry, /news/1 or https://s.tw/a is not here")
    'Sorry, or is not here'
    """
    return " ".join(_PATH.sub(" ", text).split())


def platform_sign(page: FetchedPage) -> str | None:
    """A platform's own sign that a post or video is gone, by article type."""
    if page.article_type == "Dcard":
        return _dcard_sign(page.body)
    if page.article_type == "YTVideo":
        return _youtube_sign(_playability(page.body))
    if page.article_type == "PTT":
        return _ptt_sign(page.body, page.encoding)
    if page.article_type == "FBPost" and _might_be_unavailable(page.body[:TEXT_BYTES]):
        text = page_text(page.body, page.encoding).text.replace("\u2019", "'").lower()
        if len(text) < 3000 and any(marker in text for marker in _FACEBOOK_UNAVAILABLE):
            return "platform:facebook-unavailable"
    return None


def _might_be_unavailable(head: bytes) -> bool:
    """Whether a Facebook page's bytes (UTF-8) hold an unavailable marker at all: the
    cheap test before its text is parsed.

    >>> _might_be_unavailable("<span>This content isn\u2019t available</span>".encode())
    True
    >>> _might_be_unavailable(b"<div>A post</div>")
    False
    """
    lowered = head.lower()  # UTF-8: only ASCII letters change
    return any(marker in lowered for marker in _FACEBOOK_MARKERS)


def _dcard_sign(body: bytes) -> str | None:
    """Dcard's post JSON (as the spider stores it: {"post": ..., "comments": ...}) marks a
    deleted post with ``deletedAt`` and a hidden one with ``hidden``; an error answer has
    ``error``.

    >>> _dcard_sign(b'{"post": {"id": 1, "deletedAt": "2020-01-01T00:00:00Z"}}')
    'platform:dcard-deleted'
    >>> _dcard_sign(b'{"post": {"id": 1, "hidden": true}}'), _dcard_sign(b'{"post": {"id": 1}}')
    ('platform:dcard-hidden', None)
    """
    try:
        document = json.loads(body)
    except ValueError:
        return None
    post = document.get("post", document) if isinstance(document, dict) else None
    if not isinstance(post, dict):
        return None
    if post.get("deletedAt"):
        return "platform:dcard-deleted"
    if post.get("hidden") is True:
        return "platform:dcard-hidden"
    if "error" in post and "id" not in post:
        return f"platform:dcard-error-{post['error']}"
    return None


def _youtube_sign(text: str) -> str | None:
    """A watch page whose player says the video is gone: status ERROR (removed or
    unavailable) or LOGIN_REQUIRED because it is private. Age gates and bot checks are
    LOGIN_REQUIRED too, and are not deletions.

    >>> status = '"playabilityStatus":{"status":"%s","reason":"%s"}'
    >>> _youtube_sign(status % ("ERROR", "Video unavailable"))
    'platform:youtube-unavailable'
    >>> _youtube_sign(status % ("LOGIN_REQUIRED", "This video is private"))
    'platform:youtube-private'
    >>> _youtube_sign(status % ("LOGIN_REQUIRED", "Sign in to confirm your age"))
    >>> _youtube_sign('"playabilityStatus":{"status":"OK"}')
    """
    found = _YOUTUBE_STATUS.search(text)
    if found is None:
        return None
    status, reason = found.group(1), (found.group(2) or "").lower()
    if "private" in reason and status in ("LOGIN_REQUIRED", "ERROR", "UNPLAYABLE"):
        return "platform:youtube-private"
    if status == "ERROR":
        return "platform:youtube-removed" if "removed" in reason else "platform:youtube-unavailable"
    return None


def _playability(body: bytes) -> str:
    """The player's ``playabilityStatus`` of a watch page and what follows it (a watch
    page is a megabyte: only this part is decoded).

    >>> _playability(b'x = {"playabilityStatus": {"status": "OK"}}')
    '"playabilityStatus": {"status": "OK"}}'
    >>> _playability(b"<html></html>")
    ''
    """
    start = body.find(b'"playabilityStatus"', 0, 4 * TEXT_BYTES)
    if start < 0:
        return ""
    return body[start : start + 2048].decode("utf-8", errors="replace")


def _ptt_sign(body: bytes, encoding: str) -> str | None:
    """A PTT answer without a post that says the post is gone (PTT answers a deleted
    post's URL with its "404 - Not Found." page)."""
    if b'id="main-content"' in body:
        return None
    text = page_text(body, encoding).text
    if "404 - Not Found" in text or "本文已被刪除" in text or "此文章已被刪除" in text:
        return "platform:ptt-deleted"
    return None
