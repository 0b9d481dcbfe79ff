"""Posts per minute of `scrapy crawl facebook` on the emulator, and Chromium's peak memory.

    python bench/facebook.py [--posts 200] [--context-pages 20] [--interval 0.5]

Serves ``--posts`` posts (real recorded m.facebook.com posts and comments, see
tests/facebook_server.py) and runs the real command line into a fresh SQLite file, site
delay 0: discovery scrolls the page, then every post is opened with all its comments and
replies expanded. Meanwhile it samples, every ``--interval`` seconds, the summed RSS of
the crawl's Chromium processes (the browser and every renderer/utility process it
started), and prints posts/min (crawl time from Scrapy's ``elapsed_time_seconds``, and the
whole process), Chromium's peak and last-quarter memory, and the leftover processes.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# Its pages are served on 127.0.0.1, which the archive refuses unless allowed
# (docs/operators/private-targets.md): every crawl it starts inherits this.
os.environ["ZEROARCHIVE_ALLOW_PRIVATE_TARGETS"] = "1"
# Its saved pages name their images on the live sites: media stay off (never the internet).
os.environ["ZEROARCHIVE_MEDIA_ENABLED"] = "0"

from tests.facebook_server import FacebookServer  # noqa: E402
from tests.test_facebook import TAG, chromium_pids  # noqa: E402


def process_kind(pid: int) -> str:
    """browser, renderer, zygote, utility (network service...), gpu-process, ..."""
    try:
        # Chromium rewrites its children's command lines into one space-separated string.
        args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").split()
    except OSError:
        return "gone"
    for arg in args:
        if arg.startswith(b"--type="):
            return arg[len(b"--type=") :].decode()
    return "browser"


def memory_bytes(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process. RSS counts shared pages once per process, PSS splits
    them between the processes sharing them, so summed PSS is what the crawl really uses."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0, 0
    rss = re.search(r"^Rss:\s+(\d+) kB", rollup, re.MULTILINE)
    pss = re.search(r"^Pss:\s+(\d+) kB", rollup, re.MULTILINE)
    return (int(rss.group(1)) * 1024 if rss else 0), (int(pss.group(1)) * 1024 if pss else 0)


@dataclass(frozen=True)
class Sample:
    at: float
    rss: int
    pss: int
    processes: int
    pss_by_kind: dict[str, int]


def sample(pids: list[int], at: float) -> Sample:
    rss = pss = 0
    by_kind: dict[str, int] = {}
    for pid in pids:
        one_rss, one_pss = memory_bytes(pid)
        rss += one_rss
        pss += one_pss
        kind = process_kind(pid)
        by_kind[kind] = by_kind.get(kind, 0) + one_pss
    return Sample(at, rss, pss, len(pids), by_kind)


def _kind_pss(kind: str, x: Sample) -> int:
    return x.pss_by_kind.get(kind, 0)


def mean_mib(samples: list[Sample], value: Callable[[Sample], int]) -> float:
    return sum(value(s) for s in samples) / max(1, len(samples)) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=200)
    parser.add_argument("--context-pages", type=int, default=20)
    parser.add_argument("--interval", type=float, default=0.5)
    args = parser.parse_args()
    tag = secrets.token_hex(6)
    with tempfile.TemporaryDirectory() as tmp, FacebookServer(posts=args.posts) as fb:
        work = Path(tmp)
        db_url = f"sqlite:///{work / 'archive.db'}"
        env = {
            **os.environ,
            "ZEROARCHIVE_DB_URL": db_url,
            "PYTHONPATH": str(REPO),
            "SCRAPY_SETTINGS_MODULE": "settings.base",
            TAG: tag,
        }
        sites = work / "sites.yaml"
        sites.write_text(
            f"- name: bench\n  url: {fb.url(fb.page_path)}\n  type: facebook\n"
            "  config: {delay: 0}\n"
        )
        scrapy = [sys.executable, "-m", "scrapy"]
        subprocess.run([*scrapy, "load_sites", str(sites)], cwd=work, env=env, check=True)
        log = work / "crawl.log"
        started = time.monotonic()
        with log.open("w") as out:
            recycle = f"BROWSER_CONTEXT_PAGES={args.context_pages}"
            crawl = subprocess.Popen(
                [*scrapy, "crawl", "facebook", "-s", recycle],
                cwd=work,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
            samples: list[Sample] = []
            while crawl.poll() is None:
                samples.append(sample(chromium_pids(tag), time.monotonic() - started))
                time.sleep(args.interval)
        wall = time.monotonic() - started
        output = log.read_text()
        saved = int(re.search(r"'zeroarchive/snapshots_saved': (\d+)", output).group(1))
        elapsed = float(re.search(r"'elapsed_time_seconds': ([\d.]+)", output).group(1))
        contexts = re.search(r"'playwright/context_count': (\d+)", output)
        leftover = chromium_pids(tag)
        served = len({pid for post in fb.posts for pid in post.ids})
    # Snapshots only: discovery (one long page scrolled to the end) comes first and is a
    # different load; the runs of memory that matter are those over hundreds of posts.
    busy = [x for x in samples if x.processes > 0]
    first, last = busy[: len(busy) // 4], busy[len(busy) * 3 // 4 :]
    peak = max(busy, key=lambda x: x.pss)
    peak_rss = max(busy, key=lambda x: x.rss)
    print(f"posts served: {served}, snapshots saved: {saved}, exit code {crawl.returncode}")
    print(f"crawl: {elapsed:.1f} s -> {saved / elapsed * 60:.1f} posts/min")
    print(f"whole process (start-up included): {wall:.1f} s -> {saved / wall * 60:.1f} posts/min")
    print(
        f"Chromium memory, {len(busy)} samples: peak PSS {peak.pss / 2**20:.0f} MiB "
        f"({peak.processes} processes, at {peak.at:.0f} s); peak RSS sum "
        f"{peak_rss.rss / 2**20:.0f} MiB"
    )
    print(
        f"  PSS mean first quarter {mean_mib(first, lambda x: x.pss):.0f} MiB, "
        f"last quarter {mean_mib(last, lambda x: x.pss):.0f} MiB"
    )
    for kind in sorted({k for x in busy for k in x.pss_by_kind} - {"gone"}):
        of_kind = functools.partial(_kind_pss, kind)
        print(
            f"    {kind:<12} first quarter {mean_mib(first, of_kind):6.0f} MiB, "
            f"last quarter {mean_mib(last, of_kind):6.0f} MiB"
        )
    print(f"browser contexts: {contexts.group(1) if contexts else '?'}")
    # What the posts cost in the browser: scrolls, comment pages, pagers that did not go.
    for key, value in re.findall(r"'zeroarchive/(facebook/[a-z_]+)': (\d+)", output):
        print(f"  {key}: {value}")
    print(f"Chromium processes left after the crawl: {len(leftover)}")


if __name__ == "__main__":
    main()
