"""Article links told from the rest with no regex given, against each site's real article
URL structure: precision and recall per site, on the saved real pages of ../shared/corpora
and one home page of newspaper4k's tests.

    python bench/article_links.py [--split tune|held-out|all] [--site NAME] [--show]

Every same-site link of a site's saved pages (home pages and the related, section and
navigation links of its article pages) is decided by zeroarchive/crawl/article_patterns.py
as a walk would (no page fetched), then compared with the site's truth: a regex of its
article URLs written from the site's own article addresses (SOURCE.txt of each corpus).
The split between sites tuned on and sites kept apart is in bench/README.md.
"""

from __future__ import annotations

import argparse
import gzip
import lzma
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.corpora import CORPORA, REPO
from zeroarchive.core.encoding import detect_encoding
from zeroarchive.core.urls import UrlRejected, canonicalize_url, is_on_site
from zeroarchive.crawl.article_patterns import SitePatterns

TW14 = "tw-news-2014/html"
TWN = "tw-news-twnews"
N4K = "newspaper4k/html"
RSP = "feeds-sitemaps/rsparser"
#: Pages the corpora lack, from public repositories (bench/data/<file>, SOURCE.txt there).
DATA = REPO / "bench" / "data" / "article_links"


@dataclass(frozen=True)
class BenchSite:
    name: str
    split: str
    #: (file under CORPORA or DATA, the URL it was saved from)
    pages: tuple[tuple[str, str], ...]
    #: The site's article URLs: the truth each link is held against.
    truth: str


SITES = (
    # --- tuned on ---------------------------------------------------------------------
    BenchSite(
        "cnn",
        "tune",
        (
            (f"{N4K}/cnn_main_site.html", "https://www.cnn.com/"),
            (
                f"{N4K}/cnn_article.html",
                "http://www.cnn.com/2013/11/27/travel/weather-thanksgiving/index.html",
            ),
        ),
        r"/(?:19|20)\d\d/\d\d/\d\d/[^?]+|travel\.cnn\.com/[\w-]+-\d{6}",
    ),
    BenchSite(
        "yahoo",
        "tune",
        ((f"{N4K}/yahoo_main_site.html", "https://www.yahoo.com/"),),
        r"-\d{6,}(?:-slideshow)?(?:\.html|/)",
    ),
    BenchSite(
        "wired",
        "tune",
        (("wired_main_site.html.gz", "https://www.wired.com/"),),
        r"wired\.com/(?:story|review|gallery|video/watch|(?:19|20)\d\d/\d\d)/[^/?]+",
    ),
    BenchSite(
        "ettoday",
        "tune",
        (
            (f"{TW14}/ettoday_s1.html.gz", "http://www.ettoday.net/news/20131129/302433.htm"),
            (f"{TW14}/ettoday_s2.html.gz", "http://www.ettoday.net/news/20130128/158005.htm"),
            (f"{TWN}/ettoday.html.xz", "https://www.ettoday.net/news/20171209/1069025.htm"),
        ),
        r"/\d{8}/\d+\.htm|boba\.ettoday\.net/videonews/\d+",
    ),
    BenchSite(
        "ltn",
        "tune",
        (
            (
                f"{TW14}/liberty_times_news_s1.html.gz",
                "http://news.ltn.com.tw/news/politics/breakingnews/998126",
            ),
            (
                f"{TW14}/liberty_times_news_s2.html.gz",
                "http://news.ltn.com.tw/news/world/breakingnews/997893",
            ),
            (
                f"{TW14}/liberty_times_news_s3.html.gz",
                "http://news.ltn.com.tw/news/society/breakingnews/829851",
            ),
            (f"{TWN}/ltn.html.xz", "https://news.ltn.com.tw/news/life/breakingnews/2504351"),
        ),
        r"/news/\w+/(?:breakingnews|paper)/\d+$|ltn\.com\.tw/article/\w+/\d+$",
    ),
    BenchSite(
        "udn",
        "tune",
        (
            (f"{TW14}/udn_s1.html.gz", "http://udn.com/NEWS/NATIONAL/NAT4/7996060.shtml"),
            (f"{TW14}/udn_s2.html.gz", "http://udn.com/NEWS/SPORTS/SPO6/8950901.shtml"),
            (f"{TWN}/udn.html.xz", "https://udn.com/news/story/7315/3705102"),
        ),
        r"/NEWS/\w+/\w+/\d+\.shtml|/news/story/\d+/\d+|/story/\d+/\d+",
    ),
    BenchSite(
        "chinatimes",
        "tune",
        (
            (
                f"{TW14}/china_times_s2.html.gz",
                "http://www.chinatimes.com/newspapers/20130718000466-260102",
            ),
            (
                f"{TW14}/china_times_s3.html.gz",
                "http://www.chinatimes.com/newspapers/20131127000637-260112",
            ),
            (
                f"{TW14}/china_times_s4.html.gz",
                "http://www.chinatimes.com/newspapers/20131222000289-260102",
            ),
            (
                f"{TWN}/chinatimes.html.xz",
                "https://www.chinatimes.com/realtimenews/20180916001767-260402",
            ),
        ),
        r"(?:19|20)\d{12}-\d{6}",
    ),
    BenchSite(
        "daringfireball",
        "tune",
        ((f"{RSP}/DaringFireball.html", "https://daringfireball.net/"),),
        r"daringfireball\.net/(?:(?:linked|thetalkshow)/\d{4}/\d\d/\d\d|\d{4}/\d\d)/[^/?]+$",
    ),
    # --- kept apart -----------------------------------------------------------------
    BenchSite(
        "cna",
        "held-out",
        (
            (f"{TW14}/cna_s1.html.gz", "http://www.cna.com.tw/News/FirstNews/201306290064-1.aspx"),
            (f"{TW14}/cna_s2.html.gz", "http://www.cna.com.tw/news/aloc/201404040243-1.aspx"),
            (f"{TWN}/cna.html.xz", "https://www.cna.com.tw/news/asoc/201603190029.aspx"),
        ),
        r"/(?:news|News)/\w+/\d{12}(?:-\d)?\.aspx|/project/(?:\w+/)?\d{8}-[^/]+",
    ),
    BenchSite(
        "nownews",
        "held-out",
        (
            (f"{TW14}/now_news_s1.html.gz", "http://www.nownews.com/n/2014/03/21/1159861"),
            (f"{TW14}/now_news_s2.html.gz", "http://www.nownews.com/n/2014/03/20/1156607"),
        ),
        r"/[np]/\d{4}/\d\d/\d\d/\d+|legacy\.nownews\.com/\d{4}/\d\d/\d\d/[\d-]+\.htm"
        r"|blog\.nownews\.com/article\.php\?.*tid=\d+",
    ),
    BenchSite(
        "tvbs",
        "held-out",
        (
            (f"{TW14}/tvbs_s1.html.gz", "http://news.tvbs.com.tw/entry/519673"),
            (f"{TW14}/tvbs_s2.html.gz", "http://news.tvbs.com.tw/entry/519613"),
        ),
        r"/entry/\d+",
    ),
    BenchSite(
        "cts",
        "held-out",
        (
            (
                f"{TW14}/cts_s1.html.gz",
                "http://news.cts.com.tw/cts/politics/201403/201403191393958.html",
            ),
            (
                f"{TW14}/cts_s2.html.gz",
                "http://news.cts.com.tw/nownews/politics/201403/201403221395428.html",
            ),
        ),
        r"/\w+/\w+/\d{6}/\d{10,}\.html",
    ),
    BenchSite(
        "setn",
        "held-out",
        ((f"{TWN}/setn.html.xz", "https://www.setn.com/News.aspx?NewsID=350370"),),
        r"(?i)/(?:News|VOD)\.aspx\?(?:.*&)?NewsID=\d+",
    ),
    BenchSite(
        "appledaily",
        "held-out",
        (
            (
                f"{TW14}/apple_daily_s1.html.gz",
                "http://www.appledaily.com.tw/realtimenews/article/new/20130629/217673/",
            ),
            (
                f"{TW14}/apple_daily_s2.html.gz",
                "http://www.appledaily.com.tw/appledaily/article/headline/20050811/1968864/",
            ),
            (
                f"{TW14}/apple_daily_s3.html.gz",
                "http://www.appledaily.com.tw/appledaily/article/international/20140115/35580004/",
            ),
            (
                f"{TWN}/appledaily.html.xz",
                "https://tw.appledaily.com/new/realtime/20160521/867195/",
            ),
        ),
        r"/(?:article/\w+|new/realtime|\w+/realtime)/\d{8}/\d+",
    ),
    BenchSite(
        "sixcolors",
        "held-out",
        ((f"{RSP}/sixcolors.html", "https://sixcolors.com/"),),
        r"sixcolors\.com/(?:post|link)/(?:19|20)\d\d/\d\d/[^/?]+",
    ),
    BenchSite(
        "inessential",
        "held-out",
        ((f"{RSP}/inessential.html", "https://inessential.com/"),),
        r"inessential\.com/(?:19|20)\d\d/\d\d/\d\d/[^/?]+",
    ),
    BenchSite(
        "yna",
        "held-out",
        (
            (
                f"{N4K}/yna_co_kr.html",
                "https://en.yna.co.kr/view/AEN20190820002300325?section=nk/nk",
            ),
        ),
        r"/view/[A-Z]{3}\d{17}",
    ),
    BenchSite(
        "nikkei",
        "held-out",
        (
            (
                f"{N4K}/japanese_article.html",
                "https://www.nikkei.com/article/DGXMZO31897660Y8A610C1000000/",
            ),
        ),
        r"/article/[A-Z0-9_]{20,}/?",
    ),
    BenchSite(
        "chinadaily",
        "held-out",
        (
            (
                f"{N4K}/chinese_article_001.html",
                "https://china.chinadaily.com.cn/a/202311/17/WS65571297a310d5acd876f404.html",
            ),
        ),
        r"/a/\d{6}/\d\d/WS[0-9a-f]{24}\.html",
    ),
    BenchSite(
        "xinhua",
        # Held out until its one miss (a "legal" section) was looked at: tuned on since.
        "tune",
        (
            (
                f"{N4K}/chinese_article_002.html",
                "http://www.news.cn/fortune/2023-11/17/c_1129981476.htm",
            ),
        ),
        r"/\d{4}-\d\d/\d\d/c_\d+\.htm|/\d{8}/[0-9a-f]{32}/c\.html",
    ),
)


def read(name: str) -> bytes:
    path = CORPORA / name if (CORPORA / name).exists() else DATA / name
    data = path.read_bytes()
    if name.endswith(".gz"):
        return gzip.decompress(data)
    if name.endswith(".xz"):
        return lzma.decompress(data)
    return data


def site_links(site: BenchSite) -> list[str]:
    """The site's same-site links on its saved pages, canonical, page by page."""
    extractor = LinkExtractor(tags=("a", "area"), attrs=("href",), canonicalize=False)
    found: list[str] = []
    home = site.pages[0][1]
    for name, url in site.pages:
        body = read(name)
        page = HtmlResponse(url, body=body, encoding=detect_encoding(body, None))
        own = canonicalize_url(url)
        for link in extractor.extract_links(page):
            try:
                canonical = canonicalize_url(link.url)
            except UrlRejected:
                continue
            if is_on_site(canonical, home) and canonical != own:
                found.append(canonical)
    return list(dict.fromkeys(found))


@dataclass(frozen=True)
class Score:
    links: int
    true: int
    found: int
    hits: int

    @property
    def precision(self) -> float:
        return self.hits / self.found if self.found else 1.0

    @property
    def recall(self) -> float:
        return self.hits / self.true if self.true else 1.0


def measure(site: BenchSite, show: bool = False) -> Score:
    links = site_links(site)
    truth = re.compile(site.truth)
    patterns = SitePatterns()
    found = set(patterns.articles(links))
    true = {url for url in links if truth.search(url)}
    if show:
        for url in links:
            mark = {
                (True, True): "ok",
                (False, False): "  ",
                (True, False): "FN",
                (False, True): "FP",
            }
            print(f"  {mark[url in true, url in found]} {url}")
    return Score(len(links), len(true), len(found), len(found & true))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("tune", "held-out", "all"), default="all")
    parser.add_argument("--site")
    parser.add_argument("--show", action="store_true", help="every link: ok, FP, FN")
    args = parser.parse_args()
    totals: dict[str, list[Score]] = {}
    print(
        f"{'site':16} {'split':9} {'links':>6} {'articles':>8} {'found':>6} "
        f"{'precision':>9} {'recall':>7}"
    )
    for site in SITES:
        if args.split != "all" and site.split != args.split:
            continue
        if args.site and site.name != args.site:
            continue
        score = measure(site, args.show)
        totals.setdefault(site.split, []).append(score)
        print(
            f"{site.name:16} {site.split:9} {score.links:>6} {score.true:>8} {score.found:>6} "
            f"{score.precision:>9.3f} {score.recall:>7.3f}"
        )
    for split, scores in totals.items():
        hits = sum(s.hits for s in scores)
        found = sum(s.found for s in scores)
        true = sum(s.true for s in scores)
        worst_p = min(s.precision for s in scores)
        worst_r = min(s.recall for s in scores)
        print(
            f"{split}: {len(scores)} sites, pooled precision {hits / max(found, 1):.3f} "
            f"recall {hits / max(true, 1):.3f}; worst site precision {worst_p:.3f} "
            f"recall {worst_r:.3f}"
        )


if __name__ == "__main__":
    main()
