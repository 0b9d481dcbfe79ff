"""What a big video costs an embedded crawl's memory: one article page with a ``<video src>``
of SIZE MB, downloaded by yt-dlp and stored, against the same page with a tiny video.

A local server makes the big video on the fly (the tiny test MP4's first bytes, then a
repeating block, with its Content-Length: never the whole file in this process), and serves
the article and the tiny video. Each round runs ``scrapy crawl generic`` into a fresh SQLite
file (the database backend, or ``--media-dir`` for the directory one) and samples, every
50 ms, the resident memory (VmRSS) of the crawl's process and of each of its children (the
snapshot writer process once started; yt-dlp's short ffmpeg probes). It prints the peak of
each, the big video's minus the tiny one's (what the video added), and checks the stored
item's size and SHA-256.

    python bench/video.py [--size 500] [--rounds 2] [--media-dir]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.crawl_embedded import child_env  # noqa: E402

TINY = (REPO / "tests" / "fixtures" / "video" / "tiny.mp4").read_bytes()
BLOCK = bytes(range(256)) * 4096  # 1 MiB
MB = 2**20


def big_chunks(size: int) -> tuple[bytes, int]:
    """The big video's head (a real MP4's ftyp box) and its length."""
    return TINY[:64], size


class Handler(BaseHTTPRequestHandler):
    server: Server

    def do_GET(self) -> None:
        if self.path == "/news/1":
            body = (
                f"<!doctype html><html><head><title>Video</title></head><body><h1>Video</h1>"
                f'<p>An article with a video.</p><video src="/{self.server.video}"></video>'
                f"</body></html>"
            ).encode()
            self._send("text/html; charset=utf-8", body)
        elif self.path == "/":
            self._send("text/html", b'<a href="/news/1">1</a>')
        elif self.path == "/tiny.mp4":
            self._send("video/mp4", TINY)
        elif self.path == "/big.mp4":
            head, size = big_chunks(self.server.size)
            self.send_response(200)
            self.send_header("Content-Type", "video/mp4")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            try:
                self.wfile.write(head)
                left = size - len(head)
                while left > 0:
                    piece = BLOCK[: min(left, len(BLOCK))]
                    self.wfile.write(piece)
                    left -= len(piece)
            except ConnectionError:
                pass
        else:
            self.send_error(404)

    def _send(self, content_type: str, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    video = "tiny.mp4"
    size = 0


def big_digest(size: int) -> str:
    digest = hashlib.sha256()
    head, _ = big_chunks(size)
    digest.update(head)
    left = size - len(head)
    while left > 0:
        piece = BLOCK[: min(left, len(BLOCK))]
        digest.update(piece)
        left -= len(piece)
    return digest.hexdigest()


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(FileNotFoundError):
            found += [int(p) for p in (task / "children").read_text().split()]
    return found


def crawl(server: Server, work: Path, media_dir: bool, size_mb: int) -> tuple[int, int, str]:
    """One crawl: (peak RSS of the crawl process, peak RSS of its children; KiB), its log."""
    base = f"http://127.0.0.1:{server.server_port}"
    db = work / "bench.db"
    for leftover in work.glob("bench.db*"):
        leftover.unlink()
    sites = work / "sites.json"
    config = {
        "article": "/news/",
        "delay": 0,
        "media": ["video"],
        "media_max_bytes": (size_mb + 10) * MB,
    }
    sites.write_text(json.dumps([{"name": "videos", "url": base + "/", "config": config}]))
    env = child_env(
        PYTHONPATH=str(REPO),
        ZEROARCHIVE_DB_URL=f"sqlite:///{db}",
        ZEROARCHIVE_MEDIA_ENABLED="1",
        ZEROARCHIVE_ALLOW_PRIVATE_TARGETS="1",
        SCRAPY_SETTINGS_MODULE="settings.base",
    )
    subprocess.run(
        [sys.executable, "-m", "scrapy", "load_sites", str(sites)],
        cwd=work,
        env=env,
        check=True,
        capture_output=True,
    )
    settings = ["-s", "ROBOTSTXT_OBEY=False", "-s", "DOWNLOAD_TIMEOUT=120"]
    if media_dir:
        settings += ["-s", f"ZEROARCHIVE_MEDIA_DIR={work / 'media'}"]
    process = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "generic", *settings],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    peaks = {"crawl": 0, "children": 0}

    def sample() -> None:
        while process.poll() is None:
            peaks["crawl"] = max(peaks["crawl"], rss_kb(process.pid))
            for child in children(process.pid):
                peaks["children"] = max(peaks["children"], rss_kb(child))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    log, _ = process.communicate()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(log[-3000:])
    return peaks["crawl"], peaks["children"], log


def stored(work: Path) -> list[dict[str, object]]:
    env = child_env(
        PYTHONPATH=str(REPO),
        ZEROARCHIVE_DB_URL=f"sqlite:///{work / 'bench.db'}",
        SCRAPY_SETTINGS_MODULE="settings.base",
    )
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "media", "--json"],
        cwd=work,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=500, help="the big video, in MiB")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--media-dir", action="store_true", help="the directory backend")
    options = parser.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    server.size = options.size * MB
    threading.Thread(target=server.serve_forever, daemon=True).start()
    expected = big_digest(server.size)
    with tempfile.TemporaryDirectory(prefix="bench-video-") as tmp:
        work = Path(tmp)
        for round_number in range(options.rounds):
            for video in ("tiny.mp4", "big.mp4"):
                server.video = video
                started = time.perf_counter()
                crawl_peak, child_peak, _ = crawl(server, work, options.media_dir, options.size)
                elapsed = time.perf_counter() - started
                (row,) = stored(work)
                if video == "big.mp4":
                    assert row["stored"] and row["bytes"] == server.size, row
                    assert row["sha256"] == expected, row
                    big = crawl_peak, child_peak
                else:
                    assert row["stored"], row
                    tiny = crawl_peak, child_peak
                print(
                    f"round {round_number + 1} {video:8}: crawl peak {crawl_peak / 1024:7.1f} MiB, "
                    f"children's peak {child_peak / 1024:7.1f} MiB, {elapsed:6.1f} s"
                )
            print(
                f"round {round_number + 1}: the {options.size} MiB video added "
                f"{(big[0] - tiny[0]) / 1024:+.1f} MiB to the crawl's peak, "
                f"{(big[1] - tiny[1]) / 1024:+.1f} MiB to its children's"
            )
    server.shutdown()


if __name__ == "__main__":
    main()
