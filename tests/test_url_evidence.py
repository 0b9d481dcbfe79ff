"""What a URL alone says: real article URLs of news sites against their sections, tags,
authors, searches, paging, logins, shares and assets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zeroarchive.crawl.url_evidence import looks_like_article, url_score

FIXTURES = Path(__file__).parent / "fixtures"


def saved_article_urls() -> list[str]:
    urls = []
    for source in ("tw-news-2014", "tw-news-twnews"):
        expected = json.loads((FIXTURES / source / "expected.json").read_text(encoding="utf-8"))
        urls += [entry["url"] for entry in expected.values()]
    return urls


def test_the_saved_news_articles_urls_look_like_articles() -> None:
    urls = saved_article_urls()
    assert len(urls) == 34
    missed = [url for url in urls if not looks_like_article(url)]
    # The Liberty Times' 2013 page names its month in words; six digits alone are as often a
    # section's code as an id: the site's repeated shapes decide those (test_link_sorting).
    assert missed == [
        "http://www.libertytimes.com.tw/2013/new/jun/29/today-t2.htm",
        "http://news.ltn.com.tw/news/politics/breakingnews/998126",
        "http://news.ltn.com.tw/news/world/breakingnews/997893",
        "http://news.ltn.com.tw/news/society/breakingnews/829851",
    ]


@pytest.mark.parametrize(
    "url",
    [
        "https://www.wired.com/tag/video-games/",
        "https://www.wired.com/category/science/environment-climate-change/",
        "https://www.wired.com/search/",
        "https://www.chinatimes.com/newspapers/260102",
        "https://news.ltn.com.tw/list/breakingnews/politics",
        "https://www.setn.com/Klist.aspx?TagID=12000",
        "https://www.ettoday.net/news/news-list-2013-11-29-6.htm",
        "https://udn.com/news/cate/2/6638",
        "https://www.cnn.com/SPECIALS/world/mh17-specials-page/index.html",
        "https://uk.search.yahoo.com/search?p=Duran%20Duran",
        "https://login.yahoo.com/config/login?.done=https%3A%2F%2Fuk.yahoo.com%2F",
        "https://www.facebook.com/sharer/sharer.php?u=https%3A%2F%2Fx.example%2F1",
        "https://www.ettoday.net/social/comments/302433.htm",
        "https://daringfireball.net/feeds/main",
        "https://news.example/authors/jane-doe-smith/",
        "https://news.example/news?page=3",
        "https://news.example/img/2024/05/01/storm-over-the-harbour.jpg",
        "https://news.example/",
        "https://news.example/politics",
    ],
)
def test_lists_and_other_links_do_not(url: str) -> None:
    assert not looks_like_article(url), url_score(url)


@pytest.mark.parametrize(
    ("url", "article"),
    [
        # A section named by a list word, ahead of a date and a long id (news.cn).
        ("http://www.news.cn/legal/2023-11/17/c_1129979935.htm", True),
        ("https://s.example/about/2024/05/01/8812345.html", True),
        # The list word last, or no id after the date: still no article.
        ("https://s.example/2023-11/17/1129979935/legal", False),
        ("https://s.example/archive/2023-11/17/", False),
        ("https://s.example/tag/2023-11-17", False),
    ],
)
def test_a_list_word_naming_a_section_ahead_of_a_date_and_an_id(url: str, article: bool) -> None:
    assert looks_like_article(url) is article
