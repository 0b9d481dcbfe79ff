from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from sqlalchemy.engine import Engine

from zeroarchive.core.clock import now as clock_now
from zeroarchive.core.clock import utc_minute
from zeroarchive.core.services import one_line_errors
from zeroarchive.core.shown import json_line, shown
from zeroarchive.core.url_shapes import readable
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.site_stats import NEW_ARTICLE_DAYS, SiteStats, SiteStatsConfig, site_stats


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--json] [--quiet-days N]"

    def short_desc(self) -> str:
        return "Per site: new articles lately, snapshots due, failing, stopped, quiet sites"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--json",
            action="store_true",
            help="one JSON object per site, with its copies_from and copied_by: the sites "
            "it published stories after, and those that published its stories after it "
            "([{site, site_id, stories, median_delay_seconds}], most stories first), and "
            "its media (items, stored, refused by reason, bytes_fetched, bytes_stored)",
        )
        parser.add_argument(
            "--quiet-days", type=int, help="flag sites without a new article for N days"
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if opts.quiet_days is not None:
            self.settings.set("SITE_STATS_QUIET_DAYS", opts.quiet_days, priority="cmdline")
        try:
            config = SiteStatsConfig.from_settings(self.settings)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        archive = open_archive(self.settings)
        now = clock_now()
        rows = site_stats(archive.engine, now, config)
        if opts.json:
            from zeroarchive.copies.network import network

            copies = network(archive.engine)
            for row in rows:
                record = row.as_json()
                record["copies_from"] = copies.copies_from(row.site_id)
                record["copied_by"] = copies.copied_by(row.site_id)
                print(json_line(record))
            return
        new_heads = " ".join(f"{f'{d}d':>6}" for d in NEW_ARTICLE_DAYS)
        print(
            f"{'id':>5} {'articles':>8} {new_heads} {'snaps':>8} {'due':>6} {'overdue':>7} "
            f"{'failing':>7} {'blocked':>7} {'stopped':>7} {'del/ed':>7}  {'last list ok':16}  "
            f"{'flags':24}  "
            f"{'type':12} {'category':14} name"
        )
        for row in rows:
            new = " ".join(f"{row.new[d]:>6}" for d in NEW_ARTICLE_DAYS)
            month = row.events_this_month(now)
            events = f"{month['deleted']}/{month['edited']}"
            print(
                f"{row.site_id:>5} {row.articles:>8} {new} {row.snapshots:>8} {row.due:>6} "
                f"{row.overdue:>7} {row.failing:>7} {row.blocked:>7} {row.stopped:>7} {events:>7}  "
                f"{utc_minute(row.last_list_ok_at):16}  {flags(row):24}  "
                f"{row.type:12} {shown(row.category or '-'):14} {shown(row.name)}"
            )
        unmatched = [row for row in rows if row.unmatched]
        if unmatched:
            print("Links of the latest walk that matched neither article nor following:")
        for row in unmatched:
            for shape in row.unmatched:
                print(
                    f"{row.site_id:>5} {shown(row.name)}: {shown(readable(shape.shape))}: "
                    f"{shape.links} links (e.g. {shown(shape.example)})"
                )
        walked = [row for row in rows if row.list_pages]
        if walked:
            print(
                "List pages (zeroarchive/crawl/list_intervals.py): intervals now, requests today "
                "of the daily budget, 304s, postponements; the busiest pages:"
            )
        for row in walked:
            intervals = [p.interval for p in row.list_pages if p.interval]
            print(
                f"{row.site_id:>5} {shown(row.name)}: {len(row.list_pages)} list page(s), every "
                f"{span(min(intervals or [0]))}..{span(max(intervals or [0]))}; "
                f"{row.list_requests_today}/{row.list_budget} requests today; "
                f"{sum(p.not_modified for p in row.list_pages)} answered 304, "
                f"{sum(p.postponed for p in row.list_pages)} postponed"
            )
            for page in row.list_pages[:LIST_PAGES_SHOWN]:
                rate = "-" if page.new_per_day is None else f"{page.new_per_day:g}"
                print(
                    f"        every {span(page.interval):>6}  {rate:>7} new/day  "
                    f"{page.walks:>6} walks  {page.not_modified:>6} x 304  {page.kind:7} "
                    f"{shown(page.url)}"
                )
        print_media(rows, archive.engine)
        quiet = sum(row.quiet for row in rows)
        unanswered = sum(bool(row.unanswered) for row in rows)
        print(
            f"{len(rows)} site(s), {quiet} without a new article in {config.quiet_days} day(s), "
            f"{unanswered} whose list pages do not answer"
        )


def print_media(rows: list[SiteStats], engine: Engine) -> None:
    """The media table: per site with any, its records, stored, refused by reason, bytes
    fetched and stored; then what the store holds."""
    with_media = [row for row in rows if row.media.items]
    if not with_media:
        return
    from zeroarchive.storage.media_stats import store_totals

    print("Media of the snapshots (records, stored, bytes fetched and stored, refused):")
    print(f"{'id':>5} {'items':>8} {'stored':>8} {'fetched':>14} {'stored bytes':>14}  refused")
    for row in with_media:
        media = row.media
        refused = ", ".join(f"{why} {n}" for why, n in media.refused.items()) or "-"
        print(
            f"{row.site_id:>5} {media.items:>8} {media.stored:>8} {media.bytes_fetched:>14,} "
            f"{media.bytes_stored:>14,}  {shown(refused)} ({shown(row.name)})"
        )
    with engine.connect() as conn:
        items, size = store_totals(conn)
    print(f"The media store holds {items} item(s), {size:,} bytes (each item once)")


#: List pages shown per site in the table (all of them in --json).
LIST_PAGES_SHOWN = 3


def span(seconds: int) -> str:
    """An interval as people read it.

    >>> span(90), span(600), span(21600), span(0)
    ('1.5m', '10m', '6h', '-')
    """
    if not seconds:
        return "-"
    if seconds < 3600:
        return f"{seconds / 60:g}m"
    if seconds < 86400:
        return f"{seconds / 3600:.3g}h"
    return f"{seconds / 86400:.3g}d"


def flags(row: SiteStats) -> str:
    """The flags of a row of the table: QUIET, NEVER-ANSWERED, STOPPED-ANSWERING."""
    found = ["QUIET"] if row.quiet else []
    if row.unanswered == "never":
        found.append("NEVER-ANSWERED")
    elif row.unanswered == "stopped":
        found.append("STOPPED-ANSWERING")
    return ",".join(found)
