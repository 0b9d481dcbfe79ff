"""Compiled modules: kept between the test run's processes, and made once.

Loaded as pytest's first plugin (``-p tests.bytecode`` in pyproject.toml), before the
plugins of installed packages, which pytest rewrites as it does test modules.
"""

from __future__ import annotations

import compileall
import os
import sys
import tempfile
from pathlib import Path

import pytest

# Where PYTHONDONTWRITEBYTECODE is set (as on the machine these figures come from), every
# pytest-xdist worker and every `scrapy` a test starts compiled each module it imports from
# source again: collecting alone cost a worker 12 s of CPU instead of 7, and pytest rewrote
# the 47 modules of the installed plugins (hypothesis, xdist, anyio ...) in each process.
# They are kept in a folder of their own, never beside the sources; the workers and the
# commands inherit the setting.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    os.environ.setdefault(
        "PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "zeroarchive-test-pycache")
    )
    sys.pycache_prefix = sys.pycache_prefix or os.environ["PYTHONPYCACHEPREFIX"]
    sys.dont_write_bytecode = False

PACKAGES = ("zeroarchive", "spiders", "pipelines", "middlewares", "settings", "tests")


def pytest_configure(config: pytest.Config) -> None:
    # In a fresh clone no compiled module exists yet: the workers, started at the same
    # moment, each compiled every module they imported, the test modules with their asserts
    # rewritten (five workers' start 40.5 CPU s; 32.2 with the controller compiling first,
    # about 3 CPU s).
    if not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None):
        compile_once(config)


def compile_once(config: pytest.Config) -> None:
    root = Path(config.rootpath)
    for package in PACKAGES:
        compileall.compile_dir(root / package, quiet=1, workers=1)
    _rewrite_test_modules(config, root / "tests")


def _rewrite_test_modules(config: pytest.Config, folder: Path) -> None:
    """What pytest's import hook writes when it first imports a test module: its code
    with the asserts rewritten, in pytest's own cache file. Through pytest's private
    functions (pinned in requirements-dev.txt): if they change, the workers rewrite the
    modules themselves as before."""
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        read, rewrite_test, write = rewrite._read_pyc, rewrite._rewrite_test, rewrite._write_pyc
    except (ImportError, AttributeError, KeyError):
        return
    for path in sorted(folder.glob("*.py")):
        if not (path.name.startswith("test_") or path.name == "conftest.py"):
            continue
        cache = rewrite.get_cache_dir(path)
        cache.mkdir(parents=True, exist_ok=True)
        pyc = cache / (path.name[:-3] + rewrite.PYC_TAIL)
        if read(path, pyc, state.trace) is None:
            source_stat, code = rewrite_test(path, config)
            write(state, code, source_stat, pyc)
