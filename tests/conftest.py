"""Shared fixtures: databases (SQLite file, real MariaDB), and running the real CLI.

Tests that need MariaDB skip when it does not answer, except when
ZEROARCHIVE_REQUIRE_SERVICES=1 (set by .ci/run): then they fail instead.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Every crawl here fetches saved pages served on 127.0.0.1, which the archive refuses by
# default (zeroarchive/core/targets.py): the suite runs as a lab deployment does, with the
# setting ZEROARCHIVE_ALLOW_PRIVATE_TARGETS in the environment of every command it starts.
# tests/test_private_targets.py takes it away to test the refusals.
os.environ["ZEROARCHIVE_ALLOW_PRIVATE_TARGETS"] = "1"
# The saved real pages name their images and stylesheets on the live sites: their media
# would be fetched from the internet. tests/test_media.py turns media on for its own pages.
os.environ["ZEROARCHIVE_MEDIA_ENABLED"] = "0"
# A site whose config gives no `delay` (an ad-hoc `-a url=` site, most test sites) waits
# ZEROARCHIVE_SITE_DELAY between requests, 1 s by default: here 0, in every command the
# tests start. The tests of that default (tests/test_site_refresh.py) take it away.
os.environ.setdefault("ZEROARCHIVE_SITE_DELAY", "0")

# Scrapy's TLS context factory module makes deprecated aliases that read the whole call
# stack (inspect.stack), looking each frame's file up among all loaded modules: imported
# while collection has thousands loaded, that cost each test process 1.2 CPU s more.
import scrapy.core.downloader.contextfactory  # isort: skip
import pytest
from hypothesis import settings
from sqlalchemy import create_engine, event, inspect, text
from sqlalchemy.engine import Engine

from tests.forked_cli import ForkedProcess, background_server
from zeroarchive.storage.archive import close_archives
from zeroarchive.storage.pymysql_tls import SharedTlsConnection

# Hypothesis fails an example that takes over 200 ms by default: a timing assertion, which
# a loaded machine failed (test_bloom at load 30). What the tests check is the answers.
settings.register_profile("zeroarchive", deadline=None)
settings.load_profile("zeroarchive")


@event.listens_for(Engine, "do_connect")
def _shared_tls_context(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
    """The tests' own MariaDB connections (fixtures, checks of what a command stored)
    share one TLS context as the archive's do (zeroarchive/storage/engine.py): PyMySQL
    built one for each, loading the system's CA certificates, 55 ms of CPU a connection
    and 3 % of the whole run's."""
    if dialect.driver == "pymysql":
        return SharedTlsConnection(*cargs, **cparams)
    return None


@pytest.fixture
def tests_tls_sharing_off() -> Iterator[None]:
    """For a test of the archive's own sharing: the tests' listener above taken away."""
    event.remove(Engine, "do_connect", _shared_tls_context)
    try:
        yield
    finally:
        event.listen(Engine, "do_connect", _shared_tls_context)


REPO = Path(__file__).resolve().parents[1]
# The saved real pages the tests use travel with them (each folder's SOURCE.txt says whence).
FIXTURES = REPO / "tests" / "fixtures"
MARIADB_SERVER = os.environ.get("ZEROARCHIVE_TEST_MARIADB", "mysql+pymysql://root@127.0.0.1:3306")
REQUIRE_SERVICES = os.environ.get("ZEROARCHIVE_REQUIRE_SERVICES") == "1"


@functools.cache
def _mariadb_answers() -> str | None:
    """Asked once per test process: a new engine and connection to ask it cost every
    MariaDB test 0.03-0.06 CPU s (0.2-0.7 s on a loaded machine)."""
    try:
        engine = create_engine(f"{MARIADB_SERVER}/test")
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
    except Exception as exc:
        return str(exc)
    return None


def require_service(name: str, error: str | None) -> None:
    if error is None:
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"{name} is required (ZEROARCHIVE_REQUIRE_SERVICES=1) but: {error}")
    pytest.skip(f"{name} not available: {error}")


# Modules whose tests take tens of seconds each, mostly waiting on real processes and
# timers, slowest first (by their longest test in `--durations` runs, 2026-11-29, after
# the outages were shortened: the Chromium crawls of test_facebook, 25-44 s each and all
# CPU, now come right after the distributed runs): collected first, so that they start at
# once, side by side with the quick tests, instead of one worker ending on them.
SLOW_FIRST = (
    "test_types.py",  # mypy, about 20 s of CPU alone in a fresh clone
    "test_distributed.py",
    "test_facebook.py",
    "test_upgrade.py",
    "test_recovery_e2e.py",
    "test_events.py",
    "test_copies.py",
    "test_import_0archive.py",
    "test_schedule_adaptive.py",
    "test_generic_feeds.py",
    "test_proxies.py",
    "test_recheck.py",
    "test_offline.py",
    "test_render.py",
    "test_events_save.py",
    "test_search_real_pages.py",
    "test_events_claims.py",
    "test_dcard.py",
    "test_warc.py",
    "test_youtube.py",
    "test_events_watch.py",
    "test_sync_sites.py",
    "test_crawl_exit.py",
    "test_monitor_events.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return SLOW_FIRST.index(name) if name in SLOW_FIRST else len(SLOW_FIRST)

    items.sort(key=rank)  # stable: each module's tests keep their order


def pytest_collection_finish(session: pytest.Session) -> None:
    # What collection built (every module, every test) lives to the end: the collector
    # passes over it no more, which took each test process about a second of CPU in the
    # full collections of the run and at its end (pytest's unraisable-exception check).
    gc.freeze()


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist's `--dist load` first hands each worker a run of consecutive tests (a
    # quarter of its share: 135 of them on four workers), so the first worker got every
    # slow test above and ran them one after another (609 s against 370 s for the others).
    # One test at a time (two waiting per worker) spreads them.
    if config.pluginmanager.hasplugin("xdist") and config.getoption("maxschedchunk") is None:
        config.option.maxschedchunk = 1


@pytest.fixture(scope="session")
def _migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite archive migrated to the newest schema, once per test process."""
    from zeroarchive.storage.engine import make_engine, migrate

    path = tmp_path_factory.mktemp("migrated") / "archive.db"
    engine = make_engine(f"sqlite:///{path}")
    try:
        migrate(engine)
    finally:
        engine.dispose()  # the last connection checkpoints the WAL into the file
    return path


@pytest.fixture(params=["sqlite", "mariadb"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty archive database, its schema up to date: a new SQLite file (a copy of one
    migrated once per test process), or this test process's MariaDB archive database with
    every table empty. Tests about a database without a schema take ``blank_db_url``."""
    if request.param == "sqlite":
        # Migrating a new file took 0.07 CPU s but 0.2-0.9 s of the DDL's fsyncs per test,
        # on about 800 tests; the copy takes 5 ms.
        path = tmp_path / "archive.db"
        shutil.copyfile(request.getfixturevalue("_migrated_sqlite"), path)
        yield f"sqlite:///{path}"
        close_archives()
        return
    yield _shared_mariadb.take()
    _shared_mariadb.give_back()


@pytest.fixture(scope="module", params=["sqlite", "mariadb"])
def module_db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """An empty database of its own for a module's read-only tests to share (built once
    per test process and engine), its schema up to date: a copy of the SQLite file migrated
    once per process, or a new MariaDB database (``fresh_mariadb(ARCHIVE)``)."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("module_db") / "archive.db"
        shutil.copyfile(request.getfixturevalue("_migrated_sqlite"), path)
        yield f"sqlite:///{path}"
        close_archives()
        return
    with fresh_mariadb(ARCHIVE) as url:
        yield url


@pytest.fixture(params=["sqlite", "mariadb"])
def blank_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database without a schema: a new SQLite file, or a new MariaDB database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'archive.db'}"
        close_archives()
        return
    with fresh_mariadb() as url:
        yield url


class SharedMariadb:
    """One migrated archive database on MariaDB per test process, emptied after each test
    (TRUNCATE of every table but alembic_version, which also restarts the ids at 1).

    Creating a database and migrating it took about a second of MariaDB's DDL per test; a
    quarter of the run's tests take one. A test that changed the schema (a downgrade, a
    partition of its own, a table more or less, the full-text index's keys left disabled)
    leaves a database that is dropped, and the next test gets a new one."""

    def __init__(self) -> None:
        self.name: str | None = None
        self.shape: tuple[object, ...] = ()
        self.tables: list[str] = []
        # One pooled connection for the checks after each test: a new engine and TLS
        # connection each time cost the test process 4 ms of CPU and MariaDB 1-2 ms more.
        self.engine: Engine | None = None

    def url(self) -> str:
        assert self.name is not None
        return f"{MARIADB_SERVER}/{self.name}"

    def take(self) -> str:
        require_service("MariaDB", _mariadb_answers())
        if self.name is None:
            self.name = ARCHIVE.new_database()
            self.shape = ARCHIVE.shape
            # Pinged before each use: a test may have cut or killed the server's connections.
            self.engine = create_engine(self.url(), pool_size=1, pool_pre_ping=True)
            self.tables = [
                t for t in inspect(self.engine).get_table_names() if t != "alembic_version"
            ]
        return self.url()

    def give_back(self) -> None:
        close_archives()
        if self.name is None or self.engine is None:
            return
        try:
            with self.engine.connect() as conn:
                # A test's own connection left in a transaction would hold TRUNCATE for ever.
                conn.execute(text("SET SESSION lock_wait_timeout = 10"))
                if _schema_shape(conn) == self.shape:
                    conn.execute(text("SET FOREIGN_KEY_CHECKS = 0"))
                    for table in _written_tables(conn, self.tables):
                        conn.execute(text(f"TRUNCATE TABLE `{table}`"))
                    return
        except Exception:
            pass
        self.drop()

    def drop(self) -> None:
        if self.engine is not None:
            self.engine.dispose()
            self.engine = None
        if self.name is None:
            return
        name, self.name = self.name, None
        admin = create_engine(f"{MARIADB_SERVER}/test")
        with contextlib.suppress(Exception), admin.connect() as conn:
            conn.execute(text("SET SESSION lock_wait_timeout = 10"))
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        admin.dispose()


def _written_tables(conn: Any, tables: list[str]) -> list[str]:
    """The tables a test left rows in or took ids from: TRUNCATE of all 25 took 0.4-0.5 s
    of InnoDB's table re-creation per test, most tests write to two or three."""
    rows = " UNION ALL ".join(
        f"SELECT '{table}', EXISTS(SELECT 1 FROM `{table}`)" for table in tables
    )
    written = {name for name, used in conn.execute(text(rows)) if used}
    written.update(
        name
        for (name,) in conn.execute(
            text(
                "SELECT TABLE_NAME FROM information_schema.TABLES "
                "WHERE TABLE_SCHEMA = DATABASE() AND AUTO_INCREMENT > 1"
            )
        )
    )
    return [table for table in tables if table in written]


def _schema_shape(conn: Any) -> tuple[object, ...]:
    """What the migrations made of the database: tables, columns, indexes (and whether
    their keys are disabled), partitions, triggers and the revision.

    Each listing is hashed by the server (SHA-256 of its rows, every value quoted): the
    rows themselves, about 400, cost the test process 3.5 ms of PyMySQL's decoding after
    each test."""
    listings = (
        ("TABLE_NAME", "information_schema.TABLES", "", "TABLE_NAME"),
        (
            "TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT",
            "information_schema.COLUMNS",
            "",
            "TABLE_NAME, ORDINAL_POSITION",
        ),
        (
            "TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE, COMMENT, INDEX_COMMENT",
            "information_schema.STATISTICS",
            "",
            "TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX",
        ),
        (
            "TABLE_NAME, PARTITION_NAME, PARTITION_DESCRIPTION",
            "information_schema.PARTITIONS",
            "AND PARTITION_NAME IS NOT NULL",
            "TABLE_NAME, PARTITION_ORDINAL_POSITION",
        ),
    )

    def digest(columns: str, table: str, where: str, order: str) -> str:
        quoted = ", ".join(f"QUOTE({column})" for column in columns.split(", "))
        return (
            f"(SELECT CONCAT(COUNT(*), ' ', SHA2(GROUP_CONCAT(CONCAT_WS(',', {quoted}) "
            f"ORDER BY {order} SEPARATOR ';'), 256)) FROM {table} "
            f"WHERE TABLE_SCHEMA = DATABASE() {where})"
        )

    conn.execute(text("SET SESSION group_concat_max_len = 67108864"))
    query = "SELECT " + ", ".join(digest(*listing) for listing in listings)
    shape: list[object] = list(conn.execute(text(query)).one())
    revisions = conn.execute(text("SELECT version_num FROM alembic_version ORDER BY 1"))
    shape.append(tuple(revisions.scalars()))
    # SHOW TRIGGERS: information_schema.TRIGGERS took 10-15 ms of the server's CPU (it
    # reads every table's trigger file), after each test.
    triggers = conn.execute(text("SHOW TRIGGERS")).mappings()
    keys = ("Trigger", "Event", "Table", "Timing", "Statement")
    shape.append(tuple(sorted(tuple(row[key] for key in keys) for row in triggers)))
    return tuple(shape)


_shared_mariadb = SharedMariadb()


@pytest.fixture(scope="session", autouse=True)
def _drop_shared_mariadb() -> Iterator[None]:
    yield
    _shared_mariadb.drop()


@dataclass
class Schema:
    """A schema on MariaDB that ``build`` makes (migrations) in a new, empty database.

    The first database of a test process gets it from ``build``; the schema is then read
    back as statements (SHOW CREATE TABLE and TRIGGER, alembic_version's rows) that make it
    in the next ones, each checked to have the first's shape. The archive's migrations cost
    the server 1-2 s of CPU a database and 5-10 s of wall on a loaded machine (Alembic's
    ALTERs rebuild their tables one after another), 0archive's 0.5 s and 5 s; the
    statements a third of that."""

    build: Callable[[str], None]
    statements: list[str] = field(default_factory=list)
    shape: tuple[object, ...] = ()

    def new_database(self) -> str:
        """The name of a new database with this schema and no rows."""
        name = f"zeroarchive_test_{secrets.token_hex(4)}"
        admin = create_engine(f"{MARIADB_SERVER}/test")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
        engine = create_engine(f"{MARIADB_SERVER}/{name}")
        try:
            if not self.statements:
                self.build(f"{MARIADB_SERVER}/{name}")
                with engine.connect() as conn:
                    self.shape = _schema_shape(conn)
                    self.statements = _schema_statements(conn)
            else:
                with engine.begin() as conn:
                    conn.execute(text("SET FOREIGN_KEY_CHECKS = 0"))
                    for statement in self.statements:
                        conn.exec_driver_sql(statement.replace("%", "%%"))
                    shape = _schema_shape(conn)
                assert shape == self.shape, f"{name} is not what {self.build.__name__} made"
        except BaseException:
            with contextlib.suppress(Exception), admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
            raise
        finally:
            engine.dispose()
            admin.dispose()
        return name


def _schema_statements(conn: Any) -> list[str]:
    """Statements that make the database's tables, triggers (in their order) and
    alembic_version's rows again in another, empty database. Its other tables are empty,
    and it has no views, routines or events (nothing would copy them)."""
    others = conn.execute(
        text(
            "SELECT (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
            "DATABASE() AND TABLE_TYPE != 'BASE TABLE') + (SELECT COUNT(*) FROM "
            "information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE()) + (SELECT "
            "COUNT(*) FROM information_schema.EVENTS WHERE EVENT_SCHEMA = DATABASE())"
        )
    ).scalar_one()
    assert others == 0, "views, routines or events: not copied"
    tables = conn.execute(text("SHOW FULL TABLES WHERE Table_type = 'BASE TABLE'")).scalars()
    tables = [t for t in tables if t != "alembic_version"]
    assert not _written_tables(conn, tables), "rows besides alembic_version's: not copied"
    statements = [conn.execute(text(f"SHOW CREATE TABLE `{t}`")).one()[1] for t in tables]
    triggers = conn.execute(
        text(
            "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS "
            "WHERE TRIGGER_SCHEMA = DATABASE() ORDER BY EVENT_OBJECT_TABLE, ACTION_ORDER"
        )
    ).scalars()
    statements += [conn.execute(text(f"SHOW CREATE TRIGGER `{t}`")).one()[2] for t in triggers]
    if inspect(conn).has_table("alembic_version"):
        statements.append(conn.execute(text("SHOW CREATE TABLE alembic_version")).one()[1])
        statements += [
            f"INSERT INTO alembic_version (version_num) VALUES ('{version}')"
            for version in conn.execute(text("SELECT version_num FROM alembic_version")).scalars()
        ]
    return statements


def _migrate_archive(url: str) -> None:
    from zeroarchive.storage.engine import make_engine, migrate

    engine = make_engine(url)
    try:
        migrate(engine)
    finally:
        engine.dispose()


#: The archive's newest schema (zeroarchive's migrations).
ARCHIVE = Schema(_migrate_archive)


@contextlib.contextmanager
def fresh_mariadb(schema: Schema | None = None) -> Iterator[str]:
    """A new MariaDB database without rows, dropped afterwards: without a schema, or with
    ``schema`` (``ARCHIVE``: the archive's newest)."""
    require_service("MariaDB", _mariadb_answers())
    admin = create_engine(f"{MARIADB_SERVER}/test")
    if schema is not None:
        name = schema.new_database()
    else:
        name = f"zeroarchive_test_{secrets.token_hex(4)}"
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
    try:
        yield f"{MARIADB_SERVER}/{name}"
    finally:
        close_archives()
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        admin.dispose()


@pytest.fixture
def mariadb_url() -> Iterator[str]:
    """An empty MariaDB database without a schema (for tests that are about MariaDB
    itself, its migrations or a database's first start)."""
    with fresh_mariadb() as url:
        yield url


@pytest.fixture
def migrated_mariadb_url() -> Iterator[str]:
    """A new MariaDB database of the test's own with the newest schema and no rows, dropped
    afterwards: for tests about MariaDB that change the schema (partitions) or dump it."""
    with fresh_mariadb(ARCHIVE) as url:
        yield url


@pytest.fixture
def mariadb_db_url() -> Iterator[str]:
    """``db_url``'s MariaDB case alone: this test process's migrated archive database,
    every table empty (emptied after each test; dropped after a test that changed its
    schema), for tests about MariaDB's own behaviour (Mroonga, query plans)."""
    yield _shared_mariadb.take()
    _shared_mariadb.give_back()


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A real Redis database of its own (one of 16), empty before and after the test."""
    import redis

    server = os.environ.get("ZEROARCHIVE_TEST_REDIS", "redis://127.0.0.1:6379")
    error = None
    try:
        redis.Redis.from_url(f"{server}/0").ping()
    except redis.RedisError as exc:
        error = str(exc)
    require_service("Redis", error)
    # One database per pytest-xdist worker (gw0 -> 2, gw1 -> 3, ...): tests of a worker
    # run one after another, so none empties another's database.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    url = f"{server}/{2 + int(worker.removeprefix('gw')) % 14}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()
        client.close()


def project_settings(**overrides: Any) -> dict[str, Any]:
    """settings/base.py (where every setting has its one default) with ``overrides``: what
    a test's crawler needs to build the project's components."""
    from settings import base

    return {**{k: v for k, v in vars(base).items() if k.isupper()}, **overrides}


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def scrapy(
    *args: str, db_url: str, cwd: Path, extra_env: dict[str, str] | None = None, timeout: int = 240
) -> Run:
    """Run ``scrapy ARGS`` from the project, as a user would, against ``db_url``: a new
    process forked from a warm interpreter (tests/forked_cli.py)."""
    env = {
        **os.environ,
        "ZEROARCHIVE_DB_URL": db_url,
        "PYTHONPATH": str(REPO),
        "SCRAPY_SETTINGS_MODULE": "settings.base",
        **(extra_env or {}),
    }
    server = background_server(REPO) if _forkable(env) else None
    if server is not None:
        return Run(*server.run(list(args), env, cwd, timeout))
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def _forkable(env: dict[str, str]) -> bool:
    """Whether a forked warm interpreter starts as ``env`` would: the interpreter's own
    variables (PYTHONIOENCODING, PYTHONWARNINGS, ...) are read only at its start, and its
    project modules are this checkout's."""
    return env.get("PYTHONPATH") == str(REPO) and all(
        env.get(name) == os.environ.get(name)
        for name in {*env, *os.environ}
        if name.startswith("PYTHON") and name != "PYTHONPATH"
    )


#: A command started beside the test: a forked one, or a new interpreter.
Process = subprocess.Popen[bytes] | ForkedProcess


def start_scrapy(
    args: list[str], env: dict[str, str], cwd: Path, log: Path | None = None
) -> Process:
    """Start ``scrapy ARGS`` beside the test, its output (stdout and stderr) to ``log`` or
    nowhere: a new process forked from a warm interpreter (tests/forked_cli.py), which the
    test may signal, poll and wait for as a ``subprocess.Popen``."""
    out = str(log) if log is not None else os.devnull
    server = background_server(REPO) if _forkable(env) else None
    if server is not None:
        if log is not None:
            log.write_bytes(b"")  # there once this returns, as Popen's is
        return server.start(args, env, cwd, Path(out), Path(out))
    with open(out, "wb") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "scrapy", *args],
            cwd=cwd,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
