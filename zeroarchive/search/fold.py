"""``--fold-chinese``: a term's form in the other Chinese script, by OpenCC's tables
(Simplified to Traditional and back, character by character and by phrase)."""

from __future__ import annotations

import functools

import opencc


@functools.cache
def _converters() -> tuple[opencc.OpenCC, opencc.OpenCC]:
    return opencc.OpenCC("s2t"), opencc.OpenCC("t2s")


def chinese_forms(term: str) -> tuple[str, ...]:
    """The term in Traditional and in Simplified script (either may equal it).

    >>> chinese_forms("台湾疫苗")
    ('臺灣疫苗', '台湾疫苗')
    """
    to_traditional, to_simplified = _converters()
    return to_traditional.convert(term), to_simplified.convert(term)
