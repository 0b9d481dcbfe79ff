"""What two bodies are compared on, and their MinHash LSH band keys (pure functions).

A body is NFKC-normalised, each Chinese character folded to its canonical (Simplified)
form (``search.fold.canonical``: OpenCC's Traditional, Taiwan and Hong Kong variants
joined) and case folded; each line keeps its letters and digits only, so markup, spacing and
punctuation changes leave it as it was. Lines that are the site's boilerplate are left
out, the rest joined, and cut into overlapping ``SHINGLE``-character shingles, hashed to
32 bits. MinHash (datasketch's ``affine32`` permutations) estimates their Jaccard
similarity; ``BANDS`` bands of ``ROWS`` values each make the LSH keys under which a
body's candidates are found; a candidate is a copy when ``containment`` says so.
"""

from __future__ import annotations

import functools
import re
import unicodedata
import zlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
from datasketch import MinHash

from zeroarchive.search.fold import canonical, variants

#: Characters per shingle: 5 CJK characters are rarer than a word, so two unrelated
#: articles share few; an edit or a conversion slip touches at most five shingles.
SHINGLE = 5
#: MinHash values per body and how they are banded: 32 bands of 4 find a pair of Jaccard
#: 0.5 (a copy cut to half) with probability 0.87, 0.63 with 0.996, and one of 0.1 with
#: 0.003 (bench/copies_eval.py measured the choice).
BANDS = 32
ROWS = 4
SEED = 1
#: Paragraphs at either end of a body whose repetition across a site is counted.
EDGE = 3
#: A longer paragraph is never taken for boilerplate (counted, or dropped).
MAX_BLOCK = 300
#: A body with fewer shingles than this (after boilerplate) is too short to call a copy.
MIN_SHINGLES = 40

NO_SCRIPT, SIMPLIFIED, TRADITIONAL = 0, 1, 2

_NOT_WORD = re.compile(r"[\W_]+")
_MASK32 = np.uint64(0xFFFFFFFF)
_PRIME = np.uint64(0x100000001B3)
# A body's shingles are hashed against the permutations this many at a time, which bounds
# the temporary (n x 128) array of a very long body.
_CHUNK = 4096


@dataclass(frozen=True)
class Folded:
    """A body folded for comparison: its non-empty lines, and the script it was in."""

    lines: tuple[str, ...]
    script: int


def fold(text: str) -> Folded:
    """The body's lines in one script, letters and digits only.

    >>> fold("臺灣的「疫苗」\\n\\n  <b>Vaccine</b> news!")
    Folded(lines=('台湾的疫苗', 'bvaccinebnews'), script=2)
    """
    folded = canonical(unicodedata.normalize("NFKC", text)).casefold()
    lines = tuple(line for line in (_NOT_WORD.sub("", raw) for raw in folded.split("\n")) if line)
    return Folded(lines, _script(text))


def _script(text: str) -> int:
    """Which script the text is in: Traditional when more of its characters fold to
    another (臺, 灣) than are the Simplified form of a character that has others (湾, 们)."""
    marked = text.translate(_marks())
    traditional = marked.count(_TRADITIONAL_MARK) - text.count(_TRADITIONAL_MARK)
    simplified = marked.count(_SIMPLIFIED_MARK) - text.count(_SIMPLIFIED_MARK)
    if traditional == simplified:
        return NO_SCRIPT
    return TRADITIONAL if traditional > simplified else SIMPLIFIED


_SIMPLIFIED_MARK, _TRADITIONAL_MARK = "\x01", "\x02"
#: The Han blocks whose characters may have variants (search.fold's).
_HAN = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3134F))


@functools.cache
def _marks() -> dict[int, str]:
    """Each character that has variants, as the mark of its kind: the canonical form
    (Simplified) or another (Traditional, a regional variant): a ``str.translate`` table,
    ~40x faster than asking ``variants`` of each character of a body."""
    table = {}
    for low, high in _HAN:
        for code in range(low, high + 1):
            forms = variants(chr(code))
            if len(forms) > 1:
                table[code] = _SIMPLIFIED_MARK if forms[0] == chr(code) else _TRADITIONAL_MARK
    return table


def block_hash(line: str) -> int:
    """A line's hash as a signed 32-bit integer (how ``copy_block`` keeps it).

    >>> block_hash("本文转载自网络")
    -175890199
    """
    value = zlib.crc32(line.encode("utf-8"))
    return value - (1 << 32) if value >= 1 << 31 else value


def edge_blocks(folded: Folded) -> set[int]:
    """The hashes of the lines at either end that could be a site's boilerplate."""
    lines = folded.lines
    edges = lines[:EDGE] + lines[max(EDGE, len(lines) - EDGE) :]
    return {block_hash(line) for line in edges if len(line) <= MAX_BLOCK}


def line_blocks(folded: Folded) -> set[int]:
    """The hashes of every line short enough to be boilerplate."""
    return {block_hash(line) for line in folded.lines if len(line) <= MAX_BLOCK}


def edge_blocks_of(text: str) -> set[int]:
    """``edge_blocks(fold(text))`` folding only the lines at either end (what a rebuild
    counts before it fingerprints: the fold is most of a fingerprint's time)."""
    raw = [line for line in text.split("\n") if line.strip()]
    # Twice the edge: a line of punctuation alone is no line once folded.
    if len(raw) <= 4 * EDGE:
        return edge_blocks(fold(text))
    head = fold("\n".join(raw[: 2 * EDGE])).lines[:EDGE]
    tail = fold("\n".join(raw[-2 * EDGE :])).lines[-EDGE:]
    return edge_blocks(Folded(head + tail, NO_SCRIPT))


def body(folded: Folded, boilerplate: Collection[int] = ()) -> str:
    """The lines that are not boilerplate, joined."""
    if not boilerplate:
        return "".join(folded.lines)
    return "".join(
        line
        for line in folded.lines
        if len(line) > MAX_BLOCK or block_hash(line) not in boilerplate
    )


def shingles(text: str) -> np.ndarray:
    """The distinct 32-bit hashes of the text's ``SHINGLE``-character shingles, sorted.

    >>> len(shingles("abcdefg")), len(shingles("abcd"))
    (3, 0)
    """
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    count = len(codes) - SHINGLE + 1
    if count < 1:
        return np.empty(0, dtype=np.uint32)
    hashed = codes[:count].copy()
    for offset in range(1, SHINGLE):
        hashed = hashed * _PRIME + codes[offset : offset + count]
    hashed = _fmix64(hashed)
    return np.unique((hashed >> np.uint64(32)).astype(np.uint32))


def _fmix64(values: np.ndarray) -> np.ndarray:
    values = values ^ (values >> np.uint64(33))
    values = values * np.uint64(0xFF51AFD7ED558CCD)
    values = values ^ (values >> np.uint64(33))
    values = values * np.uint64(0xC4CEB9FE1A85EC53)
    return values ^ (values >> np.uint64(33))


def _fmix32(values: np.ndarray) -> np.ndarray:
    values = values ^ (values >> np.uint32(16))
    values = values * np.uint32(0x85EBCA6B)
    values = values ^ (values >> np.uint32(13))
    values = values * np.uint32(0xC2B2AE35)
    return values ^ (values >> np.uint32(16))


@functools.cache
def _permutations() -> tuple[np.ndarray, np.ndarray]:
    a, b = MinHash(num_perm=BANDS * ROWS, seed=SEED, scheme="affine32").permutations
    return np.asarray(a, dtype=np.uint32), np.asarray(b, dtype=np.uint32)


def signature(hashes: np.ndarray) -> np.ndarray:
    """The MinHash of a set of 32-bit hashes: what datasketch's ``affine32`` MinHash with
    an identity ``hashfunc`` gives after ``update_batch(hashes)``, computed on the whole
    array at once (``update_batch`` calls the hash function once per value in Python)."""
    a, b = _permutations()
    lowest = np.full(len(a), np.iinfo(np.uint32).max, dtype=np.uint32)
    for start in range(0, len(hashes), _CHUNK):
        mixed = _fmix32(hashes[start : start + _CHUNK].astype(np.uint32)).reshape(-1, 1)
        lowest = np.minimum(lowest, (mixed * a + b).min(axis=0))
    return lowest


def band_keys(minhash: np.ndarray) -> np.ndarray:
    """One signed 32-bit key per band (its number folded in), distinct, sorted."""
    rows = minhash.astype(np.uint64).reshape(BANDS, ROWS)
    keys = np.arange(1, BANDS + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    for column in range(ROWS):
        keys = _fmix64(keys ^ rows[:, column])
    return np.unique((keys >> np.uint64(32)).astype(np.uint32).view(np.int32))


def containment(one: np.ndarray, other: np.ndarray) -> float:
    """The share of the smaller set of shingles that the other holds.

    >>> containment(shingles("abcdefghij"), shingles("xxabcdefghijyy"))
    1.0
    """
    if not len(one) or not len(other):
        return 0.0
    shared = len(np.intersect1d(one, other, assume_unique=True))
    return shared / min(len(one), len(other))


def keys_bytes(keys: Sequence[int] | np.ndarray) -> bytes:
    """Band keys as ``copy_doc.bands`` keeps them."""
    return np.asarray(keys, dtype="<i4").tobytes()


def keys_from_bytes(data: bytes) -> list[int]:
    return [int(key) for key in np.frombuffer(data, dtype="<i4")]
