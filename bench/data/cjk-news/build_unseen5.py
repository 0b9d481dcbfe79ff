"""Write a sixth part, ``unseen5``, of Japanese news pages from a repository no other part took
pages from, to a directory OUTSIDE the repository: koron/java-extractarticle states no licence,
and the project keeps no page of an unlicensed source (nor its text beyond the gold's source
lines here). ``python bench/extraction.py --part unseen5 --pages DIR`` scores it.

Issue 41's sixth round asks for a new independent set, built and scored BEFORE the parser is
changed (unseen4 had been scored twice). koron/java-extractarticle saved 41 pages to test its
Japanese article extractor in 2021; 26 of them are news articles (Yahoo! News Japan, Asahi,
Yomiuri, Sankei, Mainichi, Nikkei; its src/test/resources/README.md names their addresses and
marks the paid ones: 有料会員記事, 読者会員限定, 会員記事, 有料記事), the others blogs. The
repository ships no expected text (its test checks a score only), so every gold was ANNOTATED
BY HAND for this set, before any extractor the project compares was run on these pages: the
text of the elements that hold the article's own paragraphs (the CSS selector below; elements
listed by the CJK characters of their <p> children, then their children read one by one), less
the widgets named after it (advertisements, "あわせて読みたい" and series link boxes). Photo
captions and lines the site prints inside those elements stay, as in the unseen3/unseen4 golds.
Where the page holds only a paid article's lead before a "この記事は有料会員記事です" or
registration box, the lead is the gold (issue 41: "where the page gives only a lead before a
paywall, the lead is the body"); the box is not. Left out: the two Yomiuri 読者会員限定 pages
(000013, 000014), whose HTML holds no line of the article, and the 15 blog pages.

Usage: python bench/data/cjk-news/build_unseen5.py EXTRACTARTICLE_GIT DIR, where
EXTRACTARTICLE_GIT is the git directory of a clone of koron/java-extractarticle holding the
commit below (``git clone --bare https://github.com/koron/java-extractarticle``) and DIR a
directory outside the repository: it gets DIR/gold.json ({name: {"body", "lang",
"publisher", "source", "url"}}) and DIR/html/<name>.html.gz.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from build_extra import selected, show, tree  # noqa: E402
from build_new import language  # noqa: E402
from lxml.cssselect import CSSSelector  # noqa: E402

REPO = ("koron/java-extractarticle", "49c9a28a6ad7d2fc56c470ef8c36f6b8341559e9")

YAHOO = ("news.yahoo.co.jp", "div.sc-dEoRIm.bkMVoD", [])
ASAHI = ("asahi.com", "div._2rW9J", ["div.notPrint", "div._1BVMt"])
YOMIURI = ("yomiuri.co.jp", "div.p-main-contents", ["aside", "div.p-ad-dfp-premiumrec"])
SANKEI = ("sankei.com", "div.article-body", ["div.inline-ad"])
PREMIER = ("mainichi.jp", "div.main-column > p, div.main-column > h3", [])
MAINICHI = ("mainichi.jp", "section.articledetail-body", ["aside"])
NIKKEI = ("nikkei.com", "section.container_cz8tiun", [])

# page number: (publisher, selector of the article's text, selectors dropped), and its address
PAGES: dict[int, tuple[tuple[str, str, list[str]], str]] = {
    1: (YAHOO, "https://news.yahoo.co.jp/articles/a6d17c414d357ac2a5d8d7aabe7d720c22e053e6"),
    2: (YAHOO, "https://news.yahoo.co.jp/articles/6d19a1e3c576789da6cd60c567eeb1da34c63ef1"),
    3: (YAHOO, "https://news.yahoo.co.jp/articles/7ec8b60c829fc9d6506559cb3f5802f8a601f8ee"),
    4: (YAHOO, "https://news.yahoo.co.jp/articles/ccefeb5eab47eae5919373c8bf3b24c6f8725f7a"),
    5: (YAHOO, "https://news.yahoo.co.jp/articles/03e46283e8539bf61c5d868ff92d62d828582c40"),
    6: (YAHOO, "https://news.yahoo.co.jp/articles/0e93ffe3eea6e2f3d4a8c0ef9e660ffd8a028897"),
    7: (ASAHI, "https://www.asahi.com/articles/ASP9W65Y5P9JULBJ01Z.html"),
    8: (ASAHI, "https://www.asahi.com/articles/ASPBD5Q0CPB8PTIL03J.html"),
    9: (ASAHI, "https://www.asahi.com/articles/ASPBF431WPBFPTIL00P.html"),
    10: (ASAHI, "https://www.asahi.com/articles/ASPBF3F4CPBFULFA009.html"),
    11: (YOMIURI, "https://www.yomiuri.co.jp/economy/20211013-OYT1T50086/"),
    12: (YOMIURI, "https://www.yomiuri.co.jp/politics/20211013-OYT1T50094/"),
    15: (SANKEI, "https://www.sankei.com/article/20211013-TBR56U2GRVNKTH6F7ZYGAUXMTE/"),
    16: (SANKEI, "https://www.sankei.com/article/20211013-I5VKKGIERVMOXHQO33DLOWVL2M/"),
    17: (SANKEI, "https://www.sankei.com/article/20211012-ZC5Y6A46ERO5PHBUTQ56ETHNZU/"),
    18: (SANKEI, "https://www.sankei.com/article/20211010-XZOQW2UJSNOZZA2KPAYFNWARGU/"),
    19: (PREMIER, "https://mainichi.jp/premier/politics/articles/20211012/pol/00m/010/009000c"),
    20: (PREMIER, "https://mainichi.jp/premier/health/articles/20211004/med/00m/100/011000c"),
    21: (MAINICHI, "https://mainichi.jp/articles/20211013/k00/00m/040/098000c"),
    22: (MAINICHI, "https://mainichi.jp/articles/20211013/ddm/002/070/099000c"),
    23: (NIKKEI, "https://www.nikkei.com/article/DGXZQOUC1318K0T11C21A0000000/"),
    24: (NIKKEI, "https://www.nikkei.com/article/DGXZQODB126L70S1A011C2000000/"),
    25: (NIKKEI, "https://www.nikkei.com/article/DGXZQOGH112R70R11C21A0000000/"),
    26: (NIKKEI, "https://www.nikkei.com/article/DGXZQODK066830W1A001C2000000/"),
}


def main(git_dir: str, out: Path) -> None:
    if out.resolve().is_relative_to(HERE.parents[2]):
        raise SystemExit(f"{out}: inside the repository; unseen5's pages may not be kept in it")
    (out / "html").mkdir(parents=True, exist_ok=True)
    gold: dict[str, dict[str, str]] = {}
    for number, ((site, selector, dropped), url) in PAGES.items():
        path = f"src/test/resources/{number:06d}.html"
        raw = show(git_dir, REPO[1], path)
        if not CSSSelector(selector)(tree(raw)):
            raise SystemExit(f"{path}: {selector} matches nothing")
        lines = [line.strip() for line in selected(tree(raw), [selector], dropped).splitlines()]
        body = "\n".join(line for line in lines if line)
        if len(body) < 80:  # as build_extra.write_gold does for the parts in the repository
            print(f"skipped {number:06d}: gold text only {len(body)} characters")
            continue
        key = f"koron-{number:06d}"
        gold[key] = {
            "body": body,
            "lang": language(body),
            "publisher": site,
            "url": url,
            "source": f"{REPO[0]} {path} (commit {REPO[1]}, no licence stated); gold annotated "
            f"by hand: text of {selector}" + (f" less {', '.join(dropped)}" if dropped else ""),
        }
        (out / "html" / f"{key}.html.gz").write_bytes(gzip.compress(raw, mtime=0))
        print(f"{key}: {len(body)} characters, {site}")
    (out / "gold.json").write_text(
        json.dumps(gold, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
