from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand

from zeroarchive.core.clock import utc_minute
from zeroarchive.core.services import one_line_errors
from zeroarchive.core.shown import shown
from zeroarchive.storage.archive import open_archive


def _when(ts: int) -> str:
    return f"{utc_minute(ts)} UTC" if ts else "never"


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def short_desc(self) -> str:
        return "List the archive's sites"

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        rows = open_archive(self.settings).sites.listing()
        header = f"{'id':>5}  {'type':12} {'category':14} {'active':6} {'articles':>8}  "
        print(f"{header}{'last crawl':20}  name  url")
        for row in rows:
            print(
                f"{row.site_id:>5}  {row.type:12} {shown(row.category or '-'):14} "
                f"{'yes' if row.is_active else 'no':6} {row.articles:>8}  "
                f"{_when(row.last_crawl_at):20}  {shown(row.name)}  {shown(row.url)}"
            )
        print(f"{len(rows)} site(s)")
