"""`scrapy import_0archive` speed and memory: a 0archive database of ``--snapshots``
snapshots of realistic size imported into SQLite and into MariaDB, side by side.

The 0archive database is built on MariaDB with ZeroScraper's own migrations
(tests/zeroscraper_db.py) and filled with pages of 20-300 KB (log-uniform; each made of
saved real pages from ../shared/corpora, different pages one after another, so it
compresses as real HTML does), ``--per-article`` snapshots an article, each re-snapshot
the page with its timestamp and ad slot changed, one in five unchanged; a third of the
snapshots sit in a rotated month table (ArticleSnapshot202003). Then, in one run:

1. the floor: streaming every snapshot's bytes out of MariaDB (the same SSCursor query),
   writing nothing;
2. ``scrapy import_0archive`` into a new SQLite file and into a new MariaDB database, each
   a process of its own: snapshots/s, and its peak resident memory (ru_maxrss);
3. the ratios: each import's rate against the floor.

    python bench/import_0archive.py [--snapshots 100000] [--per-article 5] [--batch 200]
        [--source-db NAME]   # reuse (or keep) the 0archive database of that name
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pymysql  # noqa: E402
from sqlalchemy import create_engine, text  # noqa: E402

from bench.corpora import CORPORA  # noqa: E402
from tests.conftest import MARIADB_SERVER, fresh_mariadb  # noqa: E402
from tests.zeroscraper_db import build_zeroscraper  # noqa: E402
from zeroarchive.storage.from_0archive.source import ZeroArchiveDb  # noqa: E402

MARCH_2020 = 1583020800
KB = 1024


def corpus_pages() -> list[bytes]:
    """Every saved real page of the corpora that is UTF-8 (0archive stored text)."""
    pages = []
    for path in sorted(CORPORA.rglob("*.htm*")):
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(raw) > 2 * KB:
            pages.append(raw)
    return pages


def make_page(pages: list[bytes], rng: random.Random) -> bytes:
    size = int(math.exp(rng.uniform(math.log(20 * KB), math.log(300 * KB))))
    out = bytearray()
    while len(out) < size:
        out += rng.choice(pages)
    return bytes(out[:size]).decode("utf-8", "ignore").encode()


def insert_pages(cursor: Any, table: str, rows: list[tuple[int, int, bytes, str]]) -> None:
    """Multi-row INSERTs of pages as hex literals, each under the server's 16 MB
    max_allowed_packet: a row at a time, with pymysql escaping each page in Python, filled
    62-140 rows/s."""
    head = f"INSERT INTO {table} (article_id, snapshot_at, raw_data, snapshot_at_date) VALUES "
    values: list[str] = []
    size = 0
    for index, (article_id, at, body, when) in enumerate(rows):
        values.append(f"({article_id}, {at}, X'{body.hex()}', '{when}')")
        size += 2 * len(body)
        if size > 12 * 1024 * KB or index == len(rows) - 1:
            cursor.execute(head + ", ".join(values))
            values, size = [], 0


def fill(url: str, snapshots: int, per_article: int) -> None:
    engine = build_zeroscraper(url)
    with engine.begin() as conn:
        for site_id in range(1, 21):
            conn.execute(
                text(
                    "INSERT INTO Site (site_id, type, name, url, config, is_active, airtable_id,"
                    " site_info) VALUES (:i, 'news_website', :n, :u, '{}', 1, :a, '{}')"
                ),
                {
                    "i": site_id,
                    "n": f"site {site_id}",
                    "u": f"https://s{site_id}.example.tw/",
                    "a": f"rec{site_id:05d}",
                },
            )
        conn.execute(text("CREATE TABLE ArticleSnapshot202003 LIKE ArticleSnapshot"))
    engine.dispose()
    pages = corpus_pages()
    rng = random.Random(7)
    parsed = engine.url
    db = pymysql.connect(
        host=parsed.host,
        port=parsed.port or 3306,
        user=parsed.username,
        password=parsed.password or "",
        database=parsed.database,
        charset="utf8mb4",
    )
    articles = snapshots // per_article
    started = time.monotonic()
    with db.cursor() as cursor:
        article_rows = []
        snapshot_rows: dict[str, list[tuple]] = {"ArticleSnapshot": [], "ArticleSnapshot202003": []}
        pending = 0
        for article_id in range(1, articles + 1):
            first = MARCH_2020 + article_id * 30
            url = f"https://s{article_id % 20 + 1}.example.tw/news/{article_id}"
            article_rows.append(
                (
                    article_id,
                    article_id % 20 + 1,
                    url,
                    str(article_id),
                    first,
                    first + (per_article - 1) * 3600,
                    0,
                    per_article,
                )
            )
            base = make_page(pages, rng)
            body = base
            for n in range(per_article):
                at = first + n * 3600
                if n and rng.random() >= 0.2:  # a re-snapshot: the clock and an ad changed
                    cut = base.find(b"<", len(base) * 3 // 4)  # a tag's start
                    cut = cut if cut >= 0 else len(base)
                    stamp = f"<!-- {at} ad {rng.randrange(10**9)} -->".encode()
                    body = base[:cut] + stamp + base[cut:]
                table = "ArticleSnapshot202003" if article_id % 3 == 0 else "ArticleSnapshot"
                when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at))
                snapshot_rows[table].append((article_id, at, body, when))
                pending += len(body)
            if pending > 48 * 1024 * KB or article_id == articles:
                cursor.executemany(
                    "INSERT INTO Article (article_id, site_id, url, url_hash, first_snapshot_at,"
                    " last_snapshot_at, next_snapshot_at, snapshot_count, article_type)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 'Article')",
                    article_rows,
                )
                for table, rows in snapshot_rows.items():
                    insert_pages(cursor, table, rows)
                    rows.clear()
                db.commit()
                article_rows.clear()
                pending = 0
    db.close()
    print(
        f"filled 0archive: {articles:,} articles, {articles * per_article:,} snapshots in "
        f"{time.monotonic() - started:.0f} s",
        flush=True,
    )


def stream_only(url: str, batch: int) -> tuple[int, int, float]:
    """Snapshots and bytes read by the import's own query, and the seconds it took."""
    source = ZeroArchiveDb(url)
    started = time.monotonic()
    count = size = 0
    for table in source.snapshot_tables():
        for rows in source.snapshots(table, None, batch, 32 * 1024 * KB):
            count += len(rows)
            size += sum(len(row.raw or b"") for row in rows)
    source.close()
    return count, size, time.monotonic() - started


WRAPPER = (
    "import resource, subprocess, sys, time; t = time.monotonic();"
    " code = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,"
    " text=True); print(code.returncode, time.monotonic() - t,"
    " resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code.stdout.strip())"
)


def run_import(source: str, target: str, batch: int) -> tuple[float, float, str]:
    """Seconds, peak RSS in MB, and the last line of one import, as a process of its own."""
    env = {**os.environ, "ZEROARCHIVE_DB_URL": target, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "scrapy", "import_0archive", source, "--batch", str(batch)]
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, *command],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    code, seconds, rss_kb, last = done.stdout.split(" ", 3)
    if code != "0":
        raise SystemExit(f"import into {target} failed: {last}")
    return float(seconds), int(rss_kb) / 1024, last.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshots", type=int, default=100_000)
    parser.add_argument("--per-article", type=int, default=5)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--source-db", help="a 0archive database to reuse, or to keep")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}", flush=True)
    if args.source_db:
        source = f"{MARIADB_SERVER}/{args.source_db}"
        admin = create_engine(f"{MARIADB_SERVER}/test")
        with admin.connect() as conn:
            exists = conn.execute(text("SHOW DATABASES LIKE :n"), {"n": args.source_db}).first()
            if not exists:
                conn.execute(text(f"CREATE DATABASE {args.source_db} CHARACTER SET utf8mb4"))
        admin.dispose()
        if not exists:
            fill(source, args.snapshots, args.per_article)
        run(source, args.batch)
        return
    with fresh_mariadb() as source:
        fill(source, args.snapshots, args.per_article)
        run(source, args.batch)


def run(source: str, batch: int) -> None:
    count, size, seconds = stream_only(source, batch)
    floor = count / seconds
    print(
        f"floor (read every snapshot, write nothing): {count:,} snapshots, "
        f"{size / count / KB:.0f} KB each, {seconds:.1f} s = {floor:,.0f}/s",
        flush=True,
    )
    results = []
    with tempfile.TemporaryDirectory() as folder:
        target = f"sqlite:///{Path(folder) / 'archive.db'}"
        seconds, rss, last = run_import(source, target, batch)
        db_size = (Path(folder) / "archive.db").stat().st_size
        results.append(("SQLite", seconds, rss, last, db_size))
    with fresh_mariadb() as target:
        seconds, rss, last = run_import(source, target, batch)
        results.append(("MariaDB", seconds, rss, last, 0))
    for name, seconds, rss, last, db_size in results:
        rate = count / seconds
        stored = f", archive file {db_size / size:.3f} of the raw bytes" if db_size else ""
        print(
            f"into {name}: {seconds:.1f} s = {rate:,.0f} snapshots/s ({rate / floor:.2f} of "
            f"the floor), peak RSS {rss:.0f} MB{stored}; said: {last}",
            flush=True,
        )
    print(f"self peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
