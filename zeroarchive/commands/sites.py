from __future__ import annotations

import argparse
import datetime as dt

from scrapy.commands import ScrapyCommand

from zeroarchive.archive import open_archive


def _when(ts: int) -> str:
    if not ts:
        return "never"
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def short_desc(self) -> str:
        return "List the archive's sites"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        rows = open_archive(self.settings).sites.listing()
        print(f"{'id':>5}  {'type':12} {'active':6} {'articles':>8}  {'last crawl':20}  name")
        for row in rows:
            print(
                f"{row.site_id:>5}  {row.type:12} {'yes' if row.is_active else 'no':6} "
                f"{row.articles:>8}  {_when(row.last_crawl_at):20}  {row.name}"
            )
        print(f"{len(rows)} site(s)")
