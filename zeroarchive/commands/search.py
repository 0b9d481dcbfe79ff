from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.commands import TIME_METAVAR, time_option
from zeroarchive.core.clock import utc_minute
from zeroarchive.core.services import one_line_errors
from zeroarchive.core.shown import json_line, shown
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.publications import newest_parser_version

if TYPE_CHECKING:
    from zeroarchive.search.index import Hit

MAX_LIMIT = 10_000


def site_ids(archive: Archive, names: list[str]) -> tuple[int, ...]:
    """The ids of the sites named (by id or name; a name several sites share: all)."""
    found: set[int] = set()
    for name in names:
        ids = archive.sites.ids_named(name)
        if not ids:
            raise UsageError(f"no site {name!r}: see `scrapy sites`")
        found.update(ids)
    return tuple(sorted(found))


def readable(hit: Hit, number: int) -> str:
    when = (
        dt.datetime.fromtimestamp(hit.published_at, dt.UTC).strftime("%Y-%m-%d")
        if hit.published_at is not None
        else "undated"
    )
    lines = [
        f"{number}. {shown(hit.title or '(no title)')}",
        f"   {shown(hit.site)} · {when} · {shown(hit.url)}",
    ]
    if hit.canonical_url and hit.canonical_url != hit.url:
        lines.append(f"   the page names as its own: {shown(hit.canonical_url)}")
    lines.append(f"   {shown(hit.snippet.marked())}")
    if hit.versions is not None:
        spans = ", ".join(
            f"{utc_minute(s.start)} – {utc_minute(s.end) if s.end is not None else 'now'}"
            for s in hit.versions
        )
        lines.append(f"   held the query: {spans}")
    return "\n".join(lines)


def collapsed(archive: Archive, hits: list[Hit]) -> tuple[list[Hit], dict[int, tuple[int, int]]]:
    """The hits left when those whose cluster of copies a better hit is in are left out,
    and {article id: (cluster, members)} of those shown in a cluster."""
    from zeroarchive.copies.read import cluster_sizes

    sizes = cluster_sizes(archive.engine, [hit.article_id for hit in hits])
    kept, seen = [], set()
    for hit in hits:
        cluster = sizes.get(hit.article_id)
        if cluster is not None:
            if cluster[0] in seen:
                continue
            seen.add(cluster[0])
        kept.append(hit)
    return kept, {hit.article_id: sizes[hit.article_id] for hit in kept if hit.article_id in sizes}


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return (
            "QUERY [--site NAME]... [--since TIME] [--until TIME] "
            "[--all-versions] [--sort relevance|date] [--limit N] [--fold-chinese] "
            "[--collapse-copies] [--json]"
        )

    def short_desc(self) -> str:
        return "Search the publications' titles and text (CJK-aware full text)"

    def long_desc(self) -> str:
        return (
            'Search the archive\'s publications. Words are ANDed; "a quoted phrase" is one '
            "term; -word excludes. Matching ignores case and full-/half-width forms (NFKC). "
            "CJK text matches as written, as a contiguous string (one- and two-character "
            "words too); Latin-script words match whole words, without stemming. By default "
            "each article's latest version is searched and hits are ranked by relevance "
            "(newest first on ties). The last line on stderr is the number of hits "
            '("N hits", or "10000+ hits"). The index is fed by parse_snapshots; '
            "scrapy reindex rebuilds it."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        # The search package is imported only by this command: Scrapy imports every command
        # module whenever any command starts, crawls included.
        from zeroarchive.search.index import SORTS

        super().add_options(parser)
        parser.add_argument(
            "--site",
            action="append",
            default=[],
            metavar="NAME",
            help="only this site (name or id); repeat for several",
        )
        parser.add_argument(
            "--since",
            type=time_option(),
            metavar=TIME_METAVAR,
            help="published on or after this time (YYYY-MM-DD, YYYY-MM-DDTHH:MM or unix "
            "seconds, UTC)",
        )
        parser.add_argument(
            "--until",
            type=time_option(until=True),
            metavar=TIME_METAVAR,
            help="published before this time (a day: on or before it)",
        )
        parser.add_argument(
            "--all-versions",
            action="store_true",
            help="search every version of each article (text later edited out, or of "
            "deleted articles, too); each hit lists when its text held the query",
        )
        parser.add_argument(
            "--sort",
            choices=SORTS,
            default="relevance",
            help="relevance (default; newest first on ties) or date (newest first)",
        )
        parser.add_argument(
            "--limit",
            type=int,
            default=20,
            metavar="N",
            help=f"show N hits (default 20, at most {MAX_LIMIT})",
        )
        parser.add_argument(
            "--fold-chinese",
            action="store_true",
            help="find every spelling of Chinese terms: Traditional, Simplified and Taiwan's "
            "and Hong Kong's variants (台灣, 臺灣 and 台湾 alike)",
        )
        parser.add_argument(
            "--collapse-copies",
            action="store_true",
            help="one hit per story: of the hits shown, those whose cluster of copies "
            "(scrapy copies) a better hit is in are left out, and each hit says how many "
            "copies its story has (JSON: cluster, copies)",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="one JSON object per hit, best first: article_id, site, url (the URL "
            "archived), canonical_url (the one the page claims), title, published_at, "
            "snippet, score (and versions with --all-versions)",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from zeroarchive.search import open_index
        from zeroarchive.search.index import IndexUnavailable, SearchRequest
        from zeroarchive.search.query import QueryError, parse_query

        if not 1 <= opts.limit <= MAX_LIMIT:
            raise UsageError(f"--limit takes 1 to {MAX_LIMIT}, not {opts.limit}")
        since, until = opts.since, opts.until
        fold = None
        if opts.fold_chinese:
            from zeroarchive.search.fold import chinese_forms

            fold = chinese_forms
        try:
            query = parse_query(" ".join(args), fold)
        except QueryError as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        archive = open_archive(self.settings)
        index = open_index(archive.engine)
        missing = index.available()
        if missing:
            print(f"error: {missing}", file=sys.stderr)
            self.exitcode = 1
            return
        version = newest_parser_version(archive.engine)
        if version is None:
            print("error: nothing is parsed yet: run scrapy parse_snapshots", file=sys.stderr)
            self.exitcode = 1
            return
        request = SearchRequest(
            query=query,
            parser_version=version,
            site_ids=site_ids(archive, opts.site),
            since=since,
            until=until,
            all_versions=opts.all_versions,
            sort=opts.sort,
            limit=opts.limit,
        )
        try:
            hits = index.search(request)
        except IndexUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        shown_hits, copies = list(hits.hits), dict[int, tuple[int, int]]()
        if opts.collapse_copies:
            shown_hits, copies = collapsed(archive, shown_hits)
        for number, hit in enumerate(shown_hits, 1):
            cluster = copies.get(hit.article_id)
            if opts.json:
                record = hit.as_json()
                if opts.collapse_copies:
                    record["cluster"] = cluster[0] if cluster else None
                    record["copies"] = cluster[1] - 1 if cluster else 0
                print(json_line(record))
            else:
                print(readable(hit, number))
                if cluster:
                    print(
                        f"   and {cluster[1] - 1} cop{'y' if cluster[1] == 2 else 'ies'}: "
                        f"scrapy copies --article {hit.article_id}"
                    )
        sys.stdout.flush()
        print(hits.total_line(), file=sys.stderr)
