"""Copies: the copy index's tables kept compressed on MariaDB (no change on SQLite).

The LSH index is small rows of random-looking numbers (copy_band: a 4-byte band key and an
8-byte article id), and InnoDB adds ~18 bytes of row header, transaction id and roll
pointer to each: after a rebuild the copy tables took 0.41x the text they cover, against
the aim of 0.3x (bench/README.md, "copies_speed.py"). With ROW_FORMAT=COMPRESSED (16 KB
pages stored in 8 KB) the headers, the shared high bytes of the keys and the one
transaction id of a rebuild's rows compress: 0.41x -> 0.28x at 20,000 publications, for
about three times the server's CPU when the index is written. Rewrites the three tables
(their rows are kept).

Revision ID: 0034
Revises: 0033
"""

from __future__ import annotations

import logging

from alembic import op

revision = "0034"
down_revision = "0033"

#: The tables of the index itself (copy_cluster is a row per cluster, copy_rebuild one).
TABLES = ("copy_band", "copy_doc", "copy_block")


def _mariadb() -> bool:
    return op.get_bind().dialect.name in ("mysql", "mariadb")


def _compressed_is_writable() -> bool:
    """False on a server that keeps compressed tables read-only (MariaDB 10.6.0-10.6.5's
    default ``innodb_read_only_compressed=ON``): the index stays uncompressed there."""
    found = op.get_bind().exec_driver_sql("SHOW VARIABLES LIKE 'innodb_read_only_compressed'")
    row = found.first()
    return row is None or str(row[1]).upper() != "ON"


def upgrade() -> None:
    if _mariadb():
        if not _compressed_is_writable():
            logging.getLogger("alembic").warning(
                "0034: innodb_read_only_compressed is ON on this server: the copy index's "
                "tables stay uncompressed (about 0.4x the text they cover instead of 0.3x)"
            )
            return
        for name in TABLES:
            op.execute(f"ALTER TABLE {name} ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8")


def downgrade() -> None:
    if _mariadb():
        for name in TABLES:
            op.execute(f"ALTER TABLE {name} ROW_FORMAT=DYNAMIC KEY_BLOCK_SIZE=0")
