from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand

from zeroarchive.core.services import one_line_errors, safe_url
from zeroarchive.storage.engine import db_url_from, make_engine, migrate


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def short_desc(self) -> str:
        return "Create or upgrade the archive's database schema"

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        url = db_url_from(self.settings)
        engine = make_engine(url)
        before, after = migrate(engine)
        engine.dispose()
        if before == after:
            print(f"{safe_url(url)}: schema is up to date (revision {after})")
        else:
            print(f"{safe_url(url)}: schema upgraded from {before or 'nothing'} to {after}")
