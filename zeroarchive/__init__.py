"""zeroarchive: an archiving crawler for disinformation research.

The package's folders follow the data's one way through the archive:

    sources -> sites -> crawl -> storage -> parser -> publications -> search, copies,
    publish, monitor

- ``core``: the shared vocabulary: clock, URLs and their identity, encodings, snapshot
  plans, error kinds, stats keys, the records passed between stages, services that are away.
- ``sources``: one record per kind of source (generic web, PTT, Dcard, Facebook, YouTube).
- ``sites``: the Site record and its config, proxies and cookies, the Airtable sync.
- ``storage``: the database: schema, migrations, one store per table, the ``Archive`` facade.
- ``media``: the images, stylesheets and videos of stored pages: finding them, their
  requests and answers, stored once by content (database or directory), verified.
- ``distributed``: redis: the shared request queue, its scheduler, the Bloom dupefilter.
- ``crawl``: the spider base, list and feed walks, due work and its dispatch, politeness
  helpers (block pages, browser, login, run locks).
- ``parser``: stage B, publications from snapshots, and the parse run.
- ``search``: full-text search over publications and their versions (SQLite FTS5,
  MariaDB Mroonga), fed by the parse run's hook.
- ``copies``: the same story across sites and scripts (fingerprints, clusters, who had it
  first), fed by the parse run's hook as search is.
- ``publish``: the archive in other formats (WARC and WACZ out, WARC in).
- ``monitor``: ``scrapy monitor``, the read-only web app and GraphQL API.
- ``commands``: the ``scrapy`` commands, the top: they may import everything, nothing
  imports them.

A package imports only packages to its left in that list (``core`` none), and the
top-level ``spiders``, ``pipelines`` and ``middlewares`` import from here, never the other
way. ``bloom_dupefilter`` is the old path of the dupefilter, kept for one release.
"""
