"""Rendered pages per minute and Chromium's peak memory, side by side with the same
articles crawled without a browser.

One local news site of ``--pages`` articles (the real saved pages of tests/test_render.py,
in turn): rendered, its list page fetches its links from a JSON API and each article is an
empty shell whose script writes the real page in (`render: true`, Debian's Chromium);
plain, the list page links the articles and each is served as saved. Both are crawled
with the real `scrapy crawl generic` (discover + snapshot, delay 0) into a fresh SQLite
file. Chromium's memory is the sum of the proportional set size (PSS: shared pages split
between the processes that map them) of every Chromium process of the crawl, sampled every
0.2 s; the peak is the highest sum.

    python bench/render.py [--pages 200]
"""

from __future__ import annotations

import argparse
import gzip
import html as html_text
import json
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# Its pages are served on 127.0.0.1, which the archive refuses unless allowed
# (docs/operators/private-targets.md): every crawl it starts inherits this.
os.environ["ZEROARCHIVE_ALLOW_PRIVATE_TARGETS"] = "1"
# Its saved pages name their images on the live sites: media stay off (never the internet).
os.environ["ZEROARCHIVE_MEDIA_ENABLED"] = "0"

from tests.conftest import scrapy  # noqa: E402
from tests.emulator import NOT_FOUND, EmulatorServer, Incoming, Reply, html  # noqa: E402
from tests.test_facebook import TAG, chromium_pids  # noqa: E402
from tests.test_generic import write_sites  # noqa: E402
from tests.test_render import EXPECTED, LIST_SCRIPT, NAMES, PAGES, shell  # noqa: E402

SETTINGS = ("-s", "LOG_LEVEL=INFO")


def saved_page(name: str) -> bytes:
    return gzip.decompress((PAGES / "html" / f"{name}.html.gz").read_bytes())


class BenchSite:
    def __init__(self, pages: int, rendered: bool) -> None:
        self.rendered = rendered
        self.paths = {f"/news/{n}": NAMES[n % len(NAMES)] for n in range(1, pages + 1)}
        self.shells = {name: shell(name) for name in NAMES}
        self.saved = {name: saved_page(name) for name in NAMES}

    def handle(self, request: Incoming) -> Reply:
        if request.path == "/news":
            if self.rendered:
                return html(200, LIST_SCRIPT)
            links = "".join(
                f'<li><a href="{path}">{html_text.escape(EXPECTED[f"{name}.html.gz"]["title"])}'
                "</a></li>"
                for path, name in self.paths.items()
            )
            return html(200, f"<!doctype html><html><body><ul>{links}</ul></body></html>")
        if request.path == "/api/latest.json":
            items = [
                {"path": path, "title": EXPECTED[f"{name}.html.gz"]["title"]}
                for path, name in self.paths.items()
            ]
            body = json.dumps(items, ensure_ascii=False).encode("utf-8")
            return Reply(200, (("Content-Type", "application/json"),), body)
        if request.path in self.paths:
            name = self.paths[request.path]
            if self.rendered:
                return html(200, self.shells[name])
            return Reply(200, (("Content-Type", "text/html"),), self.saved[name])
        return NOT_FOUND


def pss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        found = re.search(r"^Pss:\s+(\d+) kB", text, re.M)
        total += int(found.group(1)) if found else 0
    return total


def crawl(pages: int, rendered: bool) -> tuple[int, float, int, int]:
    """(pages saved, crawl seconds, peak Chromium PSS in KiB, Chromium processes seen)."""
    tag = f"bench-render-{time.monotonic_ns()}"
    with EmulatorServer(BenchSite(pages, rendered)) as server, tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        db_url = f"sqlite:///{cwd / 'bench.db'}"
        site = {
            "name": "bench",
            "url": server.url("/news"),
            "type": "news",
            "config": {"article": r"/news/\d+$", "render": rendered, "delay": 0},
        }
        loaded = scrapy(
            "load_sites", str(write_sites(cwd / "s.yaml", [site])), db_url=db_url, cwd=cwd
        )
        assert loaded.returncode == 0, loaded.output
        peak, seen = 0, set()
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.wait(0.2):
                pids = chromium_pids(tag)
                seen.update(pids)
                peak = max(peak, pss_kib(pids))

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            run = scrapy(
                "crawl",
                "generic",
                *SETTINGS,
                db_url=db_url,
                cwd=cwd,
                extra_env={TAG: tag},
                timeout=3600,
            )
        finally:
            done.set()
            sampler.join()
        assert run.returncode == 0 and "Traceback" not in run.output, run.output[-3000:]
        saved = re.search(r"'zeroarchive/snapshots_saved': (\d+)", run.output)
        elapsed = re.search(r"'elapsed_time_seconds': ([\d.]+)", run.output)
        assert saved and elapsed, run.output[-3000:]
        return int(saved.group(1)), float(elapsed.group(1)), peak, len(seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    args = parser.parse_args()
    rendered = crawl(args.pages, rendered=True)
    plain = crawl(args.pages, rendered=False)
    for label, (saved, seconds, peak, processes) in (("rendered", rendered), ("plain", plain)):
        print(
            f"{label:8} {saved:4d} pages in {seconds:6.1f} s: "
            f"{saved / seconds * 60:7.0f} pages/min; "
            f"Chromium peak PSS {peak / 1024:6.0f} MiB over {processes} process(es)"
        )
    ratio = (rendered[0] / rendered[1]) / (plain[0] / plain[1])
    print(f"rendered / plain pages per minute: {ratio:.2f}")


if __name__ == "__main__":
    main()
