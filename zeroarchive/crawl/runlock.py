"""A per-site run lock, so two overlapping crawls of one site cannot run at once.

It is an OS file lock: the kernel releases it when the process dies, so a crashed run
never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from pathlib import Path
from typing import IO


def default_lock_dir(db_url: str) -> Path:
    """One lock folder per database, so two archives on one machine do not block each other."""
    digest = hashlib.sha256(db_url.encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"zeroarchive-locks-{digest}"


class SiteRunLocks:
    def __init__(self, lock_dir: Path) -> None:
        self.lock_dir = lock_dir
        self._held: dict[int, IO[str]] = {}

    def acquire(self, site_id: int) -> bool:
        """Take the lock of ``site_id`` without waiting; False if another run holds it."""
        if site_id in self._held:
            return True
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        handle = open(self.lock_dir / f"site-{site_id}.lock", "a+")  # noqa: SIM115
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._held[site_id] = handle
        return True

    def holder(self, site_id: int) -> str:
        """The pid written by the run that holds the lock, for the error message."""
        try:
            return (self.lock_dir / f"site-{site_id}.lock").read_text().strip() or "?"
        except OSError:
            return "?"

    @property
    def held(self) -> list[int]:
        return sorted(self._held)

    def release(self, site_id: int) -> None:
        handle = self._held.pop(site_id, None)
        if handle is not None:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

    def release_all(self) -> None:
        for handle in self._held.values():
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()
        self._held.clear()
