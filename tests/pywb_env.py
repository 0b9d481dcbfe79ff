"""pywb for the replay tests, in a virtualenv of its own under the user's cache directory.

pywb 2.10 pins redis 2.10.6 and werkzeug 3.1.7, which the project's own pins refuse, so it
cannot share the project's environment. ``python tests/pywb_env.py`` builds the virtualenv
from tests/requirements-pywb.txt (the package registry only) and prints its path; the
replay tests build it themselves on first use. The directory is named after the
requirements' hash, so a changed pin builds a new one.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REQUIREMENTS = Path(__file__).with_name("requirements-pywb.txt")
COMPLETE = "zeroarchive-complete"


def venv_dir() -> Path:
    """Where the virtualenv is (``ZEROARCHIVE_PYWB_VENV`` overrides)."""
    chosen = os.environ.get("ZEROARCHIVE_PYWB_VENV")
    if chosen:
        return Path(chosen)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:12]
    return cache / "zeroarchive" / f"pywb-{digest}"


def wayback() -> Path | None:
    """pywb's ``wayback`` server script, or None when the virtualenv is not (fully) built."""
    target = venv_dir()
    script = target / "bin" / "wayback"
    return script if (target / COMPLETE).exists() and script.exists() else None


def ensure() -> Path:
    """Build the virtualenv unless it is there; return its directory. Test processes that
    all want it wait for the one that builds it."""
    target = venv_dir()
    if wayback() is not None:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with (target.parent / f"{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if wayback() is None:
            _build(target)
    return target


def _build(target: Path) -> None:
    # A virtualenv cannot be moved (its scripts name their directory), so it is built in
    # place and marked complete last: a half-built one is rebuilt, never used.
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
    pip = [str(target / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps"]
    subprocess.run([*pip, "-r", str(REQUIREMENTS)], check=True)
    (target / COMPLETE).write_text(REQUIREMENTS.read_text())


class Wayback:
    """One pywb server for a test module's collections: each start cost about 1.5 CPU s,
    and pywb finds a collection added under its directory at the next request."""

    def __init__(self, url: str, workdir: Path) -> None:
        self.url = url
        self.workdir = workdir
        self.count = 0

    def collection(self, warcs: list[Path], index: Path) -> str:
        """A new collection of these WARC files and this CDXJ index (not one pywb builds:
        the test is of ours); return its name."""
        self.count += 1
        name = f"c{self.count}"
        archive = self.workdir / "collections" / name / "archive"
        indexes = self.workdir / "collections" / name / "indexes"
        archive.mkdir(parents=True)
        indexes.mkdir()
        for path in warcs:
            shutil.copy(path, archive / path.name)
        shutil.copy(index, indexes / "index.cdxj")
        return name


@contextlib.contextmanager
def running(workdir: Path) -> Iterator[Wayback]:
    """Run pywb on 127.0.0.1 over the collections under ``workdir``."""
    script = wayback()
    assert script is not None, "pywb is not installed: run python tests/pywb_env.py"
    (workdir / "collections").mkdir(parents=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = (workdir / "wayback.log").open("wb")
    server = subprocess.Popen(
        [str(script), "--bind", "127.0.0.1", "--port", str(port), "-d", str(workdir)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        # On a loaded machine (load 25 on 2 cores) pywb took more than 30 s to listen.
        deadline = time.monotonic() + 300
        while server.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("pywb did not listen in 300 s") from None
                time.sleep(0.1)
        if server.poll() is not None:
            raise RuntimeError(f"pywb exited: {(workdir / 'wayback.log').read_text()}")
        yield Wayback(url, workdir)
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


_shared: Wayback | None = None


def shared(workdir: Callable[[], Path]) -> Wayback:
    """One pywb server for the whole test process (``running`` in a folder ``workdir()``
    makes, the first time), stopped when the process exits: the replay modules
    (test_warc, test_media_replay) each started one of their own, ~1.5 CPU s a start."""
    global _shared
    if _shared is None:
        stack = contextlib.ExitStack()
        _shared = stack.enter_context(running(workdir()))
        atexit.register(stack.close)
    return _shared


if __name__ == "__main__":
    print(ensure())
