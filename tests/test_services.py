"""A database or Redis that does not answer: every command says so in one line (which
server, its URL without the password, why) and exits with status 3, no traceback."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Run, scrapy

PASSWORD = "s3cret-pw"


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A port bound and never listened on: a connection to it is refused, and no other
    process can take it while the test runs (a port found free and let go was taken by a
    server of a test beside it once, at load 16)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def away_database(port: int) -> str:
    return f"mysql+pymysql://root:{PASSWORD}@127.0.0.1:{port}/test"


def assert_one_line(run: Run, service: str) -> None:
    assert run.returncode == 3, run.output
    lines = run.stderr.strip().splitlines()
    assert lines, run.output
    last = lines[-1]
    assert last.startswith(f"error: cannot reach {service} at "), run.output
    assert ":***@127.0.0.1:" in last
    assert "Connection refused" in last or "Error 111" in last
    assert "Traceback" not in run.output
    assert PASSWORD not in run.output


COMMANDS = [
    ("sites",),
    ("site_stats",),
    ("migrate",),
    ("load_sites", "sites.yaml"),
    ("export_snapshots", "--out", "snapshots.jsonl"),
    ("export_publications", "--out", "publications.jsonl"),
    ("export_warc", "--out", "warc"),
    ("import_warc", "crawl.warc.gz", "--site", "1"),
    ("parse_snapshots",),
    ("copies",),
    ("rotate_snapshots", "--before", "2020-01"),
    ("monitor",),
    ("crawl", "generic"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=[args[0] for args in COMMANDS])
def test_every_command_names_the_database_it_cannot_reach(
    args: tuple[str, ...], tmp_path: Path, refused_port: int
) -> None:
    (tmp_path / "sites.yaml").write_text("- {name: a, url: 'https://a.example/', type: news}\n")
    (tmp_path / "crawl.warc.gz").write_bytes(b"")
    assert_one_line(scrapy(*args, db_url=away_database(refused_port), cwd=tmp_path), "the database")


def test_a_sqlite_file_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    run = scrapy("sites", db_url=f"sqlite:///{tmp_path}/no/such/dir/a.db", cwd=tmp_path)
    assert run.returncode == 3, run.output
    assert run.stderr.strip().splitlines()[-1] == (
        f"error: cannot reach the database at sqlite:///{tmp_path}/no/such/dir/a.db: "
        "unable to open database file"
    )


def away_redis(port: int) -> str:
    return f"redis://:{PASSWORD}@127.0.0.1:{port}/0"


@pytest.mark.parametrize(
    "args",
    [("crawl", "generic"), ("schedule", "--once"), ("bloom_stats",)],
    ids=["crawl", "schedule", "bloom_stats"],
)
def test_redis_that_does_not_answer_is_one_line(
    args: tuple[str, ...], tmp_path: Path, refused_port: int
) -> None:
    run = scrapy(
        *args,
        db_url=f"sqlite:///{tmp_path}/archive.db",
        cwd=tmp_path,
        extra_env={"REDIS_URL": away_redis(refused_port)},
    )
    assert_one_line(run, "redis")
