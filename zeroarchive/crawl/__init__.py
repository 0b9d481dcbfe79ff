"""Stage A, the crawl: the spider base every source's spider builds on (``spider``),
walking list pages (``list_walk``) and feeds and sitemaps (``feed_walk``, ``feeds``), each
list page by its own interval within its site's budget (``list_intervals``, ``list_pages``), the
one selection of due work for both modes (``due_work``) and its dispatch into the redis
queues (``dispatch``), recording what a worker holds and taking up what a killed run held
(``recovery``), writing the snapshot batches (``snapshot_batches``) in the crawl's writer
process (``writer_process``), and the helpers of a polite fetch: rel=canonical and og:url
(``canonical``), block pages (``blocks``), the browser (``browser``), logins (``login``),
one run per site (``runlock``), and a log that names no password (``masked_logs``).

May import: ``storage``, ``events`` (the watch and the soft-404 probe), ``media`` (the
items a page shows, stored with its batch), ``distributed``,
``sites``, ``sources``, ``core``.
Never imported by: those packages, nor ``parser``, ``publish`` or ``monitor``: reading the
archive never needs the crawler. Spiders, pipelines and middlewares (top level) use it.
"""
