"""Which codec a stored page's bytes are to be decoded with.

Scrapy's ``TextResponse`` falls back to utf-8, then cp1252, when neither the header nor
a meta tag names a charset, which turns an undeclared Big5 page into mojibake. Here every
declaration must prove itself by decoding the body, and an undeclared page that is not
UTF-8 goes to chardet.
"""

from __future__ import annotations

import codecs
import re

from chardet.universaldetector import UniversalDetector
from w3lib.encoding import resolve_encoding, to_unicode

# udn_s1 has 0.2% stray bytes; a wrong codec spoils 3-90% of the non-ASCII on the corpora.
_MAX_BAD_SHARE = 0.005
# NOWnews declares its charset at byte 3990 and ettoday at 7139, behind inline scripts.
_SCAN_BYTES = 32 * 1024
_SNIFF_BYTES = 256 * 1024
_SNIFF_CHUNK = 4096
_HEADER_CHARSET_RE = re.compile(r"""charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)
_DECLARATION_RE = re.compile(
    rb"<!--.*?(?:-->|$)|<meta(?=[\s/])(?P<meta>[^>]*)|<\?xml\s(?P<xml>[^>]*)|<body[\s>]",
    re.IGNORECASE | re.DOTALL,
)
_META_CHARSET_RE = re.compile(rb"""charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)
_XML_ENCODING_RE = re.compile(rb"""encoding\s*=\s*["']([\w.:-]+)""", re.IGNORECASE)
# Python text codecs no browser has: they would decode markup into other markup.
_NOT_WEB = frozenset({"idna", "raw-unicode-escape", "unicode-escape"})
_FALLBACKS = ("cp950", "gb18030")


def detect_encoding(body: bytes, content_type: str | None = None) -> str:
    """The Python codec to decode ``body`` with.

    In order: a BOM, the Content-Type charset, a meta or XML declaration, UTF-8, chardet.
    A declaration only wins if the body decodes with it; labels map to the superset codecs
    browsers use (big5 -> cp950, gb2312/gbk -> gb18030, latin-1/ascii -> cp1252).

    >>> detect_encoding("<p>台灣</p>".encode("big5"), "text/html; charset=big5")
    'cp950'
    >>> page = '<meta charset="big5"><p>台灣</p>'.encode("big5")
    >>> detect_encoding(page, "text/html; charset=utf-8")
    'cp950'
    >>> detect_encoding(b"<p>plain</p>")
    'utf-8'
    """
    if body.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if body[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return "utf-16"
    header = _header_encoding(content_type)
    document = _document_encoding(body)
    # Servers long sent ISO-8859-1 by default (AddDefaultCharset): the page knows better.
    declared = (document, header) if header == "cp1252" else (header, document)
    for codec in (*declared, "utf-8"):
        if codec is not None and _decodes(body, codec):
            return codec
    return _sniff(body)


def decode_body(body: bytes, encoding: str) -> str:
    """``body`` as text, undecodable bytes as U+FFFD (and GB18030's 0x80 as the euro sign,
    as browsers and Scrapy do).

    >>> decode_body("台灣".encode("cp950") + b"\\xff", "cp950")
    '台灣�'
    """
    return to_unicode(body, encoding)


def _codec(label: str) -> str | None:
    """The Python codec a charset label stands for, or None if there is none.

    Big5 is read as cp950, not w3lib's big5hkscs: they tie on the corpora's Big5 pages,
    but cp950 decodes punctuation as the WHATWG Big5 index does (A1E3 -> U+FF5E ～,
    A247 -> U+FFE1 ￡) and rejects GB2312 bytes that big5hkscs takes without error.
    """
    try:
        if codecs.lookup(label).name == "big5":
            return "cp950"
    except LookupError:
        pass
    name = resolve_encoding(label)
    if name is None or name in _NOT_WEB:
        return None
    try:
        b"<>".decode(name)
    except (LookupError, UnicodeError):
        return None
    return name


def _header_encoding(content_type: str | None) -> str | None:
    match = _HEADER_CHARSET_RE.search(content_type or "")
    return _codec(match.group(1)) if match else None


def _document_encoding(body: bytes) -> str | None:
    for match in _DECLARATION_RE.finditer(body, 0, _SCAN_BYTES):
        meta, xml = match.group("meta", "xml")
        if meta is not None:
            found = _META_CHARSET_RE.search(meta)
        elif xml is not None:
            found = _XML_ENCODING_RE.search(xml)
        elif match.group().startswith(b"<!--"):
            continue
        else:
            return None
        if found is None:
            continue
        codec = _codec(found.group(1).decode("ascii"))
        # A page read as ASCII to find its declaration is not UTF-16 (the WHATWG rule).
        if codec is not None and codec.startswith(("utf-16", "utf-32")):
            return "utf-8"
        return codec
    return None


def _decodes(body: bytes, codec: str) -> bool:
    """Whether ``codec`` decodes ``body`` with at most a sprinkling of bad bytes."""
    try:
        # An incremental decode forgives a character cut off at the end of a truncated body.
        codecs.getincrementaldecoder(codec)().decode(body)
        return True
    except UnicodeDecodeError:
        pass
    text = body.decode(codec, "replace")
    non_ascii = len(text) - len(text.encode("ascii", "ignore"))
    return text.count("\ufffd") <= _MAX_BAD_SHARE * non_ascii


def _sniff(body: bytes) -> str:
    """chardet's verified answer, else the first fallback that decodes the body: this is a
    Taiwanese archive, and a zh-TW browser defaults to Big5 too."""
    # In chunks, so chardet stops once sure: before udn_s1's stray UTF-8 bytes, for one.
    detector = UniversalDetector()
    for start in range(0, min(len(body), _SNIFF_BYTES), _SNIFF_CHUNK):
        detector.feed(body[start : start + _SNIFF_CHUNK])
        if detector.done:
            break
    label = detector.close()["encoding"]
    codec = _codec(label) if label else None
    for candidate in (codec, *_FALLBACKS):
        if candidate is not None and _decodes(body, candidate):
            return candidate
    return "cp1252"
