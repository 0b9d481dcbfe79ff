"""Add a tenth part, ``unseen9``, of GeneralNewsExtractor's saved Chinese news pages that
unseen3 left out (run once; kept for provenance).

unseen3 took 29 of the pages GeneralNewsExtractor's authors saved to try their extractor on
(tests/<site>/<n>.html), leaving out the sites whose publisher was in another part then
(163.com, ifeng.com, people.com.cn, qq.com, sina, toutiao, WeChat, xinhuanet). Those pages are
new pages all the same, and no part has read them: issue 41's seventh round adds them as a
part made after parser 2026.12's rule, scored ONCE with the final code, never tuned on.
Their publishers are in other parts (pages of the same sites), so the part checks new pages,
not new publishers. The repository has no expected text, so every gold was ANNOTATED BY HAND
for this set, before any extractor the project compares was run on these pages: the text of
the element holding the article's paragraphs (SELECTORS), less the boxes named with it
(NetEase's related-reading and "延伸 · 推荐" boxes and ad slots, Sina's video-list title,
product-test promotion, player and topic link, People's Daily's page links, Xinhua's gallery,
"+1" and tag bar), as the unseen3-8 golds do: captions, "原标题", "本文来源" and editor lines
inside the element stay. Left out: tests/toutiao/2.html (a photo gallery's first slide),
tests/toutiao/toutiao.html (a game's advertorial), tests/wechat/2.html (a programming tip),
tests/thepaper/4.html (unseen3's thepaper/2 again), tests/sxmu/1.html and tests/other/1.html
(a law's text and a resolution; not news).

Usage: python bench/data/cjk-news/build_unseen9.py GNE_GIT (the git directory of a clone of
GeneralNewsExtractor/GeneralNewsExtractor), then add the printed names to SPLIT.txt.
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

REPO = ("GeneralNewsExtractor/GeneralNewsExtractor", "3d5a67c65f4d6c8e13c3047754a4c18fc0b0754a")
NETEASE = ["div.gg200x300", "div.related_article", "div.special_tag_wrap", "pre"]
SINA = ["div.video-2017", "div.tech-quotation", "div.artical-player-wrap", "div.wap_special"]
# tests/<path>.html: (publisher, selector of the article's text, selectors dropped)
PAGES: dict[str, tuple[str, str, list[str]]] = {
    **{f"163/{n}": ("163.com", "div#endText", NETEASE) for n in range(1, 9)},
    "163/9": ("163.com", "div#content", []),
    "ifeng/1": ("ifeng.com", "div.text-3zQ3cZD4", []),
    "ifeng/2": ("ifeng.com", "div.text-3zQ3cZD4", []),
    "ifeng/3": ("ifeng.com", "div#main_content", []),
    "ifeng/ifeng": ("ifeng.com", "div.text-3zQ3cZD4", []),
    "people/1": ("people.com.cn", "div#rwb_zw", ["div.zdfy"]),
    "qq/2": ("qq.com", "div#Cnt-Main-Article-QQ", []),
    "qq/qq": ("qq.com", "div.content-article", []),
    "sina/1": ("sina.com.cn", "div#article", SINA),
    "sina/2": ("sina.com.cn", "div#artibody", SINA),
    "sina/3": ("sina.com.cn", "div#artibody", SINA),
    "sina/4": ("sina.com.cn", "div#artibody", SINA),
    "sina/5": ("sina.com.cn", "div#article", SINA),
    "sina/sina": ("sina.com.cn", "div#article", SINA),
    "toutiao/3": ("toutiao.com", "div.article-content", []),
    "toutiao/4": ("toutiao.com", "div.article-content", []),
    "toutiao/5": ("toutiao.com", "div.article-content", []),
    "wechat/1": ("mp.weixin.qq.com", "div#js_content", []),
    "xinhuanet/1": ("xinhuanet.com", "div#p-detail", ["div.lb", "div.tadd", "div.p-tags"]),
}


def main(git_dir: str) -> None:
    gold = json.loads((HERE / "gold.json").read_text(encoding="utf-8"))
    added: dict[str, dict[str, str]] = {}
    pages: dict[str, bytes] = {}
    for name, (publisher, selector, dropped) in PAGES.items():
        path = f"tests/{name}.html"
        raw = show(git_dir, REPO[1], path)
        page = tree(raw)
        if len(CSSSelector(selector)(page)) != 1:
            raise SystemExit(f"{path}: {selector} does not match exactly one element")
        lines = [line.strip() for line in selected(page, [selector], dropped).splitlines()]
        body = "\n".join(line for line in lines if line)
        key = "gne9-" + name.replace("/", "-")
        pages[key] = raw
        added[key] = {
            "body": body,
            "lang": language(body),
            "publisher": publisher,
            "source": f"{REPO[0]} {path} (commit {REPO[1]}, GPL-3.0); gold annotated by hand: "
            f"text of {selector}" + (f" less {', '.join(dropped)}" if dropped else ""),
        }
    write_gold(gold, added, pages)
    print("\n".join(f"unseen9 {key}" for key in added if key in gold))


if __name__ == "__main__":
    main(sys.argv[1])
