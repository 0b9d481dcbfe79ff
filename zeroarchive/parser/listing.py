"""Pages that are listings of short items (a section page, a tag page, an announcements
list, a front page) fetched as an article: they have no article body.

The extractors make something of any page: on such a page readability and trafilatura
return a concatenation of the items' headlines, the page's footer, or nothing, and the
parser would store that as the article's text. A listing is told by its structure and by
what the page does not say: at least ``_MIN_ITEMS`` links with headline-long texts in
elements of the same shape (the items), the text the extractors chose mostly those items
with no paragraph of its own (a line of 100 characters, or a Chinese or Japanese sentence of
40), and no declaration of an article (Open Graph ``og:type`` ``article``, a JSON-LD article
type). A short news item beside a longer stream of other stories has a paragraph or a
sentence, and usually the declaration.
"""

from __future__ import annotations

from collections import defaultdict

from lxml.html import HtmlElement

from zeroarchive.parser.evidence import squeeze
from zeroarchive.parser.metadata import PageMetadata

# Items a listing has at least: a "related stories" box beside an article holds 4-8.
_MIN_ITEMS = 10
# A headline link's text (white space out): shorter ones are menus ("国际", "News", "More").
_HEADLINE = (10, 120)
# A line of the chosen text this long (white space out) is a paragraph: the item lines of
# the real listings in tests/fixtures/listing are at most 63; the shortest real article
# paragraphs of the evaluation pages that have no other evidence, over 100.
_PARAGRAPH = 100
# The chosen text's lines that hold no item are at most this share of the items' text.
_OWN_TEXT = 0.5
# ... and none of them is a sentence this long (white space out) ending as Chinese or Japanese
# sentences end: a news brief's own lines beside a site's headline lists (48-95 characters on
# 2015 NetEase pages); the real listings' own lines are items' dates and section names.
_OWN_SENTENCE = 40
_SENTENCE_END = ("。", "！", "？", "．")
# JSON-LD types that declare an article end so.
_ARTICLE_KINDS = ("article", "posting")
# Ancestors of an item's link that make its shape.
_SHAPE_DEPTH = 3


def declares_article(meta: PageMetadata) -> bool:
    """Whether the page says it is an article: Open Graph, or a JSON-LD type of the article
    and posting kinds (``NewsArticle``, ``OpinionNewsArticle``, ``BlogPosting``, ...).

    >>> declares_article(PageMetadata(meta={"og:type": ["article"]}))
    True
    >>> declares_article(PageMetadata(jsonld=[{"@graph": [{"@type": "ReportageNews"}]}]))
    True
    >>> declares_article(PageMetadata(jsonld=[{"@type": ["CollectionPage", "WebPage"]}]))
    False
    """
    if (meta.first("og:type") or "").lower().startswith("article"):
        return True
    return any(
        kind.lower().endswith(_ARTICLE_KINDS) or kind in ("Report", "ReportageNews")
        for kind in meta.jsonld_types()
    )


def listing_links(tree: HtmlElement, meta: PageMetadata, text: str) -> list[str] | None:
    """The hrefs of the items of a page that is a listing of short items, None for a page
    that is not one (``text`` is the main text the extractors chose)."""
    lines = [squeeze(line) for line in text.split("\n")]
    if any(len(line) >= _PARAGRAPH for line in lines) or declares_article(meta):
        # Most articles stop here, before their links are read.
        return None
    shapes: dict[tuple, dict[str, str]] = defaultdict(dict)
    low, high = _HEADLINE
    for link in tree.iter("a"):
        href = link.get("href")
        title = squeeze(link.text_content())
        if not href or not low <= len(title) <= high:
            continue
        shape = []
        parent = link.getparent()
        for _ in range(_SHAPE_DEPTH):
            if parent is None:
                break
            shape.append((parent.tag, parent.get("class") or ""))
            parent = parent.getparent()
        shapes[tuple(shape)].setdefault(title, href)
    items = max(shapes.values(), key=len, default={})
    if len(items) < _MIN_ITEMS:
        return None
    own = [line for line in lines if not any(title in line for title in items)]
    if sum(len(line) for line in own) >= _OWN_TEXT * sum(len(title) for title in items):
        return None
    if any(len(line) >= _OWN_SENTENCE and line.endswith(_SENTENCE_END) for line in own):
        return None
    return list(items.values())
