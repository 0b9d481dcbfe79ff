"""Deletion signs per answer (zeroarchive/events/signs.py) on real recorded platform
answers (tests/fixtures/events, dcard, ptt, youtube, facebook: see their SOURCE.txt) and on
what must never be a sign."""

from __future__ import annotations

import difflib
import gzip
import json
import lzma
from dataclasses import replace
from pathlib import Path

import lxml.html
import pytest
from sqlalchemy import select

from zeroarchive.core.items import FailedFetch, FetchedPage
from zeroarchive.core.schedule import DAY
from zeroarchive.events.answers import last_snapshots, sort_answers
from zeroarchive.events.signs import Probe, _without_paths, page_sign, page_text
from zeroarchive.sites.record import Site, SiteSpec, parse_config
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.rotation import split_ahead
from zeroarchive.storage.schema import article
from zeroarchive.storage.snapshots import snapshot_date

FIXTURES = Path(__file__).parent / "fixtures"
SITE = Site(1, "farm", "https://farm.example/", "news", parse_config({"article": "/news/"}, "f"))
ARTICLE = "https://farm.example/news/1"


def page(body: bytes, article_type: str = "Article", moved_to: str | None = None) -> FetchedPage:
    return FetchedPage(
        1,
        1,
        article_type,
        0,
        200,
        moved_to or "https://farm.example/news/1",
        {},
        "utf-8",
        body,
        moved_to=moved_to,
    )


def test_a_real_dcard_post_is_no_sign_and_its_deleted_or_hidden_form_is() -> None:
    post = json.loads((FIXTURES / "dcard/single_post_content.json").read_text(encoding="utf-8"))
    assert "deletedAt" in post  # the field is in Dcard's own answer
    live = json.dumps({"post": post, "comments": []}).encode()
    assert page_sign(page(live, "Dcard"), SITE) is None
    deleted = json.dumps({"post": {**post, "deletedAt": "2016-07-02T00:00:00.000Z"}}).encode()
    hidden = json.dumps({"post": {**post, "hidden": True}}).encode()
    assert page_sign(page(deleted, "Dcard"), SITE) == "platform:dcard-deleted"
    assert page_sign(page(hidden, "Dcard"), SITE) == "platform:dcard-hidden"


def test_real_ptt_posts_are_no_sign_and_ptts_not_found_page_is() -> None:
    for name in (
        "meifamily-ptt-alertor__dummyArticle.html",
        "tommady-pttifierLib__TestContentHTML.html",
    ):
        assert page_sign(page((FIXTURES / "ptt" / name).read_bytes(), "PTT"), SITE) is None
    gone = b"<html><body><div class='bbs-screen bbs-content'>404 - Not Found.</div></body></html>"
    assert page_sign(page(gone, "PTT"), SITE) == "platform:ptt-deleted"


def test_redirects_to_the_front_or_a_list_page_are_signs_a_move_to_an_article_is_not() -> None:
    assert page_sign(page(b"<p>home</p>", moved_to="https://farm.example/"), SITE) == (
        "redirect:https://farm.example/"
    )
    listed = page(b"<p>list</p>", moved_to="https://farm.example/category/politics")
    assert page_sign(listed, SITE) == "redirect:https://farm.example/category/politics"
    moved = page(b"<p>story</p>", moved_to="https://farm.example/news/2")
    assert page_sign(moved, SITE) is None


def test_what_a_page_only_claims_is_never_a_sign() -> None:
    # Moved by its og:url or rel=canonical (answered at its own URL), not by the server.
    for claimed in ("https://farm.example/", "https://farm.example/category/politics"):
        claimed_only = replace(page(b"<p>story</p>", moved_to=claimed), final_url=ARTICLE)
        assert page_sign(claimed_only, SITE) is None, claimed
        answers = sort_answers([claimed_only], [], {1: SITE}, {})
        assert (answers.pages, answers.gone) == ([claimed_only], [])


def test_a_redirect_to_another_hosts_page_is_a_failure_to_its_root_a_sign() -> None:
    moved_away = page(b"<p>story</p>", moved_to="https://new-farm.example/news/1")
    assert page_sign(moved_away, SITE) is None
    answers = sort_answers([moved_away], [], {1: SITE}, {})
    assert (answers.pages, answers.gone) == ([], [])
    assert answers.failures == [FailedFetch(1, 1, 0, "redirect_off_site")]
    home = page(b"<p>group</p>", moved_to="https://group.example/")
    assert page_sign(home, SITE) == "redirect:https://group.example/"
    # Another host of the site is the site.
    assert page_sign(page(b"<p>m</p>", moved_to="https://m.farm.example/news/1"), SITE) is None
    assert page_sign(page(b"<p>m</p>", moved_to="https://m.farm.example/"), SITE) is not None


def test_a_long_article_quoting_a_notice_is_no_notice_and_big5_notices_are_found() -> None:
    quoting = ("<p>" + "記者報導市府說明。" * 300 + "網友發現此文章已被刪除。</p>").encode()
    assert page_sign(page(quoting), SITE) is None
    big5 = FetchedPage(
        1,
        1,
        "Article",
        0,
        200,
        "u",
        {},
        "cp950",
        "<html><title>公告</title><h1>文章已下架</h1></html>".encode("cp950"),
    )
    assert page_sign(big5, SITE) == "removed-notice"


def test_soft_404_against_the_probe_even_when_the_page_is_its_last_snapshot() -> None:
    notfound = b"<title>Oops</title><p>We looked for /news/1 and found nothing. Home</p>"
    probe = Probe(
        1, 0, "Oops", "Oops We looked for /zeroarchive-probe-1.html and found nothing. Home"
    )
    assert page_sign(page(notfound), SITE, probe) == "soft-404"
    assert page_sign(page(notfound), SITE) is None  # no probe, no soft 404
    # Stored in the site's first crawl, before the probe answered: caught at the next fetch.
    same = sort_answers([page(notfound)], [], {1: SITE}, {1: probe}, {1: len(notfound)})
    assert [answer.evidence for answer in same.gone] == ["soft-404"] and same.pages == []
    # Without a probe a page of its last snapshot's size is not looked at.
    assert sort_answers([page(notfound)], [], {1: SITE}, {}, {1: len(notfound)}).gone == []


def test_a_notice_about_its_articles_size_is_found_by_its_title_and_others_by_their_body() -> None:
    article = ("<title>市府說明</title><p>" + "記者報導市府說明。" * 100 + "</p>").encode()
    in_title = ("<title>此文章已被刪除</title><p>" + "。" * 100 + "</p>").encode()
    layout = "<div class='ad'></div>" * 100
    in_body = f"<title>市府說明</title>{layout}<h1>此文章已被刪除</h1>".encode()
    near = len(in_title) - 100
    assert sort_answers([page(in_title)], [], {1: SITE}, {}, {1: near}).gone[0].evidence == (
        "removed-notice"
    )
    assert page_sign(page(in_body), SITE, None, len(article)) == "removed-notice"
    # Within a few bytes of the last snapshot: taken for the article again, by design.
    assert page_sign(page(in_body), SITE, None, len(in_body) + 3) is None
    assert page_sign(page(article), SITE, None, len(article) - 2000) is None


def test_youtube_signs_on_recorded_answers_removed_private_and_geoblocked() -> None:
    events = FIXTURES / "events"
    nonexistent = page((events / "youtube-nonexistent.json").read_bytes(), "YTVideo")
    assert page_sign(nonexistent, SITE) == "platform:youtube-unavailable"
    private = page((events / "youtube-private.json").read_bytes(), "YTVideo")
    assert page_sign(private, SITE) == "platform:youtube-private"
    # Blocked in the country it was asked from: not a deletion.
    assert (
        page_sign(page((events / "youtube-geoblocked.json").read_bytes(), "YTVideo"), SITE) is None
    )
    for watch in sorted((FIXTURES / "youtube").glob("watch-*.html.gz")):
        assert page_sign(page(gzip.decompress(watch.read_bytes()), "YTVideo"), SITE) is None, watch


def test_live_facebook_pages_are_no_sign() -> None:
    live = lzma.decompress((FIXTURES / "events" / "facebook-live-photo-album.html.xz").read_bytes())
    assert b"content not found" in live  # in its scripts
    assert page_sign(page(live, "FBPost"), SITE) is None
    for recorded in sorted((FIXTURES / "facebook").glob("*.xz")):
        assert page_sign(page(lzma.decompress(recorded.read_bytes()), "FBPost"), SITE) is None
    unavailable = (
        "<html><head><title>Facebook</title></head><body><h2>This content isn\u2019t available "
        "at the moment</h2><p>When this happens, it's usually because the owner only shared it "
        "with a small group of people.</p></body></html>"
    ).encode()
    assert page_sign(page(unavailable, "FBPost"), SITE) == "platform:facebook-unavailable"


# A news site's whole layout around a page: menus and sidebars of links, a footer.
MENU = "".join(f"<li><a href='/c/{i}'>分類{i} 即時新聞 國際焦點</a></li>" for i in range(80))
SIDEBAR = "".join(
    f"<li><a href='/news/{i}'>熱門新聞第{i}則 市府回應爭議</a></li>" for i in range(60)
)


def laid_out(title: str, main: str, sidebar: str = SIDEBAR) -> bytes:
    return (
        f"<html><head><title>{title}</title><style>{'.x{color:red}' * 2000}</style></head>"
        f"<body><header><h1 class='logo'><a href='/'>某新聞網</a></h1><nav><ul>{MENU}</ul>"
        f"</nav></header><main>{main}</main><aside><ul>{sidebar}</ul></aside>"
        "<footer>某新聞網 版權所有 地址：台北市 電話：02-1234-5678</footer></body></html>"
    ).encode()


def test_a_notice_page_in_the_sites_whole_layout_is_found_by_its_title_or_heading() -> None:
    by_title = laid_out("找不到頁面 - 某新聞網", "<p>請回首頁或搜尋其他文章。</p>")
    assert len(by_title) > 16 * 1024
    assert page_sign(page(by_title), SITE) == "removed-notice"
    heading = "<div class='box'><h1>抱歉，此文章已下架</h1><p>請回首頁。</p></div>"
    by_heading = laid_out("某新聞網", heading).replace(b"<h1 class='logo'>", b"<div>")
    by_heading = by_heading.replace(b"</a></h1><nav>", b"</a></div><nav>")
    assert page_sign(page(by_heading), SITE) == "removed-notice"
    # Its size moved from the article's by far more than noise: still found.
    assert page_sign(page(by_title), SITE, None, len(by_title) * 3) == "removed-notice"


def test_an_article_that_mentions_a_notice_phrase_is_no_notice() -> None:
    story = "<h2>市府說明</h2>" + "<p>記者報導市府今天說明相關政策。</p>" * 120
    # In a sidebar link of a 50 KB article.
    mentions = SIDEBAR + "<li><a href='/news/x'>網友：找不到頁面怎麼辦</a></li>"
    in_sidebar = laid_out("市府說明 - 某新聞網", story, mentions)
    assert len(in_sidebar) > 40 * 1024
    assert page_sign(page(in_sidebar), SITE) is None
    # In its headline (a story about a takedown), with a short text under it.
    headline = "<h1>網友截圖瘋傳「此文章已被刪除」 臉書今天回應了</h1><p>臉書表示會再了解。</p>"
    about = laid_out("網友截圖瘋傳「此文章已被刪除」 臉書今天回應了 - 某新聞網", headline)
    assert page_sign(page(about), SITE) is None
    # A short page (no layout) whose article quotes the phrase at length.
    short = ("<title>市府說明</title><p>" + "記者報導。" * 400 + "此文章已被刪除</p>").encode()
    assert len(short) < 16 * 1024
    assert page_sign(page(short), SITE) is None


def test_a_bare_notice_is_found_wherever_its_words_are_and_a_long_pages_body_is_not_read() -> None:
    bare = "<html><body><div class='msg'><a href='/'>此文章已被刪除，回首頁</a></div></body></html>"
    assert page_sign(page(bare.encode()), SITE) == "removed-notice"
    # A big page whose notice is neither its title nor its first heading: not looked at.
    buried = laid_out("某新聞網", "<div class='msg'>此文章已被刪除</div>", "")
    assert len(buried) > 16 * 1024
    assert page_sign(page(buried), SITE) is None


@pytest.mark.parametrize("name", ["cna_s2.html.gz", "now_news_s1.html.gz", "tvbs_s1.html.gz"])
def test_an_article_in_a_layout_like_its_sites_not_found_page_is_no_soft_404(name: str) -> None:
    """Real articles (tests/fixtures/tw-news-2014) against a not-found page in their own
    layout and title, as a site whose every page has one title answers: the article
    without its paragraphs. Their first 4,000 characters are 90 % alike."""
    raw = gzip.decompress((FIXTURES / "tw-news-2014/html" / name).read_bytes())
    tree = lxml.html.document_fromstring(raw.decode("utf-8"))
    for paragraph in tree.xpath("//p"):
        paragraph.drop_tree()
    notfound = lxml.html.tostring(tree, encoding="unicode").encode()
    text = page_text(notfound, "utf-8")
    probe = Probe(1, 0, text.title, text.text[:8000])
    article, body = page_text(raw, "utf-8"), _without_paths(page_text(raw, "utf-8").text)
    matcher = difflib.SequenceMatcher(None, body[:4000], _without_paths(probe.text)[:4000])
    assert matcher.ratio() >= 0.9 and article.title == probe.title
    assert page_sign(page(raw), SITE, probe) is None
    assert page_sign(page(notfound), SITE, probe) == "soft-404"


def test_an_unchanged_page_is_held_against_a_probe_taken_after_it_only() -> None:
    notfound = b"<title>Oops</title><p>We looked for /news/1 and found nothing. Home</p>"
    probe = Probe(
        1, 10_000, "Oops", "Oops We looked for /zeroarchive-probe-1.html and found nothing"
    )
    size = len(notfound)
    # Stored before the probe answered, or too close to it to have been held against it.
    assert page_sign(page(notfound), SITE, probe, size, 9_000) == "soft-404"
    assert page_sign(page(notfound), SITE, probe, size, 10_000 + 60) == "soft-404"
    # Stored well after it: it was held against this probe then, and is not again.
    assert page_sign(page(notfound), SITE, probe, size, 10_000 + 7200) is None
    answers = sort_answers([page(notfound)], [], {1: SITE}, {1: probe}, {1: size}, {1: 9_000})
    assert [answer.evidence for answer in answers.gone] == ["soft-404"]


def test_last_snapshots_are_read_in_their_months_partition(db_url: str) -> None:
    archive = open_archive(url=db_url)
    jan_31 = 1_800_000_000 - 1_800_000_000 % DAY + 16 * DAY  # 2027-01-31, 00:00 UTC
    assert snapshot_date(jan_31).isoformat() == "2027-01-31"
    site_id, _ = archive.sites.upsert(SiteSpec("s", "https://s.example/", "news", {}), jan_31)
    urls = [f"https://s.example/a/{i}" for i in range(4)]
    archive.articles.add(site_id, "Article", urls, jan_31 - 40 * DAY)
    with archive.engine.connect() as conn:
        ids = {url: id_ for url, id_ in conn.execute(select(article.c.url, article.c.article_id))}
    # On MariaDB each month its own partition, as rotation keeps them.
    assert split_ahead(archive.engine, snapshot_date(jan_31 - 40 * DAY), 3) or (
        db_url.startswith("sqlite")
    )

    def fetched(url: str, at: int, body: bytes) -> FetchedPage:
        return FetchedPage(ids[url], site_id, "Article", at, 200, url, {}, "utf-8", body)

    # The last second of a UTC day and of a month, the first of the next; an older snapshot
    # of the same article in the month before; one article never fetched.
    archive.snapshots.save([fetched(urls[0], jan_31 - 35 * DAY, b"<p>old</p>")])
    pages = [
        fetched(urls[0], jan_31 + DAY - 1, b"<p>last of January</p>"),
        fetched(urls[1], jan_31 + DAY, b"<p>first of February!</p>"),
        fetched(urls[2], jan_31 - 1, b"<p>the day before</p>"),
    ]
    archive.snapshots.save(pages)
    last = last_snapshots(archive.engine, [*ids.values(), 999])
    assert last.at == {page.article_id: page.fetched_at for page in pages}
    assert last.size == {page.article_id: len(page.body) for page in pages}
    assert last_snapshots(archive.engine, []) == last_snapshots(archive.engine, [999])
