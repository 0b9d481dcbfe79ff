"""Search counted and ranked by the engine alone: search_doc gains what a search filters on
(article, parser version, version, site, date, and whether the version is its article's
latest indexed), and the index holds tokens that make a query exact (search/text.py:
runs, CJK pairs, and what stands between runs). On MariaDB the Mroonga table splits those
tokens at spaces (TokenDelimit, no normaliser: they are normalised already) and keeps
them compressed (zlib), so the index is not a second plain copy of the text, with each
document's filter tokens (parser version, site, latest) and date, so Groonga filters,
counts and ranks a search of latest versions without MariaDB reading a row.

The old index cannot be read the new way: it is emptied, and `scrapy reindex` fills it
(a warning says so when there are publications).

Revision ID: 0020
Revises: 0012
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0012"

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
logger = logging.getLogger(__name__)
# Spelled out here, not imported from zeroarchive/search (see 0001).
FTS5 = (
    "CREATE VIRTUAL TABLE publication_search USING fts5(body, content='', columnsize=0,"
    " tokenize=\"unicode61 remove_diacritics 0 categories 'L* M* N* P* S* C*'\")"
)
MROONGA = (
    "CREATE TABLE publication_search ("
    " doc_id BIGINT NOT NULL PRIMARY KEY,"
    " body LONGTEXT NOT NULL COMMENT 'flags \"COLUMN_SCALAR|COMPRESS_ZLIB\"',"
    " date BIGINT NOT NULL,"
    " FULLTEXT INDEX ft_publication_search (body)"
    ' COMMENT \'tokenizer "TokenDelimit", normalizer "none"\''
    ") ENGINE=Mroonga DEFAULT CHARSET=utf8mb4"
)
# Its filter tokens would still count a deleted publication: its tokens go with its row.
FORGET = (
    "CREATE TRIGGER IF NOT EXISTS search_doc_forget AFTER DELETE ON search_doc"
    " FOR EACH ROW DELETE FROM publication_search WHERE doc_id = OLD.doc_id"
)
OLD_MROONGA = (
    "CREATE TABLE publication_search ("
    " doc_id BIGINT NOT NULL PRIMARY KEY, body LONGTEXT NOT NULL,"
    " FULLTEXT INDEX ft_publication_search (body)"
    ' COMMENT \'tokenizer "TokenBigram", normalizer "NormalizerNFKC51"\''
    ") ENGINE=Mroonga DEFAULT CHARSET=utf8mb4"
)


def _has_mroonga(bind: sa.engine.Connection) -> bool:
    return "mroonga" in {row[0].lower() for row in bind.execute(sa.text("SHOW ENGINES"))}


def _index_table(create_mroonga: str) -> None:
    bind = op.get_bind()
    op.execute("DROP TABLE IF EXISTS publication_search")
    if bind.dialect.name == "sqlite":
        op.execute(FTS5)
    elif _has_mroonga(bind):
        op.execute(create_mroonga)
        if create_mroonga == MROONGA:
            op.execute(FORGET)
    else:
        logger.warning(
            "Search index not created: MariaDB has no Mroonga (apt-get install"
            " mariadb-plugin-mroonga; INSTALL SONAME 'ha_mroonga'; then scrapy reindex)"
        )
    if bind.execute(sa.text("SELECT 1 FROM publication LIMIT 1")).first():
        logger.warning("The search index was emptied by this upgrade: run scrapy reindex")
    op.execute("DELETE FROM search_reindex")


def upgrade() -> None:
    op.drop_table("search_doc")
    op.create_table(
        "search_doc",
        sa.Column("doc_id", Id, primary_key=True, autoincrement=True),
        sa.Column("publication_id", Id, nullable=False),
        sa.Column("article_id", Id, nullable=False),
        sa.Column("parser_version", sa.String(32), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("site_id", Id, nullable=False),
        sa.Column("date", sa.BigInteger, nullable=False),
        sa.Column("latest", sa.Boolean, nullable=False),
        sa.UniqueConstraint("publication_id", name="uq_search_doc_publication"),
        sqlite_autoincrement=True,
    )
    op.create_index(
        "ix_search_doc_article", "search_doc", ["article_id", "parser_version", "version"]
    )
    _index_table(MROONGA)


def downgrade() -> None:
    op.drop_table("search_doc")
    op.create_table(
        "search_doc",
        sa.Column("doc_id", Id, primary_key=True, autoincrement=True),
        sa.Column("publication_id", Id, nullable=False),
        sa.UniqueConstraint("publication_id", name="uq_search_doc_publication"),
        sqlite_autoincrement=True,
    )
    _index_table(OLD_MROONGA)
