"""Worker heartbeats: a redis key per live worker, named by its lease owner, that expires
unless renewed.

A worker sets ``zeroarchive:heartbeat:<owner>`` with an expiry of
``ZEROARCHIVE_HEARTBEAT_SECONDS`` when it opens and renews it every third of that from a
thread of its own (a busy reactor does not make a live worker look dead; a killed process
renews nothing). `scrapy schedule` asks which owners of leases still beat (``alive``) and
takes back at once what the others held.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Collection

import redis

logger = logging.getLogger(__name__)

HEARTBEAT_KEY = "zeroarchive:heartbeat:%s"


def heartbeat_key(owner: str) -> str:
    """
    >>> heartbeat_key("w0123456789abcde")
    'zeroarchive:heartbeat:w0123456789abcde'
    """
    return HEARTBEAT_KEY % owner


def alive(server: redis.Redis, owners: Collection[str]) -> set[str]:
    """The owners whose heartbeat key exists, in one round trip."""
    names = sorted(owners)
    if not names:
        return set()
    pipe = server.pipeline(transaction=False)
    for owner in names:
        pipe.exists(heartbeat_key(owner))
    return {owner for owner, found in zip(names, pipe.execute(), strict=True) if found}


class Heartbeat:
    """The heartbeat of one worker: ``start`` beats once and then every ``seconds / 3``
    from a daemon thread; ``stop`` deletes the key (the worker has put back what it held)."""

    def __init__(self, server: redis.Redis, owner: str, seconds: float, spider: str) -> None:
        if seconds < 1:
            raise ValueError(f"ZEROARCHIVE_HEARTBEAT_SECONDS must be at least 1, not {seconds}")
        self.server = server
        self.owner = owner
        self.seconds = seconds
        self.key = heartbeat_key(owner)
        self.value = json.dumps(
            {"host": socket.gethostname(), "pid": os.getpid(), "spider": spider}, sort_keys=True
        )
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False
        self.beats = 0

    def beat(self) -> bool:
        """Set the key with its expiry; False (logged once per outage) if redis is away."""
        try:
            self.server.set(self.key, self.value, px=int(self.seconds * 1000))
        except redis.RedisError as exc:
            if not self._failing:
                logger.warning("Heartbeat %s not renewed: redis is away (%s)", self.owner, exc)
            self._failing = True
            return False
        if self._failing:
            logger.info("Heartbeat %s renewed again", self.owner)
        self._failing = False
        self.beats += 1
        return True

    def start(self) -> None:
        self.beat()
        self._thread = threading.Thread(
            target=self._run, name=f"heartbeat-{self.owner}", daemon=True
        )
        self._thread.start()
        logger.info(
            "Worker %s: heartbeat every %.0f s (expires after %.0f s)",
            self.owner,
            self.seconds / 3,
            self.seconds,
        )

    def _run(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            started = time.monotonic()
            self.beat()
            if time.monotonic() - started > self.seconds / 3:
                logger.warning("Heartbeat %s took longer than a third of its expiry", self.owner)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            self.server.delete(self.key)
        except redis.RedisError as exc:
            logger.warning("Heartbeat %s not removed (it expires by itself): %s", self.owner, exc)
