"""The package's folders keep their layering (zeroarchive/__init__.py): each package imports
only the packages below it, never one above; old import paths still work for one release."""

from __future__ import annotations

import ast
import functools
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.utils.misc import load_object

PACKAGE = Path(__file__).resolve().parent.parent / "zeroarchive"

#: Bottom to top; a package may import only those before it.
LAYERS = (
    "core",
    "sources",
    "sites",
    "storage",
    "events",
    "media",
    "distributed",
    "crawl",
    "parser",
    "search",
    "copies",
    "publish",
    "monitor",
    "commands",
)
#: What each package may import, besides itself (its own docstring says the same).
ALLOWED = {
    "core": set(),
    "sources": {"core"},
    "sites": {"core", "sources"},
    "storage": {"core", "sources", "sites"},
    "events": {"core", "sources", "sites", "storage"},
    "media": {"core", "sources", "sites", "storage"},
    "distributed": {"core"},
    "crawl": {"core", "sources", "sites", "storage", "events", "media", "distributed"},
    "parser": {"core", "sources", "storage"},
    "search": {"core", "storage"},
    "copies": {"core", "storage", "search"},
    "publish": {"core", "sources", "sites", "storage", "media"},
    "monitor": {"core", "sources", "storage", "search", "events", "copies", "media"},
    "commands": set(LAYERS),
}


def imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "zeroarchive" and len(parts) > 1 and (PACKAGE / parts[1]).is_dir():
                found.add(parts[1])
    return found


def test_every_package_is_in_a_layer() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(LAYERS)


@pytest.mark.parametrize("package", LAYERS)
def test_a_package_imports_only_the_packages_below_it(package: str) -> None:
    wrong = {}
    for path in sorted((PACKAGE / package).rglob("*.py")):
        if "migrations" in path.parts:
            continue
        above = imported_packages(path) - ALLOWED[package] - {package}
        if above:
            wrong[str(path.relative_to(PACKAGE))] = sorted(above)
    assert wrong == {}


@pytest.mark.parametrize("package", LAYERS)
def test_each_package_says_what_it_may_import(package: str) -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text()))
    assert doc, f"zeroarchive/{package}/__init__.py has no docstring"
    for other in ALLOWED[package] - {"commands"}:
        if package != "commands":
            assert f"``{other}``" in doc, f"{package}'s docstring does not name {other}"


def test_at_most_eight_modules_at_the_package_top() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top


def test_the_old_dupefilter_path_still_loads_the_dupefilter() -> None:
    sys.modules.pop("zeroarchive.bloom_dupefilter", None)
    with pytest.warns(DeprecationWarning, match="zeroarchive.distributed.dupefilter"):
        old = importlib.import_module("zeroarchive.bloom_dupefilter")
    new = load_object("zeroarchive.distributed.dupefilter.BloomDupeFilter")
    assert old.BloomDupeFilter is new
    assert load_object("zeroarchive.bloom_dupefilter.BloomDupeFilter") is new


def test_the_old_addon_path_still_loads_the_addon() -> None:
    with pytest.warns(DeprecationWarning, match="zeroarchive.distributed.addon"):
        old = load_object("zeroarchive.distributed.DistributedAddon")
    assert old is load_object("zeroarchive.distributed.addon.DistributedAddon")


def test_documented_paths_still_import() -> None:
    from zeroarchive.parser import PARSER_VERSION
    from zeroarchive.storage.snapshots import read_snapshot

    assert callable(read_snapshot)
    assert PARSER_VERSION
    for path in (
        "pipelines.articles.ArticlesPipeline",
        "pipelines.snapshots.SnapshotsPipeline",
        "middlewares.throttle.ThrottleDownloaderMiddleware",
        "middlewares.block_pages.BlockPagesDownloaderMiddleware",
    ):
        assert load_object(path)


#: Packages an embedded crawl never uses. Scrapy imports every command and spider module
#: when any command starts, so one top-level import of these in a command costs every crawl
#: its import time (the search package and tqdm were 0.1-0.3 s of a crawl's start).
NOT_FOR_AN_EMBEDDED_CRAWL = (
    "alembic",
    "feedparser",
    "playwright",
    "redis",
    "tqdm",
    "warcio",
    "yaml",
    "zeroarchive.monitor",
    "zeroarchive.parser.generic",
    "zeroarchive.search",
)


def test_an_embedded_crawl_starts_light(tmp_path: Path) -> None:
    """It imports nothing it does not use, and leaves what start-up made out of the
    garbage collector's passes (each full pass, and Python's exit, walked them all again:
    bench/README.md, "gc.freeze")."""
    env = {
        **os.environ,
        "PYTHONPATH": str(PACKAGE.parent),
        "ZEROARCHIVE_DB_URL": f"sqlite:///{tmp_path / 'archive.db'}",
    }
    env.pop("REDIS_URL", None)
    run = functools.partial(
        subprocess.run, cwd=PACKAGE.parent, env=env, capture_output=True, text=True, check=True
    )
    run([sys.executable, "-m", "scrapy", "migrate"])
    done = run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "scrapy",
            "crawl",
            "generic",
            "-s",
            "LOG_LEVEL=DEBUG",
        ]
    )
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "zeroarchive.crawl.spider" in imported
    unused = sorted(
        name
        for name in imported
        if any(name == top or name.startswith(f"{top}.") for top in NOT_FOR_AN_EMBEDDED_CRAWL)
    )
    assert unused == []
    frozen = re.search(r"(\d+) start-up objects left out of the garbage collector", done.stderr)
    assert frozen and int(frozen.group(1)) > 50_000, done.stderr[-2000:]
