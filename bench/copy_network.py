"""The copy network's cost at the archive's scale (issue 38, point 4): ``--docs`` rows of
``copy_doc`` (1,000,000 by default) written straight into the table, ``--clustered`` of
them in clusters of three members on average over ``--sites`` sites, one site holding a
seventh of all; then ``copies.network.network`` over all of it (``scrapy copy_network``),
its GEXF and CSV, and the network of the busiest site and of a typical one (what the
monitor's site page and ``site_stats --json`` compute). Once on a SQLite file, once on a
fresh MariaDB database (dropped at the end).

    python bench/copy_network.py [--docs 1000000] [--clustered 300000] [--skip-mariadb]
"""

from __future__ import annotations

import argparse
import io
import random
import secrets
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import create_engine, insert, text  # noqa: E402

from zeroarchive.copies.network import network, write_csv, write_gexf  # noqa: E402
from zeroarchive.storage.archive import close_archives, open_archive  # noqa: E402
from zeroarchive.storage.schema import copy_doc  # noqa: E402

MARIADB = "mysql+pymysql://root@127.0.0.1:3306"
START = 1_700_000_000
BUSIEST = 7


def fill(url: str, docs: int, clustered: int, sites: int) -> None:
    archive = open_archive(url=url)
    rnd = random.Random(38)
    clusters = max(clustered // 3, 1)
    rows = []
    with archive.engine.begin() as conn:
        for i in range(1, docs + 1):
            in_one = i <= clustered
            rows.append(
                {
                    "article_id": i,
                    "publication_id": i,
                    "site_id": rnd.randrange(1, sites + 1) if i % 7 else BUSIEST,
                    "first_seen_at": START + rnd.randrange(0, 30 * 86400),
                    "script": 2,
                    "bands": b"",
                    "cluster_id": i % clusters + 1 if in_one else None,
                    "similarity": 0.9 if in_one else None,
                }
            )
            if len(rows) == 20_000:
                conn.execute(insert(copy_doc), rows)
                rows = []
        if rows:
            conn.execute(insert(copy_doc), rows)


def timed(what: str, work: object) -> object:
    started = time.perf_counter()
    result = work()  # type: ignore[operator]
    print(f"  {what}: {time.perf_counter() - started:.2f} s")
    return result


def measure(name: str, url: str, args: argparse.Namespace) -> None:
    print(f"{name}: {args.docs} copy_doc rows, {args.clustered} in clusters")
    timed("fill", lambda: fill(url, args.docs, args.clustered, args.sites))
    engine = open_archive(url=url).engine
    graph = timed("network()", lambda: network(engine))
    edges = graph.edges  # type: ignore[attr-defined]
    print(f"  {len(edges)} edges, {sum(edge.stories for edge in edges)} stories")
    out = io.BytesIO()
    timed("GEXF", lambda: write_gexf(graph, out, START))  # type: ignore[arg-type]
    print(f"  GEXF {len(out.getvalue()) / 1e6:.1f} MB")
    timed("CSV", lambda: write_csv(graph, io.StringIO()))  # type: ignore[arg-type]
    timed("network(site_id=busiest)", lambda: network(engine, site_id=BUSIEST))
    timed("network(site_id=typical)", lambda: network(engine, site_id=BUSIEST + 1))
    close_archives()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--clustered", type=int, default=300_000)
    parser.add_argument("--sites", type=int, default=2000)
    parser.add_argument("--skip-mariadb", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        measure("SQLite", f"sqlite:///{folder}/network.db", args)
    if args.skip_mariadb:
        return
    name = f"bench_network_{secrets.token_hex(4)}"
    server = create_engine(MARIADB)
    with server.begin() as conn:
        conn.execute(text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
    try:
        measure("MariaDB", f"{MARIADB}/{name}?charset=utf8mb4", args)
    finally:
        with server.begin() as conn:
            conn.execute(text(f"DROP DATABASE {name}"))


if __name__ == "__main__":
    main()
