"""A real 0archive (ZeroScraper) database on MariaDB, built by 0archive's own migrations
(vendored in tests/fixtures/zeroscraper/, see its SOURCE.txt), for the import tests and
the benchmark."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine

MIGRATIONS = Path(__file__).resolve().parent / "fixtures" / "zeroscraper"
HEAD = "360d0f705ee3"

# Ours: the repository's env.py reads DB_URL from a .env file and configures logging.
ENV_PY = """
from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=None)
with context.begin_transaction():
    context.run_migrations()
"""


def build_zeroscraper(url: str) -> Engine:
    """Run 0archive's migrations up to their head on the empty MySQL database at ``url``."""
    engine = create_engine(url)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "versions").mkdir()
        for script in (MIGRATIONS / "versions").glob("*.py.txt"):
            shutil.copyfile(script, root / "versions" / script.name.removesuffix(".txt"))
        shutil.copyfile(MIGRATIONS / "script.py.mako.txt", root / "script.py.mako")
        (root / "env.py").write_text(ENV_PY, encoding="utf-8")
        config = Config()
        config.set_main_option("script_location", str(root))
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    return engine
