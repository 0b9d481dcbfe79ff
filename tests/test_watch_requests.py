"""Which watch checks may be conditional requests (If-None-Match / If-Modified-Since)."""

from __future__ import annotations

from pathlib import Path

from zeroarchive.crawl.spider import plain_answers
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import open_archive


def test_only_sites_whose_snapshot_is_one_plain_answer_are_asked_conditionally(
    tmp_path: Path,
) -> None:
    archive = open_archive(url=f"sqlite:///{tmp_path / 'a.db'}")
    specs = {
        "plain": ("https://news.example/", "news", {"article": "/a/"}, True),
        "rendered": ("https://js.example/", "news", {"article": "/a/", "render": True}, False),
        # Rendered for its screenshot: the browser's page, not one plain answer.
        "shot": ("https://shot.example/", "news", {"media": ["screenshot"]}, False),
        # A Dcard snapshot is the post and its comments: the post's 304 says nothing of them.
        "dcard": ("https://www.dcard.tw/f/trending", "dcard", {}, False),
        # Facebook's pages are rendered by the browser.
        "facebook": ("https://www.facebook.com/somepage", "facebook", {}, False),
        "ptt": ("https://www.ptt.cc/bbs/Gossiping/index.html", "ptt", {}, True),
    }
    for name, (url, kind, config, plain) in specs.items():
        spec = parse_spec({"name": name, "url": url, "type": kind, "config": config})
        site_id = archive.sites.upsert(spec, 1_700_000_000)[0]
        site = archive.sites.get(site_id)
        assert site is not None
        assert plain_answers(site) is plain, name
