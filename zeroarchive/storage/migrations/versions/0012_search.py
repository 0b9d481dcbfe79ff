"""Full-text search: search_doc (document ids), search_reindex (resumable rebuilds) and the
engine's index, publication_search — an FTS5 table in SQLite, a Mroonga table in MariaDB.

On a MariaDB without Mroonga the index table is left out with a warning: the archive works
on, and `scrapy reindex` creates it once Mroonga is installed. An archive migrated with
publications already in it finds nothing until `scrapy reindex` has run.

Revision ID: 0012
Revises: 0011, 0002
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op

revision = "0012"
# Also after 0002, on another branch: the publication table its trigger is on. (A merge,
# not depends_on: the schema check's reading of the heads, storage/engine.py, knows these.)
down_revision = ("0011", "0002")

TRIGGER = "publication_search_doc"
Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
logger = logging.getLogger(__name__)
# Spelled out here, not imported from zeroarchive/search (see 0001): tokens one space apart.
FTS5 = (
    "CREATE VIRTUAL TABLE publication_search USING fts5(body, content='', columnsize=0,"
    " tokenize=\"unicode61 remove_diacritics 0 categories 'L* M* N* P* S* C*'\")"
)
NORMALIZERS = ("NormalizerNFKC121", "NormalizerNFKC100", "NormalizerNFKC51")


def _create_mroonga(bind: sa.engine.Connection) -> None:
    engines = {row[0].lower() for row in bind.execute(sa.text("SHOW ENGINES"))}
    if "mroonga" not in engines:
        logger.warning(
            "Search index not created: MariaDB has no Mroonga (apt-get install"
            " mariadb-plugin-mroonga; INSTALL SONAME 'ha_mroonga'; then scrapy reindex)"
        )
        return
    for normalizer in NORMALIZERS:
        try:
            bind.execute(
                sa.text(
                    "CREATE TABLE publication_search ("
                    " doc_id BIGINT NOT NULL PRIMARY KEY, body LONGTEXT NOT NULL,"
                    " FULLTEXT INDEX ft_publication_search (body)"
                    f' COMMENT \'tokenizer "TokenBigram", normalizer "{normalizer}"\''
                    ") ENGINE=Mroonga DEFAULT CHARSET=utf8mb4"
                )
            )
            return
        except sa.exc.DBAPIError:
            continue  # an older Groonga: the next normaliser
    logger.warning("Search index not created: Mroonga knows none of %s", NORMALIZERS)


def upgrade() -> None:
    op.create_table(
        "search_doc",
        sa.Column("doc_id", Id, primary_key=True, autoincrement=True),
        sa.Column("publication_id", Id, nullable=False),
        sa.UniqueConstraint("publication_id", name="uq_search_doc_publication"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "search_reindex",
        sa.Column("scope", sa.String(32), primary_key=True),
        sa.Column("parser_version", sa.String(32), nullable=False),
        sa.Column("last_publication_id", sa.BigInteger, nullable=False),
        sa.Column("started_at", sa.BigInteger, nullable=False),
    )
    forget = "DELETE FROM search_doc WHERE publication_id = OLD.publication_id"
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        op.execute(FTS5)
        op.execute(f"CREATE TRIGGER {TRIGGER} AFTER DELETE ON publication BEGIN {forget}; END")
    else:
        op.execute(f"CREATE TRIGGER {TRIGGER} AFTER DELETE ON publication FOR EACH ROW {forget}")
        _create_mroonga(bind)


def downgrade() -> None:
    op.execute(f"DROP TRIGGER {TRIGGER}")
    op.execute("DROP TABLE IF EXISTS publication_search")
    op.drop_table("search_reindex")
    op.drop_table("search_doc")
