"""Search on MariaDB: each Mroonga document also names its article (a token, and columns
with its article and version), so an --all-versions search counts in Groonga the articles
whose older versions alone hold a query, and older versions carry a mark in place of the
latest ones (cheaper to exclude than the most to intersect with; search/mroonga.py). The
documents indexed before are not so: the MariaDB index is made anew, empty, and `scrapy
reindex` fills it (a warning says so when there are publications). SQLite's index is
unchanged.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"

logger = logging.getLogger(__name__)
# Spelled out here, not imported from zeroarchive/search (see 0001).
COLUMNS = (
    " doc_id BIGINT NOT NULL PRIMARY KEY,"
    " body LONGTEXT NOT NULL COMMENT 'flags \"COLUMN_SCALAR|COMPRESS_ZLIB\"',"
    " date BIGINT NOT NULL,"
)
INDEX = (
    " FULLTEXT INDEX ft_publication_search (body)"
    ' COMMENT \'tokenizer "TokenDelimit", normalizer "none"\''
    ") ENGINE=Mroonga DEFAULT CHARSET=utf8mb4"
)
MROONGA = (
    "CREATE TABLE publication_search ("
    + COLUMNS
    + " article_id BIGINT NOT NULL, version INT NOT NULL,"
    + INDEX
)
MROONGA_0020 = "CREATE TABLE publication_search (" + COLUMNS + INDEX
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
    _index_table(MROONGA)


def downgrade() -> None:
    _index_table(MROONGA_0020)
