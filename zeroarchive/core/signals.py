"""Signals of our own, next to Scrapy's (``scrapy.signals``)."""

from __future__ import annotations

#: Sent by the ArticlesPipeline once a list page's links are stored, with ``item`` (the
#: ArticleLinks) and ``new`` (how many of its URLs were not in the archive yet).
articles_stored = object()

#: Sent by the distributed scheduler when its worker took ``requests`` from the shared
#: queue; ``owner`` is the worker's lease owner, whose heartbeat says it lives
#: (zeroarchive/core/owners.py). The spider records that it holds their work.
work_taken = object()

#: Sent by the distributed scheduler when its closing worker put ``requests`` back in the
#: shared queue unstarted (``owner`` as for ``work_taken``): queued again, not its.
work_returned = object()

#: Sent by the distributed scheduler when its worker answered list pages of walks to the
#: end and queued what they found: ``pages`` (how many of each walk, by (site id, round)),
#: ``ended`` (the walks whose last page this was), ``owner`` as for ``work_taken``.
walk_pages_done = object()
