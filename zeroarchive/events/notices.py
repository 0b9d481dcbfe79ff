"""Removal notices: the words a site or platform puts on a 200 page in place of an article
it took down. One list, in one place: add a phrase here and every source uses it.

A page is a notice (``page_notice``) when

- its title, or its first heading, is given over to a phrase (the phrase give or take a
  few words, a site name after a separator aside: "找不到頁面 - 某新聞網", "Oops! Page not
  found") and the page has little text of its own (``MAX_NOTICE_TEXT`` characters outside
  links, menus, sidebars, headers and footers): a notice in the site's whole layout; or
- its visible text holds a phrase and is short in all (``MAX_NOTICE_TEXT``): a bare page.

An article that quotes "此文章已被刪除" in its third paragraph or names it in a sidebar is
still an article, and so is one whose headline merely holds the phrase.
"""

from __future__ import annotations

import codecs
import functools
import re

#: Phrases, matched case-insensitively in the page's visible text (spaces collapsed).
REMOVAL_NOTICES: tuple[str, ...] = (
    # Chinese (traditional and simplified)
    "此文章已被刪除",
    "本文已被刪除",
    "文章已下架",
    "此文章已下架",
    "新聞已下架",
    "該文章已刪除",
    "找不到頁面",
    "找不到該頁面",
    "找不到您要的頁面",
    "頁面不存在",
    "该页面不存在",
    "页面不存在",
    "文章不存在",
    "此內容目前無法顯示",
    # Japanese
    "記事は削除されました",
    "このページは存在しません",
    "お探しのページは見つかりませんでした",
    # Korean
    "페이지를 찾을 수 없습니다",
    "삭제된 기사입니다",
    # English
    "this page doesn't exist",
    "this page does not exist",
    "this content isn't available",
    "this content is no longer available",
    "this article has been removed",
    "this article is no longer available",
    "page not found",
)

#: Pages with more visible text than this (or, when their title or heading is a notice,
#: more text of their own) are articles, whatever phrase they quote.
MAX_NOTICE_TEXT = 1500
#: A title part or heading is a notice when, besides its phrase, it has at most this many
#: words (a Latin word, or a CJK character, each one): "Oops!", "抱歉，您要找的".
NOTICE_HEADING_WORDS = 6

_PATTERN = re.compile("|".join(re.escape(p) for p in REMOVAL_NOTICES), re.IGNORECASE)
# A title's parts: a site's name follows a separator ("找不到頁面 - 某新聞網").
_TITLE_PARTS = re.compile(r"\s[-|:\u00b7\u2013\u2014\u00bb/]+\s|[\uff5c|_\u2013\u2014]")
# Latin letter runs, and any other letter one by one (a CJK character is about a word).
_WORDS = re.compile(r"[A-Za-z\u00c0-\u024f]+|[^\W\d_]")


def notice_phrase(text: str) -> str | None:
    """The first removal phrase anywhere in a text, lower-cased, or None.

    >>> notice_phrase("Error: Page Not Found"), notice_phrase("新聞")
    ('page not found', None)
    """
    found = _PATTERN.search(text.replace("\u2019", "'"))
    return found.group(0).lower() if found else None


def notice_heading(text: str) -> str | None:
    """The phrase a title or heading is given over to, or None: a part of it (between
    separators) is the phrase with at most ``NOTICE_HEADING_WORDS`` other words.

    >>> notice_heading("找不到頁面 - 某某新聞網 | 台灣最大的新聞網站")
    '找不到頁面'
    >>> notice_heading("抱歉，您要找的頁面不存在"), notice_heading("404 Oops! Page not found.")
    ('頁面不存在', 'page not found')
    >>> notice_heading("網友截圖瘋傳「此文章已被刪除」 臉書今天回應了 | 某某新聞網") is None
    True
    """
    for part in _TITLE_PARTS.split(text.replace("\u2019", "'")):
        found = _PATTERN.search(part)
        if found is None:
            continue
        rest = part[: found.start()] + " " + part[found.end() :]
        if len(_WORDS.findall(rest)) <= NOTICE_HEADING_WORDS:
            return found.group(0).lower()
    return None


def page_notice(title: str, heading: str, text: str, own_text: str) -> str | None:
    """The removal notice a parsed page is, or None: its title or first heading is one and
    its own text (visible text outside links, menus, sidebars, headers and footers) is
    short, or its whole visible text is a short one (``removal_notice``).

    >>> layout = "首頁 國際 政治 " * 300
    >>> page_notice("找不到頁面 - 某新聞網", "", layout + "找不到頁面", "找不到頁面 回首頁")
    '找不到頁面'
    >>> article = "記者報導市府說明。" * 300
    >>> page_notice("市府說明 - 某新聞網", "市府說明", article + "找不到頁面", article) is None
    True
    """
    if len(own_text) <= MAX_NOTICE_TEXT:
        for line in (title, heading):
            found = notice_heading(line)
            if found:
                return found
    return removal_notice(text)


def removal_notice(text: str) -> str | None:
    """The removal notice a page's visible text is, or None.

    >>> removal_notice("首頁 > 此文章已被刪除 回首頁")
    '此文章已被刪除'
    >>> removal_notice("Sorry, this page doesn’t exist.".replace("’", "'"))
    "this page doesn't exist"
    >>> removal_notice("記者報導：" + "內文" * 1000 + "此文章已被刪除") is None
    True
    """
    if len(text) > MAX_NOTICE_TEXT:
        return None
    return notice_phrase(text)


def might_be_notice(body: bytes, encoding: str) -> bool:
    """Whether a page's bytes hold a removal notice's words at all: the test before a short
    page's text is parsed (``signs.SHORT_PAGE_BYTES``; a longer one is read in its title
    and first heading only). Searched as bytes in the page's own encoding (C fast search, four
    times faster than over the decoded text).

    >>> might_be_notice("<h1>文章已下架</h1>".encode("cp950"), "cp950")
    True
    >>> might_be_notice("<p>新聞</p>".encode(), "utf-8")
    False
    >>> might_be_notice(b"<h1>Page Not Found</h1>", "utf-8")
    True
    >>> might_be_notice("<p>페이지를 <b>찾을 수</b> 없습니다</p>".encode(), "utf-8")
    True
    """
    if encoding.lower().startswith(("utf-16", "utf-32")):
        body, encoding = body.decode(encoding, errors="replace").encode("utf-8"), "utf-8"
    if _is_utf8(encoding):
        # A UTF-8 character of more than one byte holds no ASCII byte: the CJK phrases are
        # searched in the page's other bytes only, a fifth to a half of a CJK page's.
        wide, latin = _utf8_phrases()
        text = body.translate(None, _ASCII)
        if any(phrase in text for phrase in wide):
            return True
    else:
        latin, others = _encoded(encoding)
        # Only ASCII phrases are searched lower-cased: lowering the bytes of a double-byte
        # encoding (Big5's trail bytes are often ASCII letters) would change its characters.
        if any(phrase in body for phrase in others):
            return True
    lowered = body.lower()
    # Each phrase's last word first: four searches, not one per phrase, on most pages.
    return any(word in lowered for word in _last_words(latin)) and any(
        phrase in lowered for phrase in latin
    )


@functools.lru_cache(maxsize=64)
def _last_words(phrases: tuple[bytes, ...]) -> tuple[bytes, ...]:
    """The last word of each phrase, once: every phrase holds its own.

    >>> _last_words((b"page not found", b"this page doesn't exist", b"this page does not exist"))
    (b'found', b'exist')
    """
    return tuple(dict.fromkeys(phrase.rsplit(b" ", 1)[-1] for phrase in phrases))


_ASCII = bytes(range(128))


@functools.lru_cache(maxsize=64)
def _is_utf8(encoding: str) -> bool:
    """Whether a codec name is UTF-8 (with or without a BOM).

    >>> _is_utf8("UTF8"), _is_utf8("utf-8-sig"), _is_utf8("cp950"), _is_utf8("no-such")
    (True, True, False, False)
    """
    try:
        return codecs.lookup(encoding).name in ("utf-8", "utf-8-sig")
    except LookupError:
        return False


@functools.lru_cache(maxsize=1)
def _utf8_phrases() -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """The phrases in UTF-8: (those without an ASCII letter or digit, their ASCII bytes
    (spaces) taken out; the others lower-cased, with a typographic apostrophe variant)."""
    wide: list[bytes] = []
    latin: list[bytes] = []
    for phrase in REMOVAL_NOTICES:
        if any(ch.isascii() and ch.isalnum() for ch in phrase):
            for variant in dict.fromkeys((phrase, phrase.replace("'", "\u2019"))):
                latin.append(variant.lower().encode())
        else:
            wide.append(phrase.encode().translate(None, _ASCII))
    return tuple(dict.fromkeys(wide)), tuple(dict.fromkeys(latin))


@functools.lru_cache(maxsize=64)
def _encoded(encoding: str) -> tuple[tuple[bytes, ...], tuple[bytes, ...]]:
    """The phrases in one encoding: (ASCII ones lower-cased, the others as written), with
    a typographic apostrophe variant; those the encoding cannot write are left out."""
    latin: list[bytes] = []
    others: list[bytes] = []
    for phrase in REMOVAL_NOTICES:
        for variant in dict.fromkeys((phrase, phrase.replace("'", "\u2019"))):
            try:
                encoded = variant.encode(encoding)
            except (UnicodeEncodeError, LookupError):
                continue
            if variant.isascii():
                latin.append(encoded.lower())
            else:
                others.append(encoded)
    return tuple(latin), tuple(others)
