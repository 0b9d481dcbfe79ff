"""What two bodies are compared on, and their LSH band keys (pure functions).

A body is NFKC-normalised, each Chinese character folded to its canonical (Simplified)
form (``search.fold.canonical``: OpenCC's Traditional, Taiwan and Hong Kong variants
joined) and case folded; each line keeps its letters and digits only, so markup, spacing and
punctuation changes leave it as it was. Lines that are the site's boilerplate are left
out, the rest joined, and cut into overlapping ``SHINGLE``-character shingles, hashed to
32 bits. A one-permutation MinHash (the hash range cut into ``BANDS * ROWS`` equal bins,
the least hash of each bin; empty bins filled from the next full one) estimates their
Jaccard similarity; ``BANDS`` bands of ``ROWS`` bins each make the LSH keys under which a
body's candidates are found; a candidate is a copy when ``containment`` says so.

The fold is a table look-up over the text's code points (numpy), built once per process
from the same steps, per character; a text holding a character whose fold depends on its
neighbours (a combining mark, a Hangul jamo) or is more than one character (½, ß) is folded
the long way.
"""

from __future__ import annotations

import functools
import re
import unicodedata
import zlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from zeroarchive.search.fold import _canonical_table, canonical, variants

#: Characters per shingle: 5 CJK characters are rarer than a word, so two unrelated
#: articles share few; an edit or a conversion slip touches at most five shingles.
SHINGLE = 5
#: MinHash values per body and how they are banded: 18 bands of 3 find a pair of Jaccard
#: 0.5 (a copy cut to half) with probability 0.91, 0.67 with 0.998, 1/3 with 0.49 and one
#: of 0.1 with 0.018; a body is 18 rows of the LSH index (bench/copies_eval.py and
#: bench/copies_speed.py measured the choice against 32 bands of 4; 16 of 3 lost one
#: held-out variant).
BANDS = 18
ROWS = 3
BINS = BANDS * ROWS
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
#: Code points the fold's table covers (the Han blocks of ``_HAN`` end below it).
_LIMIT = 0x31350
#: In the fold's table: a character folded the long way (see the module's docstring).
_LONG = np.uint32(0xFFFFFFFF)
_JAMO = ((0x1100, 0x11FF), (0xA960, 0xA97F), (0xD7B0, 0xD7FF))
#: Each bin's lower end in the 32-bit hash range.
_BIN_STARTS = ((np.arange(BINS, dtype=np.uint64) << np.uint64(32)) // np.uint64(BINS)).astype(
    np.uint32
)


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
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if not len(codes):
        return Folded((), NO_SCRIPT)
    if codes.max() >= _LIMIT:
        return fold_long(text)
    table, marks = _tables()
    folded = table[codes]
    if folded.max() == _LONG:
        return fold_long(text)
    kept = folded[folded != 0].tobytes().decode("utf-32-le")
    counts = np.bincount(marks[codes], minlength=3)
    script = (
        NO_SCRIPT
        if counts[1] == counts[2]
        else (TRADITIONAL if counts[2] > counts[1] else SIMPLIFIED)
    )
    return Folded(tuple(line for line in kept.split("\n") if line), script)


def fold_many(texts: Sequence[str]) -> list[Folded]:
    """``fold`` of each text, the table's look-ups done once for all of them (a rebuild's
    batch: numpy's per-call costs, not the characters, are most of ``fold`` on one body).

    >>> texts = ["臺灣的「疫苗」", "", "½ cup", "Vaccine news!"]
    >>> fold_many(texts) == [fold(text) for text in texts]
    True
    """
    found: list[Folded | None] = [None] * len(texts)
    lengths = np.fromiter((len(text) for text in texts), dtype=np.int64, count=len(texts))
    codes = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if not len(codes):
        return [Folded((), NO_SCRIPT) for _ in texts]
    table, marks = _tables()
    # Per-text sums over the texts that have characters (reduceat takes no empty run).
    present = np.flatnonzero(lengths)
    starts = (np.cumsum(lengths) - lengths)[present]

    def per_text(values: np.ndarray, ufunc: np.ufunc = np.add) -> np.ndarray:
        out = np.zeros(len(texts), dtype=np.int64)
        out[present] = ufunc.reduceat(values, starts, dtype=np.int64)
        return out

    outside = codes.max() >= _LIMIT
    inside = np.where(codes >= _LIMIT, 0, codes) if outside else codes
    folded = table[inside]
    long = per_text(folded, np.maximum) == int(_LONG)
    if outside:
        long |= per_text((codes >= _LIMIT).view(np.uint8)) > 0
    mark = marks[inside]
    traditionals = per_text(mark >> np.uint8(1))
    simplifieds = per_text(mark) - 2 * traditionals
    kept = folded != 0
    sizes = per_text(kept.view(np.uint8)).tolist()
    if long.any():
        kept &= ~np.repeat(long, lengths)
    joined = folded[kept].tobytes().decode("utf-32-le")
    start = 0
    flags = long.tolist()
    for number, (text, simplified, traditional) in enumerate(
        zip(texts, simplifieds.tolist(), traditionals.tolist(), strict=True)
    ):
        if not text:
            found[number] = Folded((), NO_SCRIPT)
            continue
        script = (
            NO_SCRIPT
            if simplified == traditional
            else (TRADITIONAL if traditional > simplified else SIMPLIFIED)
        )
        if flags[number]:
            found[number] = Folded(_fold_lines(text, table), script)
        else:
            end = start + sizes[number]
            found[number] = Folded(
                tuple(line for line in joined[start:end].split("\n") if line), script
            )
            start = end
    return found  # type: ignore[return-value]


def _fold_lines(text: str, table: np.ndarray) -> tuple[str, ...]:
    """The folded lines of a text the table cannot fold whole: each line that holds such
    a character the long way (NFKC composes nothing across a line break), the others by
    the table; the script is counted by the caller, character by character as ever."""
    lines = []
    for raw in text.split("\n"):
        codes = np.frombuffer(raw.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        if not len(codes):
            continue
        if codes.max() >= _LIMIT or (table[codes] == _LONG).any():
            line = _NOT_WORD.sub("", canonical(unicodedata.normalize("NFKC", raw)).casefold())
        else:
            folded = table[codes]
            line = folded[folded != 0].tobytes().decode("utf-32-le")
        if line:
            lines.append(line)
    return tuple(lines)


def fold_long(text: str) -> Folded:
    """``fold`` the long way: what its table gives, character by character.

    >>> text = "臺灣的「疫苗」\\n\\n  <b>Vaccine</b> news!"
    >>> fold_long(text) == fold(text)
    True
    """
    folded = canonical(unicodedata.normalize("NFKC", text)).casefold()
    lines = tuple(line for line in (_NOT_WORD.sub("", raw) for raw in folded.split("\n")) if line)
    return Folded(lines, _script(text))


@functools.cache
def _tables() -> tuple[np.ndarray, np.ndarray]:
    """What each code point below ``_LIMIT`` folds to (0: nothing, ``_LONG``: fold the
    text the long way), and its script mark (1: the Simplified form of a character that
    has others, 2: another form). About 0.3 s, once per process."""
    canon = _canonical_table()
    jamo = np.zeros(_LIMIT, dtype=bool)
    for low, high in _JAMO:
        jamo[low : high + 1] = True

    def joins(char: str) -> bool:
        """Whether NFKC may compose the character with the one before it."""
        return bool(
            unicodedata.combining(char)
            or unicodedata.category(char)[0] == "M"
            or (ord(char) < _LIMIT and jamo[ord(char)])
            or char == "\n"
        )

    def one(folded: str) -> int:
        kept = _NOT_WORD.sub("", folded)
        return ord(kept) if len(kept) == 1 else (0 if not kept else int(_LONG))

    table = np.zeros(_LIMIT, dtype=np.uint32)
    for code in range(_LIMIT):
        char = chr(code)
        normal = unicodedata.normalize("NFKC", char)
        if normal == char and code not in canon:
            if joins(char):
                table[code] = _LONG
            elif char.casefold() == char:
                table[code] = code if char.isalnum() else 0
            else:
                table[code] = one(char.casefold())
        elif any(joins(part) for part in normal):
            table[code] = _LONG
        else:
            table[code] = one(normal.translate(canon).casefold())
    table[ord("\n")] = ord("\n")
    marks = np.zeros(_LIMIT, dtype=np.uint8)
    for code, mark in _marks().items():
        marks[code] = 1 if mark == _SIMPLIFIED_MARK else 2
    return table, marks


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


def edge_and_line_blocks(folded: Folded) -> tuple[set[int], set[int]]:
    """``edge_blocks`` and ``line_blocks`` at once, each line hashed once (a rebuild's
    boilerplate pass needs both of every body).

    >>> folded = fold("本文轉載自網路\\n第一段\\n第二段\\n第三段\\n" + "長" * 400 + "\\n完")
    >>> edge_and_line_blocks(folded) == (edge_blocks(folded), line_blocks(folded))
    True
    """
    lines = folded.lines
    hashes = [block_hash(line) if len(line) <= MAX_BLOCK else None for line in lines]
    edges = hashes[:EDGE] + hashes[max(EDGE, len(lines) - EDGE) :]
    return (
        {value for value in edges if value is not None},
        {value for value in hashes if value is not None},
    )


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
    values = (_fmix64(hashed) >> np.uint64(32)).astype(np.uint32)
    values.sort()
    keep = np.empty(len(values), dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def sketch_many(texts: Sequence[str]) -> list[np.ndarray | None]:
    """``sketch(shingles(text))`` of each text (``None`` for one of fewer than
    ``MIN_SHINGLES`` shingles), the shingles of all of them hashed together and each
    bin's least found by a grouped minimum, not a sort per text; a text with an empty
    bin (a short one) goes the way of one text.

    >>> texts = ["臺灣的疫苗" * 3, "".join(chr(0x4E00 + n) for n in range(200)), "abc"]
    >>> [None if s is None else s.tolist() for s in sketch_many(texts)] == [
    ...     sketch(shingles(text)).tolist() if len(shingles(text)) >= MIN_SHINGLES else None
    ...     for text in texts
    ... ]
    True
    """
    found: list[np.ndarray | None] = [None] * len(texts)
    codes = np.frombuffer("".join(texts).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    count = len(codes) - SHINGLE + 1
    if count < 1:
        return found
    lengths = np.fromiter((len(text) for text in texts), dtype=np.int64, count=len(texts))
    starts = np.cumsum(lengths) - lengths
    owner = np.repeat(np.arange(len(texts)), lengths)[:count]
    # A shingle is its text's when it starts at least SHINGLE - 1 before the text's end.
    inside = np.arange(count) - starts[owner] <= lengths[owner] - SHINGLE
    hashed = codes[:count].copy()
    for offset in range(1, SHINGLE):
        hashed *= _PRIME
        hashed += codes[offset : offset + count]
    values = (_fmix64(hashed[inside]) >> np.uint64(32)).astype(np.uint32)
    owner = owner[inside]
    bins = ((values.astype(np.uint64) * np.uint64(BINS)) >> np.uint64(32)).astype(np.int64)
    # The product rounds down: a hash equal to the next bin's start is that bin's.
    following = np.minimum(bins + 1, BINS - 1)
    bins += (bins + 1 < BINS) & (values >= _BIN_STARTS[following])
    groups = owner * BINS + bins
    least = np.full(len(texts) * BINS, 0xFFFFFFFF, dtype=np.uint32)
    np.minimum.at(least, groups, values)
    full = (np.bincount(groups, minlength=len(texts) * BINS) > 0).reshape(len(texts), BINS)
    low = (least & np.uint32(0xFFFF)).astype(np.uint16).reshape(len(texts), BINS)
    complete = np.all(full, axis=1).astype(bool).tolist()
    for number, text in enumerate(texts):
        if complete[number]:
            # 54 full bins are 54 distinct shingles, more than MIN_SHINGLES.
            found[number] = low[number]
        elif lengths[number] >= SHINGLE + MIN_SHINGLES - 1:
            mine = shingles(text)
            if len(mine) >= MIN_SHINGLES:
                found[number] = sketch(mine)
    return found


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


def signature(hashes: np.ndarray) -> np.ndarray:
    """The one-permutation MinHash of a sorted set of 32-bit hashes (``shingles``): the
    least hash in each of ``BINS`` equal ranges, a bin with none taking the next full
    bin's (circularly) with its distance mixed in, so two sets that agree there agree on
    it (Shrivastava and Li's rotation). One binary search per bin, not one hash per
    shingle and permutation: the hashes are random already.

    >>> signature(np.array([5, 1 << 31], dtype=np.uint32))[[0, BINS // 2]].tolist()
    [5, 2147483648]
    """
    if not len(hashes):
        return np.zeros(BINS, dtype=np.uint32)
    starts = np.searchsorted(hashes, _BIN_STARTS)
    ends = np.empty(BINS, dtype=starts.dtype)
    ends[:-1] = starts[1:]
    ends[-1] = len(hashes)
    full = starts < ends
    values = hashes[np.minimum(starts, len(hashes) - 1)].astype(np.uint32)
    if full.all():
        return values
    filled = np.flatnonzero(full)
    empty = np.flatnonzero(~full)
    after = filled[np.searchsorted(filled, empty) % len(filled)]
    distance = ((after - empty) % BINS).astype(np.uint32)
    values[empty] = _fmix32(values[after] ^ (distance * np.uint32(0x9E3779B9)))
    return values


def sketch(hashes: np.ndarray) -> np.ndarray:
    """The signature's values cut to their low 16 bits: what ``copy_doc.bands`` keeps
    (108 bytes), enough to derive the band keys and to count the bins two bodies agree on
    (two different values agree by chance once in 65,536)."""
    return (signature(hashes) & np.uint32(0xFFFF)).astype(np.uint16)


def band_keys(values: np.ndarray) -> np.ndarray:
    """One signed 32-bit key per band of a sketch (its number folded in), distinct, sorted."""
    return np.unique(band_key_rows(values.reshape(1, BINS))[0])


def band_key_rows(sketches: np.ndarray) -> np.ndarray:
    """The band keys of many sketches at once (one per row), each row's in band order
    (not made distinct)."""
    rows = sketches.astype(np.uint64).reshape(len(sketches), BANDS, ROWS)
    keys = np.broadcast_to(_BAND_SEEDS, (len(sketches), BANDS))
    for column in range(ROWS):
        keys = _fmix64(keys ^ rows[:, :, column])
    return (keys >> np.uint64(32)).astype(np.uint32).view(np.int32)


_BAND_SEEDS = np.arange(1, BANDS + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)


def agreement(one: bytes, other: bytes) -> int:
    """How many bins two stored sketches agree on. Bodies that share a band agree on its
    ``ROWS`` bins at least; beyond those a copy agrees on about a Jaccard's share of the
    others (a third of them for a copy cut to a third), two bodies that share a sentence
    or two on one or two."""
    return int(np.count_nonzero(sketch_from_bytes(one) == sketch_from_bytes(other)))


def containment(one: np.ndarray, other: np.ndarray) -> float:
    """The share of the smaller set of shingles that the other holds.

    >>> containment(shingles("abcdefghij"), shingles("xxabcdefghijyy"))
    1.0
    """
    if not len(one) or not len(other):
        return 0.0
    if len(one) > len(other):
        one, other = other, one
    # Both sorted and distinct: each of the smaller set's values looked up in the other
    # by a binary search (no merged copy sorted again, as ``np.intersect1d`` makes).
    places = np.searchsorted(other, one)
    places[places == len(other)] = 0
    return int(np.count_nonzero(other[places] == one)) / len(one)


def sketch_bytes(values: np.ndarray) -> bytes:
    """A sketch as ``copy_doc.bands`` keeps it (little-endian 16-bit values)."""
    return values.astype("<u2").tobytes()


def sketch_from_bytes(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype="<u2")


def keys_from_bytes(data: bytes) -> list[int]:
    """The band keys of a stored sketch."""
    return [int(key) for key in band_keys(sketch_from_bytes(data))]
