"""Where the test suite's CPU goes: a pytest plugin that writes, for each test, the CPU
seconds of its pytest process and every process below it (forked commands, servers,
Chromium, writer processes), with the test's wall time.

    CPU_PROFILE_DIR=/tmp/cpu python -m pytest -n 4 -p tests.cpu_profile
    python tests/cpu_profile.py /tmp/cpu      # the heaviest files and tests

Processes that end during a test count through their parent's ``cutime``; one that
outlives its test (a module's browser) is counted in the test that sees it end.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

_TICK = os.sysconf("SC_CLK_TCK")


def _tree_cpu(root: int) -> float:
    """CPU seconds (user + system, own and reaped children's) of ``root`` and below it."""
    parents: dict[int, int] = {}
    seconds: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        parents[int(name)] = int(fields[1])
        seconds[int(name)] = sum(int(x) for x in fields[11:15]) / _TICK
    total = 0.0
    for pid, cpu in seconds.items():
        ancestor = pid
        while ancestor not in (0, root) and ancestor in parents:
            ancestor = parents[ancestor]
        if ancestor == root:
            total += cpu
    return total


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    folder = Path(os.environ.get("CPU_PROFILE_DIR", "cpu-profile"))
    me = os.getpid()
    cpu, wall = _tree_cpu(me), time.monotonic()
    yield
    cpu, wall = _tree_cpu(me) - cpu, time.monotonic() - wall
    folder.mkdir(parents=True, exist_ok=True)
    line = {"test": item.nodeid, "cpu": round(cpu, 3), "wall": round(wall, 3)}
    with (folder / f"{me}.jsonl").open("a") as out:
        out.write(json.dumps(line) + "\n")


def report(folder: Path, top: int = 30) -> str:
    rows = [json.loads(line) for f in folder.glob("*.jsonl") for line in f.open()]
    files: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for row in rows:
        totals = files[row["test"].split("::")[0]]
        totals[0] += 1
        totals[1] += row["cpu"]
        totals[2] += row["wall"]
    lines = [f"{len(rows)} tests, {sum(r['cpu'] for r in rows):.0f} CPU s", "", "by file:"]
    for name, (count, cpu, wall) in sorted(files.items(), key=lambda kv: -kv[1][1])[:top]:
        lines.append(f"{cpu:8.1f} CPU s {wall:8.1f} s {count:5.0f} tests  {name}")
    lines += ["", "by test:"]
    for row in sorted(rows, key=lambda r: -r["cpu"])[:top]:
        lines.append(f"{row['cpu']:8.1f} CPU s {row['wall']:8.1f} s  {row['test']}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1] if len(sys.argv) > 1 else "cpu-profile")))
