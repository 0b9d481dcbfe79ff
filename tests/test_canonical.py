"""A page's canonical claims (zeroarchive/crawl/canonical.py), broken in every way a site's
markup breaks them, on a real saved page (tests/fixtures/tw-news-2014: Liberty Times,
news.ltn.com.tw) whose own og:url is replaced by the claim: a claim that cannot be used is
ignored, never moves the page off its article and never makes it look gone."""

from __future__ import annotations

import gzip
import html
import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from zeroarchive.core.items import FetchedPage
from zeroarchive.core.urls import canonicalize_url, is_on_site
from zeroarchive.crawl.canonical import IGNORED, Claims, declared_urls, read_claims, same_story
from zeroarchive.crawl.snapshot_batches import Count, settle
from zeroarchive.events.answers import sort_answers
from zeroarchive.sites.record import Site, parse_config

FIXTURES = Path(__file__).parent / "fixtures"
ARTICLE = "http://news.ltn.com.tw/news/politics/breakingnews/998126"
OTHER_ARTICLE = "http://news.ltn.com.tw/news/society/breakingnews/998127"
#: The same story filed under another section.
SAME = "http://news.ltn.com.tw/news/life/breakingnews/998126"
LIST = "http://news.ltn.com.tw/list/breakingnews"
FEED = "http://news.ltn.com.tw/rss/all.xml"
#: The page as saved, without its own claims (its rel=canonical and og:url name itself).
_SAVED = gzip.decompress(
    (FIXTURES / "tw-news-2014/html/liberty_times_news_s1.html.gz").read_bytes()
)
PAGE = re.sub(rb"<(?:link|meta)[^>]*(?:canonical|og:url)[^>]*>", b"", _SAVED)


def site(article: str) -> Site:
    config = parse_config(
        {"article": article, "following": r"/list/breakingnews/\w+$", "feeds": [FEED]}, "ltn"
    )
    return Site(1, "ltn", LIST, "news", config)


#: A site whose article rule is unanchored (as most 0archive rules are) and one whose rule
#: names the whole URL: a claim resolved to a made-up path matches the first and not the
#: second, which used to move the page to that path or to take it for a deletion.
LOOSE = site(r"/news/\w+/breakingnews/\d+")
STRICT = site(r"^https?://news\.ltn\.com\.tw/news/\w+/breakingnews/\d+$")
SITES = pytest.mark.parametrize("ltn", [LOOSE, STRICT], ids=["loose", "strict"])


def with_claim(claim: str) -> bytes:
    meta = f'<meta property="og:url" content="{html.escape(claim, quote=True)}"/>'
    return PAGE.replace(b"<head>", b"<head>" + meta.encode(), 1)


def unsettled(body: bytes) -> FetchedPage:
    return FetchedPage(
        1, 1, "Article", 1_800_000_000, 200, ARTICLE, {}, "", body, unsettled_for=ARTICLE
    )


def test_the_saved_page_claims_itself_and_stays_with_its_article() -> None:
    assert declared_urls(_SAVED, "utf-8") == [ARTICLE, ARTICLE]
    assert read_claims(ARTICLE, ARTICLE, declared_urls(_SAVED, "utf-8"), STRICT).moved_to is None
    assert declared_urls(with_claim("x"), "utf-8") == ["x"]


@SITES
@pytest.mark.parametrize(
    ("claim", "why"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("/", "front_page"),
        ("http://news.ltn.com.tw", "front_page"),
        (LIST, "front_page"),  # the site's URL: its first list page
        (LIST + "/world", "list_page"),
        (FEED, "list_page"),
        ("998127", "relative"),
        ("../society/breakingnews/998127", "relative"),
        ("?page=2", "relative"),
        # The real failure's shape: another host written without its scheme.
        ("std.stheadline.com/daily/article.php?id=1", "relative"),
        ("//std.stheadline.com/daily/article.php?id=1", "off_site"),
        ("https://std.stheadline.com/daily/article.php?id=1", "off_site"),
        ("javascript:void(0)", "bad_scheme"),
        ("JavaScript:alert(document.domain)", "bad_scheme"),
        ("mailto:news@ltn.com.tw", "bad_scheme"),
        ("data:text/html,<p>x</p>", "bad_scheme"),
        ("http://", "no_host"),
        ("http:///news/politics/breakingnews/998127", "no_host"),
        ("/about/contact 聯絡 我們", "not_article"),
        pytest.param("/" + "新" * 3000, "too_long", id="3000-cjk"),
        pytest.param("/news/politics/breakingnews/998127?x=" + "a" * 3000, "too_long", id="3000"),
    ],
)
def test_a_claim_that_cannot_be_used_is_ignored_and_the_page_kept(
    ltn: Site, claim: str, why: str
) -> None:
    assert why in IGNORED
    counts: list[Count] = []
    page = settle(unsettled(with_claim(claim)), ltn, counts)
    assert page.moved_to is None
    assert counts == [(f"canonical/ignored/{why}", 1, 1)]
    sorted_ = sort_answers([page], [], {1: ltn}, {})
    assert (sorted_.pages, sorted_.gone) == ([page], [])


@SITES
@pytest.mark.parametrize(
    "claim",
    [
        # The page's own URL without its scheme (std.stheadline.com's og:url markup).
        "news.ltn.com.tw/news/politics/breakingnews/998126",
        "NEWS.LTN.COM.TW/news/politics/breakingnews/998126?utm_source=fb",
        "news.ltn.com.tw:80/news/politics/breakingnews/998126",
        "//news.ltn.com.tw/news/politics/breakingnews/998126",
        "/news/politics/breakingnews/%39%39%38%31%32%36",
        "998126",
        "#top",
        ARTICLE,
    ],
)
def test_a_claim_naming_the_page_itself_in_any_spelling_is_no_move(ltn: Site, claim: str) -> None:
    counts: list[Count] = []
    page = settle(unsettled(with_claim(claim)), ltn, counts)
    assert (page.moved_to, counts) == (None, [])


@SITES
def test_a_claim_naming_the_same_story_elsewhere_on_the_site_is_a_move(ltn: Site) -> None:
    https = "https://news.ltn.com.tw/news/politics/breakingnews/998126"
    for claim, target in ((https, https), ("/news/life/breakingnews/998126", SAME), (SAME, SAME)):
        assert read_claims(ARTICLE, ARTICLE, [claim], ltn).moved_to == target, claim
    mobile = read_claims(ARTICLE, ARTICLE, ["//m." + SAME[7:]], ltn)
    assert mobile.moved_to == ("http://m." + SAME[7:] if ltn is LOOSE else None)
    assert read_claims(ARTICLE, ARTICLE, [ARTICLE, SAME], ltn).moved_to is None
    ignored_then_used = read_claims(ARTICLE, ARTICLE, ["/", SAME], ltn)
    assert ignored_then_used == Claims(SAME, (("/", "front_page"),))
    # A claimed move is kept as a move, not as a sign: only the server redirects.
    moved = settle(unsettled(with_claim(SAME)), ltn, [])
    assert moved.moved_to == SAME
    assert sort_answers([moved], [], {1: ltn}, {}).gone == []


@SITES
@pytest.mark.parametrize(
    "claim",
    [
        # Another story: a template naming the latest or a featured article on every page.
        OTHER_ARTICLE,
        "/news/politics/breakingnews/998127",
        "//news.ltn.com.tw/news/politics/breakingnews/1",
    ],
)
def test_a_claim_naming_another_story_moves_nothing(ltn: Site, claim: str) -> None:
    counts: list[Count] = []
    page = settle(unsettled(with_claim(claim)), ltn, counts)
    assert page.moved_to is None
    assert counts == [("canonical/ignored/other_article", 1, 1)]


def test_ignored_claims_are_logged_at_info_once_per_site_and_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ltn = site(r"/news/\w+/breakingnews/\d+$")  # a site of its own: no earlier log
    ltn = Site(77, ltn.name, ltn.url, ltn.type, ltn.config)
    body = with_claim("std.stheadline.com/daily/article.php?id=1")
    caplog.set_level("DEBUG", logger="zeroarchive.crawl.snapshot_batches")
    for _ in range(3):
        settle(FetchedPage(**{**unsettled(body).__dict__, "site_id": 77}), ltn, [])
    levels = [record.levelname for record in caplog.records]
    assert levels == ["INFO", "DEBUG", "DEBUG"]
    assert "ignoring its canonical claim(s) 'std.stheadline.com/daily/article.php?id=1'" in (
        caplog.records[0].getMessage()
    )
    assert "(relative)" in caplog.records[0].getMessage()


# --- fuzz: whatever a page claims, it is never dropped and never moved off the site --------

_PREFIXES = (
    "",
    "/",
    "//",
    "./",
    "../",
    "?",
    "#",
    " ",
    "\\\\",
    "http://",
    "https://",
    "HTTP://",
    "javascript:",
    "news.ltn.com.tw/",
    "NEWS.LTN.COM.TW:80/",
    "www.ltn.com.tw/",
    "ltn.com.tw/",
    "//news.ltn.com.tw/",
    "http://news.ltn.com.tw/",
    "http://news.ltn.com.tw:8080/",
    "http://user:pw@news.ltn.com.tw/",
    "std.stheadline.com/",
    "//std.stheadline.com/",
    "https://std.stheadline.com/",
)
_PARTS = (
    "news/politics/breakingnews/998126",
    "news/society/breakingnews/998127",
    "list/breakingnews",
    "list/breakingnews/world",
    "rss/all.xml",
    "daily/article.php?id=1",
    "%6E%65%77%73/",
    "%2F",
    "%zz",
    "新聞 標題",
    "\u3000",
    "\t\n",
    "?utm_source=fb",
    "#frag",
    ":",
    "@",
    "..",
    "[",
)
CLAIMS = st.builds(
    lambda prefix, parts, tail: prefix + "".join(parts) + tail,
    st.sampled_from(_PREFIXES),
    st.lists(st.sampled_from(_PARTS), max_size=4),
    st.one_of(
        st.just(""),
        st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
        st.text(alphabet="a新%/ ", min_size=2100, max_size=3000),
    ),
)


@settings(max_examples=200, deadline=None)
@given(claims=st.lists(CLAIMS, min_size=1, max_size=2), strict=st.booleans())
# Found by the fuzz: urljoin raises on an unclosed IPv6 literal.
@example(claims=["//["], strict=False)
def test_no_claim_drops_the_page_or_moves_it_anywhere_but_to_an_article_of_the_site(
    claims: list[str], strict: bool
) -> None:
    ltn = STRICT if strict else LOOSE
    result = read_claims(ARTICLE, ARTICLE, claims, ltn)
    assert {why for _, why in result.ignored} <= IGNORED
    target = result.moved_to
    if target is not None:
        assert target != ARTICLE
        assert canonicalize_url(target) == target and target.startswith(("http://", "https://"))
        assert is_on_site(target, ltn.url)
        assert ltn.config.is_article(target) and not ltn.config.is_following(target)
        assert target not in (LIST, FEED, "http://news.ltn.com.tw/")
        assert same_story(ARTICLE, target)
        # A claim relative to the page's path (a URL written without its scheme) never moves.
        used = claims[len(result.ignored)]
        assert used.startswith(("/", "news.ltn.com.tw", "NEWS.", "www.", "ltn.com.tw", "http"))
    counts: list[Count] = []
    page = settle(unsettled(with_claim(claims[0])), ltn, counts)
    answers = sort_answers([page], [], {1: ltn}, {})
    assert answers.pages == [page] and answers.gone == []
