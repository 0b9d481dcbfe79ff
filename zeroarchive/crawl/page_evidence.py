"""What a fetched page says about itself: one article (``og:type`` article, JSON-LD
NewsArticle or Article, one ``<article>``, a published time, a long body with few links) or a
list (many ``<article>`` blocks, a body mostly of links, a collection in its JSON-LD).

The verdict confirms or refutes the shape of the URL it was fetched from
(zeroarchive/crawl/article_patterns.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from lxml import html as lxml_html

ARTICLE = "article"
LIST = "list"
UNKNOWN = ""
ARTICLE_TYPES = frozenset(
    [
        "article",
        "newsarticle",
        "reportagenews",
        "analysisnewsarticle",
        "opinionnewsarticle",
        "reviewnewsarticle",
        "backgroundnewsarticle",
        "blogposting",
        "socialmediaposting",
        "liveblogposting",
        "report",
        "scholarlyarticle",
        "techarticle",
        "videoobject",
        "review",
    ]
)
LIST_TYPES = frozenset(
    ["collectionpage", "itemlist", "searchresultspage", "website", "profilepage"]
)
_OG_TYPE = re.compile(r"""<meta[^>]+(?:property|name)\s*=\s*["']og:type["'][^>]*>""", re.IGNORECASE)
_CONTENT = re.compile(r"""content\s*=\s*["']([^"']*)["']""", re.IGNORECASE)
_PUBLISHED = re.compile(
    r"""article:published_time|itemprop\s*=\s*["']datePublished|"datePublished"\s*:""",
    re.IGNORECASE,
)
_JSON_LD = re.compile(
    r"""<script[^>]+application/ld\+json[^>]*>(.*?)</script>""", re.IGNORECASE | re.DOTALL
)
_TYPE = re.compile(r""""@type"\s*:\s*(?:"([^"]+)"|\[([^\]]*)\])""")
_ARTICLE_TAG = re.compile(r"<article[\s>]", re.IGNORECASE)
#: Paragraph text that makes an article, in characters (CJK text is denser: counted twice).
LONG_BODY = 800


@dataclass(frozen=True)
class PageEvidence:
    verdict: str
    score: int
    features: tuple[str, ...]


def json_ld_types(page: str) -> set[str]:
    """The lower-cased ``@type``\\ s of a page's JSON-LD blocks.

    >>> sorted(json_ld_types('<script type="application/ld+json">'
    ...     '{"@type": ["NewsArticle"], "author": {"@type": "Person"}}</script>'))
    ['newsarticle', 'person']
    """
    found: set[str] = set()
    for block in _JSON_LD.findall(page):
        for one, many in _TYPE.findall(block):
            names = [one] if one else json.loads(f"[{many}]") if many.strip() else []
            found.update(str(name).lower() for name in names)
    return found


def body_text_and_links(page: str) -> tuple[int, int]:
    """Characters of the page's paragraph text (paragraphs that are not mostly links) and
    of its link text, CJK counted twice: an article is paragraphs, a list is links.

    >>> body_text_and_links("<p>Some words here.</p><p><a href='/x'>link</a></p><a>more</a>")
    (16, 9)
    """
    try:
        tree = lxml_html.fromstring(page)
    except (ValueError, TypeError, lxml_html.etree.ParserError):
        return 0, 0
    for bad in tree.xpath("//script|//style|//noscript|//template"):
        bad.drop_tree()
    paragraphs = 0
    for paragraph in tree.iter("p"):
        text = _weight(" ".join(paragraph.itertext()))
        linked = _weight(" ".join(" ".join(a.itertext()) for a in paragraph.iter("a")))
        if text and linked / text < 0.5:
            paragraphs += text
    links = _weight(" ".join(" ".join(a.itertext()) for a in tree.iter("a")))
    return paragraphs, links


def _weight(text: str) -> int:
    compact = re.sub(r"\s+", " ", text).strip()
    return len(compact) + sum(1 for ch in compact if "\u2e80" <= ch <= "\u9fff")


def page_evidence(page: str) -> PageEvidence:
    """The page's verdict (``article``, ``list`` or unknown) with its score and features.

    >>> page_evidence('<meta property="og:type" content="article">'
    ...     '<meta property="article:published_time" content="2024-01-01">').verdict
    'article'
    >>> page_evidence('<meta property="og:type" content="website">'
    ...     + '<article><a href="/1">one</a></article>' * 5).verdict
    'list'
    """
    score = 0
    features: list[str] = []
    og = _OG_TYPE.search(page)
    og_type = ""
    if og:
        content = _CONTENT.search(og.group(0))
        og_type = content.group(1).strip().lower() if content else ""
    if og_type.startswith("article") or og_type in ("video.other", "video.episode"):
        score += 2
        features.append("og:article")
    elif og_type == "website":
        score -= 1
        features.append("og:website")
    types = json_ld_types(page)
    if types & ARTICLE_TYPES:
        score += 2
        features.append("json-ld:article")
    elif types & LIST_TYPES:
        score -= 1
        features.append("json-ld:list")
    if _PUBLISHED.search(page):
        score += 1
        features.append("published")
    articles = len(_ARTICLE_TAG.findall(page))
    if articles == 1:
        score += 1
        features.append("one-article")
    elif articles >= 3:
        score -= 1
        features.append("many-articles")
    text, links = body_text_and_links(page)
    if text >= LONG_BODY:
        score += 1
        features.append("paragraphs")
    elif text < LONG_BODY / 4 and links >= LONG_BODY:
        score -= 2
        features.append("links-only")
    verdict = ARTICLE if score >= 2 else LIST if score <= -1 else UNKNOWN
    return PageEvidence(verdict, score, tuple(features))
