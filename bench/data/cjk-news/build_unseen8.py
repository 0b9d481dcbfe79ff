"""Add a ninth part, ``unseen8``, of Japanese and Taiwanese news pages from a repository's
pages no other part took (run once; kept for provenance).

Issue 41's seventh round asks for more unseen pages, added and scored ONCE with the current
parser (2026.11) before it is changed, and never tuned on. adbar/htmldate (Apache-2.0) saved
real news pages to test its date finding: tests/test_set/ (the Media Cloud 2020 sample,
tests/eval_mediacloud_2020.json gives their addresses) and tests/eval/. Three of its Korean
pages are held-out pages (build_kr.py) and its NHK page is trafilatura's (unseen4); the ten
here are the other pages of it whose text is mostly Chinese or Japanese and that are news or
press releases (its goo blogs and Q&A page, baike.baidu.com and a city.udn.com blog left out).
htmldate asserts dates only, so every gold was ANNOTATED BY HAND for this set, before any
extractor the project compares was run on these pages: the text of the elements holding the
article's own paragraphs (the CSS selector below; elements listed by the CJK characters of
their <p> children, then their first and last lines read), less the boxes named after it.
Lines the site prints inside them (photo captions, "（資料照）", the reporter's credit, a
press release's contact block) stay, as in the unseen3-7 golds; related-story boxes, ads,
"recommended" and app-download lines do not.

Usage: python bench/data/cjk-news/build_unseen8.py HTMLDATE_GIT (the git directory of a clone
of adbar/htmldate holding the commit below), then add the printed names to SPLIT.txt.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from build_extra import selected, show, tree, write_gold  # noqa: E402
from build_new import language  # noqa: E402
from lxml.cssselect import CSSSelector  # noqa: E402

REPO = ("adbar/htmldate", "b8952828329abaeeb3be21387b526f2be614ce67")
# path: (name, publisher, address, selector of the article's text, selectors dropped)
PAGES: dict[str, tuple[str, str, str, str, list[str]]] = {
    "tests/eval/yomiuri.co.jp-gaza.html": (
        "htmldate-yomiuri.co.jp-gaza",
        "yomiuri.co.jp",
        "",
        "div.p-main-contents > p",
        [],
    ),
    "tests/eval/article.auone.jp-tax.html": (
        "htmldate-article.auone.jp-tax",
        "article.auone.jp",
        "",
        "div.article",
        [],
    ),
    "tests/test_set/1521513101.html": (
        "htmldate-1521513101",
        "news.biglobe.ne.jp",
        "https://news.biglobe.ne.jp/entertainment/0215/ori_200215_7568645051.html",
        "div.news-body",
        ["div.cap > p:not(.cap-txt)"],
    ),
    "tests/test_set/1662376572.html": (
        "htmldate-1662376572",
        "prtimes.jp",
        "https://prtimes.jp/main/html/rd/p/000000232.000009812.html",
        "div.r-head, div.rich-text",
        [],
    ),
    "tests/test_set/1649432346.html": (
        "htmldate-1649432346",
        "prtimes.jp",
        "https://prtimes.jp/main/html/rd/p/000000088.000029713.html",
        "div.r-head, div.rich-text",
        [],
    ),
    "tests/test_set/1728970162.html": (
        "htmldate-1728970162",
        "money.udn.com",
        "https://money.udn.com/money/story/5603/4909425",
        "div#article_body",
        ["div.only_mobile"],
    ),
    "tests/test_set/1546021647.html": (
        "htmldate-1546021647",
        "upmedia.mg",
        "http://www.upmedia.mg/news_info.php?SerialNo=83141",
        "div.editor",
        ["div.rss_close", "div#SignatureSN"],
    ),
    "tests/test_set/1564888577.html": (
        "htmldate-1564888577",
        "news.ltn.com.tw",
        "https://news.ltn.com.tw/news/business/breakingnews/3119452",
        "div.text",
        ["span.time", "p.appE1121"],
    ),
    "tests/test_set/1500260110.html": (
        "htmldate-1500260110",
        "news.sina.com.tw",
        "https://news.sina.com.tw/article/20200121/34046328.html",
        "div.pcont",
        [],
    ),
}


def main(git_dir: str) -> None:
    gold = json.loads((HERE / "gold.json").read_text(encoding="utf-8"))
    added: dict[str, dict[str, str]] = {}
    pages: dict[str, bytes] = {}
    for path, (key, publisher, url, selector, dropped) in PAGES.items():
        raw = show(git_dir, REPO[1], path)
        page = tree(raw)
        if not CSSSelector(selector)(page):
            raise SystemExit(f"{path}: {selector} matches nothing")
        lines = [line.strip() for line in selected(page, [selector], dropped).splitlines()]
        body = "\n".join(line for line in lines if line)
        pages[key] = raw
        added[key] = {
            "body": body,
            "lang": language(body),
            "publisher": publisher,
            "source": f"{REPO[0]} {path} (commit {REPO[1]}, Apache-2.0); gold annotated by "
            f"hand: text of {selector}" + (f" less {', '.join(dropped)}" if dropped else ""),
        }
        if url:
            added[key]["url"] = url
    write_gold(gold, added, pages)
    print("\n".join(f"unseen8 {key}" for key in added if key in gold))


if __name__ == "__main__":
    main(sys.argv[1])
