"""`python -m scrapy ARGS` as a fresh process, started by forking a warm one.

Each command the tests run costs a new interpreter about a second of CPU before it does
anything (importing Scrapy, Twisted, SQLAlchemy, lxml): several hundred such starts were a
third of the test run's CPU. A fork server per pytest process imports those libraries once
(and the project's command, parsing and browser modules, never Twisted's reactor), and forks
a child per command. The
child is a process of its own as before: its working directory, environment, argv, exit
code, stdout and stderr are the command's; it runs `scrapy`'s `__main__` as `python -m`
does and exits through the interpreter's normal shutdown (atexit, thread joins).

Set ZEROARCHIVE_TEST_FORK=0 to start every command as a new interpreter instead.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# What the commands import: Scrapy and the libraries under it, and the project's command,
# spider, pipeline and middleware packages (none reads the environment when imported: the
# settings and environment are read when a command runs, in the child).
PRELOAD = (
    "alembic.command",
    "lxml.html",
    "pymysql",
    "redis",
    "scrapy.cmdline",
    "scrapy.crawler",
    # What every crawl's downloader loads when it is built: its TLS context factory (which
    # imports pyOpenSSL, and whose deprecated aliases walk the stack with inspect) cost
    # each forked crawl 0.38 CPU s, about 0.4 of the CPU of a small crawl.
    "scrapy.core.downloader.handlers.http11",
    "scrapy.responsetypes",
    "scrapy.spidermiddlewares.referer",
    "queuelib",
    "sqlite3",
    "sqlalchemy.orm",
    # The copies (MinHash), the Bloom filters and what reads them: parse_snapshots, copies,
    # search, the monitor, a crawl with Redis. Each such child imported it, 0.1-0.15 CPU s
    # (test_copies forks nine of them a test). The server's OpenBLAS starts no thread of
    # its own (OPENBLAS_NUM_THREADS=1 below), so the fork copies a whole process.
    "numpy",
    # What every parsing command (parse_snapshots, recheck, save, copies) and every browser
    # crawl imports of the project's own, about 0.35 and 0.1 CPU s a child.
    "zeroarchive.copies.hook",
    "zeroarchive.parser.generic",
    "zeroarchive.crawl.browser_handler",
)
#: What some commands import when they run, which most test processes never start: the
#: server imports it before the first such command's fork, so that only its first child pays
#: (CPU s in each child: pyairtable's pydantic models 1.2, cdxj-indexer's pyamf with
#: pkg_resources 0.8, the wacz tool's frictionless 0.7 more).
WARM = {
    # The parser's libraries (trafilatura and what it imports, 0.07 CPU s).
    "parse_snapshots": ("trafilatura",),
    "recheck": ("trafilatura",),
    "export_warc": ("cdxj_indexer.main",),
    "rotate_snapshots": ("cdxj_indexer.main",),
    "sync_sites": ("pyairtable",),
    "import_0archive": ("pyairtable",),
}


def warm_modules(args: list[str]) -> list[str]:
    """The modules the server imports before forking ``scrapy ARGS``."""
    modules = list(WARM.get(args[0], ())) if args else []
    if args[:1] == ["export_warc"] and "--wacz" in args:
        modules.append("wacz.main")
    return modules


PRELOAD_PACKAGES = (
    "scrapy.commands",
    "zeroarchive.commands",
    "spiders",
    "pipelines",
    "middlewares",
)

SERVER = r"""
import importlib, json, os, sys, threading
sys.path[:1] = [sys.argv[1]]
PREFILL = (
    ("zeroarchive.storage.engine", "known_revisions"),
    ("zeroarchive.storage.pymysql_tls", "preferred_context"),
    ("zeroarchive.copies.fingerprint", "_tables"),
)
modules, packages = sys.argv[2].split(","), sys.argv[3].split(",")
for name in modules:
    try:
        importlib.import_module(name)
    except ImportError:
        if not name.startswith("zeroarchive."):
            raise  # else an older release of the project (tests/test_upgrade.py) without it
from scrapy.utils.misc import walk_modules_iter
for name in packages:
    for _ in walk_modules_iter(name): pass
# What each command otherwise works out on its first connection, the same in every child:
# the migration scripts' revisions (read from their source) and PyMySQL's TLS context
# (the system's CA certificates loaded), about 12 ms of CPU a command together.
for name, function in PREFILL:
    try:
        getattr(importlib.import_module(name), function)()
    except (ImportError, AttributeError):
        pass  # an older release of the project (tests/test_upgrade.py) without it
# A fork copies one thread only, and the reactor is chosen by each command's settings.
assert threading.active_count() == 1, "a preload started a thread"
if os.path.isdir("/proc/self/task"):  # a native library's thread (OpenBLAS's) too
    assert len(os.listdir("/proc/self/task")) == 1, "a preload started a native thread"
assert "twisted.internet.reactor" not in sys.modules, "a preload installed the reactor"
# Children neither collect nor copy what the server holds.
import gc
gc.freeze()
requests = os.fdopen(0, "rb", buffering=0)


def warm(request):
    for name in request.get("warm", ()):
        if name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:
                continue  # the command's own import tells what is wrong
            assert threading.active_count() == 1, "a warm import started a thread"
            gc.freeze()


def answer(line):
    os.write(1, (line + "\n").encode())


# Each command runs beside the test (which may signal or wait for it): its pid is answered
# at once, its exit status when it ends.
def serve_background():
    import select
    answer("ready")
    pending = b""
    while True:
        if select.select([0], [], [], 0.05)[0]:
            chunk = os.read(0, 65536)
            if not chunk:
                return None
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                warm(request)
                pid = os.fork()
                if pid == 0:
                    return request
                answer(f"pid {pid}")
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            answer(f"exit {pid} {os.waitstatus_to_exitcode(status)}")


request = serve_background()
if request is not None:
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        if fd == 2 and path == request["stdout"]:
            os.dup2(1, 2)  # one log of both, as Popen(stderr=STDOUT) writes it
            continue
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(out, fd)
        os.close(out)
    os.close(null)
    # What `python -m` puts first on the path: the working directory, then PYTHONPATH.
    extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:1] = [request["cwd"], *extra]
    import atexit, runpy, signal, traceback
    sys.argv = ["-m", *request["args"]]
    code = 0
    try:
        runpy.run_module("scrapy", run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        code = stop.code
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    # The interpreter's exit but for tearing down every module, which would write to (and
    # so copy) most of the memory shared with the server.
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    if code == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)
"""


class ForkServer:
    """One warm interpreter that forks a child per command."""

    def __init__(self, repo: Path) -> None:
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                SERVER,
                str(repo),
                ",".join(PRELOAD),
                ",".join(PRELOAD_PACKAGES),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Read when numpy is imported, by the server only: each child's environment is
            # its command's own.
            env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
        )
        if self._read_line(timeout=120) != "ready":
            raise RuntimeError("the fork server did not start")

    def _read_line(self, timeout: float | None) -> str | None:
        """A line of the server's answer, or None when ``timeout`` passed first."""
        assert self._process.stdout is not None
        pipe = self._process.stdout.fileno()
        line = b""
        while not line.endswith(b"\n"):
            ready, _, _ = select.select([pipe], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(pipe, 1)
            if not chunk:
                raise RuntimeError("the fork server ended")
            line += chunk
        return line.decode().strip()

    def close(self, reader: threading.Thread | None = None) -> None:
        assert self._process.stdin is not None and self._process.stdout is not None
        if self._process.poll() is None:
            self._process.stdin.close()
            self._process.wait(timeout=30)
        if reader is not None:
            reader.join(timeout=10)  # it reads the pipe until the server's end
        self._process.stdout.close()


def _text(path: Path) -> str:
    # As subprocess.run(text=True) decodes: the locale's encoding, newlines translated.
    with path.open(encoding=None, newline=None, errors="strict") as handle:
        return handle.read()


class BackgroundServer:
    """One warm interpreter that forks a child per command and does not wait for it: the
    commands run beside the test (and one another) as ``subprocess.Popen`` would run
    them."""

    def __init__(self, repo: Path) -> None:
        self._server = ForkServer(repo)
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._pids: list[int] = []
        self._started: list[int] = []
        self._exits: dict[int, int] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                line = self._server._read_line(timeout=None)
            except RuntimeError:
                line = None
            with self._changed:
                if line is None:
                    self._pids.append(0)
                    for pid in self._running():
                        self._exits[pid] = -signal.SIGKILL
                    self._changed.notify_all()
                    return
                kind, *values = line.split()
                if kind == "pid":
                    pid = int(values[0])
                    # pid_max is 32,768 here and a test run starts more processes than
                    # that: an earlier child's exit under the same pid is not this one's.
                    self._exits.pop(pid, None)
                    self._pids.append(pid)
                else:
                    self._exits[int(values[0])] = int(values[1])
                self._changed.notify_all()

    def _running(self) -> list[int]:
        return [pid for pid in self._started if pid not in self._exits]

    def start(
        self, args: list[str], env: dict[str, str], cwd: Path, stdout: Path, stderr: Path
    ) -> ForkedProcess:
        assert self._server._process.stdin is not None
        request = {
            "args": args,
            "warm": warm_modules(args),
            "env": env,
            "cwd": str(cwd),
            "stdout": str(stdout),
            "stderr": str(stderr),
        }
        with self._lock, self._changed:
            self._server._process.stdin.write(json.dumps(request).encode() + b"\n")
            self._server._process.stdin.flush()
            if not self._changed.wait_for(lambda: self._pids, timeout=60):
                raise RuntimeError("the fork server did not fork")
            pid = self._pids.pop(0)
            if not pid:
                raise RuntimeError("the fork server ended")
            self._started.append(pid)
        return ForkedProcess(self, pid, [sys.executable, "-m", "scrapy", *args])

    def run(
        self, args: list[str], env: dict[str, str], cwd: Path, timeout: float
    ) -> tuple[int, str, str]:
        """(returncode, stdout, stderr) of `python -m scrapy ARGS`, as subprocess.run."""
        with tempfile.TemporaryDirectory(prefix="forked-cli-") as folder:
            out, err = Path(folder) / "stdout", Path(folder) / "stderr"
            child = self.start(args, env, cwd, out, err)
            try:
                code = child.wait(timeout)
            except subprocess.TimeoutExpired as late:
                child.kill()
                child.wait(60)
                late.output, late.stderr = _text(out), _text(err)
                raise
            return code, _text(out), _text(err)

    def exit_code(self, pid: int, timeout: float | None) -> int | None:
        with self._changed:
            self._changed.wait_for(lambda: pid in self._exits, timeout=timeout)
            return self._exits.get(pid)

    def alive(self) -> bool:
        return self._server._process.poll() is None and self._reader.is_alive()

    def close(self) -> None:
        self._server.close(self._reader)


class ForkedProcess:
    """A command the background server started: the part of ``subprocess.Popen`` the
    tests use (pid, poll, wait, send_signal, terminate, kill, returncode)."""

    def __init__(self, server: BackgroundServer, pid: int, args: list[str]) -> None:
        self._server = server
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.exit_code(self.pid, timeout=0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._server.exit_code(self.pid, timeout=timeout)
        if self.returncode is None:
            assert timeout is not None
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        # Not yet reaped (no exit answered): the pid is still this child's.
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


_background: BackgroundServer | None = None
_server_lock = threading.Lock()


def background_server(repo: Path) -> BackgroundServer | None:
    """This process's background fork server for the project at ``repo``, started on first
    use (None when switched off or when it could not start)."""
    global _background
    if os.environ.get("ZEROARCHIVE_TEST_FORK", "1") == "0":
        return None
    with _server_lock:
        if _background is None or not _background.alive():
            try:
                _background = BackgroundServer(repo)
            except RuntimeError:
                return None
            atexit.register(_background.close)
        return _background
