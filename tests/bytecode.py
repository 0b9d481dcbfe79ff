"""Every module compiled once, before the pytest-xdist workers start.

In a fresh clone no compiled module exists yet: each worker started at the same moment and
compiled every module it imported, the test modules with their asserts rewritten by pytest,
on its own (5.3 CPU s a worker of its collection's 9.5, against 4.4 once they exist; five
workers on two cores). The controller compiles them once instead (about 3 CPU s), where the
workers will look for them (``sys.pycache_prefix``, set by tests/conftest.py where
PYTHONDONTWRITEBYTECODE is set, else beside the sources).
"""

from __future__ import annotations

import compileall
from pathlib import Path

import pytest

PACKAGES = ("zeroarchive", "spiders", "pipelines", "middlewares", "settings", "tests")


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
