"""Bringing a running 0archive (ZeroScraper, 2019-2021) over: its MySQL database as its
own migrations leave it (``source``), its sites mapped as ``sync_sites`` maps them
(``sites``), its articles with their schedules, duplicates merged and redirects made moves
(``articles``), every snapshot of the live and the rotated month tables stored as the
archive stores snapshots (``snapshots``), and the run that does it in resumable batches
(``run``), remembering what became of each row (``ids``, the ``legacy_id`` table).

``scrapy import_0archive`` is its command; docs/operators/from-0archive.md the steps.
"""

from __future__ import annotations

from zeroarchive.storage.from_0archive.run import ImportOptions, ImportReport, ZeroArchiveImport
from zeroarchive.storage.from_0archive.source import ZeroArchiveDb, source_key

__all__ = ["ImportOptions", "ImportReport", "ZeroArchiveDb", "ZeroArchiveImport", "source_key"]
