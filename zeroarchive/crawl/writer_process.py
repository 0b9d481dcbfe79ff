"""The crawl's writer process: one child process that writes the snapshot batches, so that
compressing, hashing and SQL run beside the crawl instead of taking turns with it for
Python's one lock (the GIL). With the pages' settling it took over (encoding, canonical
claims), the embedded crawl's bench went from about 0.76 to 0.86 of fetch-only (medians
of runs side by side), the distributed one not lower (bench/README.md, "Issue 28 point
4: the writer process").

The crawl sends each batch with the records of its sites over a socket pair and waits, in
a thread, for the counts (``snapshot_batches.write_batch``); the child's log records come
back the same way, as they happen, and are logged by the crawl. The child ignores Ctrl-C
and SIGTERM, which a terminal or a service manager sends to the whole process group: the
crawl decides when writing ends, and the child leaves when the crawl closes its end (or
dies). A child that dies is replaced, and the batch it held is written by the new one.

    python -m zeroarchive.crawl.writer_process FD   (started by WriterProcess, not by hand)
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from zeroarchive.core.quiet_log import lowest_shown_level
from zeroarchive.core.services import pauses, set_pauses, wait_for
from zeroarchive.core.shown import mask_logs
from zeroarchive.crawl.snapshot_batches import Answer, Count, Sites, write_batch
from zeroarchive.storage.archive import open_archive

# Not __name__: the child runs this module as __main__, and its records name their logger.
logger = logging.getLogger("zeroarchive.crawl.writer_process")

# A batch is a few MB of pages: large socket buffers let it pass in a few system calls.
SOCKET_BUFFER = 2 * 1024 * 1024
# How long closing waits for the child to finish and leave before it is killed.
EXIT_SECONDS = 30.0


class WriterProcess:
    """The crawl's end of one writer process for the archive at ``url``. ``write`` blocks:
    call it from a thread, one batch at a time."""

    def __init__(self, url: str, retry_seconds: float, media_dir: str = "") -> None:
        self.url = url
        self.retry_seconds = retry_seconds
        self.media_dir = media_dir
        self._ready = False
        self.process, self.connection = self._start()

    def _start(self) -> tuple[subprocess.Popen[bytes], Connection]:
        ours, theirs = socket.socketpair()
        for end in (ours, theirs):
            end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
            end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
        # The child finds zeroarchive where this process did (a scrapyd egg included).
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            env=env,
        )
        theirs.close()
        connection = Connection(ours.detach())
        # The child pauses between tries as this process does.
        connection.send(
            (self.url, self.retry_seconds, self.media_dir, pauses(), lowest_shown_level())
        )
        return process, connection

    def ready(self) -> bool:
        """Whether the child has loaded its modules and opened the archive (a child that
        died counts as ready: ``write`` finds out and replaces it)."""
        try:
            while not self._ready and self.connection.poll(0):
                self._take(self.connection.recv())
        except (EOFError, OSError):
            return True
        return self._ready

    def write(self, batch: Sequence[Answer], sites: Sites) -> list[Count]:
        """Write ``batch`` in the child; its counts. A child that died is replaced once
        and the batch sent again; if the new one dies too, the error is raised."""
        try:
            return self._exchange(batch, sites)
        except (EOFError, OSError):
            logger.error(
                "The snapshot writer process (pid %d) stopped (%s); a new one writes its "
                "batch of %d",
                self.process.pid,
                self._exit_status(),
                len(batch),
            )
            self.connection.close()
            self._ready = False
            self.process, self.connection = self._start()
            return self._exchange(batch, sites)

    def _exchange(self, batch: Sequence[Answer], sites: Sites) -> list[Count]:
        self.connection.send((list(batch), dict(sites)))
        while True:
            counts = self._take(self.connection.recv())
            if counts is not None:
                return counts

    def _take(self, message: tuple[str, Any]) -> list[Count] | None:
        """Handle one message of the child's; a batch's counts are returned."""
        kind, payload = message
        if kind == "log":
            logging.getLogger(payload.name).handle(payload)
        elif kind == "ready":
            self._ready = True
        else:
            return list(payload)
        return None

    def _exit_status(self) -> str:
        try:
            code = self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return "still running, its connection lost"
        return f"killed by signal {-code}" if code < 0 else f"exit status {code}"

    def close(self) -> None:
        """End the child once it has written what it holds (it leaves when its
        connection closes); one still waiting for the database holds nothing."""
        ready = self.ready()
        self.connection.close()
        if not ready:
            self.process.kill()
        try:
            self.process.wait(timeout=EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            logger.error(
                "The snapshot writer process (pid %d) did not end; killed", self.process.pid
            )
            self.process.kill()
            self.process.wait()


class _ToCrawl:
    """The queue a QueueHandler puts the child's log records in: the crawl's connection."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def put_nowait(self, record: logging.LogRecord) -> None:
        self.connection.send(("log", record))


def serve(connection: Connection) -> None:
    """The child: write each batch that comes, answer with its counts, until the crawl
    closes the connection."""
    # Its lines reach the crawl's log formatted here, masked as the crawl's own are.
    mask_logs()
    root = logging.getLogger()
    root.handlers = [logging.handlers.QueueHandler(_ToCrawl(connection))]  # type: ignore[arg-type]
    url, retry_seconds, media_dir, (first, longest), level = connection.recv()
    # Records the crawl would not show are not made, nor sent to it: a site whose pages all
    # make a canonical claim that is ignored logs one at DEBUG per page.
    root.setLevel(level)
    set_pauses(first, longest)
    # Started while the database is away, it waits for it (the crawl's thread writes
    # meanwhile, and closing the crawl ends a child that is still waiting).
    archive = wait_for(lambda: open_archive(url=url))
    connection.send(("ready", None))
    while True:
        try:
            message: Any = connection.recv()
        except EOFError:
            return
        batch, sites = message
        connection.send(("counts", write_batch(archive, batch, sites, retry_seconds, media_dir)))


def main() -> None:
    for ignored in (signal.SIGINT, signal.SIGTERM):
        signal.signal(ignored, signal.SIG_IGN)
    connection = Connection(int(sys.argv[1]))
    # A broken connection: the crawl is gone, nobody is left to answer.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        try:
            serve(connection)
        except Exception:
            logger.exception("The snapshot writer process failed")  # in the crawl's log
            sys.exit(1)


if __name__ == "__main__":
    main()
