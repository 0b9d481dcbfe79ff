"""A failed export leaves no partial file: export_snapshots, export_publications and
export_warc (with --wacz) write under hidden temporary names and rename at the end."""

from __future__ import annotations

import argparse
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from tests.conftest import project_settings
from tests.test_warc import fill
from zeroarchive.commands import export_publications, export_snapshots, export_warc
from zeroarchive.storage.archive import close_archives


class DiskFull(OSError):
    pass


def failing_after(items: Iterator[Any], n: int) -> Iterator[Any]:
    """``items``, then an error once ``n`` of them went out (a disk that fills up)."""
    for i, item in enumerate(items):
        if i == n:
            raise DiskFull("No space left on device")
        yield item


def run(command: Any, db_url: str, **opts: Any) -> int:
    cmd = command.Command()
    # Small WARC files: several are complete when an export fails.
    settings = project_settings(ZEROARCHIVE_DB_URL=db_url, WARC_EXPORT_ROLL_BYTES=40000)
    cmd.settings = Settings(settings)
    cmd.run([], argparse.Namespace(**opts))
    return int(cmd.exitcode)


@pytest.fixture
def archive_url(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'archive.db'}"
    fill(url)
    yield url
    close_archives()


def everything_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("name", ["snapshots.jsonl", "snapshots.jsonl.gz"])
def test_a_failed_snapshot_export_leaves_no_file(
    archive_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    real = export_snapshots.iter_snapshots
    monkeypatch.setattr(
        export_snapshots, "iter_snapshots", lambda *a, **k: failing_after(real(*a, **k), 3)
    )
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(DiskFull):
        run(
            export_snapshots,
            archive_url,
            out=str(out / name),
            format="jsonl",
            site=None,
            since=None,
        )
    assert everything_in(out) == []

    monkeypatch.setattr(export_snapshots, "iter_snapshots", real)
    run(export_snapshots, archive_url, out=str(out / name), format="jsonl", site=None, since=None)
    assert everything_in(out) == [name]


def test_a_failed_publication_export_leaves_no_file(
    archive_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [{"publication_id": n, "site_id": 1} for n in range(5)]
    monkeypatch.setattr(
        export_publications.PublicationStore,
        "iter_publications",
        lambda self, **k: failing_after(iter(rows), 2),
    )
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(DiskFull):
        run(
            export_publications,
            archive_url,
            out=str(out / "publications.jsonl"),
            format="jsonl",
            site=None,
            parser_version="x",
        )
    assert everything_in(out) == []


def test_a_failed_warc_export_leaves_no_file(
    archive_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from zeroarchive.publish.warc import export

    real = export.iter_snapshots
    monkeypatch.setattr(export, "iter_snapshots", lambda *a, **k: failing_after(real(*a, **k), 6))
    out = tmp_path / "warcs"
    opts = {"out": str(out), "site": None, "since": None, "until": None, "wacz": False}
    # One line and exit status 1 (the command's own handling of a failed export).
    assert run(export_warc, archive_url, **opts) == 1
    assert everything_in(out) == []

    monkeypatch.setattr(export, "iter_snapshots", real)
    assert run(export_warc, archive_url, **opts) == 0
    assert len([n for n in everything_in(out) if n.endswith(".warc.gz")]) > 1
    names = everything_in(out)
    assert "index.cdxj" in names
    assert not [n for n in names if "partial" in n or n.startswith(".")]


# Reading the WARCs back for the WACZ's page list leaves a SpooledTemporaryFile of the
# WARC readers to the garbage collector (scrapy runs export_warc once per process).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_failed_wacz_leaves_no_file(
    archive_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import wacz.main

    monkeypatch.setattr(wacz.main, "main", lambda args: 1)
    out = tmp_path / "warcs"
    opts = {"out": str(out), "site": None, "since": None, "until": None, "wacz": True}
    assert run(export_warc, archive_url, **opts) == 1
    assert not [n for n in everything_in(out) if n.endswith(".wacz") or "partial" in n]
    # Collected here, under this test's filter, not in whichever test runs next.
    gc.collect()
