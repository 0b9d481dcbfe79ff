"""`scrapy verify` on a filled archive: snapshots checked per second, against reading them.

Fills a fresh database (a SQLite file, or a new MariaDB database with ``--backend mariadb``)
with ``--articles`` articles of the saved real Taiwanese news pages (tests/fixtures/replay),
each snapshotted ``--snapshots`` times an hour apart; a share ``--unchanged`` of the
re-snapshots repeat the bytes before (no bytes of their own), the others change a few bytes
as live pages do (a timestamp, an ad id: zstd-ref frames against the article's first).
Then, side by side on that archive, each timed (wall and CPU of this process):

1. the fixity pass (``storage.fixity.verify`` over ``SnapshotFixity``): read, decompress,
   follow references and repeats, hash;
2. the same snapshots read back by ``iter_snapshots`` (what export_snapshots and
   export_warc read with): read and decompress, no hash;
3. ``scrapy verify`` as an operator runs it (a new process: start-up, migration check,
   the pass, its checkpoints).

    python bench/verify.py [--articles 800] [--snapshots 5] [--unchanged 0.5]
        [--backend sqlite|mariadb] [--batch 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import io
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import func, select, text  # noqa: E402

from bench.warc_export import HEADERS, START, article_pages, database  # noqa: E402
from zeroarchive.core.items import FetchedPage  # noqa: E402
from zeroarchive.sites.record import parse_spec  # noqa: E402
from zeroarchive.storage.archive import close_archives, open_archive  # noqa: E402
from zeroarchive.storage.fixity import begin, verify  # noqa: E402
from zeroarchive.storage.schema import article_snapshot  # noqa: E402
from zeroarchive.storage.snapshot_fixity import SnapshotFixity  # noqa: E402
from zeroarchive.storage.snapshots import iter_snapshots  # noqa: E402


def changed(page: bytes, fetch: int, rng: random.Random) -> bytes:
    """``page`` with a new timestamp near its top and a new ad id in its middle."""
    stamp = b'<meta name="fetched" content="2025-01-01T%02d:%02d">' % (
        fetch % 24,
        rng.randrange(60),
    )
    ad = b'<div class="ad" data-ad-id="%016x"></div>' % rng.getrandbits(64)
    head = max(page.find(b">") + 1, 0)
    middle = len(page) // 2
    return page[:head] + stamp + page[head:middle] + ad + page[middle:]


def fill(url: str, articles: int, snapshots: int, unchanged: float) -> None:
    archive = open_archive(url=url)
    site_id, _ = archive.sites.upsert(
        parse_spec({"name": "bench", "url": "https://news.example/", "config": {"article": "/"}}),
        START,
    )
    archive.articles.add(
        site_id, "Article", [f"https://news.example/a/{n}" for n in range(articles)], START
    )
    with archive.engine.connect() as conn:
        rows = conn.execute(text("SELECT article_id, url FROM Article ORDER BY article_id")).all()
    pages = [body for _, body in sorted(article_pages().items())]
    rng = random.Random(12)
    previous: dict[int, bytes] = {}
    batch: list[FetchedPage] = []
    for round_ in range(snapshots):
        for n, (article_id, article_url) in enumerate(rows):
            body = pages[n % len(pages)]
            if article_id in previous:
                body = (
                    previous[article_id] if rng.random() < unchanged else changed(body, round_, rng)
                )
            previous[article_id] = body
            fetched_at = START + round_ * 3600 + n
            batch.append(
                FetchedPage(
                    article_id,
                    site_id,
                    "Article",
                    fetched_at,
                    200,
                    article_url,
                    HEADERS,
                    "utf-8",
                    body,
                )
            )
            if len(batch) >= 200:
                archive.snapshots.save(batch)
                batch = []
    archive.snapshots.save(batch)


def timed(work):  # type: ignore[no-untyped-def]
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=800)
    parser.add_argument("--snapshots", type=int, default=5)
    parser.add_argument("--unchanged", type=float, default=0.5)
    parser.add_argument("--backend", choices=("sqlite", "mariadb"), default="sqlite")
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as scratch_name,
        database(args.backend, Path(scratch_name)) as url,
    ):
        started = time.perf_counter()
        fill(url, args.articles, args.snapshots, args.unchanged)
        print(f"Filled {url.split('@')[-1]} in {time.perf_counter() - started:.1f} s")
        engine = open_archive(url=url).engine
        with engine.connect() as conn:
            count, raw, stored, with_bytes, refs = conn.execute(
                select(
                    func.count(),
                    func.sum(article_snapshot.c.raw_size),
                    func.sum(func.length(article_snapshot.c.raw_data)),
                    func.count(article_snapshot.c.raw_data),
                    func.count(article_snapshot.c.reference_at),
                )
            ).one()
        raw, stored = int(raw), int(stored)
        print(
            f"{count:,} snapshots ({with_bytes:,} with bytes, {refs:,} of them zstd-ref), "
            f"{raw / 1e6:.1f} MB of pages in {stored / 1e6:.1f} MB"
        )

        def fixity() -> int:
            run = begin(engine, "bench", None, "snapshot", restart=True)
            source = SnapshotFixity(engine, batch=args.batch)
            verify(engine, run, [source], lambda damage: None, stream=io.StringIO())
            assert run.complete and not run.damage, run.damage
            return run.checked

        def read_back() -> int:
            return sum(1 for _ in iter_snapshots(engine, batch=args.batch))

        times: dict[str, list[tuple[float, float]]] = {"verify pass": [], "iter_snapshots": []}
        for _ in range(args.rounds):
            for name, work in (("verify pass", fixity), ("iter_snapshots", read_back)):
                done, wall, cpu = timed(work)
                assert done == count
                times[name].append((wall, cpu))
        results = {}
        for name, measured in times.items():
            wall, cpu = sorted(measured)[len(measured) // 2]
            results[name] = wall
            print(
                f"{name:16} {wall:6.2f} s wall, {cpu:6.2f} s CPU: {count / wall:7,.0f} "
                f"snapshots/s, {raw / 1e6 / wall:6.1f} MB/s of pages (median of {args.rounds})"
            )
        close_archives()
        env = {**os.environ, "ZEROARCHIVE_DB_URL": url, "PYTHONPATH": str(REPO)}
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "scrapy", "verify"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - started
        assert done.returncode == 0, done.stderr
        print(f"scrapy verify    {wall:6.2f} s wall: {count / wall:7,.0f} snapshots/s, start-up in")
        ratio = results["verify pass"] / results["iter_snapshots"]
        print(f"verify / iter_snapshots time: {ratio:.2f}")


if __name__ == "__main__":
    main()
