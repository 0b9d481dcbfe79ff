"""Split the CJK set by publisher (issue 41; run once, before the parser was changed).

The rule, fixed before any tuning for issue 41:

1. A page's publisher is the registrable domain of its ``publisher`` (``news.sina.com.cn``
   and ``finance.sina.cn`` are Sina twice over: ``sina.com.cn``, ``sina.cn``); Xinhua's two
   domains (``xinhuanet.com``, ``news.cn``) are one publisher.
2. A publisher any of whose pages was in the tuning part of the split before (parser 2026.4
   was tuned on those pages) is in the tuning part with all its pages, old and new.
3. Every other publisher's pages are held out: the pages held out before and the pages
   added by build_new.py from sources the set had not used.

So no publisher is in both parts, and no page the parser was tuned on is held out.

Usage: python bench/data/cjk-news/resplit.py (rewrites SPLIT.txt from gold.json and the
SPLIT.txt before it).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
_SECOND_LEVEL = {"com", "net", "org", "gov", "edu", "co", "ne", "or", "ac", "go"}
_SAME_PUBLISHER = {"xinhuanet.com": "news.cn"}
HEADER = """\
# The CJK pages' split by publisher (issue 41), fixed before the parser was changed for it;
# resplit.py makes it: a publisher with any page tuned on before is in `tune` with all its
# pages, every other publisher's pages are `heldout` (no publisher is in both parts).
# Tune on `tune`; `heldout` is for the final check, never looked at page by page.
"""


def registrable(host: str) -> str:
    """The registrable domain of a host name (the publisher the split goes by).

    >>> registrable("finance.people.com.cn"), registrable("hk.news.yahoo.com")
    ('people.com.cn', 'yahoo.com')
    >>> registrable("headlines.yahoo.co.jp"), registrable("he.news.cn"), registrable("on.cc")
    ('yahoo.co.jp', 'news.cn', 'on.cc')
    """
    labels = host.split(".")
    if len(labels) < 2:
        return host
    keep = 3 if len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL else 2
    domain = ".".join(labels[-keep:])
    return _SAME_PUBLISHER.get(domain, domain)


KEPT = ("unseen2", "unseen3", "unseen4", "unseen6", "unseen7")  # unseen5 is not in the repository


def main() -> None:
    gold = json.loads((HERE / "gold.json").read_text(encoding="utf-8"))
    before = {
        words[1]: words[0]
        for line in (HERE / "SPLIT.txt").read_text(encoding="utf-8").splitlines()
        if (words := line.split()) and not words[0].startswith("#")
    }
    groups: dict[str, list[str]] = defaultdict(list)
    # The unseen parts (build_unseen2/3/4/6/7.py) are scored apart, kept as they are.
    lines = [f"{part} {name}" for name, part in before.items() if part in KEPT]
    for name, entry in gold.items():
        if before.get(name) in KEPT:
            continue
        groups[registrable(entry["publisher"])].append(name)
    for names in groups.values():
        part = "tune" if any(before.get(name) == "tune" for name in names) else "heldout"
        lines += [f"{part} {name}" for name in sorted(names)]
    (HERE / "SPLIT.txt").write_text(HEADER + "\n".join(sorted(lines)) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
