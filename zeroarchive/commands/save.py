"""`scrapy save URL... [--watch]`: archive these pages now, whatever their site."""

from __future__ import annotations

import argparse
from urllib.parse import urlsplit

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.core.clock import now
from zeroarchive.core.services import one_line_errors
from zeroarchive.core.urls import UrlRejected, canonicalize_url, host_of
from zeroarchive.sites.record import Site, SiteConfigError, parse_spec
from zeroarchive.sources import platform_of, source_named
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.sites import site_from_row

#: The name of the ad-hoc (inactive) site a saved page of an unknown host is filed under.
ADHOC_PREFIX = "saved:"


def site_for(archive: Archive, url: str, watch: bool) -> Site:
    """The site an open-web URL belongs to: a site on its host, else an ad-hoc inactive
    one (watched only with ``--watch``)."""
    host = host_of(url)
    generic = source_named("generic")
    rows = archive.sites.active_rows(generic.type_names)
    for row in rows:
        if host_of(row["url"]) == host:
            return site_from_row(row)
    parts = urlsplit(url)
    name = f"{ADHOC_PREFIX}{host}"
    existing = archive.sites.get(name, generic.type_names)
    if existing is not None and bool(existing.config.watch) == watch:
        return existing
    raw = {
        "name": name,
        "url": f"{parts.scheme}://{parts.netloc}/",
        "type": "news",
        "active": False,
        # Never walked (inactive): any page of the host saved here is an article. Watched
        # after its snapshot only when asked to.
        "config": {"article": ".", "discover": False, **({} if watch else {"watch": []})},
    }
    try:
        spec = parse_spec(raw)
    except SiteConfigError as exc:
        raise UsageError(str(exc)) from None
    site_id, _ = archive.sites.upsert(spec, now())
    found = archive.sites.get(site_id)
    assert found is not None
    return found


class Command(ScrapyCommand):
    requires_project = True

    def syntax(self) -> str:
        return "URL... [--watch]"

    def short_desc(self) -> str:
        return "Archive these pages now (save page now), optionally under the long-tail watch"

    def long_desc(self) -> str:
        return (
            "Snapshots each URL at once. A page of a site in the table is filed under it; a "
            "page of any other host under an ad-hoc, inactive site 'saved:<host>' that is "
            "never walked. With --watch the pages stay under the long-tail watch (site "
            "config 'watch'), so a later deletion or edit becomes an event (`scrapy "
            "events`). Open-web pages only: a PTT, Dcard, Facebook or YouTube URL is "
            "refused with a one-line error."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--watch",
            action="store_true",
            help="keep the pages under the long-tail watch after their snapshot",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args:
            raise UsageError("give one or more URLs to save")
        archive = open_archive(self.settings)
        by_site: dict[int, list[str]] = {}
        for given in args:
            try:
                url = canonicalize_url(given)
            except UrlRejected as exc:
                raise UsageError(f"not a URL to save: {given!r} ({exc})") from None
            platform = platform_of(url)
            if platform is not None:
                raise UsageError(
                    f"{given}: a {platform.name} URL; `scrapy save` saves open-web pages only"
                )
            site = site_for(archive, url, opts.watch)
            by_site.setdefault(site.site_id, []).append(url)
        for site_id, urls in by_site.items():
            archive.articles.add(site_id, source_named("generic").article_type, urls, now())
            archive.articles.make_due(urls, now())
            assert self.crawler_process is not None
            self.crawler_process.crawl("generic", site=str(site_id), mode="snapshot")
        assert self.crawler_process is not None
        self.crawler_process.start()
