from __future__ import annotations

import argparse
from typing import Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.core.clock import now, utc_minute
from zeroarchive.core.services import one_line_errors
from zeroarchive.core.shown import json_line, shown
from zeroarchive.sites.patterns import ARTICLE_VERDICT, OTHER_VERDICT, Pattern
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.patterns import PatternStore
from zeroarchive.storage.sites import SiteRow

FORGET = "forget"


def _when(ts: int) -> str:
    return f"{utc_minute(ts)} UTC" if ts else "never"


def site_json(row: SiteRow, patterns: list[Pattern]) -> dict[str, Any]:
    """A site as `scrapy sites --json` prints it: its ``article_patterns``, the given
    regexes or the learnt (and set) shapes its links are articles by, and the shapes
    learnt or set to be no articles."""
    if row.article:
        article: list[dict[str, Any]] = [
            {"pattern": regex, "origin": "given"} for regex in row.article
        ]
    else:
        article = [p.as_json() for p in patterns if p.verdict == ARTICLE_VERDICT]
    return {
        "site_id": row.site_id,
        "name": row.name,
        "url": row.url,
        "type": row.type,
        "category": row.category,
        "active": row.is_active,
        "articles": row.articles,
        "last_crawl_at": row.last_crawl_at,
        "next_crawl_at": row.next_crawl_at,
        "article_patterns": article,
        "not_article_patterns": [
            p.as_json() for p in patterns if p.verdict == OTHER_VERDICT and not row.article
        ],
        "undecided_patterns": 0 if row.article else sum(not p.verdict for p in patterns),
    }


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--json] [--pattern SITE article|other|forget PATTERN]"

    def short_desc(self) -> str:
        return "List the archive's sites (and their article patterns), or set a pattern"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--json",
            action="store_true",
            help="one JSON object per site, with its article_patterns (given or learnt)",
        )
        parser.add_argument(
            "--pattern",
            nargs=3,
            metavar=("SITE", "VERDICT", "PATTERN"),
            help=(
                "set a pattern of a site without an article regex: its links are articles "
                "(article), are not (other), or are learnt again (forget); PATTERN is a shape "
                "as --json shows it, or a URL standing for its shape"
            ),
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        archive = open_archive(self.settings)
        if opts.pattern:
            self._set_pattern(archive, *opts.pattern)
            return
        rows = archive.sites.listing()
        if opts.json:
            patterns = PatternStore(archive.engine).by_site()
            for row in rows:
                print(json_line(site_json(row, patterns.get(row.site_id, []))))
            return
        header = f"{'id':>5}  {'type':12} {'category':14} {'active':6} {'articles':>8}  "
        print(f"{header}{'last crawl':20}  name  url")
        for row in rows:
            print(
                f"{row.site_id:>5}  {row.type:12} {shown(row.category or '-'):14} "
                f"{'yes' if row.is_active else 'no':6} {row.articles:>8}  "
                f"{_when(row.last_crawl_at):20}  {shown(row.name)}  {shown(row.url)}"
            )
        print(f"{len(rows)} site(s)")

    def _set_pattern(self, archive: Archive, key: str, verdict: str, pattern: str) -> None:
        site = archive.sites.get(key)
        if site is None:
            raise UsageError(f"no site {key!r}: see `scrapy sites` for ids and names")
        store = PatternStore(archive.engine)
        if verdict == FORGET:
            dropped = store.forget(site.site_id, pattern)
            print(f"site #{site.site_id}: {dropped} pattern(s) forgotten")
            return
        try:
            shape = store.set(site.site_id, pattern, verdict, now())
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        note = " (its config's article regex still wins)" if site.config.article else ""
        print(f"site #{site.site_id}: links like {shape} are {verdict}{note}")
