"""Search on MariaDB: Mroonga stores each document's normalised text with marks between
its runs (search/mroonga.py ``mroonga_text``) and Groonga's TokenBigram cuts it into the
same tokens as before, in place of the tokens themselves (zlib'd, about 0.7x of the text
against 0.96x: bench/README.md). The documents indexed before are not so: the MariaDB
index is made anew, empty, and `scrapy reindex` fills it (a warning says so when there
are publications). SQLite's index is unchanged.

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"

logger = logging.getLogger(__name__)
# Spelled out here, not imported from zeroarchive/search (see 0001).
TABLE = (
    "CREATE TABLE publication_search ("
    " doc_id BIGINT NOT NULL PRIMARY KEY,"
    " body LONGTEXT NOT NULL COMMENT 'flags \"COLUMN_SCALAR|COMPRESS_ZLIB\"',"
    " date BIGINT NOT NULL,"
    " article_id BIGINT NOT NULL, version INT NOT NULL,"
    " FULLTEXT INDEX ft_publication_search (body)"
    ' COMMENT \'tokenizer "{tokenizer}", normalizer "{normalizer}"\''
    ") ENGINE=Mroonga DEFAULT CHARSET=utf8mb4"
)
FORGET = (
    "CREATE TRIGGER IF NOT EXISTS search_doc_forget AFTER DELETE ON search_doc"
    " FOR EACH ROW DELETE FROM publication_search WHERE doc_id = OLD.doc_id"
)


def _index_table(create: str) -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        return
    mroonga = "mroonga" in {row[0].lower() for row in bind.execute(sa.text("SHOW ENGINES"))}
    op.execute("DROP TABLE IF EXISTS publication_search")
    if mroonga:
        op.execute(create)
        op.execute(FORGET)
    # TRUNCATE: no trigger fires for each row.
    op.execute("TRUNCATE TABLE search_doc")
    op.execute("DELETE FROM search_reindex")
    if bind.execute(sa.text("SELECT 1 FROM publication LIMIT 1")).first():
        logger.warning("The search index was emptied by this upgrade: run scrapy reindex")


def upgrade() -> None:
    _index_table(TABLE.format(tokenizer="TokenBigram", normalizer="NormalizerAuto"))


def downgrade() -> None:
    _index_table(TABLE.format(tokenizer="TokenDelimit", normalizer="none"))
