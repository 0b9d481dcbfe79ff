"""Sites by their address alone (article links learnt, pages confirming or refuting their
shapes, the patterns stored and used), a given regex winning, and the links a given regex
matched to nothing, counted and shown."""

from __future__ import annotations

import gzip
import json
import lzma
import re
from pathlib import Path

from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from sqlalchemy import select

from tests.conftest import scrapy
from tests.replay import ReplayServer, Route
from tests.test_distributed import (
    counts,
    load_sites,
    schedule_once,
    start_worker,
    stop_once_stored,
    wait_until,
)
from tests.test_generic import articles_by_url, crawl, load_and_crawl, stat
from zeroarchive.core.url_shapes import url_shape
from zeroarchive.core.urls import canonicalize_url, is_on_site
from zeroarchive.crawl.article_patterns import SitePatterns
from zeroarchive.crawl.link_sorting import LinkSorter
from zeroarchive.crawl.page_evidence import ARTICLE, LIST
from zeroarchive.sites.record import Site, parse_spec
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.patterns import PatternStore
from zeroarchive.storage.schema import site_pattern
from zeroarchive.storage.site_stats import SiteStatsConfig, site_stats

FIXTURES = Path(__file__).parent / "fixtures"
HTML = (("Content-Type", "text/html; charset=utf-8"),)
#: daringfireball.net's article URLs (tests/fixtures/link_sorting/SOURCE.txt).
DF_ARTICLE = re.compile(r"^/(?:(?:linked|thetalkshow)/\d{4}/\d\d/\d\d|\d{4}/\d\d)/[^/?#]+$")
LINKED = r"^/linked/\d+/\d+/\d+/[^/]+$"


def home_page(name: str) -> bytes:
    return gzip.decompress((FIXTURES / "link_sorting" / name).read_bytes())


def article_pages() -> list[bytes]:
    return [
        lzma.decompress(path.read_bytes())
        for path in sorted((FIXTURES / "tw-news-twnews").glob("*.html.xz"))
    ]


def df_routes(base: str) -> tuple[dict[str, Route], set[str]]:
    """Daring Fireball's saved home page at "/", its links made this server's, and a saved
    real article page at each of its article paths; every other path is a 404."""
    page = home_page("DaringFireball.html.gz")
    for scheme in (b"http://", b"https://"):
        page = page.replace(scheme + b"daringfireball.net", base.rstrip("/").encode())
    paths = {
        path
        for path in re.findall(
            rb'href="' + re.escape(base.rstrip("/").encode()) + rb'(/[^"]*)"', page
        )
        + re.findall(rb'href="(/[^"]*)"', page)
        if DF_ARTICLE.match(path.decode())
    }
    bodies = article_pages()
    routes = {"/": Route(200, HTML, page)}
    for n, path in enumerate(sorted(paths)):
        routes[path.decode()] = Route(200, HTML, bodies[n % len(bodies)])
    return routes, {p.decode() for p in paths}


def sites_json(db_url: str, tmp_path: Path) -> dict[str, dict[str, object]]:
    run = scrapy("sites", "--json", db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    return {row["name"]: row for row in map(json.loads, run.stdout.splitlines())}


def test_a_site_by_its_address_alone_is_archived(db_url: str, tmp_path: Path) -> None:
    with ReplayServer({}) as server:
        routes, expected_paths = df_routes(server.url("/"))
        server.routes.update(routes)
        # No article regex; a delay of 0 only to keep the test short.
        entry = {"name": "df", "url": server.url("/"), "type": "news", "config": {"delay": 0}}
        first = load_and_crawl(db_url, tmp_path, [entry], "-a", "site=df")

        assert len(expected_paths) == 46
        stored = {url.removeprefix(server.url("")) for url in articles_by_url(db_url)}
        stored = {"/" + path.lstrip("/") for path in stored}
        assert stored == expected_paths
        assert stat(first, "zeroarchive/snapshots_saved") == 46
        assert stat(first, "zeroarchive/page_evidence/article") >= 2
        assert "0 links matched nothing" in first.output

        listed = sites_json(db_url, tmp_path)["df"]
        learnt = {p["pattern"]: p for p in listed["article_patterns"]}  # type: ignore[union-attr]
        assert learnt[LINKED]["origin"] == "learnt"
        assert learnt[LINKED]["verdict"] == "article"
        assert learnt[LINKED]["article_pages"] >= 2
        assert learnt[LINKED]["links"] == 39

        again = crawl(db_url, tmp_path, "-a", "site=df")
        assert stat(again, "zeroarchive/articles_new") == 0
        assert stat(again, "zeroarchive/article_links/learnt") == 46


def test_an_address_on_the_command_line_alone(db_url: str, tmp_path: Path) -> None:
    with ReplayServer({}) as server:
        routes, expected_paths = df_routes(server.url("/"))
        server.routes.update(routes)
        crawl(db_url, tmp_path, "-a", f"url={server.url('/')}", "-a", "mode=discover")
        stored = {"/" + u.removeprefix(server.url("")).lstrip("/") for u in articles_by_url(db_url)}
        assert stored == expected_paths


def test_a_given_regex_wins_and_what_it_leaves_out_is_shown(db_url: str, tmp_path: Path) -> None:
    with ReplayServer({}) as server:
        routes, expected_paths = df_routes(server.url("/"))
        server.routes.update(routes)
        entry = {"name": "df", "url": server.url("/"), "config": {"article": "/linked/"}}
        run = load_and_crawl(db_url, tmp_path, [entry], "-a", "site=df", "-a", "mode=discover")

        stored = {"/" + u.removeprefix(server.url("")).lstrip("/") for u in articles_by_url(db_url)}
        assert stored == {p for p in expected_paths if p.startswith("/linked/")}
        essays = {p for p in expected_paths if re.match(r"^/\d{4}/\d\d/", p)}
        assert len(essays) == 4
        unmatched = stat(run, "zeroarchive/links_unmatched")
        assert unmatched > len(essays)
        assert f"{unmatched} links matched nothing" in run.output

        shown = scrapy("site_stats", "--json", db_url=db_url, cwd=tmp_path)
        assert shown.returncode == 0, shown.output
        (row,) = [json.loads(line) for line in shown.stdout.splitlines()]
        by_shape = {u["shape"]: u for u in row["unmatched"]}
        essay = by_shape[r"/\d+/\d+/[^/]+"]
        assert essay["links"] == len(essays)
        assert "/" + essay["example"].removeprefix(server.url("")).lstrip("/") in essays
        text = scrapy("site_stats", db_url=db_url, cwd=tmp_path)
        assert rf"/\d+/\d+/[^/]+: {len(essays)} links (e.g. " in text.stdout

        listed = sites_json(db_url, tmp_path)["df"]
        assert listed["article_patterns"] == [{"pattern": "/linked/", "origin": "given"}]


def add_site(archive: Archive, name: str, config: dict[str, object]) -> Site:
    spec = parse_spec({"name": name, "url": f"https://{name}/", "config": config})
    site_id, _ = archive.sites.upsert(spec, 1_700_000_000)
    found = archive.sites.get(site_id)
    assert found is not None
    return found


def test_the_reported_case_a_regex_that_skips_dotted_names(db_url: str) -> None:
    archive = open_archive(url=db_url)
    site = add_site(archive, "farm.example", {"article": r"/news/[\w-]+\.html"})
    sorter = LinkSorter(PatternStore(archive.engine), lambda: None, every=3600)
    links = [
        f"https://farm.example/news/2026-11-{d:02}.item{n}.html"
        for d in (28, 29)
        for n in range(18)
    ]
    links += [
        "https://farm.example/news/2026-11-30.last.html",
        "https://farm.example/news/ok-one.html",
    ]
    sorted_links = sorter.sort(site, [(url, url) for url in links], may_follow=True)
    assert sorted_links.articles == ["https://farm.example/news/ok-one.html"]
    sorter.maybe_save(force=True)

    (row,) = site_stats(archive.engine, 1_700_000_000, SiteStatsConfig(3, 3600))
    (shape,) = row.unmatched
    assert (shape.links, shape.example) == (37, links[0])
    assert row.as_json()["unmatched"] == [
        {"shape": r"/news/\d+-\d+-\d+.\w+.html", "links": 37, "example": links[0]}
    ]


def test_pages_decide_shapes_which_are_stored_and_used(db_url: str) -> None:
    archive = open_archive(url=db_url)
    site = add_site(archive, "ltn.example", {})
    sorter = LinkSorter(PatternStore(archive.engine), lambda: None, every=3600)
    ids = [f"https://ltn.example/news/world/breakingnews/99{n}126" for n in range(5)]
    codes = [f"https://ltn.example/realtimenews/2604{n:02}" for n in range(5)]
    galleries = [
        f"https://ltn.example/gallery/2024/05/0{n}/photos-of-the-harbour" for n in range(1, 6)
    ]
    links = [(u, u) for u in ids + codes + galleries]
    # Six digits count under a deep repeated shape, not a shallow one (a section's code).
    assert sorter.sort(site, links, may_follow=True).articles == ids + galleries

    block = '<article><h2><a href="/n/{0}">Headline number {0} of the day</a></h2></article>'
    a_list = '<meta property="og:type" content="website">' + "".join(
        block.format(n) for n in range(40)
    )
    for url in galleries[:2]:
        sorter.page_fetched(site, url, a_list)
    for url in ids[:2]:
        sorter.page_fetched(site, url, article_pages()[0].decode("utf-8"))
    sorter.maybe_save(force=True)

    # A new crawl reads the stored shapes: galleries are no articles, whatever their URLs say.
    fresh = LinkSorter(PatternStore(archive.engine), lambda: None, every=3600)
    assert fresh.sort(site, links, may_follow=True).articles == ids
    with archive.engine.connect() as conn:
        rows = {r.shape: r for r in conn.execute(select(site_pattern))}
    assert rows[url_shape(galleries[0])].verdict == "other"
    assert rows[url_shape(galleries[0])].other_pages == 2
    assert rows[url_shape(ids[0])].verdict == "article"
    # A decided shape reads no more pages.
    fresh.page_fetched(site, ids[3], "<p>anything</p>")
    assert fresh.site_patterns(site.site_id).patterns[url_shape(ids[0])].article_pages == 2

    # A given regex wins over what was learnt.
    given = add_site(archive, "ltn.example", {"article": "/gallery/"})
    assert fresh.sort(given, links, may_follow=True).articles == galleries


def test_one_shape_undecided_until_two_pages_agree() -> None:
    patterns = SitePatterns()
    url = "https://x.example/n/2024/05/01/storm-over-harbour"
    patterns.record_page(url, ARTICLE)
    assert patterns.decided(url) == ""
    patterns.record_page(url, LIST)
    patterns.record_page(url, ARTICLE)
    assert patterns.decided(url) == ""
    for _ in range(5):
        patterns.record_page(url, ARTICLE)
    assert patterns.decided(url) == "article"


def test_a_person_sets_and_forgets_patterns(db_url: str, tmp_path: Path) -> None:
    archive = open_archive(url=db_url)
    site = add_site(archive, "farm.example", {})
    url = "https://farm.example/p/12"
    assert not SitePatterns.of(PatternStore(archive.engine).load(site.site_id)).is_article(url)

    run = scrapy("sites", "--pattern", "farm.example", "article", url, db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    assert r"links like ^/p/\d+$ are article" in run.stdout
    patterns = SitePatterns.of(PatternStore(archive.engine).load(site.site_id))
    assert patterns.is_article("https://farm.example/p/345")
    row = sites_json(db_url, tmp_path)["farm.example"]
    assert row["article_patterns"][0]["origin"] == "set"  # type: ignore[index]

    # Learning never overrules a person.
    store = PatternStore(archive.engine)
    for _ in range(3):
        patterns.record_page("https://farm.example/p/345", LIST)
    store.save(site.site_id, patterns.dirty(), 1_700_000_000)
    assert (
        SitePatterns.of(store.load(site.site_id)).decided("https://farm.example/p/9") == "article"
    )

    bad = scrapy("sites", "--pattern", "farm.example", "maybe", url, db_url=db_url, cwd=tmp_path)
    assert bad.returncode == 2
    gone = scrapy("sites", "--pattern", "farm.example", "forget", url, db_url=db_url, cwd=tmp_path)
    assert "1 pattern(s) forgotten" in gone.stdout
    assert store.load(site.site_id) == []


def test_a_real_home_page_sorted_without_a_regex() -> None:
    page = HtmlResponse("https://www.cnn.com/", body=home_page("cnn_main_site.html.gz"))
    extractor = LinkExtractor(tags=("a", "area"), attrs=("href",), canonicalize=False)
    links = dict.fromkeys(canonicalize_url(link.url) for link in extractor.extract_links(page))
    own = [url for url in links if is_on_site(url, "https://www.cnn.com/")]
    found = set(SitePatterns().articles(own))
    # CNN's article URLs, on www and its sections' hosts: /YYYY/MM/DD/...
    truth = {url for url in own if re.search(r"/(?:19|20)\d\d/\d\d/\d\d/", url)}
    assert (len(own), len(truth)) == (339, 264)
    hits = len(found & truth)
    assert hits / len(found) >= 0.95
    assert hits / len(truth) >= 0.95


def test_a_distributed_worker_learns_a_site_by_its_address(
    mariadb_url: str, redis_url: str, tmp_path: Path
) -> None:
    with ReplayServer({}) as server:
        routes, expected_paths = df_routes(server.url("/"))
        server.routes.update(routes)
        entry = {"name": "df", "url": server.url("/"), "type": "news", "config": {"delay": 0}}
        load_sites(mariadb_url, tmp_path, [entry])
        schedule_once(mariadb_url, redis_url, tmp_path)
        log = tmp_path / "worker.log"
        worker = start_worker(mariadb_url, redis_url, tmp_path, log)
        wait_until(lambda: counts(mariadb_url)[0] == len(expected_paths), 60, "discovery")
        # Then stopped as an operator stops it (its idle limit cost 6 s): it closes as at
        # its idle limit, writing the patterns it learnt and its summary.
        output = stop_once_stored(worker, log, mariadb_url, len(expected_paths), timeout=60)
    assert "0 links matched nothing" in output
    learnt = {p["pattern"]: p for p in sites_json(mariadb_url, tmp_path)["df"]["article_patterns"]}  # type: ignore[union-attr]
    assert learnt[LINKED]["verdict"] == "article"
    assert learnt[LINKED]["links"] == 39


def test_a_feeds_entries_are_articles_unless_their_shape_says_otherwise(db_url: str) -> None:
    archive = open_archive(url=db_url)
    site = add_site(archive, "blog.example", {})
    sorter = LinkSorter(PatternStore(archive.engine), lambda: None, every=3600)
    short = "https://blog.example/notes/igloo"
    assert sorter.is_article(site, short, short, in_feed=True)
    assert not sorter.is_article(site, short, short)
    for _ in range(2):
        sorter.site_patterns(site.site_id).record_page(short, LIST)
    assert not sorter.is_article(site, short, short, in_feed=True)


def list_page(links: list[str]) -> bytes:
    items = "".join(
        f'<article><h2><a href="{href}">Headline {n} of the day</a></h2></article>'
        for n, href in enumerate(links)
    )
    return (
        f'<html><head><meta property="og:type" content="website"></head><body>{items}</body></html>'
    ).encode()


def test_a_small_sites_short_ids_are_sampled_and_learnt(db_url: str, tmp_path: Path) -> None:
    news = [f"/news/45{n:02}" for n in range(1, 9)]
    zones = [f"/zone/{n}" for n in range(11, 15)]
    bodies = article_pages()
    routes = {"/": Route(200, HTML, list_page([*news, *zones, "/about"]))}
    routes.update({path: Route(200, HTML, bodies[n % len(bodies)]) for n, path in enumerate(news)})
    routes.update({path: Route(200, HTML, list_page(news)) for path in zones})
    with ReplayServer(routes) as server:
        entry = {"name": "small", "url": server.url("/"), "config": {"delay": 0}}
        run = load_and_crawl(db_url, tmp_path, [entry], "-a", "site=small", "-a", "mode=discover")
        stored = {"/" + u.removeprefix(server.url("")).lstrip("/") for u in articles_by_url(db_url)}
        assert stored == set(news)
        # Two pages of each repeated shape, once: the ids said article, the zones list.
        assert stat(run, "zeroarchive/article_samples/requests") == 4
        assert sum(server.hits[path] for path in news) == 2
        assert sum(server.hits[path] for path in zones) == 2
    archive = open_archive(url=db_url)
    verdicts = {p.shape: p.verdict for p in PatternStore(archive.engine).load(1)}
    assert verdicts[r"^/news/\d+$"] == "article"
    assert verdicts[r"^/zone/\d+$"] == "other"
