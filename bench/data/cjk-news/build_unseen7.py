"""Add an eighth part, ``unseen7``, of Chinese news pages from a repository no other part took
pages from (run once; kept for provenance).

unseen5 and unseen6 were read by class for parser 2026.11, so neither checks it. This part
was made after parser 2026.11's last rule change, and is scored once with the final code, with
no rule changed after: the independent check issue 41 asks for. crawlerclub/ce (Apache-2.0),
a Go content extractor, saved four Chinese news pages to test it on (test_data/: Huanqiu 2017,
Sina 2017, Tencent 2021, Weiyangx 2017); its tests assert no body text, so every gold was
ANNOTATED BY HAND for this set, before any extractor the project compares was run on these
pages: the text of the element holding the article's paragraphs (SELECTORS), less the boxes
named with it, as the unseen3-6 golds do (captions, sub-headings, "来源" and editor lines inside
the element stay). On the Sina page (a repost of Huanqiu's WeChat account) the account's
"本期精彩回顾" list of other stories and its QR-code line, inside the same element, are cut
(the lines from CUT's first to its last).

Usage: python bench/data/cjk-news/build_unseen7.py CE_GIT (the git directory of a clone of
crawlerclub/ce), then add the printed names to SPLIT.txt.
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

REPO = "crawlerclub/ce"
# name: (commit holding the page, publisher, address or "", selector, selectors dropped)
PAGES: dict[str, tuple[str, str, str, str, list[str]]] = {
    "huanqiu": (
        "b816631c6add95d3ae1d6686131ef43ea0421f69",
        "huanqiu.com",
        "",
        "div#text",
        ["div#adPp", "div.spTopic"],
    ),
    "sina": (
        "b816631c6add95d3ae1d6686131ef43ea0421f69",
        "news.sina.com.cn",
        "http://news.sina.com.cn/o/2017-07-27/doc-ifyinwmp0119643.shtml",
        "div#artibody",
        [],
    ),
    "qq": ("b66592ddb184a2770049126bce2e48a825ddad38", "qq.com", "", "div.content-article", []),
    "weiyangx": (
        # the page was deleted from test_data/ in the next commit
        "a7b9b59a6b728d0f3d2139da5ecfc1636ed05573",
        "weiyangx.com",
        "http://www.weiyangx.com/254448.html",
        "article.wyt-post-content",
        [
            "div.uk-hidden-large",
            "div.wyt-post-header-noimg",
            "div.wyt-post-content-meta",
            "p.uk-article-meta",
            "p.uk-text-right",
            "div.wp-link-pages",
            "div#oT",
            "div.left-fixed-menu",
            "div#wechat-share",
        ],
    ),
}
CUT = {"sina": ("本期精彩回顾", "长按二维码，关注环环")}


def main(git_dir: str) -> None:
    gold = json.loads((HERE / "gold.json").read_text(encoding="utf-8"))
    added: dict[str, dict[str, str]] = {}
    pages: dict[str, bytes] = {}
    for name, (commit, publisher, url, selector, dropped) in PAGES.items():
        path = f"test_data/{name}.html"
        raw = show(git_dir, commit, path)
        page = tree(raw)
        if len(CSSSelector(selector)(page)) != 1:
            raise SystemExit(f"{path}: {selector} does not match exactly one element")
        lines = [line.strip() for line in selected(page, [selector], dropped).splitlines()]
        lines = [line for line in lines if line]
        if name in CUT:
            first, last = (lines.index(line) for line in CUT[name])
            lines = lines[:first] + lines[last + 1 :]
        body = "\n".join(lines)
        key = f"ce-{name}"
        pages[key] = raw
        added[key] = {
            "body": body,
            "lang": language(body),
            "publisher": publisher,
            "source": f"{REPO} {path} (commit {commit}, Apache-2.0); gold annotated by hand: "
            f"text of {selector}"
            + (f" less {', '.join(dropped)}" if dropped else "")
            + (f", less the lines {CUT[name][0]} ... {CUT[name][1]}" if name in CUT else ""),
        }
        if url:
            added[key]["url"] = url
    write_gold(gold, added, pages)
    print("\n".join(f"unseen7 {key}" for key in added if key in gold))


if __name__ == "__main__":
    main(sys.argv[1])
