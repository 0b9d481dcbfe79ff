from __future__ import annotations

import pickle

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.provisional import urls
from w3lib.url import safe_url_string

from zeroarchive.core.urls import (
    MAX_URL_LENGTH,
    UrlRejected,
    UrlRules,
    canonicalize_url,
    host_of,
    is_on_site,
    url_hash,
)

PROPERTY_SETTINGS = settings(max_examples=200, deadline=None)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://WWW.EXAMPLE.COM/Path", "http://www.example.com/Path"),
        ("hTTpS://News.LTN.com.TW/news/life", "https://news.ltn.com.tw/news/life"),
        ("http://中文.tw/", "http://xn--fiq228c.tw/"),
        ("http://台灣.TW/a", "http://xn--kpry57d.tw/a"),
        ("http://Bücher.de/", "http://xn--bcher-kva.de/"),
        ("http://ｅｘａｍｐｌｅ.com/", "http://example.com/"),
        ("http://中文。tw/", "http://xn--fiq228c.tw/"),
        ("http://faß.de/", "http://fass.de/"),
        ("http://a_b.中文.tw/", "http://a_b.xn--fiq228c.tw/"),
        ("http://[::0:1]/a", "http://[::1]/a"),
        ("http://[2001:DB8::1]:8080/", "http://[2001:db8::1]:8080/"),
        ("http://user:P%40ss@Example.com/", "http://user:P%40ss@example.com/"),
        ("http://@example.com/", "http://example.com/"),
    ],
)
def test_scheme_and_host_are_lower_cased(url: str, expected: str) -> None:
    assert canonicalize_url(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:080/a", "http://example.com/a"),
        ("http://example.com:443/a", "http://example.com:443/a"),
        ("https://example.com:80/a", "https://example.com:80/a"),
        ("http://127.0.0.1:8080/a", "http://127.0.0.1:8080/a"),
        ("http://example.com:/a", "http://example.com/a"),
    ],
)
def test_default_ports_are_dropped(url: str, expected: str) -> None:
    assert canonicalize_url(url) == expected


@pytest.mark.parametrize(
    ("url", "keep_fragment", "expected"),
    [
        ("https://example.com/a#comments", False, "https://example.com/a"),
        ("https://example.com/a#", False, "https://example.com/a"),
        ("https://example.com/a?b=1#x", False, "https://example.com/a?b=1"),
        ("https://example.com/a#comments", True, "https://example.com/a#comments"),
        ("https://example.com/a#", True, "https://example.com/a"),
        ("https://example.com/#/中文", True, "https://example.com/#/%E4%B8%AD%E6%96%87"),
        ("https://example.com/#a#b[c]", True, "https://example.com/#a%23b%5Bc%5D"),
    ],
)
def test_fragment(url: str, keep_fragment: bool, expected: str) -> None:
    assert canonicalize_url(url, UrlRules(keep_fragment=keep_fragment)) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://www.facebook.com/story.php?story_fbid=10&id=20&fbclid=IwAR3xYz",
            "https://www.facebook.com/story.php?id=20&story_fbid=10",
        ),
        (
            "https://www.dcard.tw/f/trending/p/235689?fbclid=IwAR0abc",
            "https://www.dcard.tw/f/trending/p/235689",
        ),
        (
            "https://www.dcard.tw/f/mood/p/1?utm_source=fb&utm_medium=share&utm_campaign=x",
            "https://www.dcard.tw/f/mood/p/1",
        ),
        (
            "https://example.com/?gclid=1&dclid=2&msclkid=3&yclid=4&mc_cid=5&mc_eid=6&_ga=7",
            "https://example.com/",
        ),
        (
            "https://example.com/?igshid=1&spm=2&fb_action_ids=3&fb_action_types=4"
            "&fb_ref=5&fb_source=6&id=9",
            "https://example.com/?id=9",
        ),
        ("https://example.com/?utm%5Fsource=x&id=1", "https://example.com/?id=1"),
        ("https://example.com/?utm_source", "https://example.com/"),
        ("https://example.com/?UTM_SOURCE=x", "https://example.com/?UTM_SOURCE=x"),
        ("https://example.com/?myfbclid=1", "https://example.com/?myfbclid=1"),
        ("https://example.com/?utm=1", "https://example.com/?utm=1"),
    ],
)
def test_tracking_parameters_are_removed(url: str, expected: str) -> None:
    assert canonicalize_url(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com/do?c=3&b=5&a=50", "http://example.com/do?a=50&b=5&c=3"),
        ("http://example.com/?b=2&a=2&b=1&a=1", "http://example.com/?a=2&a=1&b=2&b=1"),
        ("http://example.com/?b=&a", "http://example.com/?a&b="),
        ("http://example.com/?a=1&&b=2&", "http://example.com/?a=1&b=2"),
        ("http://example.com/?", "http://example.com/"),
        ("http://example.com/?q=a=b", "http://example.com/?q=a=b"),
        ("http://example.com/?q=a%3Db", "http://example.com/?q=a%3Db"),
        ("http://example.com/?q=a+b", "http://example.com/?q=a+b"),
        ("http://example.com/?q=a b", "http://example.com/?q=a%20b"),
        ("http://example.com/?a[]=1&a[]=2", "http://example.com/?a%5B%5D=1&a%5B%5D=2"),
        ("http://example.com/?q=it's", "http://example.com/?q=it%27s"),
        ("http://example.com/?id=1;utm_source=x", "http://example.com/?id=1;utm_source=x"),
    ],
)
def test_query_is_sorted_stably(url: str, expected: str) -> None:
    assert canonicalize_url(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://news.ltn.com.tw/search?keyword=中文&page=2",
            "https://news.ltn.com.tw/search?keyword=%E4%B8%AD%E6%96%87&page=2",
        ),
        (
            "https://udn.com/search/word/2/中文?q=新聞",
            "https://udn.com/search/word/2/%E4%B8%AD%E6%96%87?q=%E6%96%B0%E8%81%9E",
        ),
        (
            "https://udn.com/search/word/2/%e4%b8%ad%e6%96%87",
            "https://udn.com/search/word/2/%E4%B8%AD%E6%96%87",
        ),
        (
            "https://www.google.com/search?q=%E5%8F%B0%E7%81%A3&fbclid=x",
            "https://www.google.com/search?q=%E5%8F%B0%E7%81%A3",
        ),
        # Big5 escapes from old Taiwanese sites are not UTF-8 and must survive as bytes.
        ("http://example.com.tw/q?kw=%b0%ea", "http://example.com.tw/q?kw=%B0%EA"),
        ("http://example.com/%7Euser/%41b", "http://example.com/~user/Ab"),
        ("http://example.com/a%2Fb/c%3Dd", "http://example.com/a%2Fb/c%3Dd"),
        ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
        ("http://example.com/a b", "http://example.com/a%20b"),
        ("http://example.com/a|b^c", "http://example.com/a%7Cb%5Ec"),
        ("http://example.com/[a]/it's", "http://example.com/%5Ba%5D/it's"),
        ("http://example.com/a\\b?q=c\\d", "http://example.com/a/b?q=c%5Cd"),
        ("http:\\\\example.com\\a", "http://example.com/a"),
        ("http://example.com/a%7cb", "http://example.com/a%7Cb"),
        ("http://example.com/100%", "http://example.com/100%25"),
        ("http://example.com/%zz", "http://example.com/%25zz"),
        ("http://example.com/résumé", "http://example.com/r%C3%A9sum%C3%A9"),
        ("http://example.com/a:b@c!$'()*+,;=", "http://example.com/a:b@c!$'()*+,;="),
        ("  http://example.com/a\n/b\t ", "http://example.com/a/b"),
    ],
)
def test_percent_encoding_is_normalised(url: str, expected: str) -> None:
    assert canonicalize_url(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com", "http://example.com/"),
        ("http://example.com?a=1", "http://example.com/?a=1"),
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/a/b/..", "http://example.com/a/"),
        ("http://example.com/a/.", "http://example.com/a/"),
        ("http://example.com/../../a", "http://example.com/a"),
        ("http://example.com/a/%2e%2E/b", "http://example.com/b"),
        ("http://example.com/a/.../b", "http://example.com/a/.../b"),
        ("http://example.com//a//b", "http://example.com//a//b"),
    ],
)
def test_path_segments_are_resolved(url: str, expected: str) -> None:
    assert canonicalize_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "https://www.ptt.cc/bbs/Gossiping/M.1459688662.A.CFE.html",
        "https://www.ptt.cc/bbs/Gossiping/index.html",
        "https://www.ptt.cc/bbs/HatePolitics/index3950.html",
        "https://www.ptt.cc/ask/over18?from=%2Fbbs%2FGossiping%2Findex.html",
        "https://news.ltn.com.tw/news/politics/breakingnews/4567890",
        "https://udn.com/news/story/6656/7654321",
        "https://www.dcard.tw/f/trending/p/235689",
        "http://127.0.0.1:8000/",
    ],
)
def test_canonical_urls_are_unchanged(url: str) -> None:
    assert canonicalize_url(url) == url


@pytest.mark.parametrize(
    ("url", "strip_www", "expected"),
    [
        ("http://www.ltn.com.tw/a", False, "http://www.ltn.com.tw/a"),
        ("http://www.ltn.com.tw/a", True, "http://ltn.com.tw/a"),
        ("http://WWW.ltn.com.tw/a", True, "http://ltn.com.tw/a"),
        ("http://www.www.ltn.com.tw/a", True, "http://ltn.com.tw/a"),
        ("http://ltn.com.tw/a", True, "http://ltn.com.tw/a"),
        ("http://news.ltn.com.tw/a", True, "http://news.ltn.com.tw/a"),
        ("http://www2.ltn.com.tw/a", True, "http://www2.ltn.com.tw/a"),
        ("http://www.com/a", True, "http://www.com/a"),
    ],
)
def test_www_rule(url: str, strip_www: bool, expected: str) -> None:
    assert canonicalize_url(url, UrlRules(strip_www=strip_www)) == expected


@pytest.mark.parametrize(
    ("url", "mode", "expected"),
    [
        ("http://example.com/a/", "keep", "http://example.com/a/"),
        ("http://example.com/a", "keep", "http://example.com/a"),
        ("http://example.com/a/", "strip", "http://example.com/a"),
        ("http://example.com/a//", "strip", "http://example.com/a"),
        ("http://example.com/a/?b=1", "strip", "http://example.com/a?b=1"),
        ("http://example.com/a/b/..", "strip", "http://example.com/a"),
        ("http://example.com/a", "add", "http://example.com/a/"),
        ("http://example.com/a/", "add", "http://example.com/a/"),
        ("http://example.com/a?b=1", "add", "http://example.com/a/?b=1"),
        ("http://example.com/", "strip", "http://example.com/"),
        ("http://example.com", "strip", "http://example.com/"),
        ("http://example.com/", "add", "http://example.com/"),
    ],
)
def test_trailing_slash_rule(url: str, mode: str, expected: str) -> None:
    assert canonicalize_url(url, UrlRules(trailing_slash=mode)) == expected


@pytest.mark.parametrize(
    ("url", "ignore_params", "expected"),
    [
        ("http://example.com/?ref=home&id=1", ("ref",), "http://example.com/?id=1"),
        ("http://example.com/?ref=home&referer=x", ("ref",), "http://example.com/?referer=x"),
        (
            "http://example.com/?from_home=1&from=2&id=3",
            ("from_*",),
            "http://example.com/?from=2&id=3",
        ),
        ("http://example.com/?from_home=1&from=2&id=3", ("from*",), "http://example.com/?id=3"),
        ("http://example.com/?a=1&b=2", ("*",), "http://example.com/"),
        ("http://example.com/?%E4%BE%86%E6%BA%90=fb&id=1", ("來源",), "http://example.com/?id=1"),
        ("http://example.com/?fbclid=1&id=1", ("ref",), "http://example.com/?id=1"),
    ],
)
def test_ignore_params(url: str, ignore_params: tuple[str, ...], expected: str) -> None:
    assert canonicalize_url(url, UrlRules(ignore_params=ignore_params)) == expected


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://example.com/" + "a" * 3000, "too_long"),
        ("http://example.com/?q=" + "中" * 700, "too_long"),
        ("javascript:alert(1)", "bad_scheme"),
        ("javascript:void(0)", "bad_scheme"),
        ("mailto:editor@udn.com", "bad_scheme"),
        ("ftp://ftp.example.com/file.txt", "bad_scheme"),
        ("data:text/html,hi", "bad_scheme"),
        ("tel:+886212345678", "bad_scheme"),
        ("//example.com/a", "bad_scheme"),
        ("/relative/path", "bad_scheme"),
        ("", "bad_scheme"),
        ("http:///path", "no_host"),
        ("http://:8080/", "no_host"),
        ("http://user@/", "no_host"),
        ("https:", "no_host"),
        ("http://example.com:99999/", "malformed"),
        ("http://example.com:abc/", "malformed"),
        ("http://example.com:80:90/", "malformed"),
        ("http://example.com:١٢/", "malformed"),
        ("http://[::1/", "malformed"),
        ("http://[::1]x/", "malformed"),
        ("http://[zz]/", "malformed"),
        ("http://exa mple.com/", "malformed"),
        ("http://a..b/", "malformed"),
        ("http://\ud800.com/", "malformed"),
        ("http://example.com/\ud800", "malformed"),
    ],
)
def test_rejected(url: str, reason: str) -> None:
    with pytest.raises(UrlRejected) as caught:
        canonicalize_url(url)
    assert caught.value.reason == reason
    assert isinstance(caught.value, ValueError)


def test_length_limit_is_inclusive() -> None:
    base = "http://example.com/"
    at_limit = base + "a" * (MAX_URL_LENGTH - len(base))
    assert canonicalize_url(at_limit) == at_limit
    with pytest.raises(UrlRejected, match="too_long"):
        canonicalize_url(at_limit + "a")


def test_url_rejected_pickles_and_shows_its_reason() -> None:
    error = UrlRejected("bad_scheme", "mailto:a@b.c")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.reason, copy.url) == ("bad_scheme", "mailto:a@b.c")
    assert str(copy) == "bad_scheme: 'mailto:a@b.c'"
    with pytest.raises(ValueError, match="unknown"):
        UrlRejected("nope")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"strip_www": "yes"}, "strip_www"),
        ({"keep_fragment": 1}, "keep_fragment"),
        ({"trailing_slash": "remove"}, "trailing_slash"),
        ({"ignore_params": "ref"}, "ignore_params"),
        ({"ignore_params": ("",)}, "ignore_params"),
        ({"ignore_params": ("a*b",)}, "ignore_params"),
        ({"ignore_params": (3,)}, "ignore_params"),
    ],
)
def test_rules_are_validated(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        UrlRules(**kwargs)  # type: ignore[arg-type]


def test_rules_accept_a_list_and_stay_hashable() -> None:
    rules = UrlRules(ignore_params=["ref", "from_*"])  # type: ignore[arg-type]
    assert rules.ignore_params == ("ref", "from_*")
    assert hash(rules) == hash(UrlRules(ignore_params=("ref", "from_*")))


def test_url_hash() -> None:
    canonical = canonicalize_url("https://www.ptt.cc/bbs/Gossiping/M.1459688662.A.CFE.html")
    digest = url_hash(canonical)
    assert len(digest) == 16
    assert digest == bytes.fromhex("f8098d0d206261688e19ac84f100284f")
    assert (
        url_hash(canonicalize_url("HTTPS://WWW.PTT.CC:443/bbs/Gossiping/M.1459688662.A.CFE.html#x"))
        == digest
    )


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://127.0.0.1:8080/page", "127.0.0.1"),
        ("https://News.LTN.com.tw/news", "news.ltn.com.tw"),
        ("http://user:pw@Example.com:81/", "example.com"),
        ("http://中文.tw/", "xn--fiq228c.tw"),
        ("http://[::1]:8000/", "::1"),
        ("mailto:someone@example.com", ""),
        ("/relative", ""),
        ("", ""),
        ("http://[::1/", ""),
    ],
)
def test_host_of(url: str, host: str) -> None:
    assert host_of(url) == host


@pytest.mark.parametrize(
    ("url", "site_url", "expected"),
    [
        ("https://news.ltn.com.tw/news/1", "http://www.ltn.com.tw/", True),
        ("https://ltn.com.tw/", "http://www.ltn.com.tw/", True),
        ("https://www.ltn.com.tw/", "http://www.ltn.com.tw/", True),
        ("https://WWW.LTN.COM.TW/", "http://www.ltn.com.tw/", True),
        ("https://a.b.ltn.com.tw/", "https://ltn.com.tw/", True),
        ("https://notltn.com.tw/", "http://www.ltn.com.tw/", False),
        ("https://ltn.com.tw.evil.com/", "http://www.ltn.com.tw/", False),
        ("https://udn.com/", "http://www.ltn.com.tw/", False),
        ("https://www.ltn.com.tw/", "https://news.ltn.com.tw/", False),
        ("http://127.0.0.1:8001/a", "http://127.0.0.1:8000/", True),
        ("http://localhost:8001/a", "http://localhost:8000/", True),
        ("http://1.127.0.0.1/a", "http://127.0.0.1:8000/", False),
        ("mailto:a@ltn.com.tw", "http://www.ltn.com.tw/", False),
        ("https://ltn.com.tw/", "", False),
    ],
)
def test_is_on_site(url: str, site_url: str, expected: bool) -> None:
    assert is_on_site(url, site_url) is expected


def _random_case(draw: st.DrawFn, text: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(c.upper() if flip else c for c, flip in zip(text, flips, strict=True))


_LABEL = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)
_CJK_LABEL = st.text("中文台灣新聞報", min_size=1, max_size=4)
_SEGMENT = st.one_of(
    st.text(max_size=8),
    st.text("abc中文%2Fe.~!$&'()*+,;=:@ ", max_size=8),
    st.sampled_from([".", "..", "%2e", "%2E%2e", "%41", "%e4%b8%ad", "%b0%ea", "%"]),
)
_QUERY_TEXT = st.text("abcAZ09中文%2F=+&;/?-_.~ ", max_size=6)
_QUERY_KEY = st.one_of(
    st.sampled_from(["utm_source", "utm_medium", "fbclid", "gclid", "id", "page", "q", "ref"]),
    _QUERY_TEXT,
)


@st.composite
def messy_urls(draw: st.DrawFn) -> str:
    scheme = _random_case(draw, draw(st.sampled_from(["http", "https"])))
    labels = draw(st.lists(st.one_of(_LABEL, _CJK_LABEL), min_size=1, max_size=3))
    host = _random_case(draw, ".".join([*labels, draw(st.sampled_from(["com", "tw", "cc"]))]))
    if draw(st.booleans()):
        host = "www." + host
    port = draw(st.sampled_from(["", ":80", ":443", ":8080", ":"]))
    path = "/".join(draw(st.lists(_SEGMENT, max_size=5)))
    params = draw(st.lists(st.tuples(_QUERY_KEY, _QUERY_TEXT), max_size=5))
    query = "&".join(f"{key}={value}" for key, value in params)
    fragment = draw(st.text(max_size=5))
    url = f"{scheme}://{host}{port}/{path}"
    if query or draw(st.booleans()):
        url += "?" + query
    if fragment or draw(st.booleans()):
        url += "#" + fragment
    return url


_RULES = st.builds(
    UrlRules,
    strip_www=st.booleans(),
    trailing_slash=st.sampled_from(["keep", "strip", "add"]),
    ignore_params=st.sampled_from([(), ("ref",), ("q*", "id")]),
    keep_fragment=st.booleans(),
)


def _canonical_or_none(url: str, rules: UrlRules | None = None) -> str | None:
    try:
        return canonicalize_url(url, rules)
    except UrlRejected:
        return None


@PROPERTY_SETTINGS
@given(urls(), _RULES)
def test_idempotent_on_generated_urls(url: str, rules: UrlRules) -> None:
    canonical = canonicalize_url(url, rules)
    assert canonicalize_url(canonical, rules) == canonical


@PROPERTY_SETTINGS
@given(messy_urls(), _RULES)
def test_idempotent_on_messy_urls(url: str, rules: UrlRules) -> None:
    canonical = _canonical_or_none(url, rules)
    assume(canonical is not None)
    assert canonical is not None
    assert canonical.isascii()
    assert canonicalize_url(canonical, rules) == canonical


@PROPERTY_SETTINGS
@given(st.text(max_size=60))
def test_arbitrary_text_is_canonical_or_rejected(text: str) -> None:
    for url in (text, "http://" + text, "https://example.com/" + text):
        canonical = _canonical_or_none(url)
        if canonical is not None:
            assert canonicalize_url(canonical) == canonical


@PROPERTY_SETTINGS
@given(messy_urls())
def test_hash_is_16_bytes_and_follows_the_canonical_url(url: str) -> None:
    canonical = _canonical_or_none(url)
    assume(canonical is not None)
    assert canonical is not None
    scheme, rest = canonical.split("://", 1)
    host, slash, tail = rest.partition("/")
    default_port = ":80" if scheme == "http" else ":443"
    if ":" not in host:
        host += default_port
    variant = f"{scheme.upper()}://{host.upper()}{slash}{tail}"
    digest = url_hash(canonical)
    assert len(digest) == 16
    assert url_hash(canonicalize_url(variant)) == digest
    assert url_hash(canonicalize_url(canonical + "#frag")) == digest
    separator = "&" if "?" in canonical else "?"
    assert url_hash(canonicalize_url(canonical + separator + "utm_source=x&fbclid=y")) == digest


@PROPERTY_SETTINGS
@given(
    st.lists(
        st.tuples(
            st.text("abcxyz_中", min_size=1, max_size=4),
            st.text("ab中%2F=+ ", max_size=4).map(lambda v: v + "v"),
        ),
        min_size=1,
        max_size=6,
        unique_by=lambda pair: pair[0],
    ).flatmap(lambda pairs: st.tuples(st.just(pairs), st.permutations(pairs)))
)
def test_query_order_is_irrelevant(
    pairs_and_shuffled: tuple[list[tuple[str, str]], list[tuple[str, str]]],
) -> None:
    pairs, shuffled = pairs_and_shuffled

    def url(params: list[tuple[str, str]]) -> str:
        return "https://udn.com/search?" + "&".join(f"{k}={v}" for k, v in params)

    assert canonicalize_url(url(pairs)) == canonicalize_url(url(shuffled))


@PROPERTY_SETTINGS
@given(st.one_of(messy_urls(), urls(), st.text(max_size=40).map("http://example.com/".__add__)))
def test_scrapy_request_url_has_the_same_canonical_url(url: str) -> None:
    # Request(url).url is safe_url_string(url): links and fetched URLs must agree.
    rules = UrlRules(keep_fragment=True)
    canonical = _canonical_or_none(url, rules)
    assume(canonical is not None)
    assert canonicalize_url(safe_url_string(url), rules) == canonical
