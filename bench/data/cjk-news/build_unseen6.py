"""Add a seventh part, ``unseen6``, of NetEase Finance pages from a repository no other part
took pages from (run once; kept for provenance).

unseen5 was read by class for parser 2026.11, so it is no independent check of that change.
chrislinan/cx-extractor-python (MIT) saved 74 pages of NetEase Finance (money.163.com,
2015-2016: news, market reports, columns) to try its extractor on (RawHtml/<n>.html). Its
Text/<n>.txt are its own extractor's output, not a hand-made gold, and are not used: every gold
here was ANNOTATED BY HAND for this set, before any extractor the project compares was run on
these pages: the text of the element that holds the article's paragraphs, ``div#endText``
(news) or ``div.entext`` (the 亦观察 columns, whose disclaimer in a div#endText of its own is
left out), less the boxes NetEase puts after the article
inside it (the app promotion table, "重点推荐", the unclassed block of related headlines, the
advertisement slot). The "本文来源：... 责任编辑" line and the columns' author notes stay, as
the unseen3-5 golds keep a site's own lines inside the article's element.

Usage: python bench/data/cjk-news/build_unseen6.py CX_EXTRACTOR_GIT (the git directory of a
clone holding the commit below), then add the printed names to SPLIT.txt.
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

REPO = ("chrislinan/cx-extractor-python", "56f19b1b7a340f730a9cfd28d2e11e65709f8852")
# The columns' element first: their pages have no div#endText, an empty one or one holding
# only the column's disclaimer; news pages have no div.entext.
SELECTORS = ["div.entext", "div#endText"]
DROPPED = ["table", "div.biaoqian", "div.gg200x300", "div#endText > div:not([class])"]


def main(git_dir: str) -> None:
    gold = json.loads((HERE / "gold.json").read_text(encoding="utf-8"))
    added: dict[str, dict[str, str]] = {}
    pages: dict[str, bytes] = {}
    for number in range(1, 75):
        path = f"RawHtml/{number}.html"
        raw = show(git_dir, REPO[1], path)
        page = tree(raw)
        selector = next(
            s
            for s in SELECTORS
            if (found := CSSSelector(s)(page)) and found[0].text_content().strip()
        )
        if len(CSSSelector(selector)(page)) != 1:
            raise SystemExit(f"{path}: {selector} does not match exactly one element")
        lines = [line.strip() for line in selected(page, [selector], DROPPED).splitlines()]
        body = "\n".join(line for line in lines if line)
        key = f"cxnetease-{number:02d}"
        pages[key] = raw
        added[key] = {
            "body": body,
            "lang": language(body),
            "publisher": "money.163.com",
            "source": f"{REPO[0]} {path} (commit {REPO[1]}, MIT); gold annotated by hand: "
            f"text of {selector} less {', '.join(DROPPED)}",
        }
    write_gold(gold, added, pages)
    print("\n".join(f"unseen6 {key}" for key in added if key in gold))


if __name__ == "__main__":
    main(sys.argv[1])
