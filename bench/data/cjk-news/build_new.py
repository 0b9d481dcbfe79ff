"""Add CJK news pages from two sources this set had not used (run once; kept for provenance).

Issue 41: a larger evaluation made before any tuning, its held-out part mostly pages from
sources the project had not used. Two repositories, each with a licence:

- opendatalab/magic-html (Apache-2.0): benchmark/data/article/base.json holds, for each
  page of benchmark/data/article/htmls/<sha256>.html, the article's main text as its
  maintainers annotated it (``content``, no headline) for their own extractor's benchmark.
  Taken: every page whose gold is mostly Chinese, Japanese or Korean (at least 30 % of its
  characters) and whose site publishes news or feature articles. Left out as not news
  (``NOT_NEWS``): encyclopedias (Baidu Baike, Wikipedia), Douban, a novel site (Qidian),
  poetry and essay collections (dugushici, zgshige, pinshiwen) and personal blogs (CSDN,
  Ameblo). The theorychina.org.cn journal's table of contents and a book's contents page
  stay: a listing of short items and a long multi-section body are both pages a news
  archive meets.
- flairNLP/fundus (MIT; its Korean pages are already in the set, see build_kr.py):
  tests/resources/parser/test_data/jp (Asahi, Chunichi, Mainichi, Nikkan Gendai, Nikkei,
  Sankei, Tokyo Shimbun, Yomiuri) and cn (People's Daily), one page each at the commit
  SOURCE.txt names, with the body its per-publisher parser test expects (summary, then each
  section's headline and paragraphs). The Japan News page is English and left out.

Usage: python bench/data/cjk-news/build_new.py MAGIC_HTML_GIT FUNDUS_GIT
(each a git directory of a clone holding the commits SOURCE.txt names).
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from build_extra import show, write_gold  # noqa: E402  (this folder, sys.path[0])
from build_kr import fundus_body, publisher  # noqa: E402

MAGIC = ("opendatalab/magic-html", "47d4a7fed12030e906a093b074637f178cb46ef2")
MAGIC_DATA = "benchmark/data/article"
NOT_NEWS = {
    "baike.baidu.com",
    "zh.wikipedia.org",
    "www.douban.com",
    "www.qidian.com",
    "dugushici.com",
    "www.zgshige.com",
    "www.pinshiwen.com",
    "blog.csdn.net",
    "ameblo.jp",
}
FUNDUS = ("flairNLP/fundus", "18da6e53592f99cf0ac5770dc63d6ba99ba63ae8")
FUNDUS_DATA = "tests/resources/parser/test_data"
FUNDUS_SKIPPED = {"TheJapanNews"}  # English
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_KANA_RE = re.compile(r"[\u3040-\u30ff]")
_HANGUL_RE = re.compile(r"[\uac00-\ud7af]")


def language(text: str) -> str:
    """ko where Hangul is written, ja where kana is, else zh.

    >>> language("東京で開催された。"), language("검찰 고위간부"), language("新华社上海电")
    ('ja', 'ko', 'zh')
    """
    if len(_HANGUL_RE.findall(text)) > 0.1 * len(text):
        return "ko"
    return "ja" if len(_KANA_RE.findall(text)) > 0.02 * len(text) else "zh"


def main(magic_git: str, fundus_git: str) -> None:
    gold = json.loads((HERE / "gold.json").read_text(encoding="utf-8"))
    added: dict[str, dict[str, str]] = {}
    pages: dict[str, bytes] = {}
    truth = json.loads(show(magic_git, MAGIC[1], f"{MAGIC_DATA}/base.json"))
    for sha, entry in sorted(truth.items()):
        body, url = entry["content"].strip(), entry["url"]
        if len(_CJK_RE.findall(body)) < 0.3 * len(body) or url.split("/")[2] in NOT_NEWS:
            continue
        key = f"magichtml-{sha[:12]}"
        pages[key] = show(magic_git, MAGIC[1], f"{MAGIC_DATA}/htmls/{sha}.html")
        added[key] = {
            "body": body,
            "lang": language(body),
            "publisher": publisher(url),
            "source": f"{MAGIC[0]} {MAGIC_DATA}/htmls/{sha}.html, base.json content "
            f"(commit {MAGIC[1]})",
            "url": url,
        }
    for country in ("jp", "cn"):
        meta = json.loads(show(fundus_git, FUNDUS[1], f"{FUNDUS_DATA}/{country}/meta.info"))
        for name, facts in sorted(meta.items()):
            outlet = name.rsplit("_", 3)[0]
            if outlet in FUNDUS_SKIPPED:
                continue
            folder = f"{FUNDUS_DATA}/{country}"
            expected = json.loads(show(fundus_git, FUNDUS[1], f"{folder}/{outlet}.json"))
            if len(expected) != 1:
                raise SystemExit(f"fundus {outlet}: versions {list(expected)}")
            (version,) = expected
            key = f"fundus-{name.removesuffix('.html.gz')}"
            raw = show(fundus_git, FUNDUS[1], f"{FUNDUS_DATA}/{country}/{name}")
            pages[key] = gzip.decompress(raw)
            body = fundus_body(expected[version]["body"])
            added[key] = {
                "body": body,
                "lang": language(body),
                "publisher": publisher(facts["url"]),
                "source": f"{FUNDUS[0]} {FUNDUS_DATA}/{country}/{name}, {outlet}.json "
                f"{version} body (commit {FUNDUS[1]})",
                "url": facts["url"],
            }
    write_gold(gold, added, pages)


if __name__ == "__main__":
    main(*sys.argv[1:3])
