"""`scrapy parse_snapshots` with nothing new: how long a run takes to find that out.

Fills a fresh database (a SQLite file, or a new MariaDB database) by bulk inserts with
``--snapshots`` snapshots, ``--per-article`` per article (the first with a real compressed
Taiwanese news page, the others unchanged repeats stored without bytes, as the crawl
stores them), every one already mapped to a publication of the current parser version.
The bulk inserts fill parse_inbox too (its trigger), as a crawl with no parse run would;
so the first run is a full pass that also empties the inbox: timed on its own. Then times
``parse_pending()`` (the command's whole work) ``--repeat`` times; with ``--old REV`` also
the parse run of that git revision on the same database (before the first run), side by
side.

    python bench/parse_nothing_new.py [--snapshots 1000000] [--per-article 5]
        [--backend sqlite|mariadb|both] [--old a1aebe1]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conftest import fresh_mariadb  # noqa: E402
from tests.replay import LIST_PATH, tw_news_routes  # noqa: E402
from zeroarchive.parser import PARSER_VERSION  # noqa: E402
from zeroarchive.parser.run import ParseRunConfig, parse_pending  # noqa: E402
from zeroarchive.storage.compression import compress  # noqa: E402
from zeroarchive.storage.engine import make_engine, migrate  # noqa: E402
from zeroarchive.storage.schema import (  # noqa: E402
    article,
    article_snapshot,
    producer,
    producer_mapping,
    publication,
    publication_mapping,
    site,
)
from zeroarchive.storage.snapshots import content_hash  # noqa: E402

START = 1_735_689_600  # 2025-01-01
HOUR = 3600
CHUNK = 10_000
HEADERS = json.dumps({"Content-Type": ["text/html; charset=utf-8"], "Server": ["nginx"]})
# The old revision's parse run, on the database the bench filled (run from its own tree).
OLD_RUN = """
import sys, time
sys.path.insert(0, sys.argv[1])
from zeroarchive.parser.run import ParseRunConfig, parse_pending
from zeroarchive.storage.engine import make_engine
engine = make_engine(sys.argv[2])
started = time.perf_counter()
stats = parse_pending(engine, ParseRunConfig(), now=int(sys.argv[3]))
assert stats["parser/parsed"] == 0, stats
print(time.perf_counter() - started)
"""


@contextlib.contextmanager
def database(backend: str) -> Iterator[str]:
    if backend == "mariadb":
        with fresh_mariadb() as url:
            yield url
        return
    with tempfile.TemporaryDirectory() as scratch:
        yield f"sqlite:///{Path(scratch) / 'bench.db'}"


def pages() -> list[tuple[bytes, bytes, str]]:
    """(hash, compressed bytes, codec) of each of the 34 real article pages."""
    found = []
    for path, route in sorted(tw_news_routes().items()):
        if not path.startswith(LIST_PATH):
            data, codec = compress(route.body)
            found.append((content_hash(route.body), data, codec))
    return found


def fill(url: str, snapshots: int, per_article: int) -> float:
    engine = make_engine(url)
    migrate(engine)
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(
            site.insert().values(
                site_id=1,
                name="bench",
                url="https://news.example/",
                type="news",
                config="{}",
                created_at=START,
                updated_at=START,
            )
        )
        conn.execute(
            producer.insert().values(
                producer_id=1,
                name="bench",
                type="news",
                url="https://news.example/",
                languages="[]",
                first_seen_at=START,
                last_updated_at=START,
            )
        )
        conn.execute(producer_mapping.insert().values(site_id=1, producer_id=1, created_at=START))
    real = pages()
    articles = snapshots // per_article
    for first in range(1, articles + 1, CHUNK):
        ids = range(first, min(first + CHUNK, articles + 1))
        articles_rows, snapshot_rows, publication_rows, mapping_rows = [], [], [], []
        for article_id in ids:
            digest, data, codec = real[article_id % len(real)]
            url_ = f"https://news.example/a/{article_id}"
            articles_rows.append(
                {
                    "article_id": article_id,
                    "site_id": 1,
                    "url": url_,
                    "url_hash": secrets.token_bytes(16),
                    "article_type": "Article",
                    "created_at": START,
                    "first_snapshot_at": START,
                    "last_snapshot_at": START + (per_article - 1) * HOUR,
                    "snapshot_count": per_article,
                    "last_content_hash": digest,
                }
            )
            publication_rows.append(
                {
                    "publication_id": article_id,
                    "article_id": article_id,
                    "parser_version": PARSER_VERSION,
                    "version": 1,
                    "producer_id": 1,
                    "site_id": 1,
                    "canonical_url": url_,
                    "title": f"title {article_id}",
                    "publication_text": "text",
                    "first_seen_at": START,
                    "last_seen_at": START + (per_article - 1) * HOUR,
                    "last_updated_at": START,
                    "hashtags": "[]",
                    "urls": "[]",
                    "keywords": "[]",
                    "tags": "[]",
                    "metadata": "{}",
                    "comments": "[]",
                    "comment_count": 0,
                    "content_hash": digest,
                    "parsed_at": START,
                }
            )
            for n in range(per_article):
                at = START + n * HOUR
                snapshot_rows.append(
                    {
                        "article_id": article_id,
                        "snapshot_at": at,
                        "snapshot_at_date": dt.datetime.fromtimestamp(at, dt.UTC).date(),
                        "status": 200,
                        "final_url": url_,
                        "headers": HEADERS,
                        "encoding": "utf-8",
                        "content_hash": digest,
                        "raw_size": len(data) * 5,
                        "raw_data": data if n == 0 else None,
                        "codec": codec if n == 0 else None,
                    }
                )
                mapping_rows.append(
                    {
                        "article_id": article_id,
                        "snapshot_at": at,
                        "parser_version": PARSER_VERSION,
                        "publication_id": article_id,
                        "status": "ok",
                        "parsed_at": START,
                    }
                )
        with engine.begin() as conn:
            conn.execute(article.insert(), articles_rows)
            conn.execute(article_snapshot.insert(), snapshot_rows)
            conn.execute(publication.insert(), publication_rows)
            conn.execute(publication_mapping.insert(), mapping_rows)
    engine.dispose()
    return time.perf_counter() - started


def measure(url: str, repeat: int) -> tuple[float, list[float]]:
    """The first run (a full pass, and the fill's rows out of the inbox), then ``repeat``."""
    engine = make_engine(url)
    started = time.perf_counter()
    stats = parse_pending(engine, ParseRunConfig(), now=START)
    first = time.perf_counter() - started
    assert stats["parser/full_pass"] == 1 and stats["parser/parsed"] == 0, stats
    engine.dispose()
    times = []
    for _ in range(repeat):
        engine = make_engine(url)
        started = time.perf_counter()
        stats = parse_pending(engine, ParseRunConfig(), now=START)
        times.append(time.perf_counter() - started)
        assert stats["parser/parsed"] == 0 and not stats["parser/errors"], stats
        assert not stats["parser/full_pass"], stats
        engine.dispose()
    return first, times


def measure_old(url: str, revision: str) -> float:
    with tempfile.TemporaryDirectory() as tree:
        archive = subprocess.run(
            ["git", "archive", revision, "zeroarchive"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True)
        done = subprocess.run(
            [sys.executable, "-c", OLD_RUN, tree, url, str(START)],
            capture_output=True,
            text=True,
            check=True,
        )
    return float(done.stdout.strip().splitlines()[-1])


def run(backend: str, snapshots: int, per_article: int, repeat: int, old: str | None) -> None:
    with database(backend) as url:
        filled = fill(url, snapshots, per_article)
        # Gigabytes just written are still being flushed to disk: wait, or the runs pay for it.
        os.sync()
        old_seconds = measure_old(url, old) if old else None
        first, times = measure(url, repeat)
    total = (snapshots // per_article) * per_article
    line = (
        f"{backend:8} {total:>9} snapshots (filled in {filled:.0f} s): first run (full pass,"
        f" {total} inbox rows out) {first:.2f} s; then nothing new found in best"
        f" {min(times) * 1000:.1f} ms, median {statistics.median(times) * 1000:.1f} ms"
        f" ({repeat} runs)"
    )
    if old_seconds is not None:
        line += (
            f"; {old} took {old_seconds:.1f} s ({old_seconds / total * 1000:.3f} ms a snapshot)"
            f": {old_seconds / statistics.median(times):.0f}x the median"
        )
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshots", type=int, default=1_000_000)
    parser.add_argument("--per-article", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--backend", choices=("sqlite", "mariadb", "both"), default="both")
    parser.add_argument("--old", help="a git revision whose parse run to time side by side")
    args = parser.parse_args()
    for backend in ("sqlite", "mariadb") if args.backend == "both" else (args.backend,):
        run(backend, args.snapshots, args.per_article, args.repeat, args.old)


if __name__ == "__main__":
    main()
