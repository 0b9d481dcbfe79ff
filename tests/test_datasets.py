"""Parquet datasets (export_publications / export_snapshots --format parquet) on both
backends: partitioned by site and month, read whole by pandas and DuckDB, never left half
written."""

from __future__ import annotations

import gzip
import html
import json
from pathlib import Path
from unittest import mock

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import select

from tests import parse_once
from tests.conftest import FIXTURES, REPO, scrapy
from zeroarchive.core.items import FetchedPage
from zeroarchive.parser import run as parser_run
from zeroarchive.parser.run import ParseRunConfig, parse_pending
from zeroarchive.publish.datasets import (
    PUBLICATION_SCHEMA,
    DatasetExistsError,
    DatasetWriter,
    Partition,
    write_snapshots,
)
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.schema import article, publication

JAN = 1_735_689_600  # 2025-01-01T00:00:00Z
FEB = 1_738_368_000  # 2025-02-01T00:00:00Z
PAGE = gzip.decompress(
    (FIXTURES / "tw-news-2014" / "html" / "liberty_times_news_s1.html.gz").read_bytes()
)
EDITED = PAGE.replace("停止禁食".encode(), "結束禁食".encode())


def page(ids: tuple[int, int], at: int, body: bytes, url: str) -> FetchedPage:
    return FetchedPage(
        article_id=ids[0],
        site_id=ids[1],
        article_type="news",
        fetched_at=at,
        status=200,
        final_url=url,
        headers={"Content-Type": ["text/html; charset=utf-8"]},
        encoding="utf-8",
        body=body,
    )


def fill(archive: Archive) -> dict[str, int]:
    """Two sites: ltn with one article edited across two months, cna with one article."""
    ids = {}
    for name, url in (("ltn", "https://news.ltn.com.tw/news/a/1"), ("cna", "https://cna.tw/n/2")):
        spec = parse_spec(
            {
                "name": name,
                "url": url.rsplit("/", 2)[0] + "/",
                "type": "news",
                "config": {"article": "/n"},
            }
        )
        site_id = archive.sites.upsert(spec, JAN)[0]
        archive.articles.add(site_id, "Article", [url], JAN)
        with archive.engine.connect() as conn:
            article_id = conn.execute(
                select(article.c.article_id).where(article.c.url == url)
            ).scalar_one()
        ids[name] = site_id
        bodies = [(JAN, PAGE), (FEB, EDITED)] if name == "ltn" else [(JAN + 60, PAGE)]
        archive.snapshots.save([page((article_id, site_id), at, body, url) for at, body in bodies])
    # The same two pages in every test's archive: parsed once per process (tests/parse_once.py),
    # not again by each test's parse run, which maps and stores them as ever.
    with mock.patch.object(parser_run, "parse_snapshot", parse_once.parsed):
        parse_pending(archive.engine, ParseRunConfig(), now=FEB + 60)
    return ids


@pytest.fixture
def archive(db_url: str) -> Archive:
    return open_archive(url=db_url)


def test_publications_as_a_dataset_pandas_and_duckdb_read_whole(
    archive: Archive, db_url: str, tmp_path: Path
) -> None:
    ids = fill(archive)
    out = tmp_path / "publications"
    run = scrapy(
        "export_publications",
        "--format",
        "parquet",
        "--out",
        str(out),
        db_url=db_url,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.output
    assert "3 publication(s) written" in run.stderr
    assert "export_publications: 3 publications done in" in run.stderr
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet")) == sorted(
        [
            f"site_id={ids['cna']}/month=2025-01/part-0.parquet",
            f"site_id={ids['ltn']}/month=2025-01/part-0.parquet",
            f"site_id={ids['ltn']}/month=2025-02/part-0.parquet",
        ]
    )
    frame = pd.read_parquet(out)
    assert len(frame) == 3
    assert set(PUBLICATION_SCHEMA.names) <= set(frame.columns)
    ltn = frame[frame["site"] == "ltn"].sort_values("version")
    assert list(ltn["version"]) == [1, 2]
    assert "停止禁食" in ltn.iloc[0]["title"] and "結束禁食" in ltn.iloc[1]["title"]
    assert str(ltn.iloc[1]["first_seen_at"]) == "2025-02-01 00:00:00+00:00"
    with archive.engine.connect() as conn:
        texts = set(conn.execute(select(publication.c.publication_text)).scalars())
    assert set(frame["publication_text"]) == texts

    con = duckdb.connect()
    per_month = con.execute(
        "SELECT site, month, count(*) FROM read_parquet(?, hive_partitioning = true) "
        "GROUP BY ALL ORDER BY ALL",
        [str(out / "**" / "*.parquet")],
    ).fetchall()
    assert per_month == [("cna", "2025-01", 1), ("ltn", "2025-01", 1), ("ltn", "2025-02", 1)]


def test_snapshot_metadata_as_a_dataset(archive: Archive, db_url: str, tmp_path: Path) -> None:
    ids = fill(archive)
    out = tmp_path / "snapshots"
    run = scrapy(
        "export_snapshots",
        "--format",
        "parquet",
        "--out",
        str(out),
        "--site",
        "ltn",
        db_url=db_url,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.output
    frame = pd.read_parquet(out)
    assert list(frame.sort_values("snapshot_at")["status"]) == [200, 200]
    assert set(frame["site"]) == {"ltn"}
    assert set(frame["raw_size"]) == {len(PAGE), len(EDITED)}
    assert "html" not in frame.columns  # metadata only
    assert {p.parent.name for p in out.rglob("*.parquet")} == {"month=2025-01", "month=2025-02"}
    assert {p.parent.parent.name for p in out.rglob("*.parquet")} == {f"site_id={ids['ltn']}"}


def test_an_existing_dataset_is_never_overwritten(
    archive: Archive, db_url: str, tmp_path: Path
) -> None:
    fill(archive)
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    run = scrapy(
        "export_publications",
        "--format",
        "parquet",
        "--out",
        str(out),
        db_url=db_url,
        cwd=tmp_path,
    )
    assert run.returncode != 0
    assert "exists and is not an empty directory" in run.stderr
    assert "Traceback" not in run.stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_a_failed_export_leaves_nothing_behind(tmp_path: Path) -> None:
    def records():
        for n in range(7):
            yield {"site_id": 1, "snapshot_at": JAN + n, "article_id": n, "status": 200}
        raise OSError("database went away")

    out = tmp_path / "ds"
    with pytest.raises(OSError, match="went away"):
        write_snapshots(records(), out, lambda site_id: "s")
    assert list(tmp_path.iterdir()) == []


def test_large_partitions_are_written_in_several_files(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    with DatasetWriter(
        out,
        pa.schema([PUBLICATION_SCHEMA.field("publication_id"), PUBLICATION_SCHEMA.field("site")]),
        3,
    ) as w:
        for n in range(7):
            w.add(Partition(1, "2025-01"), {"publication_id": n, "site": "s"})
    assert w.files == 3
    assert sorted(pd.read_parquet(out)["publication_id"]) == list(range(7))


def test_an_empty_directory_may_receive_the_dataset(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    with DatasetWriter(out, pa.schema([PUBLICATION_SCHEMA.field("publication_id")])) as w:
        w.add(Partition(1, "2025-01"), {"publication_id": 1})
    assert len(pd.read_parquet(out)) == 1
    with pytest.raises(DatasetExistsError):
        DatasetWriter(out, PUBLICATION_SCHEMA)


def test_an_export_of_nothing_still_names_every_column(db_url: str, tmp_path: Path) -> None:
    open_archive(url=db_url)  # an empty archive: no site, no publication
    out = tmp_path / "none"
    run = scrapy(
        "export_publications", "--format", "parquet", "--out", str(out), db_url=db_url, cwd=tmp_path
    )
    assert run.returncode == 0, run.output
    frame = pd.read_parquet(out)
    assert len(frame) == 0
    assert set(PUBLICATION_SCHEMA.names) | {"site_id", "month"} == set(frame.columns)
    glob = str(out / "**" / "*.parquet")
    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{glob}')").fetchall() == [(0,)]


DOCS = REPO / "docs" / "reference" / "datasets.md"
#: The docs' JSON lines types, as Python types.
JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "integer": int,
    "string": str,
    "list": list,
    "object": dict,
    "boolean": bool,
}


def doc_columns(section: str) -> list[tuple[str, str, str]]:
    """(column, Parquet type, JSON lines type) of the first table under ``## section``."""
    text = DOCS.read_text("utf-8").split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    found = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 4:
            found.append((cells[0].strip("`"), html.unescape(cells[1]), cells[2]))
        elif found:
            break
    return found


def parquet_type(value: pa.DataType) -> str:
    if pa.types.is_list(value):
        return f"list<{value.value_type}>"
    return str(value)


@pytest.mark.parametrize(
    ("command", "section"),
    [
        ("export_publications", "Publications"),
        ("export_snapshots", "Snapshots"),
    ],
)
def test_json_lines_parquet_and_the_docs_name_the_same_columns(
    archive: Archive, db_url: str, tmp_path: Path, command: str, section: str
) -> None:
    ids = fill(archive)
    with archive.engine.begin() as conn:
        # A row parsed before languages had one spelling.
        conn.execute(publication.update().values(language="zh-TW"))
    lines, folder = tmp_path / "out.jsonl", tmp_path / "ds"
    for args in (("--out", str(lines)), ("--format", "parquet", "--out", str(folder))):
        run = scrapy(command, *args, db_url=db_url, cwd=tmp_path)
        assert run.returncode == 0, run.output
    rows = [json.loads(line) for line in lines.read_text("utf-8").splitlines()]
    documented = doc_columns(section)
    assert len(documented) > 10
    in_json = [name for name, _, kind in documented if kind != "—"]
    assert all(list(row) == in_json for row in rows)
    for name, _, kind in documented:
        if kind != "—":
            assert all(isinstance(row[name], JSON_TYPES[kind]) or row[name] is None for row in rows)
    part = next(folder.rglob("*.parquet"))
    in_files = [(f.name, parquet_type(f.type)) for f in pq.read_schema(part)]
    assert in_files == [
        (name, kind) for name, kind, _ in documented if kind not in ("—", "from the path")
    ]
    frame = pd.read_parquet(folder)
    assert list(frame.columns) == [n for n, _ in in_files] + ["site_id", "month"]
    assert {n for n, kind, _ in documented if kind == "from the path"} == {"site_id", "month"}
    # The same rows, by the same names, whichever the format.
    ltn_url = "https://news.ltn.com.tw/news/a/1"
    assert {row["url"] for row in rows} == set(frame["url"]) == {ltn_url, "https://cna.tw/n/2"}
    assert {row["site_id"] for row in rows} == set(ids.values())
    if section == "Publications":
        assert {row["language"] for row in rows} == set(frame["language"]) == {"zh-Hant-TW"}
        assert {row["site"] for row in rows} == set(frame["site"]) == {"ltn", "cna"}
