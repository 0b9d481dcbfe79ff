"""The one selection of due work (zeroarchive/crawl/due_work.py), and both modes using it: the
embedded crawl (the base spider's start and idle batches) and `scrapy schedule`'s rounds
(the Dispatcher) hand out exactly the same work from the same archive."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from scrapy.utils.test import get_crawler
from sqlalchemy import create_engine, select, update

from pipelines.articles import ArticlesPipeline
from spiders.generic import GenericSpider
from spiders.ptt import PttSpider
from tests.conftest import project_settings
from zeroarchive.core.clock import FAKE_NOW_ENV
from zeroarchive.core.items import ArticleLinks
from zeroarchive.core.owners import queued_owner
from zeroarchive.core.urls import url_hash
from zeroarchive.crawl.dispatch import MARKER_KEY, DispatchConfig, Dispatcher
from zeroarchive.crawl.due_work import begin_walk, claim_due, due_sites
from zeroarchive.crawl.list_walk import WalkedListPage
from zeroarchive.crawl.spider import ArchiveSpider
from zeroarchive.distributed.redis_client import connect
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.schema import article, site

NOW = 1_800_000_000


def add(archive: Archive, name: str, kind: str, url: str, **config: object) -> int:
    spec = parse_spec({"name": name, "url": url, "type": kind, "config": config})
    site_id, _ = archive.sites.upsert(spec, NOW - 3600)
    return site_id


def set_site(archive: Archive, site_id: int, **values: object) -> None:
    with archive.engine.begin() as conn:
        conn.execute(update(site).where(site.c.site_id == site_id).values(**values))


def set_article(archive: Archive, url: str, **values: object) -> None:
    with archive.engine.begin() as conn:
        conn.execute(update(article).where(article.c.url_hash == url_hash(url)).values(**values))


@pytest.fixture
def archive(db_url: str) -> Archive:
    """Sites of every case: due lists, due snapshots, leased, stopped, inactive, not due,
    another spider's type, and a stored config that no longer validates."""
    archive = open_archive(url=db_url)
    news = add(archive, "news", "news", "https://news.example/", article="/a/")
    farm = add(archive, "farm", "content_farm", "https://farm.example/", article="/a/")
    gov = add(archive, "gov", "gov", "https://gov.example/", article="/a/")
    off = add(archive, "off", "news", "https://off.example/", article="/a/")
    broken = add(archive, "broken", "news", "https://broken.example/", article="/a/")
    ptt = add(archive, "ptt", "ptt", "https://www.ptt.cc/bbs/LoL/index.html")
    for site_id, host in ((news, "news"), (farm, "farm"), (gov, "gov"), (off, "off")):
        urls = [f"https://{host}.example/a/{n}" for n in range(3)]
        archive.articles.add(site_id, "Article", urls, NOW - 3600)
    archive.articles.add(ptt, "PTT", ["https://www.ptt.cc/bbs/LoL/M.1.A.1.html"], NOW - 3600)
    # news: lists due, 3 articles due. farm: lists not due, 1 due, 1 leased, 1 stopped.
    # gov: nothing due. off: inactive. broken: lists due but its config is bad.
    set_site(archive, farm, next_crawl_at=NOW + 600)
    set_article(archive, "https://farm.example/a/1", lease_until=NOW + 60)
    set_article(archive, "https://farm.example/a/2", next_snapshot_at=0)
    set_site(archive, gov, next_crawl_at=NOW + 600)
    for n in range(3):
        set_article(archive, f"https://gov.example/a/{n}", next_snapshot_at=NOW + 60)
    set_site(archive, off, is_active=False)
    set_site(archive, broken, config=json.dumps({"article": "(unclosed"}))
    return archive


def ids(archive: Archive, *names: str) -> set[int]:
    with archive.engine.connect() as conn:
        rows = conn.execute(select(site.c.site_id).where(site.c.name.in_(names)))
        return set(rows.scalars())


def test_due_sites_by_what_is_due(archive: Archive) -> None:
    kinds = ("news", "content_farm", "gov")
    both = due_sites(archive, kinds, NOW)
    assert set(both.sites) == ids(archive, "news", "farm")
    assert both.walk == ids(archive, "news")
    assert both.bad == ("broken",)
    lists = due_sites(archive, kinds, NOW, snapshots=False)
    assert (set(lists.sites), lists.walk) == (ids(archive, "news"), ids(archive, "news"))
    snaps = due_sites(archive, kinds, NOW, lists=False)
    assert (set(snaps.sites), snaps.walk) == (ids(archive, "news", "farm"), frozenset())
    assert set(due_sites(archive, ("ptt",), NOW).sites) == ids(archive, "ptt")


def test_claims_are_leased_and_never_handed_out_twice(archive: Archive) -> None:
    news, farm = sorted(ids(archive, "news", "farm"))
    first = claim_due(archive, [news, farm], NOW, 2, 3600)
    second = claim_due(archive, [news, farm], NOW, 10, 3600)
    assert len(first) == 2 and len(second) == 2
    urls = {a.url for a in first + second}
    assert urls == {f"https://news.example/a/{n}" for n in range(3)} | {"https://farm.example/a/0"}
    assert claim_due(archive, [news, farm], NOW, 10, 3600) == []
    # Leases that ran out hand the work out again (farm/a/1's too, leased before).
    again = claim_due(archive, [news, farm], NOW + 3600, 10, 3600)
    assert {a.url for a in again} == urls | {"https://farm.example/a/1"}


def test_a_claim_retried_with_its_owner_gets_back_what_its_unseen_commit_leased(
    archive: Archive,
) -> None:
    news, farm = sorted(ids(archive, "news", "farm"))
    owner = queued_owner()
    # The first try committed, but its answer was lost with the connection.
    first = claim_due(archive, [news, farm], NOW, 2, 3600, owner)
    retried = claim_due(archive, [news, farm], NOW, 2, 3600, owner)
    assert {a.url for a in first} <= {a.url for a in retried}
    assert len(retried) == 4  # its two again, and two more due ones
    # Another owner never gets them.
    assert claim_due(archive, [news, farm], NOW, 10, 3600, queued_owner()) == []


def test_a_walk_is_marked_with_its_plans_next_time(archive: Archive) -> None:
    news = archive.sites.get("news")
    assert news is not None
    begin_walk(archive, news, NOW, queued_owner())
    due = due_sites(archive, ("news",), NOW, snapshots=False)
    assert due.walk == frozenset()
    assert due_sites(archive, ("news",), NOW + 600, snapshots=False).walk == {news.site_id}


def _embedded(archive: Archive, spider: ArchiveSpider) -> tuple[set[int], set[str]]:
    """What the embedded crawl hands out: the sites it walks, then its idle batches."""
    _, sites, walk = spider._choose_sites()
    for site_id in sorted(walk):
        begin_walk(archive, next(s for s in sites if s.site_id == site_id), NOW, queued_owner())
    claimed: set[str] = set()
    while batch := claim_due(archive, [s.site_id for s in sites], NOW, 2, 3600):
        claimed |= {a.url for a in batch}
    return walk, claimed


@pytest.mark.parametrize("mode", ["embedded", "distributed"])
def test_both_modes_hand_out_the_same_work(
    archive: Archive,
    mode: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    monkeypatch.setenv(FAKE_NOW_ENV, str(NOW))
    settings = project_settings(ZEROARCHIVE_DB_URL=archive.url, ZEROARCHIVE_DUE_BATCH=2)
    spiders = [cls.from_crawler(get_crawler(cls, settings)) for cls in (GenericSpider, PttSpider)]
    if mode == "embedded":
        walked: set[int] = set()
        claimed: set[str] = set()
        for spider in spiders:
            walk, urls = _embedded(archive, spider)
            walked |= walk
            claimed |= urls
    else:
        redis_url = request.getfixturevalue("redis_url")
        server = connect(get_crawler(settings_dict=settings).settings, redis_url)
        # Not the first round ever: that one hands out leased work again (test_distributed).
        server.set(MARKER_KEY, "1")
        dispatcher = Dispatcher(archive, server, spiders, DispatchConfig(2, 3600, 1000, 30))
        reports = dispatcher.run_once(NOW)
        assert reports["generic"].bad_sites == ["broken"]
        walked = {row.site_id for row in archive.sites.listing() if row.last_crawl_at == NOW}
        with archive.engine.connect() as conn:
            leased = article.c.lease_until > NOW
            claimed = set(conn.execute(select(article.c.url).where(leased)).scalars())
        claimed.discard("https://farm.example/a/1")  # leased before the round
        assert reports["generic"].snapshots + reports["ptt"].snapshots == len(claimed)
    assert walked == ids(archive, "news", "ptt")
    assert claimed == {
        *(f"https://news.example/a/{n}" for n in range(3)),
        "https://farm.example/a/0",
        "https://www.ptt.cc/bbs/LoL/M.1.A.1.html",
    }


@pytest.mark.parametrize("mode", ["all", "discover"])
def test_a_list_pages_links_are_stored_and_its_sites_due_work_claimed_in_one_write(
    archive: Archive, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The links pipeline claims the site's due articles with the links it stores, hands
    them to the spider, and the spider's item_scraped claims nothing more; a spider that
    only walks (mode discover) gets its links stored and nothing claimed."""
    monkeypatch.setenv(FAKE_NOW_ENV, str(NOW))
    settings = project_settings(ZEROARCHIVE_DB_URL=archive.url, ZEROARCHIVE_DUE_BATCH=10)
    crawler = get_crawler(GenericSpider, settings)
    spider = GenericSpider.from_crawler(crawler, mode=mode)
    crawler.spider = spider
    handed: list[list[str]] = []
    monkeypatch.setattr(spider, "_crawl_due", lambda due: handed.append([a.url for a in due]))
    news = archive.sites.get("news")
    assert news is not None
    spider._keep_site(news)
    links = ArticleLinks(
        news.site_id, "Article", "https://news.example/", ("https://news.example/a/9",)
    )

    assert asyncio.run(ArticlesPipeline.from_crawler(crawler).process_item(links)) is links
    # Handed over by the pipeline, before the item is done: the three due before the new
    # one first, then it.
    claimed = [*(f"https://news.example/a/{n}" for n in range(3)), links.urls[0]]
    assert handed == ([claimed] if mode == "all" else [])
    asyncio.run(spider._on_item_scraped(links))
    assert handed == ([claimed] if mode == "all" else [])  # no second claim
    assert spider._claimed_with_links == {}

    assert archive.articles.ids_of(list(links.urls))
    with archive.engine.connect() as conn:
        leased = set(
            conn.execute(select(article.c.url).where(article.c.lease_until > NOW)).scalars()
        )
    assert leased == {*(claimed if mode == "all" else []), "https://farm.example/a/1"}


def test_a_walk_asks_for_its_next_page_before_the_claim_of_the_page_it_came_from(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chain walk (PTT) stores a page's links alone, asks for the next page on
    articles_stored, and claims with item_scraped; its last page claims with its links."""
    monkeypatch.setenv(FAKE_NOW_ENV, str(NOW))
    settings = project_settings(ZEROARCHIVE_DB_URL=archive.url, ZEROARCHIVE_DUE_BATCH=10)
    crawler = get_crawler(PttSpider, settings)
    spider = PttSpider.from_crawler(crawler)
    crawler.spider = spider
    events: list[str] = []
    crawler.engine = SimpleNamespace(crawl=lambda request: events.append(request.url))
    monkeypatch.setattr(spider, "_crawl_due", lambda due: events.append(f"claim {len(due)}"))
    ptt = archive.sites.get("ptt")
    assert ptt is not None
    spider._keep_site(ptt)
    pipeline = ArticlesPipeline.from_crawler(crawler)
    page = "https://www.ptt.cc/bbs/LoL/index.html"
    walked = WalkedListPage(
        ptt.site_id,
        "PTT",
        page,
        ("https://www.ptt.cc/bbs/LoL/M.2.A.1.html",),
        next_url="https://www.ptt.cc/bbs/LoL/index9.html",
        walk={"depth": 0, "stale_run": 0},
    )
    asyncio.run(pipeline.process_item(walked))
    assert events == ["https://www.ptt.cc/bbs/LoL/index9.html"]
    asyncio.run(spider._on_item_scraped(walked))
    assert events[1:] == ["claim 2"]  # the post due before and the new one

    last = WalkedListPage(
        ptt.site_id, "PTT", page, ("https://www.ptt.cc/bbs/LoL/M.3.A.1.html",), walk={"depth": 1}
    )
    asyncio.run(pipeline.process_item(last))
    asyncio.run(spider._on_item_scraped(last))
    assert events[2:] == ["claim 1"]


def test_a_list_page_answers_although_its_sites_note_for_the_monitor_cannot_be_written(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Noting that a site's list pages answer (the monitor's "last list ok") is one UPDATE
    of the site's row from the list callback: when it fails as a later try may not (a
    deadlock with another worker's write of the row, as the distributed bench saw, or the
    database away), the page's links and its walk go on, and the next list page notes it."""
    monkeypatch.setenv(FAKE_NOW_ENV, str(NOW))
    settings = project_settings(ZEROARCHIVE_DB_URL=archive.url)
    crawler = get_crawler(GenericSpider, settings)
    spider = GenericSpider.from_crawler(crawler)
    crawler.spider = spider
    crawler.stats.open_spider()
    news = archive.sites.get("news")
    assert news is not None
    working = spider.archive
    # A real engine of a server that does not answer (nothing listens on port 9).
    away = create_engine("mysql+pymysql://root@127.0.0.1:9/nowhere")
    spider.archive = SimpleNamespace(engine=away)  # type: ignore[assignment]
    spider.list_page_answered(news)  # the database does not answer: no error raised
    assert crawler.stats.get_value(f"zeroarchive/site/{news.site_id}/errors/db_write") == 1
    spider.archive = working
    spider.list_page_answered(news)
    with archive.engine.connect() as conn:
        noted = conn.execute(
            select(site.c.last_list_ok_at).where(site.c.site_id == news.site_id)
        ).scalar_one()
    assert noted == NOW
