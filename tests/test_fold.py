"""``--fold-chinese``'s classes of variant characters (zeroarchive/search/fold.py) against
the real variant pairs of OpenCC's Taiwan and Hong Kong tables."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES
from zeroarchive.search.fold import TABLE, build_table, canonical, chinese_forms, variants
from zeroarchive.search.match import Matcher
from zeroarchive.search.plan import plan
from zeroarchive.search.query import parse_query
from zeroarchive.search.text import normalize

#: Pairs a reader of Taiwanese, Hong Kong and mainland pages meets, each in both orders.
COMMON = [
    "台臺",
    "台颱",
    "裡裏",
    "着著",
    "綫線",
    "衛衞",
    "峯峰",
    "群羣",
    "啓啟",
    "爲為",
    "眾衆",
    "灣湾",
    "峽峡",
    "說説",
    "麵麪",
    "線缐",
]


def _pairs(name: str) -> list[tuple[str, str]]:
    pairs = []
    for line in (FIXTURES / "fold" / f"{name}.txt").read_text("utf-8").splitlines():
        standard, regional = line.split("\t")
        pairs += [(standard, form) for form in regional.split() if len(standard) == len(form)]
    return pairs


@pytest.mark.parametrize("name", ["TWVariants", "HKVariants"])
def test_every_regional_variant_folds_with_its_standard_form(name: str) -> None:
    pairs = _pairs(name)
    assert len(pairs) > 40
    apart = [(a, b) for a, b in pairs if canonical(a) != canonical(b)]
    assert apart == []


@pytest.mark.parametrize("pair", COMMON)
def test_common_variants_fold_to_one_character_either_way(pair: str) -> None:
    first, second = pair
    assert canonical(first) == canonical(second)
    assert first in variants(second) and second in variants(first)
    # A term in either spelling asks for the other, and the text judges them alike.
    assert second in chinese_forms(first) and first in chinese_forms(second)
    for query in (first, second):
        matcher = Matcher(parse_query(f"{query}x", chinese_forms))
        assert matcher.holds(normalize(f"a{first}x"), "") and matcher.holds("", f"{second}x")


def test_taiwan_s_three_spellings_are_one_query() -> None:
    plans = [plan(parse_query(q, chinese_forms)) for q in ("台湾", "臺灣", "台灣")]
    assert all(found.exact for found in plans)
    asked = [{form[0].tokens for form in found.positive[0]} for found in plans]
    assert asked[0] == asked[1] == asked[2] and ("臺灣",) in asked[0]
    texts = ["台灣的選舉", "臺灣的選舉", "台湾的选举", "颱灣"]
    for query in ("台湾", "臺灣", "台灣"):
        matcher = Matcher(parse_query(query, chinese_forms))
        assert [matcher.holds("", normalize(t)) for t in texts] == [True] * 4
        assert not Matcher(parse_query(query)).holds("", "台海")


def test_japanese_new_forms_are_not_folded_with_chinese_characters() -> None:
    # 芸 is the Japanese form of 藝 and a different Chinese character (a herb).
    assert canonical("芸") != canonical("藝")


def test_the_shipped_table_is_what_opencc_gives() -> None:
    """Fails after an OpenCC upgrade that changes its tables: run
    ``python -m zeroarchive.search.fold`` and commit the table."""
    shipped = [line for line in TABLE.read_text("utf-8").splitlines() if line[:1] != "#"]
    assert shipped == build_table()
