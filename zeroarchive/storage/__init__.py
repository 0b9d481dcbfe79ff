"""The database: the archive's tables (``schema``) and their migrations, one store per
table (``sites``, ``articles``, ``snapshots``, ``publications``, ``site_stats``), reading
for people (``browse``), compression of raw pages, rotation of old months, imports of
outside records (``imports``; a whole 0archive database, ``from_0archive``), and the
``Archive`` facade every stage opens (``archive``).
``snapshots.read_snapshot`` is the one way to get a snapshot's original bytes back.

May import: ``sites``, ``sources``, ``core``.
Never imported by: ``core``, ``sources``, ``sites``. Each table is written only by its
owner: the crawl (through the pipelines) writes sites' crawl state, articles and
snapshots; the parser writes publications.
"""
