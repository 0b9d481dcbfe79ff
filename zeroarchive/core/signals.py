"""Signals of our own, next to Scrapy's (``scrapy.signals``)."""

from __future__ import annotations

#: Sent by the ArticlesPipeline once a list page's links are stored, with ``item`` (the
#: ArticleLinks) and ``new`` (how many of its URLs were not in the archive yet).
articles_stored = object()
