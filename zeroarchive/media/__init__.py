"""Media: the images, stylesheets and videos a stored page showed, kept once by content.

``find`` reads a page (or a stylesheet) for the items it shows (pure functions), ``fetch``
turns them into the crawl's requests and their answers into records (``MediaAnswer``),
``store`` keeps each item's bytes once under its SHA-256 behind one small interface with
two backends (the archive's database, a content-addressed directory) and records what each
snapshot showed, and ``fixity`` is the source ``scrapy verify`` reads them back with.

May import: ``storage``, ``sites``, ``sources``, ``core``.
Imported by: ``crawl`` (the spider and the snapshot writer), ``publish`` (WARC export and
import), ``monitor`` (the stored page's pictures and stylesheets), ``commands``.
"""
