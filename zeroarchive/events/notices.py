"""Removal notices: the words a site or platform puts on a 200 page in place of an article
it took down. One list, in one place: add a phrase here and every source uses it.

A phrase counts only on a page with little text of its own (``MAX_NOTICE_TEXT``): an
article that quotes "此文章已被刪除" in its third paragraph is still an article.
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

#: Pages with more visible text than this are articles, whatever phrase they quote.
MAX_NOTICE_TEXT = 1500

_LOWERED = tuple(phrase.lower() for phrase in REMOVAL_NOTICES)
_PATTERN = re.compile("|".join(re.escape(p) for p in REMOVAL_NOTICES), re.IGNORECASE)


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
    found = _PATTERN.search(text.replace("\u2019", "'"))
    return found.group(0).lower() if found else None


def might_be_notice(body: bytes, encoding: str) -> bool:
    """Whether a page's bytes hold a removal notice's words at all: the cheap test before
    its text is parsed. Searched as bytes in the page's own encoding (C fast search, four
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
