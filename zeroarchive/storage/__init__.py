"""The database: the archive's tables (``schema``) and their migrations, one store per
table (``sites``, ``articles``, ``snapshots``, ``publications``, ``site_stats``,
``list_pages``: each site's tracked list pages), who
holds which lease and taking back what dead holders or lost queues held (``leases``), reading
for people (``browse``), compression of raw pages, rotation of old months, fixity checks
of what is stored (``fixity``, the snapshots' source ``snapshot_fixity``), imports of
outside records (``imports``; a whole 0archive database, ``from_0archive``), and the
``Archive`` facade every stage opens (``archive``).
``snapshots.read_snapshot`` is the one way to get a snapshot's original bytes back.

May import: ``sites``, ``sources``, ``core``.
Never imported by: ``core``, ``sources``, ``sites``. Each table is written only by its
owner: the crawl (through the pipelines) writes sites' crawl state, articles and
snapshots; the parser writes publications.
"""
