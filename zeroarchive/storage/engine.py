"""Database URL, engine and schema migrations, for SQLite (embedded) and MySQL/MariaDB."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url

from zeroarchive.environment import from_environment
from zeroarchive.services import ServiceUnavailable, is_unreachable, reason

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


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
        return create_engine(parsed, pool_pre_ping=True, pool_recycle=3600)
    return create_engine(parsed, pool_pre_ping=True)


def _alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["engine"] = engine
    return config


def current_revision(engine: Engine) -> str | None:
    """The schema revision(s) the database is at, joined with "+" (None when empty)."""
    with engine.connect() as connection:
        heads = MigrationContext.configure(connection).get_current_heads()
    return "+".join(sorted(heads)) or None


def head_revision() -> str:
    """The newest schema revision(s) this code knows, joined with "+".

    Features add migrations that branch from the revision they need, so there may be
    several heads; all of them are applied.
    """
    return "+".join(sorted(ScriptDirectory(str(MIGRATIONS_DIR)).get_heads()))


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
    if before != head_revision():
        command.upgrade(_alembic_config(engine), "heads")
    return before, head_revision()
