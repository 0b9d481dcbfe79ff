from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.commands import time_option
from zeroarchive.commands.search import site_ids
from zeroarchive.core.services import one_line_errors
from zeroarchive.core.shown import json_line, shown
from zeroarchive.storage.archive import open_archive

if TYPE_CHECKING:
    from zeroarchive.copies.read import Cluster


def _when(stamp: int) -> str:
    return dt.datetime.fromtimestamp(stamp, dt.UTC).strftime("%Y-%m-%d %H:%M")


def readable(cluster: Cluster) -> str:
    first = cluster.first
    lines = [
        f"cluster {cluster.cluster_id}: {len(cluster.members)} articles, first on "
        f"{shown(first.site)} at {_when(first.first_seen_at)} UTC"
    ]
    for member in cluster.members:
        published = (
            f" (published {_when(member.published_at)})" if member.published_at is not None else ""
        )
        lines.append(
            f"  {_when(member.first_seen_at)}  {member.similarity:.2f}  {member.script:9}  "
            f"{shown(member.site)}  article {member.article_id}  {shown(member.url)}{published}"
        )
    return "\n".join(lines)


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return (
            "[--article ID] [--site NAME] [--since YYYY-MM-DD] [--min-similarity F] [--json]"
            " | --rebuild"
        )

    def short_desc(self) -> str:
        return "Show clusters of copies: the same story on several sites, and who had it first"

    def long_desc(self) -> str:
        return (
            "Articles whose bodies are near-copies (after folding Chinese script and dropping "
            "each site's boilerplate, at least COPIES_MIN_SIMILARITY of the shorter body is in "
            "the other) form one cluster; its first is the member first seen. parse_snapshots "
            "keeps the clusters up to date; --rebuild recomputes them."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--article",
            type=int,
            metavar="ID",
            help="the cluster of this article (nothing when it has no known copy)",
        )
        parser.add_argument(
            "--site",
            action="append",
            default=[],
            metavar="NAME",
            help="clusters with a member on this site (id or name; repeatable)",
        )
        parser.add_argument(
            "--since",
            type=time_option(),
            metavar="YYYY-MM-DD",
            help="clusters with a member first seen at or after this UTC day (or time, or "
            "unix seconds)",
        )
        parser.add_argument(
            "--min-similarity",
            type=float,
            metavar="F",
            help="only members at least this similar to the first (0-1; the clusters were "
            "made at COPIES_MIN_SIMILARITY, so a lower F shows no more)",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="one JSON object per cluster: cluster, first {article_id, site, url, "
            "first_seen_at}, members oldest first [{article_id, site, url, first_seen_at, "
            "similarity, script: same|converted}] (times in unix seconds)",
        )
        parser.add_argument(
            "--rebuild",
            action="store_true",
            help="recompute every cluster from the publications (resumable: run it again "
            "after a stop)",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from zeroarchive.copies.index import CopiesConfig

        if args:
            raise UsageError(f"copies takes no arguments, not {' '.join(args)!r}")
        similarity = opts.min_similarity
        if similarity is not None and not 0 <= similarity <= 1:
            raise UsageError(f"--min-similarity takes 0 to 1, not {similarity}")
        assert self.settings is not None
        try:
            config = CopiesConfig.from_settings(self.settings)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        archive = open_archive(self.settings)
        if opts.rebuild:
            if (
                opts.article is not None
                or opts.site
                or opts.since is not None
                or similarity is not None
            ):
                raise UsageError("--rebuild recomputes every cluster; it takes no other option")
            from zeroarchive.copies.rebuild import rebuild

            done, resumed = rebuild(archive.engine, config)
            how = "resumed, " if resumed else ""
            print(f"copies: {how}{done} article(s) fingerprinted", file=sys.stderr)
            return
        from zeroarchive.copies.read import cluster_of, clusters

        if opts.article is not None:
            if opts.site or opts.since is not None:
                raise UsageError("--article shows one article's cluster: no --site or --since")
            found = cluster_of(archive.engine, opts.article, similarity)
            shown = [] if found is None else [found]
        else:
            ids = site_ids(archive, opts.site) if opts.site else ()
            since = opts.since
            shown = clusters(archive.engine, ids, since, similarity)  # type: ignore[assignment]
        count = 0
        for cluster in shown:
            count += 1
            if opts.json:
                print(json_line(cluster.as_dict()))
            else:
                print(readable(cluster))
        sys.stdout.flush()
        if not opts.json and opts.article is None:
            print(f"{count} cluster(s)", file=sys.stderr)
