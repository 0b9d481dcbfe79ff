"""Add a fifth part, ``unseen4``, of pages from repositories no other part took pages from
(run once; kept for provenance).

Issue 41's fifth round asks for a new independent set, built and scored BEFORE the parser is
changed: unseen3 had been read by class in the fourth round. Every page here is a real saved
Chinese or Japanese news page from a repository the evaluation set had never used. None of
them comes with an expected body text, so their gold was ANNOTATED BY HAND for this set,
before any extractor the project compares was run on them: the text of the one element that
holds the article's own paragraphs (the CSS selector below, checked to match exactly one
element), found by reading each page (elements listed by the CJK characters of their <p>
children, then their first and last lines read), less the widgets named after it. Lines the
site prints inside that element (photo credits, "作者", "本文来源", "责任编辑") stay, as in the
unseen3, twnp-* and hknews-* golds; related-story boxes, like and gallery buttons and the
furigana readings (<rt>) of NHK's easy-Japanese page do not.

- adbar/trafilatura tests/eval/<page>.html: pages of trafilatura's own evaluation (its gold
  there is a few "with"/"without" snippets per page, not a body text, and is not used);
- smallrivers/snacktory src/test/resources/de/jetwick/snacktory/weixin.qq.com.html;
- Gerapy/GerapyAutoExtractor samples/detail/{ifeng_news1,netease_news1}.html (two other
  detail pages of that repository are tests/fixtures/listing fixtures; these two are not).

Publishers already in another part (ifeng, 163.com, qq.com, xinhuanet.com) are kept: the
pages are new, and the part is scored per page.

Usage: python bench/data/cjk-news/build_unseen4.py TRAFILATURA_GIT SNACKTORY_GIT GERAPY_GIT
(git directories of clones holding the commits named below), then add the printed names to
SPLIT.txt.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from build_extra import selected, show, tree, write_gold  # noqa: E402
from build_new import language  # noqa: E402

TRAFILATURA = ("adbar/trafilatura", "e90b0ef51ab026fdb905fb6c5b3c84dd3d784fd5")
SNACKTORY = ("smallrivers/snacktory", "6a87f3f19d13843166dd689760cbdc2ff3af34f6")
GERAPY = ("Gerapy/GerapyAutoExtractor", "d65ddd09d4714db4615ea0d522829b20ca7805e5")

# (repository, path): (name, publisher, selector of the article's text, selectors dropped)
PAGES: dict[tuple[tuple[str, str], str], tuple[str, str, str, list[str]]] = {
    (TRAFILATURA, "tests/eval/banyuetan.org.1000200033136171577956287380194268_1.html"): (
        "trafilatura-banyuetan.org",
        "banyuetan.org",
        "div#detail_content",
        [],
    ),
    (TRAFILATURA, "tests/eval/nhk.or.jp.k100.html"): (
        "trafilatura-nhk.or.jp-easy",
        "www3.nhk.or.jp",
        "div#js-article-body",
        ["rt"],
    ),
    (TRAFILATURA, "tests/eval/xinhuanet.com.c_1125597921.html"): (
        "trafilatura-xinhuanet.com",
        "xinhuanet.com",
        "div#p-detail",
        ["div.lb", "div.zan-wap", "div.p-tags"],
    ),
    (TRAFILATURA, "tests/eval/archive.org.he.xinhuanet.com.25340717.html"): (
        "trafilatura-he.xinhuanet.com",
        "he.xinhuanet.com",
        "td[style^='font-size:14px;line-height:24px'][height='700']",
        [],
    ),
    (SNACKTORY, "src/test/resources/de/jetwick/snacktory/weixin.qq.com.html"): (
        "snacktory-weixin.qq.com",
        "mp.weixin.qq.com",
        "div#js_content",
        [],
    ),
    (GERAPY, "samples/detail/ifeng_news1.html"): (
        "gerapy-ifeng_news1",
        "news.ifeng.com",
        "div.text-3zQ3cZD4",
        [],
    ),
    (GERAPY, "samples/detail/netease_news1.html"): (
        "gerapy-netease_news1",
        "163.com",
        "div#endText",
        ["div.related_article", "div.gg200x300"],
    ),
}
LICENCES = {TRAFILATURA: "Apache-2.0", SNACKTORY: "Apache-2.0", GERAPY: "Apache-2.0"}


def main(trafilatura_git: str, snacktory_git: str, gerapy_git: str) -> None:
    clones = {TRAFILATURA: trafilatura_git, SNACKTORY: snacktory_git, GERAPY: gerapy_git}
    gold = json.loads((HERE / "gold.json").read_text(encoding="utf-8"))
    added: dict[str, dict[str, str]] = {}
    pages: dict[str, bytes] = {}
    for (repo, path), (key, site, selector, dropped) in PAGES.items():
        raw = show(clones[repo], repo[1], path)
        page = tree(raw)
        if len(page.cssselect(selector)) != 1:
            raise SystemExit(f"{path}: {selector} does not match exactly one element")
        lines = [line.strip() for line in selected(page, [selector], dropped).splitlines()]
        body = "\n".join(line for line in lines if line)
        pages[key] = raw
        added[key] = {
            "body": body,
            "lang": language(body),
            "publisher": site,
            "source": f"{repo[0]} {path} (commit {repo[1]}, {LICENCES[repo]}); gold annotated "
            f"by hand: text of {selector}" + (f" less {', '.join(dropped)}" if dropped else ""),
        }
    write_gold(gold, added, pages)
    print("\n".join(f"unseen4 {key}" for key in added if key in gold))


if __name__ == "__main__":
    main(*sys.argv[1:4])
