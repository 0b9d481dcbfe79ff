"""Add the pages of three more repositories to the CJK set (run once; kept for provenance).

Gold texts here are made by the repositories' own hand-written per-page or per-site choices,
never by an extractor this project compares:

- mozilla/readability test/test-pages/<name>/expected.html: the text of the expected
  output its maintainers checked in (the pages in Chinese or Japanese that are news);
- postlight/parser fixtures/<domain>.html: the text of the elements its hand-written custom
  extractor for that domain selects (``content.selectors``, the first that matches), less
  its ``clean`` selectors (src/extractors/custom/<domain>/index.js);
- lulalala/taiwanese_news_parser spec/.../<outlet>_s<N>.html: the text of the elements its
  per-outlet parser takes as ``content`` (lib/taiwanese_news_parser/parser/<outlet>.rb).

Usage: python bench/data/cjk-news/build_extra.py READABILITY_GIT MERCURY_GIT TWNEWS_GIT
(each a git directory of a clone at the commits SOURCE.txt names).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import lxml.html
from lxml.cssselect import CSSSelector

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from zeroarchive.core.encoding import decode_body, detect_encoding  # noqa: E402
from zeroarchive.parser.text import element_text  # noqa: E402

READABILITY = ("mozilla/readability", "ab4027a8b37669745016869a37a504727992b2ba")
MERCURY = ("postlight/parser", "e8ba7ece291efa4d915d50dd4deeec17d54359f2")
TWNEWS = ("lulalala/taiwanese_news_parser", "fccbc791113af1ef1351498674a460a102501cda")

# name: (lang, publisher)
READABILITY_PAGES = {
    "gmw": ("zh", "gmw.cn"),
    "qq": ("zh", "qq.com"),
    "yahoo-4": ("ja", "headlines.yahoo.co.jp"),
    "youth": ("zh", "youth.cn"),
}
# domain: (content selectors, clean selectors), as in the custom extractor.
MERCURY_PAGES = {
    "www.asahi.com": (["main"], ["div.AdMod", "div.LoginSelectArea", "time", "div.notPrint"]),
    "www.yomiuri.co.jp": (["div.p-main-contents"], []),
    "japan.cnet.com": (["div.article_body"], []),
    "news.mynavi.jp": (["div.article-body", "main article div"], []),
    "www.gizmodo.jp": (["article.p-post"], ["h1.p-post-title", "ul.p-post-Assist"]),
    "www.itmedia.co.jp": (["#cmsBody"], ["#snsSharebox"]),
    "wired.jp": (
        ['div[data-attribute-verso-pattern="article-body"]', "article.article-detail"],
        [".post-category", "time", "h1.post-title", ".social-area-syncer"],
    ),
    "weekly.ascii.jp": (["div#contents_detail", "div.article"], []),
    "getnews.jp": (["div.post-bodycopy"], []),
    "www.lifehacker.jp": (
        ['div[class^="article_pArticle_Body__"]', "div.lh-entryDetail-body"],
        ["p.lh-entryDetailInner--credit"],
    ),
    "www.publickey1.jp": (["#maincol"], ["#breadcrumbs", "div.sbm", "div.ad_footer"]),
    "scan.netsecurity.ne.jp": (["div.arti-content.arti-content--thumbnail"], ["aside.arti-giga"]),
    "www.ossnews.jp": (["#alpha-block .section"], []),
}
# outlet file prefix: (content selector, publisher)
TWNEWS_PAGES = {
    "apple_daily": (".articulum p, .articulum h2", "appledaily.com.tw"),
    "china_times": (".page_container article>p", "chinatimes.com"),
    "china_times_money": ("#zoom-area p", "money.chinatimes.com"),
    "cna": (".news_content .box_2", "cna.com.tw"),
    "cts": ("#ctscontent p", "news.cts.com.tw"),
    "ettoday": ("[itemprop=articleBody]>p", "ettoday.net"),
    "liberty_times": (".content p", "libertytimes.com.tw"),
    "liberty_times_big5": (
        "#newsContent>span:not(#newtitle)>p:not(.picture)",
        "libertytimes.com.tw",
    ),
    "liberty_times_news": ("#newstext p", "news.ltn.com.tw"),
    "now_news": ("[itemprop=articleBody]>p", "nownews.com"),
    "tvbs": ("article .content", "tvbs.com.tw"),
    "udn": ("#story", "udn.com"),
}


def show(git_dir: str, commit: str, path: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{commit}:{path}"], capture_output=True, check=True
    ).stdout


def write_gold(
    gold: dict[str, dict[str, str]], added: dict[str, dict[str, str]], pages: dict[str, bytes]
) -> None:
    """Add the entries with a gold text of 80 characters or more to gold.json, their
    pages to html/ (the other build scripts write through here too)."""
    for key, entry in added.items():
        if len(entry["body"]) < 80:
            print(f"skipped {key}: gold text only {len(entry['body'])} characters")
            continue
        gold[key] = entry
        (HERE / "html" / f"{key}.html.gz").write_bytes(gzip.compress(pages[key], mtime=0))
        print(f"{key}: {len(entry['body'])} characters, {entry['publisher']}")
    (HERE / "gold.json").write_text(
        json.dumps(gold, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )


def tree(raw: bytes) -> lxml.html.HtmlElement:
    page = lxml.html.document_fromstring(decode_body(raw, detect_encoding(raw)))
    for node in page.xpath("//script | //style | //noscript"):
        node.drop_tree()
    return page


def selected(page: lxml.html.HtmlElement, selectors: list[str], clean: list[str]) -> str:
    for selector in selectors:
        found = CSSSelector(selector)(page)
        if found:
            for node in found:
                for junk in [j for c in clean for j in CSSSelector(c)(node)]:
                    junk.drop_tree()
            return "\n".join(element_text(node) for node in found)
    return ""


def main(readability_git: str, mercury_git: str, twnews_git: str) -> None:
    gold = json.loads((HERE / "gold.json").read_text(encoding="utf-8"))
    added: dict[str, dict[str, str]] = {}
    pages: dict[str, bytes] = {}
    for name, (lang, publisher) in READABILITY_PAGES.items():
        base = f"test/test-pages/{name}"
        raw = show(readability_git, READABILITY[1], f"{base}/source.html")
        expected = show(readability_git, READABILITY[1], f"{base}/expected.html")
        body = element_text(lxml.html.fragment_fromstring(expected.decode(), create_parent="div"))
        key = f"mozreadability-{name}"
        pages[key] = raw
        added[key] = {
            "body": body,
            "lang": lang,
            "publisher": publisher,
            "source": f"{READABILITY[0]} {base}/source.html, expected.html",
        }
    for domain, (selectors, clean) in MERCURY_PAGES.items():
        raw = show(mercury_git, MERCURY[1], f"fixtures/{domain}.html")
        key = f"mercury-{domain}"
        pages[key] = raw
        added[key] = {
            "body": selected(tree(raw), selectors, clean),
            "lang": "ja",
            "publisher": domain.removeprefix("www."),
            "source": f"{MERCURY[0]} fixtures/{domain}.html, "
            f"src/extractors/custom/{domain}/index.js content selectors",
        }
    folder = "spec/taiwanese_news_parser/parser"
    files = subprocess.run(
        ["git", "--git-dir", twnews_git, "ls-tree", "--name-only", TWNEWS[1], f"{folder}/"],
        capture_output=True,
        check=True,
        text=True,
    ).stdout.split()
    for path in files:
        stem = Path(path).name.removesuffix(".html")
        if not path.endswith(".html"):
            continue
        outlet = stem.rsplit("_s", 1)[0]
        selector, publisher = TWNEWS_PAGES[outlet]
        raw = show(twnews_git, TWNEWS[1], path)
        key = f"twnp-{stem}"
        pages[key] = raw
        added[key] = {
            "body": selected(tree(raw), [selector], []),
            "lang": "zh",
            "publisher": publisher,
            "source": f"{TWNEWS[0]} {path}, lib/taiwanese_news_parser/parser/{outlet}.rb content",
        }
    write_gold(gold, added, pages)


if __name__ == "__main__":
    main(*sys.argv[1:4])
