from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.commands import TIME_METAVAR, time_option
from zeroarchive.core.clock import now as clock_now
from zeroarchive.core.services import one_line_errors
from zeroarchive.storage.archive import open_archive

#: What --out's extension writes.
FORMATS = (".gexf", ".csv")


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return f"[--since {TIME_METAVAR}] [--out FILE.gexf|FILE.csv ...]"

    def short_desc(self) -> str:
        return "Write the site-to-site copy network (GEXF for Gephi, CSV for pandas)"

    def long_desc(self) -> str:
        return (
            "An edge A->B for the stories site B published after site A had them first (A: "
            "the site of the cluster's first member; B's earliest member of the cluster), "
            "weighted by their number, with the median delay in seconds. Without --out the "
            "CSV goes to standard output: source, target, stories, median_delay_seconds, "
            "source_id, target_id."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--since",
            type=time_option(),
            metavar=TIME_METAVAR,
            help="only copies first seen at or after this time (a UTC day, a UTC time or "
            "unix seconds); the story's first may be older",
        )
        parser.add_argument(
            "--out",
            action="append",
            default=[],
            metavar="FILE",
            help="write to FILE: GEXF 1.3 if it ends in .gexf, CSV if in .csv (repeat it "
            "to write both)",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args:
            raise UsageError(f"copy_network takes no arguments, not {' '.join(args)!r}")
        outs = [Path(out) for out in opts.out]
        for out in outs:
            if out.suffix.lower() not in FORMATS:
                raise UsageError(f"--out takes a .gexf or .csv file, not {str(out)!r}")
        assert self.settings is not None
        from zeroarchive.copies.network import network, write_csv, write_gexf

        archive = open_archive(self.settings)
        graph = network(archive.engine, since=opts.since)
        if not outs:
            write_csv(graph, sys.stdout)
            sys.stdout.flush()
        for out in outs:
            if out.suffix.lower() == ".gexf":
                with out.open("wb") as binary:
                    write_gexf(graph, binary, clock_now())
            else:
                with out.open("w", encoding="utf-8", newline="") as handle:
                    write_csv(graph, handle)
        print(
            f"copy_network: {len(graph.names)} site(s), {len(graph.edges)} edge(s), "
            f"{sum(edge.stories for edge in graph.edges)} copied stories",
            file=sys.stderr,
        )
