"""A running crawl follows edits of the sites table: a site's record is read again once it
is ZEROARCHIVE_SITE_REFRESH_SECONDS old (a database that cannot be read leaves the record
at hand in use), and a new ``delay`` reaches the site's live download slot."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from types import SimpleNamespace

import pytest
from scrapy.core.downloader import Slot
from scrapy.http import Request
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler
from sqlalchemy.exc import OperationalError

from middlewares.site_policy import SitePolicyConfig, SitePolicyDownloaderMiddleware
from pipelines.snapshots import SnapshotsPipeline
from spiders.generic import GenericSpider
from tests.conftest import project_settings
from zeroarchive.core.request_meta import META_KEY
from zeroarchive.crawl import spider as spider_module
from zeroarchive.sites.record import parse_config, parse_spec
from zeroarchive.storage.archive import open_archive

NOW = 1_800_000_000


def spec(delay: float) -> object:
    config = {"article": "/a/", "delay": delay}
    return parse_spec(
        {"name": "farm", "url": "https://farm.example/", "type": "news", "config": config}
    )


def test_a_site_edited_while_a_crawl_runs_applies_after_the_refresh_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'archive.db'}"
    archive = open_archive(url=url)
    site_id, _ = archive.sites.upsert(spec(5.0), NOW)  # type: ignore[arg-type]
    settings = project_settings(ZEROARCHIVE_DB_URL=url, ZEROARCHIVE_SITE_REFRESH_SECONDS=60)
    crawler = get_crawler(GenericSpider, settings)
    spider = GenericSpider.from_crawler(crawler)
    crawler.stats.open_spider()
    clock = [1000.0]
    monkeypatch.setattr(spider_module.time, "monotonic", lambda: clock[0])
    request = Request("https://farm.example/a/1", meta={META_KEY: {"site_id": site_id}})
    assert spider.site_of(request).config.delay == 5.0  # type: ignore[union-attr]

    archive.sites.upsert(spec(30.0), NOW + 10)  # type: ignore[arg-type]
    clock[0] += 59
    assert spider.site_of(request).config.delay == 5.0  # type: ignore[union-attr]
    clock[0] += 2
    assert spider.site_of(request).config.delay == 30.0  # type: ignore[union-attr]
    assert crawler.stats.get_value(f"zeroarchive/site/{site_id}/sites_reread_changed") == 1

    def unreadable(*_: object) -> None:
        raise OperationalError("SELECT", {}, Exception("server has gone away"))

    monkeypatch.setattr(spider.archive.sites, "get", unreadable)
    clock[0] += 61
    assert spider.site(site_id).config.delay == 30.0  # type: ignore[union-attr]


def test_a_new_delay_reaches_the_sites_live_download_slot() -> None:
    site = SimpleNamespace(
        site_id=7,
        config=SimpleNamespace(delay=1.0, ua=None, cookies={}, cookies_file=None, robots=True),
    )
    downloader = SimpleNamespace(per_slot_settings={}, slots={})
    crawler = SimpleNamespace(
        spider=SimpleNamespace(site_of=lambda request: site),
        engine=SimpleNamespace(downloader=downloader),
        stats=None,
    )
    middleware = SitePolicyDownloaderMiddleware(crawler, SitePolicyConfig(2))  # type: ignore[arg-type]
    middleware.process_request(Request("https://farm.example/a/1"))
    assert downloader.per_slot_settings["site-7"] == {"delay": 1.0, "concurrency": 2}
    downloader.slots["site-7"] = Slot(2, 1.0)
    site.config.delay = 12.0
    middleware.process_request(Request("https://farm.example/a/2"))
    assert downloader.per_slot_settings["site-7"]["delay"] == 12.0
    assert downloader.slots["site-7"].delay == 12.0


def test_a_site_without_a_delay_waits_the_site_delay_setting_one_second_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ZEROARCHIVE_SITE_DELAY (1 s unless set; the tests' harness sets 0 in the
    environment, taken away here) is the slot delay of a site whose config gives none; a
    site's own ``delay``, 0 included, wins."""
    monkeypatch.delenv("ZEROARCHIVE_SITE_DELAY")
    bare = parse_spec({"name": "bare", "url": "https://bare.example/", "config": {}})
    zero = parse_spec({"name": "zero", "url": "https://zero.example/", "config": {"delay": 0}})
    sites = {
        "bare.example": SimpleNamespace(site_id=1, config=parse_config(bare.config, bare.name)),
        "zero.example": SimpleNamespace(site_id=2, config=parse_config(zero.config, zero.name)),
    }

    def slots(settings: dict[str, object]) -> dict[str, object]:
        downloader = SimpleNamespace(per_slot_settings={}, slots={})
        crawler = SimpleNamespace(
            spider=SimpleNamespace(site_of=lambda request: sites[request.url.split("/")[2]]),
            engine=SimpleNamespace(downloader=downloader),
            stats=None,
        )
        config = SitePolicyConfig.from_settings(Settings(project_settings(**settings)))
        middleware = SitePolicyDownloaderMiddleware(crawler, config)  # type: ignore[arg-type]
        for host in sites:
            middleware.process_request(Request(f"https://{host}/a/1"))
        return {slot: wanted["delay"] for slot, wanted in downloader.per_slot_settings.items()}

    assert sites["bare.example"].config.delay is None
    assert slots({}) == {"site-1": 1.0, "site-2": 0.0}
    assert slots({"ZEROARCHIVE_SITE_DELAY": 4}) == {"site-1": 4.0, "site-2": 0.0}
    monkeypatch.setenv("ZEROARCHIVE_SITE_DELAY", "0.5")  # the environment wins
    assert slots({"ZEROARCHIVE_SITE_DELAY": 4}) == {"site-1": 0.5, "site-2": 0.0}
    for wrong in ("-1", "soon", "3601"):
        monkeypatch.setenv("ZEROARCHIVE_SITE_DELAY", wrong)
        with pytest.raises(ValueError, match="ZEROARCHIVE_SITE_DELAY"):
            slots({})


def test_the_snapshot_pipeline_holds_pages_against_the_spiders_site_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'archive.db'}"
    archive = open_archive(url=url)
    site_id, _ = archive.sites.upsert(spec(5.0), NOW)  # type: ignore[arg-type]
    settings = project_settings(ZEROARCHIVE_DB_URL=url, ZEROARCHIVE_SITE_REFRESH_SECONDS=60)
    crawler = get_crawler(GenericSpider, settings)
    crawler.spider = GenericSpider.from_crawler(crawler)
    crawler.stats.open_spider()
    pipeline = SnapshotsPipeline.from_crawler(crawler)
    clock = [1000.0]
    monkeypatch.setattr(spider_module.time, "monotonic", lambda: clock[0])
    assert pipeline._site(site_id).config.delay == 5.0  # type: ignore[union-attr]
    archive.sites.upsert(spec(30.0), NOW + 10)  # type: ignore[arg-type]
    clock[0] += 61
    # Read again by the spider, the one holder of site records in a crawl.
    assert pipeline._site(site_id).config.delay == 30.0  # type: ignore[union-attr]
    assert pipeline._site(site_id) is crawler.spider.sites[site_id]


def test_a_walks_page_goes_ahead_of_the_snapshots_waiting_in_its_sites_slot() -> None:
    """Scrapy's slot queue is first in, first out: a walk's next page handed to the
    downloader behind a site's queued snapshots waited for all of them (at a delay of 1 s,
    half a minute behind 30). The slot takes walk pages first, in their own order."""
    site = SimpleNamespace(
        site_id=7,
        url="https://farm.example/",
        config=SimpleNamespace(delay=1.0, ua=None, cookies={}, cookies_file=None, robots=True),
    )
    downloader = SimpleNamespace(per_slot_settings={}, slots={})
    crawler = SimpleNamespace(
        spider=SimpleNamespace(site_of=lambda request: site),
        engine=SimpleNamespace(downloader=downloader),
        stats=None,
    )
    middleware = SitePolicyDownloaderMiddleware(crawler, SitePolicyConfig(2))  # type: ignore[arg-type]

    def request(path: str, kind: str) -> Request:
        return Request(f"https://farm.example{path}", meta={META_KEY: {"site_id": 7, "kind": kind}})

    middleware.process_request(request("/a/1", "snapshot"))
    slot = downloader.slots["site-7"] = Slot(2, 1.0)  # Scrapy makes it for the first
    slot.queue.append((request("/a/1", "snapshot"), None))
    arriving = [
        request("/a/2", "snapshot"),
        request("/list/2", "list"),
        request("/a/3", "snapshot"),
        request("/list/3", "list"),
        request("/login", "login"),
    ]
    for each in arriving:
        middleware.process_request(each)  # then Scrapy's downloader queues it
        downloader.slots["site-7"].queue.append((each, None))
    taken = []
    while downloader.slots["site-7"].queue:
        taken.append(downloader.slots["site-7"].queue.popleft()[0].url.split("example")[1])
    assert taken == ["/list/2", "/list/3", "/login", "/a/1", "/a/2", "/a/3"]
    # A page's media items have slots of their own, left as Scrapy makes them.
    media = Request("https://img.example/1.png", meta={META_KEY: {"site_id": 7, "kind": "media"}})
    middleware.process_request(media)
    downloader.slots["media-img.example"] = Slot(6, 0.0)
    middleware.process_request(media)
    assert type(downloader.slots["media-img.example"].queue) is deque
