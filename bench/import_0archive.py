"""`scrapy import_0archive` speed and memory: a 0archive database of ``--snapshots``
snapshots of realistic size imported into SQLite and into MariaDB, side by side.

The 0archive database is built on MariaDB with ZeroScraper's own migrations
(tests/zeroscraper_db.py) and filled with pages of 20-300 KB (log-uniform; each made of
saved real pages from ../shared/corpora, different pages one after another, so it
compresses as real HTML does), ``--per-article`` snapshots an article, each re-snapshot
the page with its timestamp and ad slot changed, one in five unchanged; a third of the
snapshots sit in a rotated month table (ArticleSnapshot202003). Then, in one run, each
with wall seconds and CPU seconds (this process's or the import's, and the local MariaDB
server's, which counts every client of the server):

1. read only: the import's own reader (keys, then bytes) over every snapshot, writing
   nothing;
2. compress only: what the import does to each page (SHA-256, the UTF-8 check, zstd), each
   timed alone on a sample of ``--sample`` pages, one thread;
3. write only: those compressed rows inserted into a new SQLite and a new MariaDB archive,
   a transaction per batch;
4. ``scrapy import_0archive`` into a new SQLite file (then again: everything imported
   already, so only keys are read) and into a new MariaDB database, each a process of its
   own, with its peak resident memory (ru_maxrss), and its rate against read only.

    python bench/import_0archive.py [--snapshots 100000] [--per-article 5] [--batch 200]
        [--sample 2000] [--source-db NAME]   # reuse (or keep) the 0archive database of that name
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pymysql  # noqa: E402
from sqlalchemy import create_engine, text  # noqa: E402

from bench.corpora import CORPORA  # noqa: E402
from tests.conftest import MARIADB_SERVER, fresh_mariadb  # noqa: E402
from tests.zeroscraper_db import build_zeroscraper  # noqa: E402
from zeroarchive.storage.compression import compress  # noqa: E402
from zeroarchive.storage.dialect import insert_ignore  # noqa: E402
from zeroarchive.storage.engine import make_engine, migrate  # noqa: E402
from zeroarchive.storage.from_0archive.snapshots import text_encoding  # noqa: E402
from zeroarchive.storage.from_0archive.source import ZeroArchiveDb  # noqa: E402
from zeroarchive.storage.schema import article_snapshot  # noqa: E402

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


def mysqld_cpu() -> float | None:
    """CPU seconds the local MariaDB server has used (every client's work, not only ours)."""
    try:
        pid = subprocess.run(["pgrep", "-x", "mariadbd"], capture_output=True, text=True)
        fields = Path(f"/proc/{pid.stdout.split()[0]}/stat").read_text().rsplit(")", 1)[1].split()
    except (IndexError, OSError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Measure:
    """Wall seconds, this process's CPU seconds and the server's, over a ``with`` block."""

    def __enter__(self) -> Measure:
        self.wall, self.cpu, self.server = time.monotonic(), time.process_time(), mysqld_cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.monotonic() - self.wall
        self.cpu = time.process_time() - self.cpu
        after = mysqld_cpu()
        self.server = after - self.server if after is not None and self.server else None


def read_only(url: str, batch: int) -> tuple[int, int, Measure]:
    """Every snapshot's bytes read by the import's own reader, nothing written."""
    source = ZeroArchiveDb(url)
    count = size = 0
    with Measure() as measure:
        for table in source.snapshot_tables():
            for found in source.snapshots(table, None, batch, 16 * 1024 * KB):
                count += len(found.rows)
                size += sum(len(row.raw or b"") for row in found.rows)
    source.close()
    return count, size, measure


def sample_pages(url: str, count: int) -> list[tuple[int, int, bytes]]:
    source = ZeroArchiveDb(url)
    pages: list[tuple[int, int, bytes]] = []
    for found in source.snapshots("ArticleSnapshot", None, 200, 16 * 1024 * KB):
        pages += [(row.article_id, row.snapshot_at, row.raw or b"") for row in found.rows]
        if len(pages) >= count:
            break
    source.close()
    return pages[:count]


def compress_only(
    pages: list[tuple[int, int, bytes]],
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """What the import does to each page, on one thread, each part timed alone: SHA-256,
    the UTF-8 check (only for tables whose column is not UTF-8), zstd. CPU seconds."""
    raws = [raw for _, _, raw in pages]
    parts: dict[str, float] = {}
    with Measure() as measure:
        digests = [hashlib.sha256(raw).digest() for raw in raws]
    parts["SHA-256"] = measure.cpu
    with Measure() as measure:
        encodings = [text_encoding(raw) for raw in raws]
    parts["UTF-8 check"] = measure.cpu
    with Measure() as measure:
        frames = [compress(raw) for raw in raws]
    parts["zstd"] = measure.cpu
    rows = [
        {
            "article_id": article_id,
            "snapshot_at": at,
            "snapshot_at_date": dt.datetime.fromtimestamp(at, dt.UTC).date(),
            "status": 200,
            "final_url": f"https://s1.example.tw/news/{article_id}",
            "headers": "{}",
            "encoding": encoding or "utf-8",
            "content_hash": digest,
            "raw_size": len(raw),
            "raw_data": data,
            "codec": codec,
            "rendered": False,
        }
        for (article_id, at, raw), digest, encoding, (data, codec) in zip(
            pages, digests, encodings, frames, strict=True
        )
    ]
    return parts, rows


def write_only(target: str, rows: list[dict[str, Any]], batch: int) -> Measure:
    """The compressed rows inserted into a new archive, a transaction per batch."""
    engine = make_engine(target)
    migrate(engine)
    with Measure() as measure:
        for start in range(0, len(rows), batch):
            with engine.begin() as conn:
                conn.execute(insert_ignore(conn, article_snapshot), rows[start : start + batch])
    engine.dispose()
    return measure


WRAPPER = (
    "import resource, subprocess, sys, time; t = time.monotonic();"
    " code = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,"
    " text=True); r = resource.getrusage(resource.RUSAGE_CHILDREN);"
    " print(code.returncode, time.monotonic() - t, r.ru_utime + r.ru_stime, r.ru_maxrss,"
    " code.stdout.strip())"
)


@dataclass
class Run:
    name: str
    wall: float
    cpu: float
    server: float | None
    rss_mb: float
    last: str


def run_import(name: str, source: str, target: str, batch: int) -> Run:
    """One import as a process of its own: its wall and CPU seconds, the server's CPU
    seconds meanwhile, its peak RSS and its last line."""
    env = {**os.environ, "ZEROARCHIVE_DB_URL": target, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "scrapy", "import_0archive", source, "--batch", str(batch)]
    before = mysqld_cpu()
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, *command],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    after = mysqld_cpu()
    code, seconds, cpu, rss_kb, last = done.stdout.split(" ", 4)
    if code != "0":
        raise SystemExit(f"import into {target} failed: {last}")
    server = after - before if after is not None and before is not None else None
    return Run(name, float(seconds), float(cpu), server, int(rss_kb) / 1024, last.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshots", type=int, default=100_000)
    parser.add_argument("--per-article", type=int, default=5)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--sample", type=int, default=2000, help="pages compressed and written")
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
        run(source, args.batch, args.sample)
        return
    with fresh_mariadb() as source:
        fill(source, args.snapshots, args.per_article)
        run(source, args.batch, args.sample)


def per(seconds: float | None, count: int) -> str:
    return "-" if seconds is None else f"{seconds / count * 1000:.3f}"


def run(source: str, batch: int, sample: int) -> None:
    count, size, read = read_only(source, batch)
    print(
        f"read only: {count:,} snapshots, {size / count / KB:.0f} KB each, "
        f"{read.wall:.1f} s = {count / read.wall:,.0f}/s; CPU ms a snapshot: "
        f"ours {per(read.cpu, count)}, server {per(read.server, count)}",
        flush=True,
    )
    pages = sample_pages(source, sample)
    parts, rows = compress_only(pages)
    stored = sum(len(row["raw_data"]) for row in rows) / sum(len(raw) for _, _, raw in pages)
    each = ", ".join(f"{name} {per(cpu, len(pages))}" for name, cpu in parts.items())
    print(
        f"compress only (one thread, {len(pages):,} pages): CPU ms a page: {each}; "
        f"{stored:.3f} of the bytes stored",
        flush=True,
    )
    runs: list[Run] = []
    with tempfile.TemporaryDirectory() as folder:
        wrote = write_only(f"sqlite:///{Path(folder) / 'write.db'}", rows, batch)
        print(
            f"write only into SQLite: {per(wrote.wall, len(rows))} ms a snapshot, CPU "
            f"{per(wrote.cpu, len(rows))}",
            flush=True,
        )
        target = f"sqlite:///{Path(folder) / 'archive.db'}"
        runs.append(run_import("into SQLite", source, target, batch))
        runs.append(run_import("into SQLite again (all imported)", source, target, batch))
        db_size = (Path(folder) / "archive.db").stat().st_size
    with fresh_mariadb() as target:
        wrote = write_only(target, rows, batch)
        print(
            f"write only into MariaDB: {per(wrote.wall, len(rows))} ms a snapshot, CPU ours "
            f"{per(wrote.cpu, len(rows))}, server {per(wrote.server, len(rows))}",
            flush=True,
        )
    with fresh_mariadb() as target:
        runs.append(run_import("into MariaDB", source, target, batch))
    print(
        "| | seconds | snapshots/s | of read-only | CPU ms a snapshot: import, server "
        "| peak RSS |\n|---|---|---|---|---|---|"
    )
    print(
        f"| read only | {read.wall:.1f} | {count / read.wall:,.0f} | 1.00 | "
        f"{per(read.cpu, count)}, {per(read.server, count)} | - |"
    )
    for one in runs:
        rate = count / one.wall
        print(
            f"| {one.name} | {one.wall:.1f} | {rate:,.0f} | {rate / (count / read.wall):.2f} | "
            f"{per(one.cpu, count)}, {per(one.server, count)} | {one.rss_mb:.0f} MB |"
        )
    for one in runs:
        print(f"{one.name} said: {one.last}")
    print(f"the SQLite archive file holds {db_size / size:.3f} of the raw bytes")
    print(f"load at the end {os.getloadavg()[0]:.1f}; the server's CPU is every client's")


if __name__ == "__main__":
    main()
