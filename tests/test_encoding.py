from __future__ import annotations

import gzip
import json
import lzma
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from zeroarchive.core import encoding
from zeroarchive.core.encoding import decode_body, detect_encoding

NEWS_2014 = FIXTURES / "tw-news-2014"
TWNEWS = FIXTURES / "tw-news-twnews"
FEEDS = FIXTURES / "big5-feeds"
CODEC_OF_CHARSET = {"utf-8": "utf-8", "big5": "cp950"}
CODEC_OF_FEED_FOLDER = {"Big5": "cp950", "GB2312": "gb18030"}
META_RE = re.compile(rb"<meta[^>]*charset[^>]*>", re.IGNORECASE)
XML_ENCODING_RE = re.compile(rb"""(<\?xml[^>]*?)\s+encoding=["'][^"']*["']""")


def _news_pages() -> list[tuple[str, bytes, dict[str, Any]]]:
    pages = []
    for folder, open_page in ((NEWS_2014, gzip.decompress), (TWNEWS, lzma.decompress)):
        expected = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
        for name, facts in sorted(expected.items()):
            path = folder / "html" / name if folder == NEWS_2014 else folder / name
            pages.append((name, open_page(path.read_bytes()), facts))
    return pages


NEWS = _news_pages()
FEED_FILES = sorted((FEEDS / "Big5").iterdir()) + sorted((FEEDS / "GB2312").iterdir())


def _big5_page(name: str) -> bytes:
    return gzip.decompress((NEWS_2014 / "html" / f"{name}.html.gz").read_bytes())


def _assert_has_article(text: str, facts: dict[str, Any]) -> None:
    assert facts["title"] in text
    for snippet in facts["body_snippets"]:
        assert snippet in text


@pytest.mark.parametrize(("name", "body", "facts"), NEWS, ids=[page[0] for page in NEWS])
@pytest.mark.parametrize("with_header", [True, False], ids=["header", "no-header"])
def test_news_page_decodes(
    name: str, body: bytes, facts: dict[str, Any], with_header: bool
) -> None:
    content_type = f"text/html; charset={facts['charset']}" if with_header else None
    codec = detect_encoding(body, content_type)
    assert codec == CODEC_OF_CHARSET[facts["charset"]]
    _assert_has_article(decode_body(body, codec), facts)


@pytest.mark.parametrize("path", FEED_FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FEED_FILES])
@pytest.mark.parametrize("declared", [True, False], ids=["declared", "undeclared"])
def test_big5_and_gb_feed_decodes_without_header(path: Path, declared: bool) -> None:
    body = gzip.decompress(path.read_bytes())
    if not declared:
        body = XML_ENCODING_RE.sub(rb"\1", body, count=1)
    expected = decode_body(body, CODEC_OF_FEED_FOLDER[path.parent.name])
    assert decode_body(body, detect_encoding(body)) == expected


def test_chromium_big5_page_without_any_declaration() -> None:
    page = FEEDS / "Big5" / "_chromium_Big5_with_no_encoding_specified.html.gz"
    body = gzip.decompress(page.read_bytes())
    assert detect_encoding(body) == "cp950"
    assert "台北看守所昨天抽查前總統陳水扁的房舍" in decode_body(body, "cp950")


@pytest.mark.parametrize("name", ["udn_s1", "udn_s2", "liberty_times_big5_s1"])
@pytest.mark.parametrize("keep_meta", [True, False], ids=["meta", "no-meta"])
def test_big5_page_behind_a_lying_utf8_header(name: str, keep_meta: bool) -> None:
    body = _big5_page(name)
    if not keep_meta:
        body = META_RE.sub(b"", body)
    facts = json.loads((NEWS_2014 / "expected.json").read_text(encoding="utf-8"))
    codec = detect_encoding(body, "text/html; charset=utf-8")
    assert codec == "cp950"
    _assert_has_article(decode_body(body, codec), facts[f"{name}.html.gz"])


def test_utf8_page_behind_a_lying_big5_header() -> None:
    body = lzma.decompress((TWNEWS / "udn.html.xz").read_bytes())
    assert detect_encoding(body, "text/html; charset=big5") == "utf-8"


def test_page_declaration_beats_a_default_latin1_header() -> None:
    assert detect_encoding(_big5_page("udn_s2"), "text/html; charset=ISO-8859-1") == "cp950"


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (b"", None, "utf-8"),
        (b"", "text/html; charset=big5", "cp950"),
        (b"<html><p>plain ascii</p></html>", None, "utf-8"),
        (b"<html><p>plain ascii</p></html>", "text/html; charset=us-ascii", "cp1252"),
        (b"\xef\xbb\xbf<p>\xe5\x8f\xb0</p>", "text/html; charset=big5", "utf-8-sig"),
        ("<p>台灣</p>".encode("utf-16"), None, "utf-16"),
        ("<p>台灣新聞</p>".encode()[:-6], None, "utf-8"),
    ],
    ids=["empty", "empty-declared", "ascii", "ascii-declared", "utf8-bom", "utf16-bom", "cut"],
)
def test_edge_cases(body: bytes, content_type: str | None, expected: str) -> None:
    assert detect_encoding(body, content_type) == expected


@pytest.mark.parametrize(
    ("label", "codec"),
    [
        ("big5", "cp950"),
        ('"BIG5"', "cp950"),
        ("csBig5", "cp950"),
        ("big5-hkscs", "big5hkscs"),
        ("gb2312", "gb18030"),
        ("GBK", "gb18030"),
        ("iso-8859-1", "cp1252"),
        ("latin-1", "cp1252"),
        ("ascii", "cp1252"),
        ("UTF8", "utf-8"),
        ("shift_jis", "cp932"),
    ],
)
def test_charset_labels_resolve_to_superset_codecs(label: str, codec: str) -> None:
    assert detect_encoding(b"<p>ascii</p>", f"text/html; charset={label}") == codec


@pytest.mark.parametrize("label", ["x-no-such-codec", "base64", "rot13", "unicode-escape", "utf-7"])
def test_unusable_declarations_fall_through(label: str) -> None:
    body = f'<meta charset="{label}"><p>台灣新聞</p>'.encode()
    assert detect_encoding(body, f"text/html; charset={label}") == "utf-8"


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"<script>" + b"x" * 30_000 + b"</script>", "cp1252"),
        (b"<!-- <meta charset=big5> -->", "cp1252"),
        (b"</head><body>", "utf-8"),
    ],
    ids=["30KB-of-script", "commented-out-meta", "meta-in-body"],
)
def test_document_declaration_scan(head: bytes, expected: str) -> None:
    body = b"<html><head>" + head + b'<meta charset="windows-1252"></head><p>ok</p>'
    assert detect_encoding(body) == expected


def test_xml_declaration_in_document_utf16_means_utf8() -> None:
    assert detect_encoding(b'<?xml version="1.0" encoding="UTF-16"?><a/>') == "utf-8"


def test_utf8_pages_never_reach_the_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> None:
        raise AssertionError("detector run on a UTF-8 page")

    monkeypatch.setattr(encoding, "UniversalDetector", refuse)
    for _name, body, facts in NEWS:
        if facts["charset"] == "utf-8":
            assert detect_encoding(body) == "utf-8"
