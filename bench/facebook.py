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
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.facebook_server import FacebookServer  # noqa: E402
from tests.test_facebook import TAG, chromium_pids  # noqa: E402


def rss_bytes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        if found:
            total += int(found.group(1)) * 1024
    return total


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
            "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": "",
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
            recycle = f"FACEBOOK_CONTEXT_PAGES={args.context_pages}"
            crawl = subprocess.Popen(
                [*scrapy, "crawl", "facebook", "-s", recycle],
                cwd=work,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
            samples: list[tuple[float, int, int]] = []
            while crawl.poll() is None:
                pids = chromium_pids(tag)
                samples.append((time.monotonic() - started, rss_bytes(pids), len(pids)))
                time.sleep(args.interval)
        wall = time.monotonic() - started
        output = log.read_text()
        saved = int(re.search(r"'zeroarchive/snapshots_saved': (\d+)", output).group(1))
        elapsed = float(re.search(r"'elapsed_time_seconds': ([\d.]+)", output).group(1))
        contexts = re.search(r"'playwright/context_count': (\d+)", output)
        leftover = chromium_pids(tag)
        served = len({pid for post in fb.posts for pid in post.ids})
    peak = max(samples, key=lambda s: s[1])
    last = samples[len(samples) * 3 // 4 :]
    print(f"posts served: {served}, snapshots saved: {saved}, exit code {crawl.returncode}")
    print(f"crawl: {elapsed:.1f} s -> {saved / elapsed * 60:.1f} posts/min")
    print(f"whole process (start-up included): {wall:.1f} s -> {saved / wall * 60:.1f} posts/min")
    print(
        f"Chromium RSS sum: peak {peak[1] / 2**20:.0f} MiB ({peak[2]} processes, at "
        f"{peak[0]:.0f} s); last quarter mean {sum(s[1] for s in last) / len(last) / 2**20:.0f}"
        f" MiB; first-quarter mean "
        f"{sum(s[1] for s in samples[: len(samples) // 4]) / max(1, len(samples) // 4) / 2**20:.0f}"
        f" MiB; {len(samples)} samples"
    )
    print(f"browser contexts: {contexts.group(1) if contexts else '?'}")
    print(f"Chromium processes left after the crawl: {len(leftover)}")


if __name__ == "__main__":
    main()
