"""Copies: the copy index's rows emptied, because its band keys changed.

The LSH index of zeroarchive/copies/ is now 18 bands of 3 one-permutation MinHash values
per body (it was 32 bands of 4 permutation MinHash values): 18 rows of copy_band per body,
not 32, and a tenth of the hashing. A band key of the old kind can match no key of the
new, so the rows made from them (copy_doc, copy_band, copy_cluster, and an interrupted
rebuild's state in copy_rebuild) are emptied here; `scrapy copies --rebuild` computes them
again, and the parse run's hook adds new versions meanwhile. Each site's learnt
boilerplate (copy_block) is kept: its line hashes did not change. No table or column changes.

Revision ID: 0031
Revises: 0030
"""

from __future__ import annotations

from alembic import op

revision = "0031"
down_revision = "0030"

#: Emptied both ways: the code of either side cannot use the other's keys.
TABLES = ("copy_band", "copy_doc", "copy_cluster", "copy_rebuild")


def upgrade() -> None:
    for name in TABLES:
        op.execute(f"DELETE FROM {name}")


def downgrade() -> None:
    upgrade()
