"""Bloom filter arithmetic: sizing, bit positions, key split and estimates (pure).

The filter is ``bits`` (m) bits long and sets ``hashes`` (k) bits per item. The k
positions come from ONE 128-bit hash of the item (a Scrapy request fingerprint) by double
hashing, ``(h1 + i*h2) mod m`` (Kirsch & Mitzenmacher), so an item costs one hash however
large k is. Redis strings hold at most 512 MB (2**32 bits), so a larger filter is split
over several keys of ``key_bits`` bits each; ``locate`` maps a position to its key.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MAX_KEY_BITS = 2**32
"""Bits in one redis string at most: 512 MB, redis's limit for a string value."""

_LOW64 = (1 << 64) - 1


def optimal_bits(capacity: int, error_rate: float) -> int:
    """The m that keeps the false-positive rate at ``error_rate`` with ``capacity`` items.

    m = -n ln p / (ln 2)^2, about 19.2 bits per item at p = 1e-4:

    >>> optimal_bits(10_000_000, 1e-4)
    191701168
    >>> optimal_bits(1000, 0.01)
    9586
    """
    _check(capacity, error_rate)
    return math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2)


def optimal_hashes(bits: int, capacity: int) -> int:
    """The k that minimises the false-positive rate of ``bits`` bits holding ``capacity``.

    k = (m/n) ln 2, at least 1:

    >>> optimal_hashes(191701168, 10_000_000)
    13
    >>> optimal_hashes(10, 1000)
    1
    """
    return max(1, round(bits / capacity * math.log(2)))


def bits_for_hashes(capacity: int, error_rate: float, hashes: int) -> int:
    """The m that reaches ``error_rate`` at ``capacity`` items with a chosen k.

    Fewer hashes than optimal cost memory but save redis work per check:
    m = -k n / ln(1 - p^(1/k)).

    >>> bits_for_hashes(10_000_000, 1e-4, 13) <= optimal_bits(10_000_000, 1e-4) * 1.001
    True
    >>> round(bits_for_hashes(10_000_000, 1e-4, 8) / 10_000_000, 1)
    21.0
    """
    _check(capacity, error_rate)
    if hashes < 1:
        raise ValueError(f"hashes must be at least 1, not {hashes}")
    return math.ceil(-hashes * capacity / math.log(1 - error_rate ** (1 / hashes)))


def _check(capacity: int, error_rate: float) -> None:
    if capacity < 1:
        raise ValueError(f"capacity must be at least 1, not {capacity}")
    if not 0 < error_rate < 1:
        raise ValueError(f"error rate must be between 0 and 1, not {error_rate}")


@dataclass(frozen=True)
class BloomShape:
    """How big a filter is and how it is laid out over redis keys."""

    capacity: int
    error_rate: float
    bits: int
    hashes: int
    key_bits: int = MAX_KEY_BITS

    def __post_init__(self) -> None:
        if self.bits < 1 or self.hashes < 1:
            raise ValueError(f"bits and hashes must be positive: {self.bits}, {self.hashes}")
        if not 0 < self.key_bits <= MAX_KEY_BITS:
            raise ValueError(f"key_bits must be in 1..2**32, not {self.key_bits}")

    @property
    def keys(self) -> int:
        """How many redis keys hold the bits.

        >>> shape(10_000_000, 1e-4).keys
        1
        >>> shape(10_000_000, 1e-4, key_bits=2**20).keys
        183
        """
        return -(-self.bits // self.key_bits)

    def key_size(self, index: int) -> int:
        """Bits held by key ``index`` (the last one holds the remainder).

        >>> s = shape(1000, 0.01, key_bits=4096)
        >>> s.bits, [s.key_size(i) for i in range(s.keys)]
        (9586, [4096, 4096, 1394])
        """
        return min(self.key_bits, self.bits - index * self.key_bits)


def shape(
    capacity: int, error_rate: float, *, key_bits: int = MAX_KEY_BITS, hashes: int | None = None
) -> BloomShape:
    """The shape of a filter for ``capacity`` items at ``error_rate`` (k optimal unless given).

    >>> s = shape(10_000_000, 1e-4)
    >>> s.bits, s.hashes, round(s.bits / 8 / s.capacity, 2)
    (191701168, 13, 2.4)
    >>> shape(10_000_000, 1e-4, hashes=8).hashes
    8
    """
    if hashes is None:
        bits = optimal_bits(capacity, error_rate)
        k = optimal_hashes(bits, capacity)
    else:
        bits = bits_for_hashes(capacity, error_rate, hashes)
        k = hashes
    return BloomShape(capacity, error_rate, bits, k, key_bits)


def hash128(data: bytes) -> int:
    """One 128-bit hash of ``data`` (BLAKE2b, 16 bytes, little-endian integer).

    >>> hash128(b"") == int.from_bytes(hashlib.blake2b(b"", digest_size=16).digest(), "little")
    True
    >>> hash128(b"a") < 2**128
    True
    """
    return int.from_bytes(hashlib.blake2b(data, digest_size=16).digest(), "little")


def positions(item: bytes, bits: int, hashes: int) -> list[int]:
    """The k bit positions of ``item``: ``(h1 + i*h2) mod m`` for i in 0..k-1.

    h1 and h2 are the low and high 64 bits of ``hash128(item)``.

    >>> p = positions(b"fingerprint", 1000, 5)
    >>> len(p), all(0 <= x < 1000 for x in p)
    (5, True)
    >>> h = hash128(b"fingerprint")
    >>> p == [(h % 2**64 + i * (h >> 64)) % 1000 for i in range(5)]
    True
    """
    h = hash128(item)
    # Reducing h1 and h2 first gives the same positions with small integers.
    h1 = (h & _LOW64) % bits
    h2 = (h >> 64) % bits
    return [(h1 + i * h2) % bits for i in range(hashes)]


def positions_of_batch(items: Sequence[bytes], bits: int, hashes: int) -> np.ndarray:
    """``positions`` of many items at once: an array of shape (len(items), hashes).

    The same numbers as ``positions``, computed with numpy (h1, h2 < m < 2**35 and
    i < 64, so nothing overflows 64 bits).

    >>> items = [b"a", b"b", b"c"]
    >>> positions_of_batch(items, 1000, 5).tolist() == [positions(i, 1000, 5) for i in items]
    True
    """
    digests = b"".join([hashlib.blake2b(item, digest_size=16).digest() for item in items])
    halves = np.frombuffer(digests, dtype="<u8").reshape(-1, 2)
    m = np.uint64(bits)
    h1 = halves[:, 0] % m
    h2 = halves[:, 1] % m
    steps = np.arange(hashes, dtype=np.uint64)
    return (h1[:, None] + steps[None, :] * h2[:, None]) % m


def locate(position: int, key_bits: int = MAX_KEY_BITS) -> tuple[int, int]:
    """Which key holds bit ``position`` and at which offset in it.

    >>> locate(5)
    (0, 5)
    >>> locate(2**32 + 7)
    (1, 7)
    >>> locate(9000, key_bits=4096)
    (2, 808)
    """
    return divmod(position, key_bits)


def estimated_items(bits_set: int, bits: int, hashes: int) -> float:
    """How many items a filter holds, from how many of its bits are set.

    Swamidass & Baldi (2007): n ≈ -(m/k) ln(1 - X/m); infinite once every bit is set.

    >>> estimated_items(0, 1000, 5)
    0.0
    >>> round(estimated_items(393, 1000, 5))
    100
    >>> estimated_items(1000, 1000, 5)
    inf
    """
    if bits_set >= bits:
        return math.inf
    return 0.0 - bits / hashes * math.log1p(-bits_set / bits)


def false_positive_rate(items: float, bits: int, hashes: int) -> float:
    """The false-positive rate of a filter holding ``items`` items: (1 - e^(-kn/m))^k.

    >>> round(false_positive_rate(10_000_000, 191701168, 13), 6)
    0.0001
    >>> false_positive_rate(0, 1000, 5)
    0.0
    >>> false_positive_rate(math.inf, 1000, 5)
    1.0
    """
    return (0.0 - math.expm1(-hashes * items / bits)) ** hashes


def current_false_positive_rate(bits_set: int, bits: int, hashes: int) -> float:
    """The false-positive rate now, from the bits set (through the estimated item count).

    With n from ``estimated_items`` this is exactly the fill ratio to the power k.

    >>> round(current_false_positive_rate(393, 1000, 5), 5) == round(0.393**5, 5)
    True
    """
    return false_positive_rate(estimated_items(bits_set, bits, hashes), bits, hashes)


def list_round(meta_round: object, now: float, *, bucket_seconds: int = 3600) -> str:
    """The round a list-page request belongs to: its own ``round`` id, else the hour.

    List pages must be walked again every round, so they are de-duplicated only within
    one round. The scheduler puts a round id in each list request's meta; without one,
    the round is the UTC hour bucket of ``now`` (so a list page is fetched at most once
    an hour by all workers together).

    >>> list_round("r42", 0)
    'r42'
    >>> list_round(None, 7200.5)
    'h2'
    >>> list_round(7, 0)
    '7'
    >>> list_round("2026-01-01T10:00", 0)
    '2026-01-01T10_00'
    """
    if meta_round is not None and meta_round != "":
        # Key names are "<key>:list:<round>[:<n>]"; a colon in the id would blur them.
        return str(meta_round).replace(":", "_")
    return f"h{int(now // bucket_seconds)}"
