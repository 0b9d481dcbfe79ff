"""Add a third part, ``unseen2``, of pages the parser was never tuned or checked on (run once;
kept for provenance).

Issue 41 asks for independent checks on pages the project has not seen. By 2026-11-29 the
held-out part had been scored and read, so it is no longer unseen: this part is made of pages
that were in none of the parts, scored once before the parser was changed and once after.
Gold texts come from each repository's own hand-made choice for that page, never from an
extractor the project compares:

- postlight/parser fixtures/<domain>.html of the Japanese sites build_extra.py did not take
  (its custom extractors for buzzap.jp, sect.iij.ad.jp, takagi-hiromitsu.jp (a day-by-day
  diary), techlog.iij.ad.jp, elecom.co.jp and sanwa.co.jp (product news releases), ipa.go.jp
  (a security notice), moongift.jp and jvndb.jvn.jp (a listing of short vulnerability
  notes)): the text of the elements the site's content selectors pick, less its ``clean``
  selectors, as build_extra.py does. bookwalker.jp and oreilly.co.jp are shop pages, left out.
- flairNLP/fundus: the three Japanese pages its tests held before they were replaced
  (Nikkan Gendai 2025-01-22, Nikkei 2025-01-14, Yomiuri 2024-10-13), each with the <Outlet>.json
  and meta.info of the last commit that held it (the commit before the one deleting it); the
  gold is the body its parser test expects (build_kr.fundus_body).
- virus-warnning/twnews twnews/samples/<outlet>.html.xz (seven Taiwanese pages, mobile
  layouts 2016-2019): the text of the elements its per-outlet ``article_node`` selector picks
  (twnews/conf/news-soup.json, ``mobile`` layout), one paragraph a line, as its
  ``NewsSoup.contents`` takes them.

Usage: python bench/data/cjk-news/build_unseen2.py MERCURY_GIT FUNDUS_GIT TWNEWS_GIT
(each a git directory of a clone holding the commits named below), then add the printed
names to SPLIT.txt as ``unseen2 <name>`` (resplit.py keeps that part as it is).
"""

from __future__ import annotations

import gzip
import json
import lzma
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from build_extra import MERCURY, selected, show, tree, write_gold  # noqa: E402
from build_kr import fundus_body, publisher  # noqa: E402
from build_new import language  # noqa: E402

# domain: (content selectors, clean selectors), as in its custom extractor at MERCURY[1].
MERCURY_PAGES = {
    "buzzap.jp": (["div.ctiframe"], []),
    "sect.iij.ad.jp": ([".entry-inner", "#article"], ["dl.entrydate"]),
    "takagi-hiromitsu.jp": (["div.body"], []),
    "techlog.iij.ad.jp": (["div.entry-content"], [".wp_social_bookmarking_light"]),
    "www.elecom.co.jp": (["td.TableMain2"], []),
    "www.ipa.go.jp": (["#ipar_main"], ["p.ipar_text_right"]),
    "www.moongift.jp": (["#main"], ["ul.mg_service.cf"]),
    "www.sanwa.co.jp": (["#newsContent"], ["#smartphone", "div.sns_box", "div.contentFoot"]),
    "jvndb.jvn.jp": (["#news-list"], []),
}
FUNDUS = "flairNLP/fundus"
FUNDUS_DATA = "tests/resources/parser/test_data/jp"
# page: the last commit that held it
FUNDUS_PAGES = {
    "NikkanGeadai_2025_01_22": "a246f4f10aeceaeb915e281003696b021772de9e",
    "Nikkei_2025_01_14": "32849de562793731a7605e9e395d44d335ca6bd2",
    "YomiuriShimbun_2024_10_13": "b80b8298b22f07a628ff8725b407b82054f30c5d",
}
TWNEWS = ("virus-warnning/twnews", "4c7ef436018480d07b5f3f5f474f3843af46eb99")
# outlet: (article_node of its mobile layout in twnews/conf/news-soup.json, the page's address)
TWNEWS_PAGES = {
    "appledaily": (
        "article.nm-content > div.nm-article > div.nm-article-body > div.text",
        "https://tw.appledaily.com/new/realtime/20160521/867195/",
    ),
    "chinatimes": (
        "article.article-box div.article-body > p",
        "https://www.chinatimes.com/realtimenews/20180916001767-260402",
    ),
    "cna": (
        "div.centralContent > div.paragraph > p",
        "https://www.cna.com.tw/news/asoc/201603190029.aspx",
    ),
    "ettoday": (
        "div.subject_news > div.story > p",
        "https://www.ettoday.net/news/20171209/1069025.htm",
    ),
    "ltn": ("div.com > div.boxTitle > p", "https://news.ltn.com.tw/news/life/breakingnews/2504351"),
    "setn": ("#ckuse > article > p", "https://www.setn.com/News.aspx?NewsID=350370"),
    "udn": ("#story_body_content > p", "https://udn.com/news/story/7315/3705102"),
}


def main(mercury_git: str, fundus_git: str, twnews_git: str) -> None:
    gold = json.loads((HERE / "gold.json").read_text(encoding="utf-8"))
    added: dict[str, dict[str, str]] = {}
    pages: dict[str, bytes] = {}
    for domain, (selectors, clean) in MERCURY_PAGES.items():
        raw = show(mercury_git, MERCURY[1], f"fixtures/{domain}.html")
        key = f"mercury-{domain}"
        pages[key] = raw
        added[key] = {
            "body": selected(tree(raw), selectors, clean),
            "lang": "ja",
            "publisher": domain.removeprefix("www."),
            "source": f"{MERCURY[0]} fixtures/{domain}.html, "
            f"src/extractors/custom/{domain}/index.js content selectors (commit {MERCURY[1]})",
        }
    for name, commit in FUNDUS_PAGES.items():
        outlet = name.rsplit("_", 3)[0]
        meta = json.loads(show(fundus_git, commit, f"{FUNDUS_DATA}/meta.info"))
        expected = json.loads(show(fundus_git, commit, f"{FUNDUS_DATA}/{outlet}.json"))
        (version,) = expected
        key = f"fundus-{name}"
        pages[key] = gzip.decompress(show(fundus_git, commit, f"{FUNDUS_DATA}/{name}.html.gz"))
        body = fundus_body(expected[version]["body"])
        url = meta[f"{name}.html.gz"]["url"]
        added[key] = {
            "body": body,
            "lang": language(body),
            "publisher": publisher(url),
            "source": f"{FUNDUS} {FUNDUS_DATA}/{name}.html.gz, {outlet}.json {version} body "
            f"(commit {commit})",
            "url": url,
        }
    for outlet, (selector, url) in TWNEWS_PAGES.items():
        path = f"twnews/samples/{outlet}.html.xz"
        raw = lzma.decompress(show(twnews_git, TWNEWS[1], path))
        key = f"twnews-{outlet}"
        pages[key] = raw
        lines = [line.strip() for line in selected(tree(raw), [selector], []).splitlines()]
        added[key] = {
            "body": "\n".join(line for line in lines if line),
            "lang": "zh",
            "publisher": publisher(url),
            "source": f"{TWNEWS[0]} {path}, twnews/conf/news-soup.json {outlet} mobile "
            f"article_node (commit {TWNEWS[1]})",
            "url": url,
        }
    write_gold(gold, added, pages)
    print("\n".join(f"unseen2 {key}" for key in added if key in gold))


if __name__ == "__main__":
    main(*sys.argv[1:4])
