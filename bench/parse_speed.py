"""Parsing throughput: pages/s of the generic parser of a git revision (``--old``) and of
this tree, side by side in one run, and of `scrapy parse_snapshots`' run with
``--workers``.

1. Each round parses the 60 pages of ../shared/corpora/extraction-benchmark-dev
   ``--passes`` times in a fresh process of the old revision, then of this tree (one
   process each, one page parsed first so imports are not timed); the best round and the
   median of the rounds are printed, and the median of the rounds' own ratios (each round
   runs the two back to back). Pages per CPU second of that process are printed beside
   pages/s: on a machine shared with other work they are what one core does when it is
   not taken away.
2. The same processes parse every page of the extraction benchmark, the Taiwanese news
   corpora and bench/data/cjk-news once, and the run reports on how many pages the two
   make the same publication (and which fields differ where not).
3. ``parse_pending()`` (the command's whole work: reads, writes, the parser processes'
   start) on a fresh SQLite archive holding the 60 benchmark pages ``--copies`` times (as
   so many articles; 0 skips this part), with ``--workers 1`` and with each ``--workers``
   value given; pages per CPU second there count the CPU time of every process, the parser
   processes' too.

    python bench/parse_speed.py [--old main] [--rounds 3] [--passes 2] [--workers 2]
        [--copies 5]
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import select  # noqa: E402

from bench.corpora import CORPORA  # noqa: E402
from zeroarchive.core.encoding import detect_encoding  # noqa: E402
from zeroarchive.core.items import FetchedPage  # noqa: E402
from zeroarchive.parser.run import ParseRunConfig, parse_pending  # noqa: E402
from zeroarchive.sites.record import parse_spec  # noqa: E402
from zeroarchive.storage.archive import open_archive  # noqa: E402
from zeroarchive.storage.schema import article  # noqa: E402

BENCHMARK = CORPORA / "extraction-benchmark-dev" / "html"
CJK = REPO / "bench" / "data" / "cjk-news" / "html"
URL = "https://news.example/a"
START = 1_735_689_600  # 2025-01-01
# Run in a fresh process from a tree (argv[1]): time the parse of the pages listed in
# argv[2], argv[3] times over (URL argv[4]), then print the seconds (wall and CPU) and, with
# argv[5] "check",
# each page's publication fields.
RUNNER = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from zeroarchive.core.encoding import detect_encoding
from zeroarchive.parser import parse_snapshot
listing = json.loads(open(sys.argv[2]).read())
timed = [open(p, "rb").read() for p in listing["timed"]]
def parse(raw):
    return parse_snapshot("Article", raw, detect_encoding(raw), sys.argv[4])
parse(timed[0])
started, cpu = time.perf_counter(), time.process_time()
for _ in range(int(sys.argv[3])):
    for raw in timed:
        parse(raw)
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
fields = {}
for path in listing["checked"] if sys.argv[5] == "check" else []:
    try:
        fields[path] = json.loads(json.dumps(parse(open(path, "rb").read()).as_dict(), default=str))
    except ValueError as exc:
        fields[path] = {"error": str(exc)}
print(json.dumps({"seconds": seconds, "cpu": cpu, "fields": fields}))
"""


def benchmark_pages() -> list[bytes]:
    return [gzip.decompress(p.read_bytes()) for p in sorted(BENCHMARK.glob("*.html.gz"))]


def other_pages() -> list[bytes]:
    """The Taiwanese news pages and the CJK pages (checked for equal output, not timed)."""
    found = [gzip.decompress(p.read_bytes()) for p in sorted(CJK.glob("*.html.gz"))]
    for path in sorted((CORPORA / "tw-news-2014").rglob("*.html.gz")):
        found.append(gzip.decompress(path.read_bytes()))
    for path in sorted((CORPORA / "tw-news-twnews").glob("*.html.xz")):
        found.append(lzma.decompress(path.read_bytes()))
    return found


def write_pages(folder: Path, timed: list[bytes], checked: list[bytes]) -> Path:
    paths = []
    for number, raw in enumerate(timed + checked):
        path = folder / f"{number:04d}.html"
        path.write_bytes(raw)
        paths.append(str(path))
    listing = folder / "listing.json"
    listing.write_text(json.dumps({"timed": paths[: len(timed)], "checked": paths}))
    return listing


def old_tree(folder: Path, revision: str) -> Path:
    tree = folder / "old"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "archive", revision, "zeroarchive"], cwd=REPO, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


Fields = dict[str, dict[str, object]]


def run_tree(tree: Path, listing: Path, passes: int, check: bool) -> tuple[float, float, Fields]:
    """(wall and CPU seconds of the timed parses, each checked page's publication fields)."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            RUNNER,
            str(tree),
            str(listing),
            str(passes),
            URL,
            str(check and "check"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return float(result["seconds"]), float(result["cpu"]), result["fields"]


def differences(old: Fields, new: Fields) -> str:
    changed = {}
    for path, fields in old.items():
        keys = sorted(
            k for k in fields.keys() | new[path].keys() if fields.get(k) != new[path].get(k)
        )
        if keys:
            changed[Path(path).name] = keys
    lines = [f"same publication on {len(old) - len(changed)} of {len(old)} pages"]
    lines += [f"  {name}: {', '.join(keys)}" for name, keys in sorted(changed.items())]
    return "\n".join(lines)


def _children_cpu() -> float:
    """CPU seconds of this process's ended child processes (the parser processes)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def archive_rate(pages: list[bytes], workers: int) -> tuple[float, float, Counter[str]]:
    """(pages per second, pages per CPU second of every process) of ``parse_pending()`` on
    a fresh SQLite archive holding ``pages``."""
    with tempfile.TemporaryDirectory() as scratch:
        archive = open_archive(url=f"sqlite:///{Path(scratch) / 'bench.db'}")
        spec = parse_spec(
            {
                "name": "bench",
                "url": "https://news.example/",
                "type": "news",
                "config": {"article": "/a/"},
            }
        )
        site_id = archive.sites.upsert(spec, START)[0]
        urls = [f"{URL}/{number}" for number in range(len(pages))]
        archive.articles.add(site_id, "Article", urls, START)
        with archive.engine.connect() as conn:
            ids = {
                url: id_ for url, id_ in conn.execute(select(article.c.url, article.c.article_id))
            }
        archive.snapshots.save(
            [
                FetchedPage(
                    article_id=ids[url],
                    site_id=site_id,
                    article_type="news",
                    fetched_at=START,
                    status=200,
                    final_url=url,
                    headers={"Content-Type": ["text/html"]},
                    encoding=detect_encoding(raw),
                    body=raw,
                )
                for url, raw in zip(urls, pages, strict=True)
            ]
        )
        started, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
        stats = parse_pending(archive.engine, ParseRunConfig(workers=workers), now=START)
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu + _children_cpu() - children
        archive.engine.dispose()
    return stats["parser/parsed"] / seconds, stats["parser/parsed"] / cpu, stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="main", help="the git revision to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=2, help="parses of each page a round")
    parser.add_argument("--workers", type=int, nargs="*", default=[2])
    parser.add_argument(
        "--copies",
        type=int,
        default=5,
        help="copies of the pages in the archive parse_pending parses (a parser process's"
        " start, a second or two of imports, is spread over them); 0 skips parse_pending",
    )
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.1f}", flush=True)
    timed = benchmark_pages()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        listing = write_pages(folder, timed, timed + other_pages())
        trees = {args.old: old_tree(folder, args.old), "this tree": REPO}
        rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        fields: dict[str, Fields] = {}
        for round_ in range(args.rounds):
            for name, tree in trees.items():
                seconds, cpu, found = run_tree(tree, listing, args.passes, check=round_ == 0)
                rates = (len(timed) * args.passes / seconds, len(timed) * args.passes / cpu)
                rounds[name].append(rates)
                fields.setdefault(name, found)
                print(
                    f"round {round_ + 1}, {name}: {rates[0]:.1f} pages/s,"
                    f" {rates[1]:.1f} pages per CPU second",
                    flush=True,
                )
    print(f"generic parse, one process, {len(timed)} pages x {args.passes}, {args.rounds} rounds:")
    for name, rates in rounds.items():
        per_cpu = sorted(cpu for _, cpu in rates)
        print(
            f"  {name}: best {max(wall for wall, _ in rates):.1f} pages/s;"
            f" per CPU second best {per_cpu[-1]:.1f}, median {statistics.median(per_cpu):.1f}"
            f" (rounds {', '.join(f'{cpu:.1f}' for _, cpu in rates)})"
        )
    old, new = rounds[args.old], rounds["this tree"]
    print(
        f"  ratio this tree / {args.old}, best against best: "
        f"{max(w for w, _ in new) / max(w for w, _ in old):.2f} pages/s,"
        f" {max(c for _, c in new) / max(c for _, c in old):.2f} per CPU second;"
        " median of the rounds' own CPU ratios "
        f"{statistics.median(n[1] / o[1] for n, o in zip(new, old, strict=True)):.2f}"
    )
    print(differences(fields[args.old], fields["this tree"]))
    stored = timed * args.copies
    for workers in [1, *args.workers] if stored else []:
        rate, per_cpu, stats = archive_rate(stored, workers)
        print(
            f"parse_pending --workers {workers}, {len(stored)} pages: {rate:.1f} pages/s,"
            f" {per_cpu:.1f} per CPU second of all its processes"
            f" ({stats['parser/parsed']} parsed, {stats['parser/errors']} errors)",
            flush=True,
        )
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
