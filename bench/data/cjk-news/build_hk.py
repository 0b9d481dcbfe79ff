"""Add the Hong Kong pages of ayltai/hknews and ayltai/hknews-backend to the CJK set.

Run once (kept for provenance); all its pages go to the held-out part of SPLIT.txt. Both
repositories are the back ends of a Hong Kong news reader: src/test/resources/testdata holds
article pages saved from each outlet, and each outlet's hand-written parser
(src/main/java/.../parser/<Outlet>Parser.java) takes the article's text out of the page
with plain string cuts (Apache StringUtils.substringBetween / substringsBetween). The gold
texts come from those hand-made per-outlet choices, never from an extractor this project
compares:

- ayltai/hknews-backend: the description the test asserts in full
  (src/test/java/.../parser/<Outlet>ParserTest.java, ``assertEquals("Incorrect item
  description", "...", updatedItem.getDescription())``): the output its maintainer
  checked in, turned into text;
- ayltai/hknews: most of its tests assert only the first 50 characters, so the gold is
  the outlet parser's own cut, done again here step for step (``cut_*`` below), and
  checked against what the test asserts (the beginning, or for hkej_realtime the whole).

The description is HTML; its text is taken as build_extra.py takes it (element_text, so
line breaks fall at block elements and <br>; the scoring ignores white space anyway).

Left out: the English pages (The Standard, SCMP), the list pages, and hknews'
orientaldaily_realtime_details.html, whose article text is only in a script's JSON
(``ONCC.Content.data``), not in the page's HTML.

Usage: python bench/data/cjk-news/build_hk.py HKNEWS_GIT HKNEWS_BACKEND_GIT
(each a git directory of a clone at the commits SOURCE.txt names).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

import lxml.html

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from build_extra import show, write_gold  # noqa: E402  (this folder, sys.path[0])

from zeroarchive.core.encoding import decode_body, detect_encoding  # noqa: E402
from zeroarchive.parser.text import element_text  # noqa: E402

HKNEWS = ("ayltai/hknews", "b8d0d22657e6104e3c707c1d9edee4887e100418")
BACKEND = ("ayltai/hknews-backend", "d269775877183c523d0d9aee7e6d4d4870b3d422")
DATA = "src/test/resources/testdata"
TESTS = "src/test/java/com/github/ayltai/hknews/parser"


def between(text: str | None, start: str, end: str) -> str | None:
    """StringUtils.substringBetween: from the first ``start`` to the first ``end`` after it.

    >>> between("<p>a</p><p>b</p>", "<p>", "</p>")
    'a'
    >>> between("<p>a", "<p>", "</p>") is None
    True
    """
    if text is None:
        return None
    begin = text.find(start)
    if begin < 0:
        return None
    stop = text.find(end, begin + len(start))
    return None if stop < 0 else text[begin + len(start) : stop]


def all_between(text: str | None, start: str, end: str) -> list[str]:
    """StringUtils.substringsBetween: every such piece, left to right, not overlapping.

    >>> all_between("<p>a</p>x<p>b</p><p>c", "<p>", "</p>")
    ['a', 'b']
    """
    pieces: list[str] = []
    at = 0
    while text is not None:
        begin = text.find(start, at)
        if begin < 0:
            break
        stop = text.find(end, begin + len(start))
        if stop < 0:
            break
        pieces.append(text[begin + len(start) : stop])
        at = stop + len(end)
    return pieces


# ayltai/hknews' parsers (HkejParser, MingPaoParser, ... .updateItem), one cut each.
def cut_headline(html: str) -> list[str]:
    part = between(html, '<div class="content', '<div class="content-fb-landing">')
    news = '<div id="news-content" class="set-font-aera" style="visibility: visible;">'
    return [p for p in [between(part, news, "</div>")] if p]


def cut_headline_realtime(html: str) -> list[str]:
    part = between(html, '<div class="content post-content">', "</article>")
    return [p for p in [between(part, "<p>", "</p>")] if p]


def cut_hkej(html: str) -> list[str]:
    return [p for p in [between(html, "<p></p>", "<p>（節錄）</p>")] if p]


def cut_hkej_realtime(html: str) -> list[str]:
    part = between(html, '<div id="article-detail-wrapper">', "<!-- 相關文章 start -->")
    return all_between(between(part, "<div id='article-content'>", "</div>"), "<p>", "</p>")


def cut_hket(html: str) -> list[str]:
    part = between(
        html,
        '<div class="article-detail-body-container">',
        '<div class="article-details-center-sharing-btn">',
    )
    return all_between(part, "<p>", "</p>")


def cut_mingpao(html: str) -> list[str]:
    part = between(html, "<hgroup>", "<h3>上 / 下一篇新聞</h3>")
    pieces = [between(part, '<div id="upper">', "</div>")]
    pieces.append(between(part, '<div class="articlelogin">', "</div>"))
    return [p for p in pieces if p]


def cut_orientaldaily(html: str) -> list[str]:
    part = between(html, '<div id="contentCTN-top"', "</div><!--//contentCTN-->")
    if part is None:
        return []
    return all_between(part.replace("<h3>", "<p>").replace("</h3>", "</p>"), "<p>", "</p>")


def cut_rthk(html: str) -> list[str]:
    return [p for p in [between(html, '<div class="itemFullText">', "</div>")] if p]


def cut_singpao(html: str) -> list[str]:
    part = between(html, "<td class='news_title'>", "您可能有興趣:")
    return all_between(part, '<p class="內文">', "</p>") or all_between(part, "<p>", "</p>")


def cut_singtao(html: str) -> list[str]:
    part = between(html, '<article class="content">', "</article>")
    text = between(part, "(星島日報報道)", "</div>") or between(part, "<p>", "</p>")
    return [text] if text else []


def cut_skypost(html: str) -> list[str]:
    part = between(
        html, '<section class="article-head">', '<div class="article-detail_extra-info">'
    )
    pieces = []
    for piece in all_between(part, "<P>", "</P>"):
        bold = between(piece, "<b>", "</b>") or between(piece, "<B>", "</B>")
        pieces.append(f"<h4>{bold}</h4>" if bold else piece)
    return pieces


def cut_wenweipo(html: str) -> list[str]:
    part = between(html, '<main class="mainbody">', '<div class="post-footer">')
    return all_between(part, "<p>", "</p>")


# file in testdata: (test class, publisher, the parser's cut)
HKNEWS_PAGES: dict[str, tuple[str, str, Callable[[str], list[str]]]] = {
    "headline_details.html": ("HeadlineParserTests", "hd.stheadline.com", cut_headline),
    "headline_realtime_details.html": (
        "HeadlineRealtimeParserTests",
        "hd.stheadline.com",
        cut_headline_realtime,
    ),
    "hkej_details.html": ("HkejParserTests", "hkej.com", cut_hkej),
    "hkej_realtime_details.html": ("HkejRealtimeParserTests", "hkej.com", cut_hkej_realtime),
    "hket.html": ("HketParserTests", "hket.com", cut_hket),
    "mingpao.html": ("MingPaoParserTests", "news.mingpao.com", cut_mingpao),
    "orientaldaily_details.html": ("OrientalDailyParserTests", "on.cc", cut_orientaldaily),
    "rthk.htm": ("RthkParserTests", "news.rthk.hk", cut_rthk),
    "singpao_details.html": ("SingPaoParserTests", "singpao.com.hk", cut_singpao),
    "singtao_details.html": ("SingTaoParserTests", "std.stheadline.com", cut_singtao),
    "singtao_realtime_details.html": ("SingTaoParserTests", "std.stheadline.com", cut_singtao),
    "skypost_details.html": ("SkyPostParserTests", "skypost.ulifestyle.com.hk", cut_skypost),
    "wenweipo_details.html": ("WenWeiPoParserTests", "wenweipo.com", cut_wenweipo),
}
BACKEND_PAGES: dict[str, tuple[str, str]] = {
    "appledaily_details.html": ("AppleDailyParserTest", "hk.appledaily.com"),
    "headline.html": ("HeadlineParserTest", "hd.stheadline.com"),
    "headline_details.html": ("HeadlineRealtimeParserTest", "hd.stheadline.com"),
    "hkej.html": ("HkejParserTest", "hkej.com"),
    "mingpao.html": ("MingPaoParserTest", "news.mingpao.com"),
    "rthk.html": ("RthkParserTest", "news.rthk.hk"),
    "singpao_details.html": ("SingPaoParserTest", "singpao.com.hk"),
    "singtao_details.html": ("SingTaoParserTest", "std.stheadline.com"),
    "singtao_realtime_details.html": ("SingTaoRealtimeParserTest", "std.stheadline.com"),
    "skypost_details.html": ("SkyPostParserTest", "skypost.ulifestyle.com.hk"),
}

_JAVA_STRING = r'"((?:[^"\\]|\\.)*)"'
_JAVA_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\"}


def java_string(literal: str) -> str:
    """The value of a Java string literal's inside.

    >>> java_string(r'say \\"hi\\"<br />\\n\\u3000')
    'say "hi"<br />\\n\\u3000'
    """

    def escape(match: re.Match[str]) -> str:
        code = match.group(1)
        return chr(int(code[1:], 16)) if code[0] == "u" else _JAVA_ESCAPES[code]

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", escape, literal)


def as_read(raw: bytes) -> str:
    """The page as the Java tests read it: lines joined by "\\n"."""
    return "\n".join(decode_body(raw, detect_encoding(raw)).splitlines())


def text(fragments: list[str]) -> str:
    parts = [lxml.html.fragment_fromstring(f, create_parent="div") for f in fragments]
    return "\n".join(t for t in (element_text(p) for p in parts) if t)


def squeezed(html_or_text: str) -> str:
    """Text without tags, entities or white space, for comparing beginnings."""
    plain = element_text(lxml.html.fragment_fromstring(html_or_text, create_parent="div"))
    return "".join(plain.split())


def page_url(html: str, test: str) -> str:
    """The page's own og:url or canonical address when absolute, else the test's."""
    for pattern in (
        r'<meta[^>]+property="og:url"[^>]+content="(https?://[^"]+)"',
        r'<link[^>]+rel="canonical"[^>]+href="(https?://[^"]+)"',
    ):
        found = re.search(pattern, html)
        if found:
            return found.group(1)
    return java_string(re.findall(r"item\.setUrl\(" + _JAVA_STRING + r"\)", test)[-1])


def main(hknews_git: str, backend_git: str) -> None:
    gold = json.loads((HERE / "gold.json").read_text(encoding="utf-8"))
    added: dict[str, dict[str, str]] = {}
    pages: dict[str, bytes] = {}
    for name, (test_class, publisher, cut) in HKNEWS_PAGES.items():
        raw = show(hknews_git, HKNEWS[1], f"{DATA}/{name}")
        test = show(hknews_git, HKNEWS[1], f"{TESTS}/{test_class}.java").decode()
        html = as_read(raw)
        body = text(cut(html))
        # The test asserts the description, whole or its beginning: the gold must agree.
        asserted = re.findall(
            r"assertEquals\(" + _JAVA_STRING + r", updatedItem\.getDescription\(\)"
            r"(\.substring\(0, \d+\))?",
            test,
        )
        if not any(
            squeezed(body).startswith(squeezed(java_string(value)))
            if prefix
            else squeezed(body) == squeezed(java_string(value))
            for value, prefix in asserted
        ):
            raise SystemExit(f"hknews {name}: the cut is not the description the test asserts")
        key = f"hknews-{Path(name).stem}"
        pages[key] = raw
        added[key] = {
            "body": body,
            "lang": "zh",
            "publisher": publisher,
            "source": f"{HKNEWS[0]} {DATA}/{name}, the description cut of "
            f"{TESTS.replace('src/test', 'src/main')}/{test_class.removesuffix('Tests')}.java",
            "url": page_url(html, test),
        }
    for name, (test_class, publisher) in BACKEND_PAGES.items():
        raw = show(backend_git, BACKEND[1], f"{DATA}/{name}")
        test = show(backend_git, BACKEND[1], f"{TESTS}/{test_class}.java").decode()
        expected = re.findall(
            r'assertEquals\("Incorrect item description", '
            + _JAVA_STRING
            + r", updatedItem\.getDescription\(\)\)",
            test,
        )
        key = f"hknews-backend-{Path(name).stem}"
        pages[key] = raw
        added[key] = {
            "body": text([java_string(expected[0])]),
            "lang": "zh",
            "publisher": publisher,
            "source": f"{BACKEND[0]} {DATA}/{name}, the description asserted by "
            f"{TESTS}/{test_class}.java",
            "url": page_url(as_read(raw), test),
        }
    write_gold(gold, added, pages)


if __name__ == "__main__":
    main(*sys.argv[1:3])
