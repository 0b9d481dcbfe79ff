"""Save page now: which site and source a URL someone asks to archive at once belongs to,
and its article row made due (`scrapy save`, the monitor's save form).

The source is chosen by the URL, as ``sync_sites`` does: a URL on a platform's host (PTT,
Dcard, Facebook, YouTube) is that platform's; a URL on the host of a site in the table is
that site's source; any other URL is an open-web page. The site is the one in the table
that holds the URL (an article already archived keeps its site; a PTT post its board's
site, a Dcard post its forum's, a Facebook post its page's or group's); else an ad-hoc,
inactive site that is never walked (``_adhoc_spec``: ``saved:<host>`` for open-web pages,
``saved:<source>:...`` for the platforms'; never with the URL's ``user:password@``).

A URL whose host is, or resolves to, a loopback, private, link-local, multicast or reserved
address is refused (zeroarchive/core/targets.py) unless the archive allows such targets or
the site it is filed under does (``allow_private_targets``, on its own host); the crawl checks every
redirect and meta refresh of it again (middlewares/private_targets.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit, urlunsplit

from sqlalchemy import select

from zeroarchive.core.targets import TargetRefused, check_host, resolve, site_allows
from zeroarchive.core.urls import UrlRejected, canonicalize_url, host_of, url_hash
from zeroarchive.sites.record import ADHOC_PREFIX, Site, SiteConfigError, SiteSpec, parse_spec
from zeroarchive.sources import Source, platform_of, source_named
from zeroarchive.sources.base import SiteUrlError, rebuild
from zeroarchive.sources.facebook import MOBILE_HOST
from zeroarchive.sources.facebook import post_url as facebook_post_url
from zeroarchive.sources.facebook import site_url as facebook_site_url
from zeroarchive.sources.ptt import POST_PATH as PTT_POST_PATH
from zeroarchive.sources.youtube import VIDEO_ID, WEB_HOST, watch_url
from zeroarchive.storage.archive import Archive
from zeroarchive.storage.schema import article, site
from zeroarchive.storage.sites import site_from_row

_DCARD_POST = re.compile(r"^(?P<prefix>.*)/f/(?P<forum>[A-Za-z0-9_-]+)/p/(?P<id>\d+)/?$")


class NotSavable(ValueError):
    """A URL `scrapy save` cannot archive; the message says why, in one line."""


@dataclass(frozen=True)
class SaveTarget:
    """One URL to save: the site it is filed under and its article's canonical URL."""

    site: Site
    url: str

    @property
    def source(self) -> Source:
        return self.site.source


#: Resolves a host name to its addresses (tests give their own).
Resolver = Callable[[str], Sequence[str]]


def save_targets(
    archive: Archive,
    urls: Sequence[str],
    now: int,
    allow_private: bool = False,
    resolver: Resolver = resolve,
) -> list[SaveTarget]:
    """The site and article URL of each URL, ad-hoc sites added, the articles added and
    made due now. NotSavable for the first URL that cannot be saved, before anything is
    added: one that is no URL, no page its source archives, or whose host is not public
    (unless ``allow_private`` or its site's ``allow_private_targets``)."""
    sites = _sites(archive)
    chosen = [_choose(archive, sites, given) for given in urls]
    if not allow_private:
        for url, held, _ in chosen:
            if held is None or not site_allows(held.url, held.config.allow_private_targets, url):
                _check_target(url, resolver)
    targets = []
    for url, held, spec in chosen:
        targets.append(SaveTarget(held or _adhoc_site(archive, spec, now), url))
    by_site: dict[int, list[SaveTarget]] = {}
    for target in targets:
        by_site.setdefault(target.site.site_id, []).append(target)
    for site_id, saved in by_site.items():
        urls = [target.url for target in saved]
        archive.articles.add(site_id, saved[0].source.article_type, urls, now)
        archive.articles.make_due(urls, now)
    return targets


def _choose(
    archive: Archive, sites: list[Site], given: str
) -> tuple[str, Site | None, SiteSpec | None]:
    """A URL's article URL and its site, or the spec of the ad-hoc site to file it under."""
    try:
        url = canonicalize_url(given)
    except UrlRejected as exc:
        raise NotSavable(f"not a URL to save: {given!r} ({exc})") from None
    held = _site_of_article(archive, url)
    if held is not None:
        return url, held, None
    # Ad-hoc sites are found by name below (_adhoc_site).
    on_host = [
        s for s in sites if _origin(s.url) == _origin(url) and not s.name.startswith(ADHOC_PREFIX)
    ]
    source = platform_of(url) or (on_host[0].source if on_host else source_named("generic"))
    article_url = _article_url(source, url)
    held = _site_of_article(archive, article_url)
    if held is not None:
        return article_url, held, None
    owner = _owner_url(source, url)
    for candidate in on_host:
        # An open-web page belongs to any site on its host; a post to its owner's site.
        if candidate.source is source and (source.name == "generic" or candidate.url == owner):
            return article_url, candidate, None
    return article_url, None, _adhoc_spec(source, url, owner)


def _check_target(url: str, resolver: Resolver) -> None:
    """NotSavable when the URL's host is not on the public internet; the message names
    the host and its address, never the URL's credentials."""
    try:
        check_host(urlsplit(url).hostname or "", resolver)
    except TargetRefused as exc:
        raise NotSavable(
            f"refused: {exc}; the archive fetches only public hosts (an operator may allow "
            "others: ZEROARCHIVE_ALLOW_PRIVATE_TARGETS, or a site's allow_private_targets)"
        ) from None


def _origin(url: str) -> tuple[str, int | None]:
    """A URL's host and port: the servers a site's pages come from.

    >>> _origin("http://127.0.0.1:8080/a"), _origin("https://News.tw/")
    (('127.0.0.1', 8080), ('news.tw', None))
    """
    try:
        port = urlsplit(url).port
    except ValueError:
        port = None
    return host_of(url), port


def _adhoc_site(archive: Archive, spec: SiteSpec | None, now: int) -> Site:
    """The ad-hoc site of ``spec``, added (or its config brought up to date)."""
    assert spec is not None
    site_id, _ = archive.sites.upsert(spec, now)
    found = archive.sites.get(site_id)
    assert found is not None
    return found


def _sites(archive: Archive) -> list[Site]:
    """Every site in the table, active ones first, then by id (a bad config is skipped)."""
    with archive.engine.connect() as conn:
        rows = conn.execute(
            select(site).order_by(site.c.is_active.desc(), site.c.site_id)
        ).mappings()
        found = []
        for row in rows:
            try:
                found.append(site_from_row(row))
            except SiteConfigError:
                continue
        return found


def _site_of_article(archive: Archive, url: str) -> Site | None:
    """The site of an article already in the archive under this URL."""
    with archive.engine.connect() as conn:
        site_id = conn.execute(
            select(article.c.site_id).where(article.c.url_hash == url_hash(url))
        ).scalar()
    return archive.sites.get(int(site_id)) if site_id is not None else None


def _article_url(source: Source, url: str) -> str:
    """The article URL the source's spider archives ``url`` as; NotSavable when it is no
    article of the source (a board index, a channel, a Facebook photo).

    >>> _article_url(source_named("facebook"), "https://www.facebook.com/x/posts/123/?a=1")
    'https://m.facebook.com/123'
    >>> _article_url(source_named("youtube"), "https://youtu.be/2lAe1cqCOXo")
    'https://www.youtube.com/watch?v=2lAe1cqCOXo'
    >>> _article_url(source_named("ptt"), "https://x.tw/bbs/LoL/index.html")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    zeroarchive.events.saving.NotSavable: https://x.tw/bbs/LoL/index.html: not a PTT post ...
    """
    path = urlsplit(url).path
    if source.name == "ptt" and PTT_POST_PATH.search(path) is None:
        raise NotSavable(f"{url}: not a PTT post (.../bbs/<Board>/M.<n>.A.<hex>.html)")
    if source.name == "dcard" and _DCARD_POST.match(path) is None:
        raise NotSavable(f"{url}: not a Dcard post (.../f/<forum>/p/<id>)")
    if source.name == "facebook":
        post = facebook_post_url(url)
        if post is None:
            raise NotSavable(f"{url}: not a Facebook post (a post's or permalink's URL)")
        # The spider's posts are on the mobile site, as its sites are.
        return rebuild(post, urlsplit(post).path, netloc=MOBILE_HOST) if platform_of(url) else post
    if source.name == "youtube":
        video = _video_id(url)
        if video is None:
            raise NotSavable(f"{url}: not a YouTube video (watch?v=..., youtu.be/..., shorts/)")
        return watch_url(f"https://{WEB_HOST}" if platform_of(url) else url, video)
    return url


def _video_id(url: str) -> str | None:
    """The video a YouTube URL shows.

    >>> _video_id("https://youtu.be/2lAe1cqCOXo?t=3")
    '2lAe1cqCOXo'
    >>> _video_id("https://m.youtube.com/shorts/2lAe1cqCOXo")
    '2lAe1cqCOXo'
    >>> _video_id("https://www.youtube.com/watch?v=2lAe1cqCOXo&list=x")
    '2lAe1cqCOXo'
    >>> _video_id("https://www.youtube.com/@setnews") is None
    True
    """
    parts = urlsplit(url)
    segments = [segment for segment in parts.path.split("/") if segment]
    if parts.path == "/watch":
        candidate = (parse_qs(parts.query).get("v") or [""])[0]
    elif host_of(url).endswith("youtu.be") and len(segments) == 1:
        candidate = segments[0]
    elif len(segments) == 2 and segments[0] in ("shorts", "live", "embed"):
        candidate = segments[1]
    else:
        return None
    return candidate if VIDEO_ID.fullmatch(candidate) else None


def _owner_url(source: Source, url: str) -> str | None:
    """The site URL of the board, forum, page or group a post's URL names (the form the
    site table keeps); None for an open-web page, a YouTube video (its URL names no
    channel) and a Facebook short permalink (no page).

    >>> _owner_url(source_named("ptt"), "https://www.ptt.cc/bbs/LoL/M.1.A.2.html")
    'https://www.ptt.cc/bbs/LoL/index.html'
    >>> _owner_url(source_named("dcard"), "https://www.dcard.tw/f/funny/p/224362515")
    'https://www.dcard.tw/f/funny'
    >>> _owner_url(source_named("facebook"), "https://www.facebook.com/Nintendo/posts/41/")
    'https://m.facebook.com/Nintendo/posts/'
    >>> _owner_url(source_named("facebook"), "https://m.facebook.com/story.php?story_fbid=4&id=11")
    'https://m.facebook.com/profile.php?id=11'
    >>> _owner_url(source_named("facebook"), "https://m.facebook.com/4193752747375813") is None
    True
    """
    parts = urlsplit(url)
    if source.name == "ptt":
        post = PTT_POST_PATH.search(parts.path)
        assert post is not None
        prefix = parts.path[: post.start()]
        return rebuild(url, f"{prefix}/bbs/{post['board']}/index.html")
    if source.name == "dcard":
        post = _DCARD_POST.match(parts.path)
        assert post is not None
        return rebuild(url, f"{post['prefix']}/f/{post['forum']}")
    if source.name != "facebook":
        return None
    if parts.path in ("/story.php", "/permalink.php"):
        owners = parse_qs(parts.query).get("id", [])
        if not owners or not owners[0].isdigit():
            return None
        url = rebuild(url, "/profile.php", f"id={owners[0]}")
    elif len([segment for segment in parts.path.split("/") if segment]) < 2:
        return None  # /<post id>: Facebook's short permalink
    try:
        return facebook_site_url(url)
    except SiteUrlError:
        return None


def _adhoc_spec(source: Source, url: str, owner: str | None) -> SiteSpec:
    """The ad-hoc, inactive site of a saved URL: never walked; its pages are snapshotted
    once, then watched (those saved with ``--watch``).
    An open-web page's is ``saved:<host>``; a post's is its board, forum, page or group as
    ``saved:<source>:<its URL>``; a video's, or a Facebook post's whose URL names no page,
    stands for the host (never walked, so its URL is never read as a channel's or page's).
    """
    parts = urlsplit(_without_credentials(url))
    owner = _without_credentials(owner) if owner is not None else None
    # Snapshotted once, then under the site's watch; which of its pages are watched is the
    # articles' (a page saved without --watch has its watch cleared: stop_watch).
    config: dict[str, object] = {"discover": False, "schedule": {"steps": []}}
    if source.name == "generic":
        # Any page of the host saved here is an article.
        config = {"article": ".", **config}
        raw_url, name = f"{parts.scheme}://{parts.netloc}/", f"{ADHOC_PREFIX}{parts.netloc}"
    elif owner is not None:
        raw_url, name = owner, f"{ADHOC_PREFIX}{source.name}:{owner}"
    else:
        name = f"{ADHOC_PREFIX}{source.name}:{parts.netloc}"
        return SiteSpec(
            name, f"{parts.scheme}://{parts.netloc}/", source.type_names[0], config, False
        )
    raw = {"name": name, "url": raw_url, "type": source.type_names[0], "active": False}
    try:
        return parse_spec({**raw, "config": config})
    except SiteConfigError as exc:
        raise NotSavable(str(exc)) from None


def _without_credentials(url: str) -> str:
    """``url`` without its ``user:password@``: a site's name and URL are shown everywhere.

    >>> _without_credentials("https://ann:s3cret@News.example:8443/a?b=1")
    'https://News.example:8443/a?b=1'
    >>> _without_credentials("https://news.example/a@b")
    'https://news.example/a@b'
    """
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
