"""Database URL, engine and schema migrations, for SQLite (embedded) and MySQL/MariaDB."""

from __future__ import annotations

import ast
import functools
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine, event, inspect, text
from sqlalchemy.engine import Connection, Engine, make_url

from zeroarchive.core.environment import from_environment
from zeroarchive.core.services import ServiceUnavailable, is_unreachable, reason

if TYPE_CHECKING:
    from alembic.config import Config
    from scrapy.settings import BaseSettings

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
logger = logging.getLogger(__name__)


def db_url_from(settings: BaseSettings | None = None) -> str:
    """The database URL: the ``ZEROARCHIVE_DB_URL`` environment variable, else the
    setting of that name (settings/base.py: the embedded SQLite file)."""
    url = from_environment("ZEROARCHIVE_DB_URL", settings)
    if url is None:
        raise ValueError("ZEROARCHIVE_DB_URL is not set (environment or setting)")
    return url


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets `scrapy sites` or an export read while a crawl writes.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


@contextmanager
def transaction(bind: Engine | Connection) -> Iterator[Connection]:
    """A transaction of its own on an engine; on a connection, the caller's: what is
    written there commits or rolls back with everything else the caller writes."""
    if isinstance(bind, Connection):
        yield bind
        return
    with bind.begin() as conn:
        yield conn


def make_engine(url: str) -> Engine:
    """An engine for ``url`` with the options each backend needs."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if parsed.get_backend_name() in ("mysql", "mariadb"):
        if "charset" not in parsed.query:
            parsed = parsed.update_query_dict({"charset": "utf8mb4"})
        engine = create_engine(parsed, pool_pre_ping=True, pool_recycle=3600)
        if parsed.get_driver_name() == "pymysql":
            event.listen(engine, "do_connect", _pymysql_connect)
        return engine
    return create_engine(parsed, pool_pre_ping=True)


def _pymysql_connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
    """A PyMySQL connection whose TLS context, when no TLS option is given, is the
    process's one: PyMySQL otherwise builds one for every connection (its "preferred"
    TLS, used when the server offers it), loading the system's CA certificates each time
    for a context that verifies nothing: 55 ms of CPU a connection against 1.6 ms, and a
    crawl's pool opens a connection for each thread that writes."""
    from zeroarchive.storage.pymysql_tls import SharedTlsConnection

    return SharedTlsConnection(*cargs, **cparams)


def _alembic_config(engine: Engine) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["engine"] = engine
    return config


# Every command checks the schema revision when it starts, and importing Alembic costs a
# quarter of a second: the check reads Alembic's version table and the migration scripts'
# revision lines itself, and Alembic is imported only to upgrade.


def current_revision(engine: Engine) -> str | None:
    """The schema revision(s) the database is at, joined with "+" (None when empty)."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        heads = connection.execute(text("SELECT version_num FROM alembic_version")).scalars()
        return "+".join(sorted(heads)) or None


#: This code runs on a database that a newer release migrated past what it knows (a
#: rolling upgrade's old workers; docs/operators/upgrades.md). Releases before it did not.
FORWARD_COMPATIBLE = True


@functools.cache
def known_revisions() -> tuple[frozenset[str], frozenset[str]]:
    """Every schema revision this code's migrations make, and those no other migration
    names as its ``down_revision`` (the heads)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in (MIGRATIONS_DIR / "versions").glob("[0-9]*.py"):
        names = _module_constants(script)
        revisions.add(names["revision"])
        down = names["down_revision"]
        parents.update(down if isinstance(down, tuple) else [down] if down else [])
    return frozenset(revisions), frozenset(revisions - parents)


def head_revision() -> str:
    """The newest schema revision(s) this code knows, joined with "+".

    Features add migrations that branch from the revision they need, so there may be
    several heads; all of them are applied.
    """
    return "+".join(sorted(known_revisions()[1]))


def _module_constants(script: Path) -> dict[str, Any]:
    """The literals a migration script assigns to plain names at its top level."""
    found = {}
    for node in ast.parse(script.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant | ast.Tuple):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = ast.literal_eval(node.value)
    return found


def migrate(engine: Engine) -> tuple[str | None, str]:
    """Create or upgrade the schema to the newest revisions; return (before, after).

    This is every process's first statement: a database that does not answer raises
    ServiceUnavailable (one line, password hidden).
    """
    try:
        before = current_revision(engine)
    except Exception as exc:
        if is_unreachable(exc):
            raise ServiceUnavailable("the database", str(engine.url), reason(exc)) from exc
        raise
    if not MIGRATIONS_DIR.is_dir():
        # Running from a zipped egg (scrapyd), where Alembic cannot read its scripts: the
        # schema is then managed by `scrapy migrate` on a host with a checkout.
        if before is None:
            raise RuntimeError(
                "the database has no zeroarchive schema: run `scrapy migrate` against it first"
            )
        return before, before
    if before is not None and not set(before.split("+")) <= known_revisions()[0]:
        # Migrated by a newer release: its migrations keep the older code working, and
        # this process is replaced in turn. Alembic would refuse a revision it cannot find.
        logger.warning(
            "The database is at schema %s, newer than this code knows (%s): running on it "
            "unchanged; upgrade this process (docs/operators/upgrades.md)",
            before,
            head_revision(),
        )
        return before, before
    if before != head_revision():
        from alembic import command

        command.upgrade(_alembic_config(engine), "heads")
    return before, head_revision()
