"""What a link's URL says about the page behind it, before it is fetched: an article (a
date, a long id, a headline slug, a story path) or a list, section, tag, author, search,
pagination, login, share or asset link. A score per URL, plain features added up; the
site's own repeated shapes add to it (zeroarchive/crawl/article_patterns.py).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit

from zeroarchive.core.url_shapes import PAGE_EXTENSIONS, is_slug, words_of

#: A score at or above this is an article.
ARTICLE_SCORE = 2
ASSET_EXTENSIONS = frozenset(
    [
        "jpg",
        "jpeg",
        "png",
        "gif",
        "webp",
        "svg",
        "ico",
        "bmp",
        "tif",
        "tiff",
        "pdf",
        "doc",
        "docx",
        "xls",
        "xlsx",
        "ppt",
        "pptx",
        "zip",
        "gz",
        "rar",
        "7z",
        "mp3",
        "mp4",
        "m4a",
        "wav",
        "ogg",
        "webm",
        "mov",
        "avi",
        "css",
        "js",
        "json",
        "xml",
        "rss",
        "atom",
        "txt",
        "csv",
        "apk",
        "exe",
        "dmg",
    ]
)
#: Path segments of lists and of pages that are no article: sections, tags, authors, search,
#: paging, accounts, sharing, the site's own pages.
LIST_WORDS = frozenset(
    [
        "tag",
        "tags",
        "topic",
        "topics",
        "category",
        "categories",
        "cat",
        "cate",
        "section",
        "sections",
        "channel",
        "channels",
        "author",
        "authors",
        "writer",
        "writers",
        "columnist",
        "columnists",
        "reporter",
        "reporters",
        "people",
        "profile",
        "profiles",
        "user",
        "users",
        "member",
        "members",
        "search",
        "find",
        "page",
        "pages",
        "paging",
        "login",
        "logout",
        "signin",
        "sign-in",
        "signup",
        "sign-up",
        "register",
        "registration",
        "account",
        "accounts",
        "auth",
        "subscribe",
        "subscription",
        "subscriptions",
        "newsletter",
        "newsletters",
        "share",
        "sharer",
        "sharing",
        "print",
        "email",
        "feed",
        "feeds",
        "rss",
        "atom",
        "sitemap",
        "archive",
        "archives",
        "about",
        "about-us",
        "contact",
        "contact-us",
        "privacy",
        "privacy-policy",
        "terms",
        "tos",
        "legal",
        "help",
        "faq",
        "advertise",
        "advertising",
        "ads",
        "jobs",
        "careers",
        "shop",
        "store",
        "cart",
        "coupons",
        "cookies",
        "policy",
        "policies",
        "index",
        "list",
        "lists",
        "latest",
        "most-recent",
        "popular",
        "trending",
        "forum",
        "forums",
        "comment",
        "comments",
        "series",
        "events",
        "home",
        "default",
    ]
)
#: Path segments that announce one story.
STORY_WORDS = frozenset(
    [
        "story",
        "stories",
        "entry",
        "entries",
        "article",
        "articles",
        "post",
        "posts",
        "news-detail",
        "detail",
        "details",
        "content",
        "review",
        "reviews",
        "gallery",
        "photo",
        "photos",
        "video",
        "videos",
        "watch",
        "a",
        "p",
        "n",
    ]
)
#: Query parameters of searches, paging, sorting and logins.
LIST_PARAMS = frozenset(
    [
        "page",
        "pg",
        "p",
        "pageno",
        "paged",
        "offset",
        "start",
        "q",
        "query",
        "s",
        "search",
        "keyword",
        "keywords",
        "kw",
        "tag",
        "tags",
        "sort",
        "order",
        "filter",
        "login",
        "redirect",
        "redirecturl",
        "return",
        "returnto",
        "next",
        "ref",
        "share",
    ]
)
#: Query parameters that name one item.
ID_PARAMS = re.compile(r"(?i)^(?:\w*id|no|sn|num|art|story|post|article|nid|aid|sid)$")
_DATE = re.compile(
    r"(?<!\d)(?:19|20)\d\d(?:[/_-]?(?:0[1-9]|1[0-2]))(?:[/_-]?(?:0[1-9]|[12]\d|3[01]))?(?!\d)"
)
_LONG_ID = re.compile(r"\d{7,}")
_ID = re.compile(r"(?<!\d)\d{6}(?!\d)")


def url_score(url: str) -> tuple[int, tuple[str, ...]]:
    """A link's article score and the features that made it (``ARTICLE_SCORE`` or more is
    an article).

    >>> url_score("https://news.ltn.com.tw/news/life/breakingnews/2504351")
    (2, ('id',))
    >>> url_score("https://www.cnn.com/2014/07/24/world/europe/ukraine-crisis/index.html")
    (2, ('date',))
    >>> url_score("https://www.wired.com/tag/video-games/")
    (-3, ('list-word',))
    >>> url_score("https://www.wired.com/category/gear/")
    (-3, ('list-word',))
    >>> url_score("http://www.news.cn/legal/2023-11/17/c_1129979935.htm")
    (4, ('date', 'id'))
    >>> url_score("https://example.org/archive/2023-11/17/")
    (-1, ('list-word', 'date'))
    >>> url_score("https://www.setn.com/News.aspx?NewsID=350370")
    (2, ('id-param',))
    >>> url_score("https://example.org/")
    (-5, ('front',))
    >>> url_score("https://farm.example/?p=48213"), url_score("https://farm.example/news?p=2")
    ((2, ('id-param',)), (-3, ('list-param',)))
    >>> url_score("https://example.org/politics")
    (-1, ('shallow',))
    >>> url_score("https://example.org/img/2024/05/photo-of-the-day.jpg")
    (-6, ('asset',))
    """
    parts = urlsplit(url)
    segments = [unquote(s) if "%" not in s else s for s in parts.path.split("/") if s]
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not segments and not query:
        return -5, ("front",)
    features: list[str] = []
    score = 0
    last = segments[-1] if segments else ""
    name, dot, ext = last.rpartition(".")
    ext = ext.lower() if dot else ""
    if ext in ASSET_EXTENSIONS:
        return -6, ("asset",)
    path = parts.path
    tail = "/".join(segments[-2:])
    listed = [i for i, segment in enumerate(segments) if segment.lower() in LIST_WORDS]
    # A list word ahead of a date and a long id names the story's section (news.cn/legal/
    # 2023-11/17/c_1129979935.htm), not a list or the site's legal page.
    if listed and not (
        max(listed) < len(segments) - 2 and _DATE.search(path) and _LONG_ID.search(tail)
    ):
        score -= 3
        features.append("list-word")
    if _DATE.search(path):
        score += 2
        features.append("date")
    if _LONG_ID.search(tail):
        score += 2
        features.append("id")
    elif _ID.search(tail):
        # Six digits are as often a section's code (chinatimes.com/focus/260501) as an id.
        score += 1
        features.append("id")
    stem = name if dot and ext in PAGE_EXTENSIONS else last
    if stem.lower() in ("index", "default", "main", "") and len(segments) >= 2:
        stem = segments[-2]
    words = [w for w in words_of(stem) if not w.isdigit()]
    # A list's name in a short stem ("news-list-2013-11-29"); a headline of three words or
    # more under a date or an id may say "home" or "email" and stay a headline.
    dated = "date" in features or "id" in features
    if (len(words) <= 2 or (len(words) == 3 and not dated)) and any(
        w.lower() in LIST_WORDS for w in words
    ):
        if "list-word" not in features:
            score -= 3
            features.append("list-word")
    elif is_slug(stem):
        score += 2 if "id" not in features else 1
        features.append("slug")
    if any(segment.lower() in STORY_WORDS for segment in segments[:-1]) and len(segments) >= 2:
        score += 1
        features.append("story-word")
    for key, value in query:
        lower = key.lower()
        if lower == "p" and value.isdigit() and len(value) >= 3:
            # WordPress's permalink of a post (?p=12345); a small ?p=2 is a page of a list.
            score += 2
            features.append("id-param")
            break
        if lower in LIST_PARAMS or lower.startswith("utm_"):
            if lower in ("p", "s", "q", "page", "search", "query", "keyword", "tag"):
                score -= 3
                features.append("list-param")
                break
        elif ID_PARAMS.match(key) and key.lower().removesuffix("id") in LIST_WORDS:
            score -= 3
            features.append("list-param")
            break
        elif ID_PARAMS.match(key) and value.isdigit() and len(value) >= 5:
            score += 2
            features.append("id-param")
            break
    if not features and len(segments) <= 2:
        score -= 1
        features.append("shallow")
    return score, tuple(features)


def depth(url: str) -> int:
    """Segments in the URL's path.

    >>> depth("https://news.ltn.com.tw/news/world/breakingnews/997893"), depth("https://x.tw/")
    (4, 0)
    """
    return len([s for s in urlsplit(url).path.split("/") if s])


def looks_like_article(url: str) -> bool:
    """Whether the URL alone says article.

    >>> looks_like_article("https://udn.com/news/story/7315/3705102")
    True
    >>> looks_like_article("https://udn.com/news/cate/2/6638")
    False
    """
    return url_score(url)[0] >= ARTICLE_SCORE
