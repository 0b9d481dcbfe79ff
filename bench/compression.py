"""Bytes per snapshot over a news plan, for pages whose ads and timestamps change.

Serves the Taiwanese news pages of the corpora (tw-news-2014, tw-news-twnews), each under
``--copies`` prefixes, behind one list page on 127.0.0.1. Before every fetch of an article
its page changes a few bytes, as live news pages do: a timestamp near the top and an ad id
in the middle. Then it runs the news plan: ``scrapy crawl generic`` once an hour for
``--hours`` hours on the fake clock (ZEROARCHIVE_FAKE_NOW), so every article is
snapshotted every hour, each snapshot changed.

Side by side, on the same snapshots: the bytes stored (zstd-ref frames against the
month's stand-alone frame), and the bytes the previous code stored (a stand-alone level-3
zstd frame per changed snapshot, computed with ``compress()`` on the bytes read back),
each against the raw bytes; plus the CPU time to write and to read them back.

    python bench/compression.py [--copies 3] [--hours 24]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import lzma
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# Its pages are served on 127.0.0.1, which the archive refuses unless allowed
# (docs/operators/private-targets.md): every crawl it starts inherits this.
os.environ["ZEROARCHIVE_ALLOW_PRIVATE_TARGETS"] = "1"
# Its saved pages name their images on the live sites: media stay off (never the internet).
os.environ["ZEROARCHIVE_MEDIA_ENABLED"] = "0"

from sqlalchemy import create_engine, select  # noqa: E402

from bench.corpora import CORPORA  # noqa: E402
from tests.replay import ReplayServer, Route  # noqa: E402
from zeroarchive.storage.compression import compress, compress_against, decompress  # noqa: E402
from zeroarchive.storage.schema import article_snapshot  # noqa: E402
from zeroarchive.storage.snapshots import read_snapshot  # noqa: E402

T0 = 1_767_225_600  # 2026-01-01 00:00 UTC: a day well inside one month
HOUR = 3600
CRAWL_SETTINGS = ["-s", "LOG_LEVEL=INFO", "-s", "ROBOTSTXT_OBEY=False"]


def news_pages() -> list[bytes]:
    """The raw bytes of the Taiwanese news pages of the corpora."""
    pages = [
        gzip.decompress(p.read_bytes()) for p in sorted(CORPORA.glob("tw-news-2014/html/*.gz"))
    ]
    pages += [lzma.decompress(p.read_bytes()) for p in sorted(CORPORA.glob("tw-news-twnews/*.xz"))]
    if not pages:
        raise SystemExit(f"no tw-news pages under {CORPORA}")
    return pages


def changed(page: bytes, fetch: int, rng: random.Random) -> bytes:
    """``page`` as fetch number ``fetch`` serves it: a new timestamp and a new ad id."""
    stamp = b'<meta name="fetched" content="2026-01-01T%02d:%02d:%02d+08:00">' % (
        fetch % 24,
        rng.randrange(60),
        rng.randrange(60),
    )
    ad = b'<div class="ad" data-ad-id="%016x"></div>' % rng.getrandbits(64)
    head = max(page.find(b">") + 1, 0)
    middle = len(page) // 2
    return page[:head] + stamp + page[head:middle] + ad + page[middle:]


def ratio(rows: list[Any]) -> float:
    """Stored bytes over raw bytes of ``rows``."""
    return sum(len(row.raw_data) for row in rows) / max(sum(row.raw_size for row in rows), 1)


def stat(log: str, key: str) -> int:
    found = re.search(rf"'{re.escape(key)}': (\d+)", log)
    return int(found.group(1)) if found else 0


def scrapy(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or "Traceback" in done.stderr:
        raise SystemExit(f"scrapy {args} failed:\n{done.stderr[-3000:]}")
    return done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--hours", type=int, default=24)
    options = parser.parse_args()

    originals = {
        f"/c{copy}/{number}.html": page
        for copy in range(options.copies)
        for number, page in enumerate(news_pages())
    }
    links = "".join(f'<li><a href="{path}">{path}</a></li>' for path in originals)
    listing = f"<html><body><ul>{links}</ul></body></html>".encode()
    html = (("Content-Type", "text/html"),)
    routes = {"/list.html": Route(200, (("Content-Type", "text/html; charset=utf-8"),), listing)}
    rng = random.Random(13)
    with ReplayServer(routes) as server, tempfile.TemporaryDirectory() as tmp:
        db_url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        env = {**os.environ, "PYTHONPATH": str(REPO), "ZEROARCHIVE_DB_URL": db_url}
        site = {
            "name": "tw-news",
            "url": server.url("/list.html"),
            "type": "news",
            "config": {"article": r"/c\d+/\d+\.html$", "delay": 0},
        }
        sites = Path(tmp) / "sites.json"
        sites.write_text(json.dumps([site]))
        scrapy(["load_sites", str(sites)], env)
        for hour in range(options.hours):
            for path, page in originals.items():
                server.routes[path] = Route(200, html, changed(page, hour, rng))
            log = scrapy(
                [
                    "crawl",
                    "generic",
                    "-a",
                    f"mode={'all' if hour == 0 else 'snapshot'}",
                    *CRAWL_SETTINGS,
                ],
                {**env, "ZEROARCHIVE_FAKE_NOW": str(T0 + hour * HOUR)},
            )
            saved = stat(log, "zeroarchive/snapshots_saved")
            if saved != len(originals):
                raise SystemExit(f"hour {hour}: {saved} of {len(originals)} saved:\n{log[-3000:]}")
            print(f"hour {hour:2d}: {saved} snapshots saved", file=sys.stderr)

        engine = create_engine(db_url)
        with engine.connect() as conn:
            rows = conn.execute(
                select(
                    article_snapshot.c.article_id,
                    article_snapshot.c.snapshot_at,
                    article_snapshot.c.raw_size,
                    article_snapshot.c.raw_data,
                    article_snapshot.c.codec,
                    article_snapshot.c.reference_at,
                    article_snapshot.c.content_hash,
                ).order_by(article_snapshot.c.article_id, article_snapshot.c.snapshot_at)
            ).all()
        raws = [read_snapshot(engine, row.article_id, row.snapshot_at).raw for row in rows]
        engine.dispose()
    if any(
        hashlib.sha256(page).digest() != bytes(row.content_hash)
        for row, page in zip(rows, raws, strict=True)
    ):
        raise SystemExit("a snapshot did not read back as served")

    raw = sum(row.raw_size for row in rows)
    new = sum(len(row.raw_data) for row in rows)
    first = [row for row in rows if row.codec == "zstd"]
    resnapshots = [row for row in rows if row.codec == "zstd-ref"]
    # The previous code's frames of the same snapshots, and the CPU of both ways of writing.
    started = time.process_time()
    old_frames = [compress(page)[0] for page in raws]
    write_old = time.process_time() - started
    started = time.process_time()
    references: dict[int, bytes] = {}
    for row, page in zip(rows, raws, strict=True):
        if row.article_id in references:
            compress_against(page, references[row.article_id])
        else:
            references[row.article_id] = page
            compress(page)
    write_new = time.process_time() - started
    started = time.process_time()
    for frame in old_frames:
        decompress(frame, "zstd")
    read_old = time.process_time() - started
    by_time = {
        (row.article_id, row.snapshot_at): page for row, page in zip(rows, raws, strict=True)
    }
    started = time.process_time()
    for row in rows:
        reference = by_time.get((row.article_id, row.reference_at))
        decompress(bytes(row.raw_data), row.codec, reference)
    read_new = time.process_time() - started
    old = sum(len(frame) for frame in old_frames)

    count = len(rows)
    print(
        f"{len(originals)} articles x {options.hours} hourly snapshots = {count} snapshots, "
        f"raw {raw / count / 1024:.1f} KiB/snapshot, every one changed"
    )
    print(f"first snapshots (stand-alone zstd):  {ratio(first):.4f} stored/raw")
    print(f"re-snapshots (zstd-ref frames):      {ratio(resnapshots):.4f} stored/raw")
    print(
        f"CPU per snapshot, write: stand-alone {write_old / count * 1000:.2f} ms, "
        f"with references {write_new / count * 1000:.2f} ms"
    )
    print(
        f"CPU per snapshot, read:  stand-alone {read_old / count * 1000:.2f} ms, "
        f"with references {read_new / count * 1000:.2f} ms"
    )
    print(f"stored/raw, previous code (stand-alone zstd-3 frames): {old / raw:.4f}")
    print(f"stored/raw, now (zstd-ref against the month's frame):   {new / raw:.4f}")
    print(f"ratio now / previous: {new / old:.3f} ({old / new:.1f}x fewer bytes)")


if __name__ == "__main__":
    main()
