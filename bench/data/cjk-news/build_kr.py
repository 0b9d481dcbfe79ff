"""Add Korean news pages to the CJK set (run once; kept for provenance).

All its pages go to the held-out part of SPLIT.txt. Three repositories, each with a licence:

- flairNLP/fundus (MIT): tests/resources/parser/test_data/kr holds article pages saved
  from Hankook Ilbo and Maeil Business Newspaper (mk.co.kr) with, per parser version, the
  output its maintainers checked in (<Publisher>.json: ``body`` = summary, then each
  section's headline and paragraphs). The gold is that body, in that order. A page goes
  with the version whose crawl date it has, as fundus' own test maps them (the html files
  of a publisher sorted by date, the versions by name). The Maeil pages of the branch
  that added Korea were replaced one after the other (five pages, one per commit, each
  with its own MBN.json and meta.info): each is taken at the commit that held it, with the
  JSON of that commit.
- goose3/goose3 (Apache-2.0): tests/data/content/test_donga_korean.json ``cleaned_text``,
  the text the test expects for the Dong-A Ilbo page beside it (it leaves out the page's
  one sub-heading and its photo caption, as goose did).
- adbar/htmldate (Apache-2.0): three Korean news pages of its date tests (tests/test_set,
  the Media Cloud 2020 sample, and tests/eval). They carry dates only, so their gold was
  made by hand for this set from the HTML: the elements that hold the article's own
  paragraphs (chosen by reading each page, ``HAND`` below), their text, less the reporter
  line and copyright notice at the end; no headline, photo caption, related link or
  advertisement.

Left out: fundus' HankookIlbo_2026_01_29.html.gz (its article text is only in a script's
JSON, not in the page's HTML), and SomaNews/somanews-crawler, whose saved Korean news pages
and per-outlet selectors come without a licence.

Usage: python bench/data/cjk-news/build_kr.py FUNDUS_GIT GOOSE3_GIT HTMLDATE_GIT
(each a git directory of a clone holding the commits SOURCE.txt names).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from build_extra import show, tree, write_gold  # noqa: E402  (this folder, sys.path[0])

from zeroarchive.parser.text import element_text  # noqa: E402

FUNDUS = "flairNLP/fundus"
FUNDUS_DATA = "tests/resources/parser/test_data/kr"
# (commit, publisher class): the pages of that publisher at that commit.
FUNDUS_PAGES = [
    ("18da6e53592f99cf0ac5770dc63d6ba99ba63ae8", "HankookIlbo"),
    ("18da6e53592f99cf0ac5770dc63d6ba99ba63ae8", "MBN"),
    ("effc939a772d5aaea2d84ac77c14a9667fd885cd", "MBN"),
    ("59230b6609925695c6caad18273882d11bc60fde", "MBN"),
    ("fd4140436e9a735529675c151c5d583cbea46a0c", "MBN"),
    ("7303fed9d88b3f8115450d4223aa32205812fc0e", "MBN"),
]
FUNDUS_SKIPPED = {"HankookIlbo_2026_01_29.html.gz"}  # text only in a script's JSON

GOOSE3 = ("goose3/goose3", "c5a8902eed0c4592a1ff5ec51a0277cf73a3aca7")
GOOSE3_PAGE = "tests/data/content/test_donga_korean"

HTMLDATE = ("adbar/htmldate", "b8952828329abaeeb3be21387b526f2be614ce67")
# path: (url, XPath of the article's paragraphs, lines dropped from their text)
HAND = {
    "tests/test_set/1538026996.html": (
        "http://m.daejonilbo.com/mnews.asp?pk_no=1412361",
        "//div[@class='m_cont']",
        ["이용민 기자", "<저작권자ⓒ대전일보사. 무단전재-재배포 금지>"],
    ),
    "tests/test_set/1694328145.html": (
        "https://news.chosun.com/site/data/html_dir/2020/08/27/2020082704301.html",
        "//article//div[@class='par'][not(.//a)]",
        ["부산=선수민 기자 sunsoo@sportschosun.com"],
    ),
    "tests/eval/n.news.naver.com-607.html": (
        "https://n.news.naver.com/article/607/0000001728",
        "//article[@id='dic_area']",
        [],
    ),
}


def git_lines(git_dir: str, *args: str) -> list[str]:
    return subprocess.run(
        ["git", "--git-dir", git_dir, *args], capture_output=True, check=True, text=True
    ).stdout.split()


def publisher(url: str) -> str:
    """The site of an address, as the set names publishers.

    >>> publisher("http://m.daejonilbo.com/mnews.asp?pk_no=1")
    'daejonilbo.com'
    >>> publisher("https://www.mk.co.kr/news/politics/1")
    'mk.co.kr'
    """
    host = urlsplit(url).hostname or ""
    for prefix in ("www.", "m."):
        host = host.removeprefix(prefix)
    return host


def fundus_body(body: dict[str, list]) -> str:
    """fundus' ArticleBody as text: the summary, then each section's headline and paragraphs.

    >>> fundus_body({"summary": ["s"], "sections": [{"headline": ["h"], "paragraphs": ["p", "q"]}]})
    's\\nh\\np\\nq'
    """
    parts = list(body.get("summary", []))
    for section in body["sections"]:
        parts += section["headline"] + section["paragraphs"]
    return "\n".join(part.strip() for part in parts if part.strip())


def by_hand(raw: bytes, xpath: str, dropped: list[str]) -> str:
    """The text of the elements ``xpath`` picks, less the ``dropped`` lines and endings."""
    found = tree(raw).xpath(xpath)
    if not found:
        raise SystemExit(f"nothing matches {xpath}")
    lines = []
    for line in "\n".join(element_text(node) for node in found).splitlines():
        for end in dropped:
            if line != end and line.endswith(end):
                line = line.removesuffix(end).rstrip()
        if line.strip() and line.strip() not in dropped:
            lines.append(line.strip())
    return "\n".join(lines)


def main(fundus_git: str, goose3_git: str, htmldate_git: str) -> None:
    gold = json.loads((HERE / "gold.json").read_text(encoding="utf-8"))
    added: dict[str, dict[str, str]] = {}
    pages: dict[str, bytes] = {}
    for commit, outlet in FUNDUS_PAGES:
        expected = json.loads(show(fundus_git, commit, f"{FUNDUS_DATA}/{outlet}.json"))
        meta = json.loads(show(fundus_git, commit, f"{FUNDUS_DATA}/meta.info"))
        files = sorted(
            Path(path).name
            for path in git_lines(fundus_git, "ls-tree", "--name-only", commit, f"{FUNDUS_DATA}/")
            if Path(path).name.startswith(f"{outlet}_") and path.endswith(".html.gz")
        )
        if len(files) != len(expected):
            raise SystemExit(f"fundus {outlet} at {commit}: {files} for versions {list(expected)}")
        for version, name in zip(sorted(expected), files, strict=True):
            if name in FUNDUS_SKIPPED:
                print(f"left out {name}: its text is only in a script")
                continue
            key = f"fundus-{name.removesuffix('.html.gz')}"
            pages[key] = gzip.decompress(show(fundus_git, commit, f"{FUNDUS_DATA}/{name}"))
            added[key] = {
                "body": fundus_body(expected[version]["body"]),
                "lang": "ko",
                "publisher": publisher(meta[name]["url"]),
                "source": f"{FUNDUS} {FUNDUS_DATA}/{name}, {outlet}.json {version} body "
                f"(commit {commit})",
                "url": meta[name]["url"],
            }
    expected = json.loads(show(goose3_git, GOOSE3[1], f"{GOOSE3_PAGE}.json"))
    key = "goose3-donga_korean"
    pages[key] = show(goose3_git, GOOSE3[1], f"{GOOSE3_PAGE}.html")
    added[key] = {
        "body": expected["expected"]["cleaned_text"],
        "lang": "ko",
        "publisher": publisher(expected["url"]),
        "source": f"{GOOSE3[0]} {GOOSE3_PAGE}.html, {GOOSE3_PAGE}.json cleaned_text",
        "url": expected["url"],
    }
    for path, (url, xpath, dropped) in HAND.items():
        raw = show(htmldate_git, HTMLDATE[1], path)
        key = f"htmldate-{Path(path).stem}"
        less = ", less its reporter and copyright lines" if dropped else ""
        pages[key] = raw
        added[key] = {
            "body": by_hand(raw, xpath, dropped),
            "lang": "ko",
            "publisher": publisher(url),
            "source": f"{HTMLDATE[0]} {path}; gold annotated by hand for this set "
            f"(the text of {xpath}{less})",
            "url": url,
        }
    write_gold(gold, added, pages)


if __name__ == "__main__":
    main(*sys.argv[1:4])
