"""Compression of raw snapshot bytes; the codec name is stored beside the data.

Two kinds of zstd frame: ``zstd`` stands alone; ``zstd-ref`` was compressed with the raw
bytes of another snapshot of the same article as its dictionary (a re-snapshot whose ads
and timestamps changed repeats most of that page), and needs those bytes to be read.
"""

from __future__ import annotations

import threading
import zlib

import zstandard

# Measured on the 110 corpus pages of bench/crawl_embedded.py (111 KiB on average), one
# core: level 7 stores 0.183 of the raw bytes in 0.97 ms a page, 5 0.188 in 0.67 ms, 3
# (zstd's own default) 0.200 in 0.28 ms; 12 stored 0.180 in over 5x the time of 7 (an
# earlier machine). Compression was still a worker's largest cost at 7 (a quarter of its
# busy time); 3 costs 3.5x less CPU for 9 % more bytes.
ZSTD_LEVEL = 3
# zstd contexts must never be shared between threads (pipelines write from worker threads).
_contexts = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    if not hasattr(_contexts, "compressor"):
        _contexts.compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    return _contexts.compressor


def _decompressor() -> zstandard.ZstdDecompressor:
    if not hasattr(_contexts, "decompressor"):
        _contexts.decompressor = zstandard.ZstdDecompressor()
    return _contexts.decompressor


def compress(raw: bytes) -> tuple[bytes, str]:
    """Compress ``raw`` and return ``(data, codec)``.

    >>> data, codec = compress(b"<html>" * 1000)
    >>> codec, len(data) < 100, decompress(data, codec) == b"<html>" * 1000
    ('zstd', True, True)
    """
    return _compressor().compress(raw), "zstd"


def _reference_dict(reference: bytes) -> zstandard.ZstdCompressionDict:
    return zstandard.ZstdCompressionDict(reference, dict_type=zstandard.DICT_TYPE_RAWCONTENT)


def compress_against(raw: bytes, reference: bytes) -> tuple[bytes, str]:
    """Compress ``raw`` with ``reference`` (an earlier page's bytes) as its dictionary.

    >>> page = b"<html><p>" + bytes(range(256)) * 40 + b"</p><time>10:00</time></html>"
    >>> data, codec = compress_against(page.replace(b"10:00", b"11:00"), page)
    >>> codec, len(data) < 60, decompress(data, codec, page) == page.replace(b"10:00", b"11:00")
    ('zstd-ref', True, True)
    """
    compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL, dict_data=_reference_dict(reference))
    return compressor.compress(raw), "zstd-ref"


def decompress(data: bytes, codec: str, reference: bytes | None = None) -> bytes:
    """Return the original bytes of ``data`` compressed with ``codec`` (and, for a
    ``zstd-ref`` frame, the ``reference`` bytes it was compressed against)."""
    if codec == "zstd":
        # Frames written by compress() carry their content size, so no max size is needed.
        return _decompressor().decompress(data)
    if codec == "zstd-ref":
        if reference is None:
            raise ValueError("a zstd-ref frame needs the bytes of its reference snapshot")
        return zstandard.ZstdDecompressor(dict_data=_reference_dict(reference)).decompress(data)
    if codec == "zlib":
        return zlib.decompress(data)
    if codec == "none":
        return data
    raise ValueError(f"unknown snapshot codec {codec!r}")
