"""A 0archive (ZeroScraper) MySQL database as its migrations leave it at their head
(360d0f705ee3), read in streams: Site, Article, the live ArticleSnapshot table and the
monthly tables 0archive rotated old snapshots into (ArticleSnapshot202003, ...).

Only reads. Snapshots are read a page of keys at a time (keyset pagination on their
primary key), then the bytes of those the archive does not hold yet, streamed through a
server-side cursor (SSCursor) in batches, so memory stays bounded whatever the size and a
resumed run does not read again what it imported. ``raw_data`` (MEDIUMTEXT) comes as the
bytes 0archive held (``character_set_results = binary``): some of it is not valid UTF-8,
and decoding or converting it on the way would change it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from queue import Empty, Full, Queue
from typing import Any, TypeVar

import pymysql
import pymysql.cursors
from sqlalchemy.engine import make_url

T = TypeVar("T")
LIVE_TABLE = "ArticleSnapshot"
# zs-dump.py's pattern of snapshot tables (rotation named them after their month), with
# the separator people add by hand (ArticleSnapshot_202003).
ROTATED_TABLE = re.compile(r"^(?:Article)?Snapshot_?(\d+)$", re.IGNORECASE)
SNAPSHOT_COLUMNS = {"article_id", "snapshot_at", "raw_data"}
UTF8_CHARSETS = {"utf8mb4", "utf8mb3", "utf8"}


@dataclass(frozen=True)
class OldSite:
    site_id: int
    type: str
    name: str
    url: str
    config: str
    is_active: bool
    airtable_id: str | None
    last_crawl_at: int | None


@dataclass(frozen=True)
class OldArticle:
    article_id: int
    site_id: int
    url: str
    first_snapshot_at: int
    last_snapshot_at: int
    next_snapshot_at: int
    snapshot_count: int
    redirect_to: str | None
    article_type: str


@dataclass(frozen=True)
class OldSnapshot:
    table: str
    article_id: int
    snapshot_at: int
    raw: bytes | None = field(repr=False)
    #: The article's site and URL; None when 0archive has no such article.
    site_id: int | None
    url: str | None

    def name(self) -> str:
        return f"snapshot {self.table}({self.article_id}, {self.snapshot_at})"


@dataclass(frozen=True)
class SnapshotBatch:
    #: Snapshots read with their bytes (``raw`` None: NULL in 0archive).
    rows: list[OldSnapshot]
    #: Snapshots of the same stretch of the table that the archive holds already: not read.
    already: int = 0
    #: Whether the bytes are valid UTF-8 for certain: their column's character set is
    #: utf8mb4 or utf8mb3, into which MySQL and MariaDB store no invalid byte (not even
    #: from a binary client or LOAD DATA: they become "?").
    utf8: bool = False


def source_key(url: str) -> str:
    """How the archive names an imported 0archive database: host, port and database name
    (never the password), so the same database is recognised whatever the URL's spelling.

    >>> source_key("mysql+pymysql://zs:secret@db.example:3306/zeroscraper?charset=utf8mb4")
    'db.example:3306/zeroscraper'
    >>> source_key("mysql://zs@db.example/zeroscraper")
    'db.example:3306/zeroscraper'
    """
    parsed = make_url(url)
    return f"{parsed.host or 'localhost'}:{parsed.port or 3306}/{parsed.database}"


class ZeroArchiveDb:
    """A 0archive database at a ``mysql[+pymysql]://`` URL."""

    def __init__(self, url: str) -> None:
        parsed = make_url(url)
        if parsed.get_backend_name() not in ("mysql", "mariadb"):
            raise ValueError(f"a 0archive database is MySQL or MariaDB, not {parsed.drivername}")
        if not parsed.database:
            raise ValueError("the 0archive URL names no database (mysql://user@host/DATABASE)")
        self.key = source_key(url)
        self._connect_args: dict[str, Any] = {
            "host": parsed.host or "localhost",
            "port": parsed.port or 3306,
            "user": parsed.username,
            "password": parsed.password or "",
            "database": parsed.database,
            "charset": "utf8mb4",
        }
        if "unix_socket" in parsed.query:
            self._connect_args["unix_socket"] = parsed.query["unix_socket"]
        self._meta = self._connect()
        missing = {"Site", "Article", LIVE_TABLE} - set(self._tables())
        if missing:
            raise ValueError(f"not a 0archive database: no {', '.join(sorted(missing))} table")

    def _connect(self, raw_text: bool = False) -> pymysql.connections.Connection[Any]:
        """A connection; with ``raw_text``, text comes as the bytes the table holds (no
        conversion to the connection's character set: some of 0archive's bytes are not
        UTF-8, and a latin1 column would be converted), cheaper than ``CAST AS BINARY``."""
        if raw_text:
            return pymysql.connect(
                **self._connect_args, init_command="SET character_set_results = binary"
            )
        return pymysql.connect(**self._connect_args)

    def close(self) -> None:
        self._meta.close()

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._meta.cursor() as cursor:
            cursor.execute(sql, args)
            return list(cursor.fetchall())

    def _tables(self) -> list[str]:
        rows = self._query(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()"
        )
        return [str(row[0]) for row in rows]

    def snapshot_tables(self) -> list[str]:
        """The rotated month tables, oldest first, then the live table: a table whose name
        says "snapshot" and a month and whose columns are a snapshot's."""
        rows = self._query(
            "SELECT TABLE_NAME, GROUP_CONCAT(COLUMN_NAME) FROM information_schema.COLUMNS"
            " WHERE TABLE_SCHEMA = DATABASE() GROUP BY TABLE_NAME"
        )
        rotated = []
        for name, columns in rows:
            match = ROTATED_TABLE.match(str(name))
            if match and set(str(columns).split(",")) >= SNAPSHOT_COLUMNS:
                rotated.append((match.group(1), str(name)))
        return [name for _, name in sorted(rotated)] + [LIVE_TABLE]

    def estimated_rows(self, table: str) -> int:
        """InnoDB's estimate of a table's rows (an exact count reads the whole table)."""
        rows = self._query(
            "SELECT TABLE_ROWS FROM information_schema.TABLES"
            " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
            (table,),
        )
        return int(rows[0][0] or 0) if rows else 0

    def count(self, sql: str, args: Sequence[Any] = ()) -> int:
        return int(self._query(sql, args)[0][0] or 0)

    def sites(self, site_ids: Sequence[int] | None = None) -> list[OldSite]:
        where, args = _in("site_id", site_ids)
        rows = self._query(
            "SELECT site_id, type, name, url, config, is_active, airtable_id, last_crawl_at"
            f" FROM Site{where} ORDER BY site_id",
            args,
        )
        return [
            OldSite(
                site_id=int(row[0]),
                type=str(row[1] or ""),
                name=str(row[2] or ""),
                url=str(row[3] or ""),
                config=row[4] if isinstance(row[4], str) else (row[4] or b"{}").decode(),
                is_active=bool(row[5]),
                airtable_id=str(row[6]) if row[6] else None,
                last_crawl_at=int(row[7]) if row[7] is not None else None,
            )
            for row in rows
        ]

    def variable_keys(self) -> list[str]:
        """The keys of 0archive's Variable table (its processes' locks, ``discover:pid``)."""
        if "Variable" not in self._tables():
            return []
        return [str(row[0]) for row in self._query("SELECT `key` FROM Variable ORDER BY `key`")]

    def site_stats_rows(self, site_ids: Sequence[int] | None) -> int:
        """How many rows 0archive's SiteStats holds (of these sites)."""
        if "SiteStats" not in self._tables():
            return 0
        where, args = _in("site_id", site_ids)
        return self.count(f"SELECT COUNT(*) FROM SiteStats{where}", args)

    def articles(
        self, site_ids: Sequence[int] | None, batch: int, redirects_only: bool = False
    ) -> Iterator[list[OldArticle]]:
        """Every article (of these sites), in batches, in id order."""
        where, args = _in("site_id", site_ids)
        if redirects_only:
            where += " AND" if where else " WHERE"
            where += " redirect_to IS NOT NULL AND redirect_to <> ''"
        sql = (
            "SELECT article_id, site_id, url, first_snapshot_at, last_snapshot_at,"
            " next_snapshot_at, snapshot_count, redirect_to, article_type"
            f" FROM Article{where} ORDER BY article_id"
        )
        for rows in self._stream(sql, args, batch):
            yield [
                OldArticle(
                    article_id=int(r[0]),
                    site_id=int(r[1]),
                    url=str(r[2]),
                    first_snapshot_at=int(r[3]),
                    last_snapshot_at=int(r[4]),
                    next_snapshot_at=int(r[5]),
                    snapshot_count=int(r[6]),
                    redirect_to=str(r[7]) if r[7] else None,
                    article_type=str(r[8]),
                )
                for r in rows
            ]

    def holds_utf8(self, table: str) -> bool:
        """Whether ``table``'s raw_data column is of a UTF-8 character set."""
        rows = self._query(
            "SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS WHERE"
            " TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s AND COLUMN_NAME = 'raw_data'",
            (table,),
        )
        return bool(rows) and str(rows[0][0]).lower() in UTF8_CHARSETS

    def keyed(self, table: str) -> bool:
        """Whether ``table`` has an index that starts with (article_id, snapshot_at), as
        the live table's primary key and a rotated copy made with ``CREATE TABLE LIKE``."""
        rows = self._query(
            "SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) FROM"
            " information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE()"
            " AND TABLE_NAME = %s GROUP BY INDEX_NAME",
            (table,),
        )
        return any(str(row[0]).startswith("article_id,snapshot_at") for row in rows)

    def snapshots(
        self,
        table: str,
        site_ids: Sequence[int] | None,
        batch: int,
        batch_bytes: int,
        imported: Callable[[list[OldSnapshot]], set[tuple[int, int]]] | None = None,
    ) -> Iterator[SnapshotBatch]:
        """Every snapshot of one table (of these sites' articles) with its article's site
        and URL, in batches of at most ``batch`` rows and about ``batch_bytes`` raw bytes.

        A keyed table is read a page of keys at a time, in key order; ``imported`` names
        the (article_id, snapshot_at) of a page that the archive holds already, and their
        bytes are not read (a resumed run goes over the imported part at the speed of
        its keys). A table without that key is read in one pass, bytes and all."""
        if table != LIVE_TABLE and not ROTATED_TABLE.match(table):
            raise ValueError(f"not a snapshot table: {table!r}")
        utf8 = self.holds_utf8(table)
        if not self.keyed(table):
            for found in self._snapshots_in_one_pass(table, site_ids, batch, batch_bytes):
                yield SnapshotBatch(found, 0, utf8)
            return
        keys_connection = self._connect()
        pages_connection = self._connect(raw_text=True)
        # Batches fill across pages of keys: cut at each page's end, a page of 200 keys
        # of 100 KB pages made a full batch and a tail of a quarter, and each batch costs
        # the writer its queries and a commit.
        rows: list[OldSnapshot] = []
        size = already = 0
        try:
            for keys in self._snapshot_keys(keys_connection, table, site_ids, batch):
                done = imported(keys) if imported else set()
                wanted = [k for k in keys if (k.article_id, k.snapshot_at) not in done]
                already += len(keys) - len(wanted)
                for snap in self._with_bytes(pages_connection, table, wanted):
                    rows.append(snap)
                    size += len(snap.raw or b"")
                    if len(rows) >= batch or size >= batch_bytes:
                        yield SnapshotBatch(rows, already, utf8)
                        rows, size, already = [], 0, 0
                if already >= batch:  # a stretch imported before: show the progress
                    yield SnapshotBatch(rows, already, utf8)
                    rows, size, already = [], 0, 0
            if rows or already:
                yield SnapshotBatch(rows, already, utf8)
        finally:
            keys_connection.close()
            pages_connection.close()

    def _snapshot_keys(
        self,
        connection: pymysql.connections.Connection[Any],
        table: str,
        site_ids: Sequence[int] | None,
        batch: int,
    ) -> Iterator[list[OldSnapshot]]:
        """A table's keys, ``batch`` at a time, each page starting after the last one's
        last key (a range scan of the key, however far into the table)."""
        sites = ""
        if site_ids:
            sites = f" AND a.site_id IN ({', '.join(['%s'] * len(site_ids))})"
        sql = (
            "SELECT s.article_id, s.snapshot_at, a.site_id, a.url"
            f" FROM `{table}` s LEFT JOIN Article a ON a.article_id = s.article_id"
            " WHERE (s.article_id > %s OR (s.article_id = %s AND s.snapshot_at > %s))"
            f"{sites} ORDER BY s.article_id, s.snapshot_at LIMIT %s"
        )
        args = list(site_ids or ())
        after = (-1, -1)
        while True:
            with connection.cursor() as cursor:
                cursor.execute(sql, [after[0], after[0], after[1], *args, batch])
                rows = cursor.fetchall()
            if not rows:
                return
            yield [
                OldSnapshot(
                    table=table,
                    article_id=int(row[0]),
                    snapshot_at=int(row[1]),
                    raw=None,
                    site_id=int(row[2]) if row[2] is not None else None,
                    url=str(row[3]) if row[3] is not None else None,
                )
                for row in rows
            ]
            after = (int(rows[-1][0]), int(rows[-1][1]))

    def _with_bytes(
        self, connection: pymysql.connections.Connection[Any], table: str, keys: list[OldSnapshot]
    ) -> Iterator[OldSnapshot]:
        """``keys`` with their raw bytes, streamed one by one."""
        if not keys:
            return
        by_key = {(k.article_id, k.snapshot_at): k for k in keys}
        pairs = ", ".join(["(%s, %s)"] * len(keys))
        sql = (
            f"SELECT article_id, snapshot_at, raw_data FROM `{table}`"
            f" WHERE (article_id, snapshot_at) IN ({pairs}) ORDER BY article_id, snapshot_at"
        )
        args = [value for key in by_key for value in key]
        with connection.cursor(pymysql.cursors.SSCursor) as cursor:
            cursor.execute(sql, args)
            while (row := cursor.fetchone()) is not None:
                key = by_key[(int(row[0]), int(row[1]))]
                yield OldSnapshot(
                    key.table, key.article_id, key.snapshot_at, row[2], key.site_id, key.url
                )

    def _snapshots_in_one_pass(
        self, table: str, site_ids: Sequence[int] | None, batch: int, batch_bytes: int
    ) -> Iterator[list[OldSnapshot]]:
        where, args = _in("a.site_id", site_ids)
        # No ORDER BY: without the key, MariaDB would sort the whole table first.
        sql = (
            "SELECT s.article_id, s.snapshot_at, s.raw_data, a.site_id,"
            " CONVERT(a.url USING utf8mb4)"
            f" FROM `{table}` s LEFT JOIN Article a ON a.article_id = s.article_id{where}"
        )
        connection = self._connect(raw_text=True)
        try:
            with connection.cursor(pymysql.cursors.SSCursor) as cursor:
                cursor.execute(sql, args)
                rows: list[OldSnapshot] = []
                size = 0
                while (row := cursor.fetchone()) is not None:
                    rows.append(
                        OldSnapshot(
                            table=table,
                            article_id=int(row[0]),
                            snapshot_at=int(row[1]),
                            raw=row[2],
                            site_id=int(row[3]) if row[3] is not None else None,
                            url=row[4].decode() if row[4] is not None else None,
                        )
                    )
                    size += len(row[2] or b"")
                    if len(rows) >= batch or size >= batch_bytes:
                        yield rows
                        rows, size = [], 0
                if rows:
                    yield rows
        finally:
            connection.close()

    def _stream(self, sql: str, args: Sequence[Any], batch: int) -> Iterator[list[tuple[Any, ...]]]:
        connection = self._connect()
        try:
            with connection.cursor(pymysql.cursors.SSCursor) as cursor:
                cursor.execute(sql, args)
                while rows := cursor.fetchmany(batch):
                    yield list(rows)
        finally:
            connection.close()


def _in(column: str, ids: Sequence[int] | None) -> tuple[str, list[int]]:
    if not ids:
        return "", []
    return f" WHERE {column} IN ({', '.join(['%s'] * len(ids))})", list(ids)


_DONE = object()


def prefetched(batches: Iterator[T], depth: int = 1) -> Iterator[T]:
    """``batches``, read ahead by a thread: the next batch comes over the network (pymysql
    waits on its socket without the GIL) while the caller works on this one. At most
    ``depth`` batches wait, so memory stays bounded."""
    queue: Queue[object] = Queue(maxsize=depth)
    stop = threading.Event()

    def read() -> None:
        try:
            for batch in batches:
                while not stop.is_set():
                    try:
                        queue.put(batch, timeout=0.1)
                        break
                    except Full:
                        continue
                if stop.is_set():
                    return
            queue.put(_DONE)
        except BaseException as exc:  # handed to the caller, raised there
            queue.put(exc)

    thread = threading.Thread(target=read, name="import-0archive-reader", daemon=True)
    thread.start()
    try:
        while True:
            item = queue.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        while thread.is_alive():
            try:
                queue.get_nowait()
            except Empty:
                thread.join(timeout=0.1)
