"""Site definitions: what parse_spec and parse_config accept, and how they refuse the rest."""

from __future__ import annotations

import json
from typing import Any

import pytest

from zeroarchive.core.urls import UrlRules
from zeroarchive.sites.record import (
    DEFAULT_DELAY,
    DEFAULT_DEPTH,
    SiteConfig,
    SiteConfigError,
    SiteSpec,
    parse_config,
    parse_spec,
)

CNA = "https://www.cna.com.tw/"
CNA_ARTICLE = "https://www.cna.com.tw/news/aipl/201401010001.aspx"
CNA_LIST = "https://www.cna.com.tw/list/aipl.aspx"
PTT_POST = "https://www.ptt.cc/bbs/Gossiping/M.1459688662.A.CFE.html"
PTT_INDEX = "https://www.ptt.cc/bbs/Gossiping/index.html"
DCARD_TRENDING = "https://www.dcard.tw/f/trending"


def news(**config: Any) -> dict[str, Any]:
    return {"name": "cna", "url": CNA, "type": "news", "config": {"article": "/news/", **config}}


# --- valid definitions --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("article", "following"),
    [
        (r"/news/\w+/\d+\.aspx; /news/firstnews/", "/list/; /cate/"),
        ([r"/news/\w+/\d+\.aspx", "/news/firstnews/"], ["/list/", "/cate/"]),
        (r" /news/\w+/\d+\.aspx ;  /news/firstnews/", ["/list/ ", " /cate/"]),
    ],
    ids=["joined", "list", "spaces"],
)
def test_several_regexes_are_joined_or_listed(article: Any, following: Any) -> None:
    spec = parse_spec(news(article=article, following=following))
    config = parse_config(spec.config, spec.name)
    assert [p.pattern for p in config.article] == [r"/news/\w+/\d+\.aspx", "/news/firstnews/"]
    assert [p.pattern for p in config.following] == ["/list/", "/cate/"]
    assert config.is_article(CNA_ARTICLE)
    assert config.is_article("https://www.cna.com.tw/news/firstnews/1.aspx")
    assert not config.is_article(CNA_LIST)
    assert config.is_following(CNA_LIST)
    assert config.is_following("https://www.cna.com.tw/cate/1")
    assert not config.is_following(CNA_ARTICLE)


def test_a_news_site_gets_the_defaults() -> None:
    spec = parse_spec({"name": " cna ", "url": CNA, "config": {"article": "/news/"}})
    assert spec == SiteSpec(name="cna", url=CNA, type="news", config={"article": "/news/"})
    assert (spec.is_active, spec.airtable_id) == (True, None)
    config = parse_config(spec.config, spec.name)
    # No delay of its own: the crawl's ZEROARCHIVE_SITE_DELAY, 1 s by default
    # (tests/test_site_refresh.py).
    assert (config.depth, config.delay, config.robots, config.render) == (3, None, True, False)
    assert (DEFAULT_DEPTH, DEFAULT_DELAY) == (3, 1.0)
    assert (config.ua, dict(config.cookies), config.url_rules) == (None, {}, UrlRules())
    assert config.following == ()


def test_every_field_is_read() -> None:
    raw = {
        "name": "ltn",
        "url": "HTTPS://News.LTN.com.tw:443/list/breakingnews?utm_source=fb#top",
        "type": "content_farm",
        "active": False,
        "airtable_id": "recLTN",
        "config": {
            "article": "/news/",
            "following": "/list/",
            "depth": 0,
            "delay": 2.5,
            "ua": "Mozilla/5.0 (zeroarchive)",
            "cookies": {"over18": 1, "lang": "zh-TW"},
            "render": True,
            "robots": False,
            "url_rules": {
                "strip_www": True,
                "trailing_slash": "strip",
                "ignore_params": ["from", "ref_*"],
                "keep_fragment": False,
            },
        },
    }
    spec = parse_spec(raw)
    assert (spec.name, spec.type, spec.is_active, spec.airtable_id) == (
        "ltn",
        "content_farm",
        False,
        "recLTN",
    )
    assert spec.url == "https://news.ltn.com.tw/list/breakingnews"
    config = parse_config(spec.config, spec.name)
    assert (config.depth, config.delay, config.render, config.robots) == (0, 2.5, True, False)
    assert config.ua == "Mozilla/5.0 (zeroarchive)"
    assert dict(config.cookies) == {"over18": "1", "lang": "zh-TW"}
    assert config.url_rules == UrlRules(
        strip_www=True, trailing_slash="strip", ignore_params=("from", "ref_*")
    )
    assert json.loads(spec.config_json()) == raw["config"]
    assert spec.config_json() == json.dumps(raw["config"], ensure_ascii=False, sort_keys=True)


def test_the_site_url_is_canonicalised_with_the_site_rules() -> None:
    spec = parse_spec(
        {
            "name": "udn",
            "url": "http://www.udn.com/news/?from=home&id=7",
            "config": {
                "article": "/story/",
                "url_rules": {"strip_www": True, "ignore_params": ["from"]},
            },
        }
    )
    assert spec.url == "http://udn.com/news/?id=7"


@pytest.mark.parametrize(
    ("site_type", "url"),
    [
        ("ptt", "https://www.ptt.cc/bbs/Gossiping/index.html"),
        ("dcard", "https://www.dcard.tw/f/trending"),
        ("facebook", "https://m.facebook.com/taiwan.gov/posts/"),
    ],
)
@pytest.mark.parametrize("config", [None, {}, "", "{}"], ids=["none", "empty", "blank", "json"])
def test_platform_sites_need_no_article_regex(site_type: str, url: str, config: Any) -> None:
    spec = parse_spec({"name": site_type, "url": url, "type": site_type, "config": config})
    assert (spec.type, spec.url, dict(spec.config)) == (site_type, url, {})
    parsed = parse_config(spec.config, spec.name)
    assert parsed == SiteConfig()
    assert not parsed.is_article(url)


@pytest.mark.parametrize("site_type", ["news", "content_farm", "gov", "organization"])
@pytest.mark.parametrize(
    "config", [{}, {"article": ""}, {"article": []}, {"article": "; "}, {"following": "/list/"}]
)
def test_generic_sites_without_an_article_regex_have_their_article_links_learnt(
    site_type: str, config: dict[str, Any]
) -> None:
    spec = parse_spec({"name": "gio", "url": CNA, "type": site_type, "config": config})
    assert (spec.name, spec.type) == ("gio", site_type)
    assert parse_config(spec.config, spec.name).article == ()


@pytest.mark.parametrize(
    "following",
    [None, "", "; ", " ", [], [""], "MISSING"],
    ids=["none", "empty", "separator", "space", "empty-list", "list-of-empty", "missing"],
)
def test_empty_following_means_no_following(following: Any) -> None:
    config: dict[str, Any] = {"article": "/news/"}
    if following != "MISSING":
        config["following"] = following
    spec = parse_spec({**news(), "config": config})
    parsed = parse_config(spec.config, spec.name)
    assert parsed.following == ()
    for url in (CNA, CNA_LIST, CNA_ARTICLE, PTT_POST, "https://example.com/", ""):
        assert not parsed.is_following(url)
    assert parsed.is_article(CNA_ARTICLE)


def test_config_may_be_a_json_string() -> None:
    config = {"article": "/news/; /story/", "depth": 2, "cookies": {"over18": "1"}}
    from_string = parse_spec({**news(), "config": json.dumps(config)})
    assert from_string.config == config
    assert from_string == parse_spec({**news(), "config": config})
    assert parse_config(from_string.config, "cna").depth == 2


# --- refused definitions ------------------------------------------------------------------


def _long_url() -> str:
    return "https://www.cna.com.tw/" + "a" * 3000


@pytest.mark.parametrize(
    ("raw", "site", "field", "says"),
    [
        (news(article="(unclosed"), "cna", "article", "bad regex '(unclosed'"),
        (news(article=["/news/", "[bad"]), "cna", "article", "bad regex '[bad'"),
        (news(article=["/news/", 7]), "cna", "article", "regex string or a list"),
        (news(article={"re": "/a/"}), "cna", "article", "regex string or a list"),
        (news(following="/list/; *star"), "cna", "following", "bad regex '*star'"),
        (news(following=["/list/", "(?P<x"]), "cna", "following", "bad regex"),
        ({**news(), "type": "blog"}, "cna", "type", "unknown type 'blog'"),
        ({**news(), "type": None}, "cna", "type", "unknown type None"),
        ({**news(), "url": "javascript:alert(1)"}, "cna", "url", "bad_scheme"),
        ({**news(), "url": "ftp://www.cna.com.tw/"}, "cna", "url", "bad_scheme"),
        ({**news(), "url": "https:///nohost"}, "cna", "url", "no_host"),
        ({**news(), "url": _long_url()}, "cna", "url", "too_long"),
        ({**news(), "url": None}, "cna", "url", "missing"),
        ({k: v for k, v in news().items() if k != "url"}, "cna", "url", "missing"),
        (news(dpeth=2), "cna", "dpeth", "unknown config key"),
        (news(Article="/x/"), "cna", "Article", "unknown config key"),
        ({**news(), "tpye": "news"}, "cna", "tpye", "unknown field"),
        (news(depth=51), "cna", "depth", "between 0 and 50"),
        (news(depth=-1), "cna", "depth", "between 0 and 50"),
        (news(depth="3 pages"), "cna", "depth", "must be a number"),
        (news(depth=None), "cna", "depth", "must be a number"),
        (news(depth=True), "cna", "depth", "must be a number"),
        (news(depth=2.5), "cna", "depth", "whole number"),
        (news(delay=-0.5), "cna", "delay", "between 0 and 3600"),
        (news(delay=float("nan")), "cna", "delay", "between 0 and 3600"),
        (news(delay="1s"), "cna", "delay", "must be a number"),
        (news(cookies=["over18=1"]), "cna", "cookies", "mapping"),
        (news(cookies="over18=1"), "cna", "cookies", "mapping"),
        (news(cookies={"over18": None}), "cna", "cookies", "mapping"),
        (news(cookies={"over18": ["1"]}), "cna", "cookies", "mapping"),
        (news(url_rules={"strip": True}), "cna", "url_rules.strip", "unknown rule"),
        (news(url_rules={"strip_www": 1}), "cna", "url_rules", "must be a bool"),
        (news(url_rules={"trailing_slash": "remove"}), "cna", "url_rules", "trailing_slash"),
        (news(url_rules={"ignore_params": "ref"}), "cna", "url_rules", "ignore_params"),
        (news(url_rules={"ignore_params": [""]}), "cna", "url_rules", "ignore_params"),
        (news(url_rules=["strip_www"]), "cna", "url_rules", "mapping"),
        (news(render="yes"), "cna", "render", "true or false"),
        (news(robots=0), "cna", "robots", "true or false"),
        (news(feeds="/rss.xml"), "cna", "feeds", "bad URL '/rss.xml': bad_scheme"),
        (news(feeds=["https://x.tw/rss", 3]), "cna", "feeds", "a URL or a list of URLs"),
        (news(feeds={"url": "https://x.tw/rss"}), "cna", "feeds", "a URL or a list of URLs"),
        (news(sitemaps=["https://x.tw/s.xml", "ftp://x.tw/s"]), "cna", "sitemaps", "bad URL"),
        (news(discover="no"), "cna", "discover", "true or false"),
        (news(ua="Mozilla\nX-Injected: 1"), "cna", "ua", "one-line"),
        (news(ua=5), "cna", "ua", "one-line"),
        ({**news(), "active": "no"}, "cna", "active", "true or false"),
        ({**news(), "config": "{article: /news/"}, "cna", "config", "not valid JSON"),
        ({**news(), "config": '["/news/"]'}, "cna", "config", "must be a mapping"),
        ({**news(), "config": ["/news/"]}, "cna", "config", "must be a mapping"),
        ({k: v for k, v in news().items() if k != "name"}, CNA, "name", "missing"),
        ({**news(), "name": "   "}, CNA, "name", "missing"),
        ({**news(), "name": 42}, CNA, "name", "missing"),
        ({"type": "ptt"}, "?", "name", "missing"),
        (["cna", CNA], "?", "entry", "must be a mapping, got list"),
    ],
)
def test_each_error_names_the_site_and_the_field(
    raw: Any, site: str, field: str, says: str
) -> None:
    with pytest.raises(SiteConfigError) as caught:
        parse_spec(raw)
    error = caught.value
    assert (error.site, error.field) == (site, field)
    assert says in error.message
    assert str(error).startswith(f"site {site!r}: {field}: ")
    assert len(str(error)) < 600, "a 3000-character URL is not echoed whole"
    assert isinstance(error, ValueError)


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"article": "(", "depth": "x"}, "article"),
        ({"cookies": [], "render": "x"}, "render"),
        ({"dpeth": 2, "depth": 99}, "dpeth"),
    ],
)
def test_parse_config_reports_the_first_bad_field(config: dict[str, Any], field: str) -> None:
    with pytest.raises(SiteConfigError) as caught:
        parse_config(config, "demo")
    assert (caught.value.site, caught.value.field) == ("demo", field)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, SiteConfig()),
        ({"depth": 0, "delay": 0}, SiteConfig(depth=0, delay=0.0)),
        ({"depth": 50, "delay": 3600}, SiteConfig(depth=50, delay=3600.0)),
        ({"depth": 4.0, "delay": 1}, SiteConfig(depth=4, delay=1.0)),
        ({"cookies": None, "url_rules": None}, SiteConfig()),
        ({"cookies": {"over18": 1}}, SiteConfig(cookies={"over18": "1"})),
        ({"ua": "Bot/1.0"}, SiteConfig(ua="Bot/1.0")),
        ({"feeds": None, "sitemaps": []}, SiteConfig()),
        (
            {"feeds": "HTTPS://CNA.com.tw/rss.xml", "discover": False},
            SiteConfig(feeds=("https://cna.com.tw/rss.xml",), discover=False),
        ),
        (
            {"sitemaps": ["https://x.tw/a.xml.gz", "https://x.tw/b.xml", "https://x.tw/a.xml.gz"]},
            SiteConfig(sitemaps=("https://x.tw/a.xml.gz", "https://x.tw/b.xml")),
        ),
        (
            {"url_rules": {"ignore_params": ["from_*"], "keep_fragment": True}},
            SiteConfig(url_rules=UrlRules(ignore_params=("from_*",), keep_fragment=True)),
        ),
    ],
)
def test_parse_config_values(config: dict[str, Any], expected: SiteConfig) -> None:
    parsed = parse_config(config, "demo")
    assert parsed == expected
    assert isinstance(parsed.depth, int)
    # A delay given is a float; none given stays None (ZEROARCHIVE_SITE_DELAY applies).
    assert isinstance(parsed.delay, float) if "delay" in config else parsed.delay is None


# --- 0archive's site lists and the source registry ------------------------------------------


@pytest.mark.parametrize(
    ("given", "site_type", "category"),
    [
        ("news", "news", None),
        ("news_website", "news", "news_website"),
        ("official_media", "news", "official_media"),
        ("organization_website", "organization", "organization_website"),
        ("content_farm", "content_farm", None),
        ("官媒", "news", "官媒"),
    ],
)
def test_0archive_type_names_load_and_are_kept_as_categories(
    given: str, site_type: str, category: str | None
) -> None:
    from zeroarchive.sources import label_types

    spec = parse_spec({**news(), "type": given}, label_types())
    assert (spec.type, spec.category, spec.warnings) == (site_type, category, ())


def test_a_category_given_is_kept() -> None:
    spec = parse_spec({**news(), "type": "official_media", "category": "中共官媒"})
    assert (spec.type, spec.category) == ("news", "中共官媒")


@pytest.mark.parametrize(
    ("given", "url", "site_type", "stored", "warned"),
    [
        (
            "fb_page",
            "https://www.facebook.com/MOHW.Taiwan/?ref=page_internal",
            "facebook",
            "https://m.facebook.com/MOHW.Taiwan/posts/",
            False,
        ),
        (
            "fb_public_group",
            "https://www.facebook.com/groups/twgov/?__tn__=%2Cd",
            "facebook",
            "https://m.facebook.com/groups/twgov/",
            False,
        ),
        ("discussion_board", "https://www.ptt.cc/bbs/Gossiping", "ptt", PTT_INDEX, False),
        ("news", "https://www.ptt.cc/bbs/Gossiping/index.html", "ptt", PTT_INDEX, True),
        (
            "ptt",
            "https://www.dcard.tw/f/trending/",
            "dcard",
            "https://www.dcard.tw/f/trending",
            True,
        ),
    ],
)
def test_a_platform_url_decides_the_type(
    given: str, url: str, site_type: str, stored: str, warned: bool
) -> None:
    spec = parse_spec({"name": "x", "url": url, "type": given, "config": {"article": "/a/"}})
    assert (spec.type, spec.url) == (site_type, stored)
    assert bool(spec.warnings) is warned
    if warned:
        assert f"archived as {site_type}" in spec.warnings[0]


@pytest.mark.parametrize(
    ("site_type", "url", "says"),
    [
        ("facebook", "https://www.facebook.com/search/top?q=x", "not a Facebook page or group"),
        ("news", "https://www.facebook.com/watch/?v=1", "not a Facebook page or group"),
        ("ptt", "https://www.ptt.cc/bbs/Gossiping/M.1459688662.A.CFE.html", "not a PTT board"),
        ("ptt", "http://127.0.0.1:8080/", "not a PTT board"),
        ("dcard", "https://www.dcard.tw/f/funny/p/224362515", "not a Dcard forum"),
    ],
)
def test_a_url_no_spider_can_archive_is_an_error_of_the_url(
    site_type: str, url: str, says: str
) -> None:
    with pytest.raises(SiteConfigError) as caught:
        parse_spec({"name": "x", "url": url, "type": site_type, "config": {"article": "/a/"}})
    assert caught.value.field == "url" and says in caught.value.message


def test_a_0archive_config_loads_as_it_is() -> None:
    # As 0archive's Site.config held it: numbers as text, `selenium`, an empty login_url,
    # and a regex with a needless escape written straight into the JSON.
    config = (
        '{"article": "/news/\\\\d+\\&cat=\\\\d+", "following": "", "depth": "5", '
        '"delay": "1.5", "ua": "Mozilla/5.0", "selenium": true, "login_url": ""}'
    )
    spec = parse_spec({"name": "x", "url": CNA, "type": "content_farm", "config": config})
    parsed = parse_config(spec.config, "x")
    assert (parsed.depth, parsed.delay, parsed.render, parsed.login_url) == (5, 1.5, True, None)
    assert [p.pattern for p in parsed.article] == [r"/news/\d+\&cat=\d+"]
    assert parsed.is_article("https://www.cna.com.tw/news/12&cat=3")


def test_render_and_selenium_must_agree() -> None:
    with pytest.raises(SiteConfigError) as caught:
        parse_config({"render": True, "selenium": False}, "x")
    assert caught.value.field == "selenium"
    assert parse_config({"render": True, "selenium": True}, "x").render is True


def test_login_url_is_a_url() -> None:
    assert parse_config({"login_url": "HTTPS://Member.Example.tw/login"}, "x").login_url == (
        "https://member.example.tw/login"
    )
    with pytest.raises(SiteConfigError) as caught:
        parse_config({"login_url": "javascript:void(0)"}, "x")
    assert caught.value.field == "login_url"


def test_article_regexes_match_the_link_as_found_too() -> None:
    # 0archive wrote regexes for the site's own URLs, query order and all; the canonical
    # URL sorts the query.
    config = parse_config({"article": r"news\.php\?id=\d+&cat="}, "x")
    as_found = "https://x.tw/news.php?id=3&cat=2"
    canonical = "https://x.tw/news.php?cat=2&id=3"
    assert not config.is_article(canonical)
    assert config.is_article(canonical, as_found=as_found)
