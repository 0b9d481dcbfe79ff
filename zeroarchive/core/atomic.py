"""Files that appear whole or not at all: an export is written under a hidden temporary
name beside its target and renamed into place only once it is complete, so a failed or
interrupted export (a full disk, a database gone, Ctrl-C) leaves no partial file that a
reader would take for the whole."""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import IO


def partial_path(path: Path) -> Path:
    """The hidden temporary name ``path`` is written under.

    >>> partial_path(Path("/srv/out/snapshots.jsonl.gz")).name[:24]
    '.snapshots.jsonl.gz.part'
    """
    return path.with_name(f".{path.name}.partial-{os.getpid()}")


def discard(path: Path) -> None:
    """Remove a temporary file or directory, if it is there."""
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def written_whole(path: Path) -> Iterator[Path]:
    """A temporary path to write ``path`` under: renamed to ``path`` when the block ends,
    removed when it raises (Ctrl-C included).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> with written_whole(folder / "out.txt") as partial:
    ...     _ = partial.write_text("all")
    >>> sorted(p.name for p in folder.iterdir())
    ['out.txt']
    >>> try:
    ...     with written_whole(folder / "other.txt") as partial:
    ...         _ = partial.write_text("half")
    ...         raise OSError("disk full")
    ... except OSError:
    ...     pass
    >>> sorted(p.name for p in folder.iterdir())
    ['out.txt']
    """
    partial = partial_path(path)
    try:
        yield partial
    except BaseException:
        discard(partial)
        raise
    os.replace(partial, path)


@contextlib.contextmanager
def open_text_output(path: Path) -> Iterator[IO[str]]:
    """``path`` opened for UTF-8 text (gzip-compressed when it ends in ``.gz``), written
    whole or not at all (:func:`written_whole`)."""
    with (
        written_whole(path) as partial,
        gzip.open(partial, "wt", encoding="utf-8")
        if path.suffix == ".gz"
        else partial.open("w", encoding="utf-8") as handle,
    ):
        yield handle
