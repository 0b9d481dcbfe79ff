"""The project type-checks: mypy over the packages pyproject.toml names ([tool.mypy]).

A test rather than a step of its own before the tests: mypy takes about 12 CPU seconds
from a fresh clone (no cache), and run as one test among the others it uses the time the
cores would wait on the tests' servers and timers instead of adding its own in front.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO


def test_mypy_finds_no_error() -> None:
    # Where mypy keeps no cache yet (a fresh clone, CI) nothing would read the one it
    # writes: 45 MB, 2 of its 19 CPU s. Where someone has run it, its cache is used.
    cache = [] if (REPO / ".mypy_cache").is_dir() else ["--cache-dir", os.devnull]
    done = subprocess.run(
        [sys.executable, "-m", "mypy", *cache],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout, done.stdout
