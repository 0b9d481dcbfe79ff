"""The Bloom filter's arithmetic: sizing, positions, key split and estimates."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from zeroarchive.distributed.bloom import (
    MAX_KEY_BITS,
    current_false_positive_rate,
    estimated_items,
    false_positive_rate,
    list_round,
    locate,
    positions,
    shape,
)

capacities = st.integers(min_value=1, max_value=10**10)
error_rates = st.floats(min_value=1e-9, max_value=0.5)


@given(capacities, error_rates)
def test_sizing_reaches_the_error_rate(capacity: int, error_rate: float) -> None:
    s = shape(capacity, error_rate)
    assert false_positive_rate(capacity, s.bits, s.hashes) <= error_rate * 1.05
    assert s.keys == math.ceil(s.bits / MAX_KEY_BITS)


@given(capacities, error_rates, st.integers(min_value=1, max_value=30))
def test_sizing_with_fewer_hashes_still_reaches_the_rate(
    capacity: int, error_rate: float, hashes: int
) -> None:
    s = shape(capacity, error_rate, hashes=hashes)
    assert s.hashes == hashes
    assert false_positive_rate(capacity, s.bits, hashes) <= error_rate * 1.0001


def test_ten_million_at_1e_4_fit_in_under_3_bytes_each() -> None:
    s = shape(10_000_000, 1e-4)
    assert (s.bits, s.hashes) == (191_701_168, 13)
    assert s.bits / 8 / s.capacity < 2.5


@given(st.binary(max_size=64), st.integers(min_value=1, max_value=2**40), st.integers(1, 30))
def test_positions_are_in_range_and_deterministic(item: bytes, bits: int, hashes: int) -> None:
    p = positions(item, bits, hashes)
    assert len(p) == hashes
    assert all(0 <= x < bits for x in p)
    assert p == positions(item, bits, hashes)


@given(st.integers(min_value=0, max_value=2**40), st.integers(min_value=1, max_value=MAX_KEY_BITS))
def test_locate_splits_and_rejoins(position: int, key_bits: int) -> None:
    index, offset = locate(position, key_bits)
    assert 0 <= offset < key_bits
    assert index * key_bits + offset == position


@given(st.integers(min_value=1, max_value=10**6), st.integers(min_value=0, max_value=10**6))
def test_split_keys_cover_every_bit_once(key_bits: int, extra: int) -> None:
    s = shape(1000, 0.01, key_bits=key_bits)
    sizes = [s.key_size(i) for i in range(s.keys)]
    assert sum(sizes) == s.bits
    assert all(0 < size <= key_bits for size in sizes)


def test_estimates_recover_the_item_count_of_a_simulated_filter() -> None:
    s = shape(20_000, 0.01)
    bits = bytearray(s.bits)
    for i in range(20_000):
        for p in positions(b"url-%d" % i, s.bits, s.hashes):
            bits[p] = 1
    set_bits = sum(bits)
    assert abs(estimated_items(set_bits, s.bits, s.hashes) - 20_000) < 20_000 * 0.02
    assert 0.005 < current_false_positive_rate(set_bits, s.bits, s.hashes) < 0.02


@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=1, max_value=10**6))
def test_estimated_rate_is_the_fill_ratio_to_the_k(bits_set: int, extra: int) -> None:
    bits, k = bits_set + extra, 7
    rate = current_false_positive_rate(bits_set, bits, k)
    assert math.isclose(rate, (bits_set / bits) ** k, rel_tol=1e-9, abs_tol=1e-300)


def test_list_round_defaults_to_the_hour() -> None:
    assert list_round(None, 3599) == list_round(None, 0) == "h0"
    assert list_round(None, 3600) == "h1"
    assert list_round("", 3600) == "h1"
    assert list_round("r1", 3600) == "r1"
