"""`scrapy export_warc` on a filled archive: export speed and WARC bytes against database bytes.

Fills a fresh database (a SQLite file, or a new MariaDB database with ``--backend mariadb``)
with ``--articles`` articles of the saved real Taiwanese news pages (tests/fixtures/replay),
each snapshotted ``--snapshots`` times, a share ``--unchanged`` of the re-snapshots with
the bytes of the one before (stored without bytes, exported as revisits). Then, in one run:

1. the export's two passes, each timed: the WARC files (read, decompress, write gzip
   records) and the CDXJ index (cdxj-indexer reading the files back);
2. the bytes: the database's compressed ``raw_data`` and the WARC files, per snapshot, and
   the pages' raw bytes, with their ratios.

    python bench/warc_export.py [--articles 2000] [--snapshots 4] [--unchanged 0.5]
        [--backend sqlite|mariadb]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import func, select, text  # noqa: E402

from tests.conftest import fresh_mariadb  # noqa: E402
from tests.replay import LIST_PATH, tw_news_routes  # noqa: E402
from zeroarchive.core.items import FetchedPage  # noqa: E402
from zeroarchive.publish.warc.export import write_index, write_warcs  # noqa: E402
from zeroarchive.sites.record import parse_spec  # noqa: E402
from zeroarchive.storage.archive import close_archives, open_archive  # noqa: E402
from zeroarchive.storage.schema import article_snapshot  # noqa: E402
from zeroarchive.storage.snapshots import iter_snapshots  # noqa: E402

START = 1_735_689_600  # 2025-01-01
HEADERS = {"Content-Type": ["text/html; charset=utf-8"], "Server": ["nginx"]}


@contextlib.contextmanager
def database(backend: str, scratch: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{scratch / 'bench.db'}"
        return
    with fresh_mariadb() as url:
        yield url


def article_pages() -> dict[str, bytes]:
    """The 34 real article pages (not the generated list pages that link them)."""
    return {
        path: route.body
        for path, route in tw_news_routes().items()
        if not path.startswith(LIST_PATH)
    }


def fill(url: str, articles: int, snapshots: int, unchanged: float) -> None:
    archive = open_archive(url=url)
    site_id, _ = archive.sites.upsert(
        parse_spec({"name": "bench", "url": "https://news.example/", "config": {"article": "/"}}),
        START,
    )
    urls = [f"https://news.example/a/{n}" for n in range(articles)]
    archive.articles.add(site_id, "Article", urls, START)
    with archive.engine.connect() as conn:
        rows = conn.execute(text("SELECT article_id, url FROM Article ORDER BY article_id")).all()
    pages = [body for path, body in sorted(article_pages().items())]
    rng = random.Random(12)
    previous: dict[int, bytes] = {}
    batch: list[FetchedPage] = []
    for round_ in range(snapshots):
        for n, (article_id, article_url) in enumerate(rows):
            body = pages[(n * 7 + round_) % len(pages)]
            if article_id in previous and rng.random() < unchanged:
                body = previous[article_id]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=2000)
    parser.add_argument("--snapshots", type=int, default=4)
    parser.add_argument("--unchanged", type=float, default=0.5)
    parser.add_argument("--backend", choices=("sqlite", "mariadb"), default="sqlite")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as scratch_name,
        database(args.backend, Path(scratch_name)) as url,
    ):
        scratch = Path(scratch_name)
        started = time.perf_counter()
        fill(url, args.articles, args.snapshots, args.unchanged)
        print(f"Filled {url.split('@')[-1]} in {time.perf_counter() - started:.1f} s")
        engine = open_archive(url=url).engine
        with engine.connect() as conn:
            count, stored, raw = conn.execute(
                select(
                    func.count(),
                    func.sum(func.length(article_snapshot.c.raw_data)),
                    func.sum(article_snapshot.c.raw_size),
                )
            ).one()
            with_bytes = conn.execute(
                select(func.count()).where(article_snapshot.c.raw_data.is_not(None))
            ).scalar_one()
        out = scratch / "out"
        out.mkdir()
        started = time.perf_counter()
        files, counts = write_warcs(iter_snapshots(engine), out, "bench", 1024**3)
        warc_seconds = time.perf_counter() - started
        started = time.perf_counter()
        index = write_index(files, out / "index.cdxj")
        index_seconds = time.perf_counter() - started
        warc = sum(path.stat().st_size for path in files)
        index_bytes = index.stat().st_size
        total = warc_seconds + index_seconds
        mb = counts.payload_bytes / 1e6
        print(
            f"{count:,} snapshots ({with_bytes:,} with bytes of their own), "
            f"{counts.responses:,} responses + {counts.revisits:,} revisits, "
            f"{mb:.1f} MB of pages"
        )
        print(
            f"WARC files: {warc_seconds:.2f} s ({mb / warc_seconds:.1f} MB/s of snapshot pages, "
            f"{warc / 1e6 / warc_seconds:.1f} MB/s written); index: {index_seconds:.2f} s; "
            f"whole export {mb / total:.1f} MB/s"
        )
        print("Bytes per snapshot")
        print(f"  pages as served (raw_size)      {raw / count:10,.0f}")
        print(f"  database raw_data (zstd)        {stored / count:10,.0f}")
        print(f"  WARC files (gzip per record)    {warc / count:10,.0f}")
        print(f"  CDXJ index                      {index_bytes / count:10,.0f}")
        print("Ratios")
        print(f"  WARC / database bytes           {warc / stored:10.2f}")
        print(f"  WARC / pages as served          {warc / raw:10.3f}")
        print(f"  database / pages as served      {stored / raw:10.3f}")
        print(f"  index share of the export time  {index_seconds / total:10.2f}")
        close_archives()


if __name__ == "__main__":
    main()
