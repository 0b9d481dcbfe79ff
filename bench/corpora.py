"""Where the benchmarks find the saved real pages: the team's corpora beside the checkout
(../shared/corpora), or the folder ZEROARCHIVE_CORPORA names. Tests never read these: they
carry their own copies in tests/fixtures."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPORA = Path(os.environ.get("ZEROARCHIVE_CORPORA") or REPO.parent / "shared" / "corpora")
