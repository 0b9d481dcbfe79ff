"""Add a fourth part, ``unseen3``, of pages from publishers in none of the other parts (run
once; kept for provenance).

Issue 41's independent checks ask for pages the project has not seen. By the third parser
session unseen2 had been scored twice, so it is tuned on now; this part was made BEFORE that
session changed the parser, scored once before and once at the end, and never tuned on.

- GeneralNewsExtractor/GeneralNewsExtractor tests/<site>/<n>.html: Chinese news and notice
  pages that extractor's authors saved to test it (their tests print its output and check
  nothing, so the repository holds no expected text). Their gold was ANNOTATED BY HAND for
  this set: the text of the one element that holds the article's own paragraphs, found by
  reading each page (the CSS selector below), less the parts named after it (a quoted other
  story on a content farm). Headline, dateline bar, share buttons, related links and
  comments are outside those elements. Left out: pages of publishers already in a part
  (163.com, ifeng, people.com.cn, qq.com, sina, toutiao, WeChat, xinhuanet), a law's text on a
  university site and a congress resolution (not news), thepaper/4.html (the same page as
  thepaper/2.html), theguardian (English).
- postlight/parser fixtures/japan.zdnet.com.html with its custom extractor's content
  selector, as build_extra.py takes the other mercury-* pages (the one Japanese fixture no
  part had).

Usage: python bench/data/cjk-news/build_unseen3.py GNE_GIT MERCURY_GIT (git directories of
clones holding the commits named below), then add the printed names to SPLIT.txt.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from build_extra import MERCURY, selected, show, tree, write_gold  # noqa: E402
from build_new import language  # noqa: E402

GNE = ("GeneralNewsExtractor/GeneralNewsExtractor", "3d5a67c65f4d6c8e13c3047754a4c18fc0b0754a")
# tests/<path>: (publisher: the page's address where it names one, else the site its own
# links point to), the selector of the article's text, selectors dropped inside it)
GNE_PAGES: dict[str, tuple[str, str, list[str]]] = {
    "baijiahao/1.html": ("baijiahao.baidu.com", "div.article-content", []),
    "baijiahao/2.html": ("baijiahao.baidu.com", "div.article-content", []),
    "baijiahao/3.html": ("baijiahao.baidu.com", "div.article-content", []),
    "baijiahao/4.html": ("baijiahao.baidu.com", "div.article-content", []),
    "cjddsb/1.html": ("cjddsb.com", "div.single-content", []),
    "cjn/1.html": ("cjn.cn", "div.art-main div.TRS_Editor", []),
    "cmse/1.html": ("cmse.gov.cn", "div#content", []),
    "csdn/1.html": ("csdn.net", "div.news_content", []),
    "ednchina/1.html": ("ednchina.com", "div.article_text", []),
    "gamersky/gamersky.html": ("gamersky.com", "div.gsAreaContextArt", []),
    "gsc/1.html": ("gsc.org.cn", "div.detailCon", []),
    "guancha/2.html": ("guancha.cn", "div.all-txt", []),
    "guancha/3.html": ("guancha.cn", "div.all-txt", []),
    "guancha/guancha.html": ("guancha.cn", "div.all-txt", []),
    "gzggw/1.html": ("fzggw.zj.gov.cn", "div#zoom", []),
    "hexun/1.html": ("hexun.com", "div.art_contextBox", []),
    "huanqiu/1.html": ("huanqiu.com", "div.a-con", []),
    "mingridapan/1.html": ("mingridapan.com", "div.page_art_content", []),
    "njxfhn/1.html": ("njxfhn.com", "div.post-body", ["blockquote"]),
    "readhub/readhub.html": ("readhub.cn", "div[class^='summary']", []),
    "shanxi/1.html": ("shanxi.gov.cn", "div.article-body div.TRS_Editor", []),
    "stcn/1.html": ("stcn.com", "div#ctrlfscont", []),
    "thepaper/1.html": ("thepaper.cn", "div.news_txt", []),
    "thepaper/2.html": ("thepaper.cn", "div.news_txt", []),
    "thepaper/3.html": ("thepaper.cn", "div.news_txt", []),
    "thepaper/5.html": ("thepaper.cn", "div.news_txt", []),
    "xds/1.html": ("xds.com.cn", "div.statuses-text", []),
    "zsnews/1.html": ("zsnews.cn", "td[style^='font-size:14px']", []),
    "zyyfy/1.html": ("zyyfy.com", "div#z", []),
}
MERCURY_PAGES = {"japan.zdnet.com": (["div.article_body"], [])}


def main(gne_git: str, mercury_git: str) -> None:
    gold = json.loads((HERE / "gold.json").read_text(encoding="utf-8"))
    added: dict[str, dict[str, str]] = {}
    pages: dict[str, bytes] = {}
    for path, (site, selector, dropped) in GNE_PAGES.items():
        raw = show(gne_git, GNE[1], f"tests/{path}")
        key = "gne-" + path.removesuffix(".html").replace("/", "-")
        page = tree(raw)
        if len(page.cssselect(selector)) != 1:
            raise SystemExit(f"{path}: {selector} does not match exactly one element")
        lines = [line.strip() for line in selected(page, [selector], dropped).splitlines()]
        pages[key] = raw
        added[key] = {
            "body": "\n".join(line for line in lines if line),
            "lang": "zh",
            "publisher": site,
            "source": f"{GNE[0]} tests/{path} (commit {GNE[1]}); gold annotated by hand: "
            f"text of {selector}" + (f" less {', '.join(dropped)}" if dropped else ""),
        }
    for domain, (selectors, clean) in MERCURY_PAGES.items():
        raw = show(mercury_git, MERCURY[1], f"fixtures/{domain}.html")
        key = f"mercury-{domain}"
        body = selected(tree(raw), selectors, clean)
        pages[key] = raw
        added[key] = {
            "body": body,
            "lang": language(body),
            "publisher": domain,
            "source": f"{MERCURY[0]} fixtures/{domain}.html, "
            f"src/extractors/custom/{domain}/index.js content selectors (commit {MERCURY[1]})",
        }
    write_gold(gold, added, pages)
    print("\n".join(f"unseen3 {key}" for key in added if key in gold))


if __name__ == "__main__":
    main(*sys.argv[1:3])
