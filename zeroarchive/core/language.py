"""Language tags as BCP 47 writes them, one spelling per language: what a page declares
(``<html lang>``, ``Content-Language``, ``og:locale``) comes in many (``zh-TW``,
``zh_tw``, ``zh-Hant-TW``, ``ja-JP`` ...); parsers and exports write one."""

from __future__ import annotations

import re

#: ISO 639-2 and other spellings pages use for the archive's languages, as BCP 47 writes
#: them (``cmn`` is Mandarin, which every Chinese page here is unless it says otherwise).
_LANGUAGES = {"zho": "zh", "chi": "zh", "cmn": "zh", "jpn": "ja", "kor": "ko", "eng": "en"}
#: The script a Chinese region writes when a tag gives the region alone.
_CHINESE_SCRIPTS = {
    "TW": "Hant",
    "HK": "Hant",
    "MO": "Hant",
    "CN": "Hans",
    "SG": "Hans",
    "MY": "Hans",
}
#: Microsoft's old Chinese tags.
_LEGACY = {"zh-chs": "zh-Hans", "zh-cht": "zh-Hant"}
#: Languages written in one country, whose region says nothing more: dropped.
_ONE_REGION = {("ja", "JP"), ("ko", "KR")}
_TAG = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*")


def normalise_language(value: str | None) -> str | None:
    """The page's language as a BCP 47 tag in one spelling, or None when it names none.

    Case as BCP 47 writes it (``zh-Hant-TW``); the first of a list; ``_`` as ``-``; a
    three-letter code with a two-letter one as the two (``jpn`` -> ``ja``); an extended
    language as the language (``zh-yue`` -> ``yue``); Chinese with the script its region
    writes (``zh-TW`` -> ``zh-Hant-TW``, ``zh-CN`` -> ``zh-Hans-CN``; a script given is
    kept); Japanese and Korean without their one country (``ja-JP`` -> ``ja``); any other
    region kept (``en-US``). ``und`` and what is no tag at all are None.

    >>> [normalise_language(v) for v in ("zh-TW", "zh_tw", "zh-Hant-TW", "zh-hant")]
    ['zh-Hant-TW', 'zh-Hant-TW', 'zh-Hant-TW', 'zh-Hant']
    >>> [normalise_language(v) for v in ("zh-CN", "zh-HK", "zh-Yue-Hant-HK", "zh-cht", "cmn-TW")]
    ['zh-Hans-CN', 'zh-Hant-HK', 'yue-Hant-HK', 'zh-Hant', 'zh-Hant-TW']
    >>> [normalise_language(v) for v in ("ja-JP", "JA", "jpn", "ko-KR", " EN-us ", "zh")]
    ['ja', 'ja', 'ja', 'ko', 'en-US', 'zh']
    >>> [normalise_language(v) for v in ("", "und", "{{lang}}", "zh-TW, en", None)]
    [None, None, None, 'zh-Hant-TW', None]
    """
    if not value:
        return None
    value = value.split(",")[0].strip().replace("_", "-")
    if not _TAG.fullmatch(value):
        return None
    value = _LEGACY.get(value.lower(), value)
    parts = value.split("-")
    language = _LANGUAGES.get(parts[0].lower(), parts[0].lower())
    rest = parts[1:]
    if rest and len(rest[0]) == 3 and rest[0].isalpha():
        language, rest = rest[0].lower(), rest[1:]  # an extended language subtag
    if language == "und":
        return None
    script = next((p.title() for p in rest[:1] if len(p) == 4 and p.isalpha()), None)
    rest = rest[1:] if script else rest
    region = next((p.upper() for p in rest[:1] if len(p) == 2 or p.isdigit()), None)
    rest = rest[1:] if region else rest
    if language == "zh" and script is None and region in _CHINESE_SCRIPTS:
        script = _CHINESE_SCRIPTS[region]
    if (language, region) in _ONE_REGION:
        region = None
    return "-".join(p for p in (language, script, region, *(p.lower() for p in rest)) if p)
