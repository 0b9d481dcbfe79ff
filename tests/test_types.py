"""The project type-checks: mypy over the packages pyproject.toml names ([tool.mypy]).

A test rather than a step of its own before the tests: mypy takes about 20 CPU seconds
from a fresh clone (no cache), and run as one test among the others it uses the time the
cores would wait on the tests' servers and timers instead of adding its own in front.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_mypy_finds_no_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout, done.stdout
