"""The shared vocabulary of every stage: small, pure or nearly so.

Owns: the clock (``ZEROARCHIVE_FAKE_NOW``), URL canonicalisation and identity (``urls``),
encodings of stored bytes, snapshot plans and their adaptation (``schedule``), error
kinds, stats keys, our signals, lease owners (``owners``), the records that pass between
stages (``items``: found links, fetched pages, failed fetches, parsed publications),
request meta keys, language tags (``language``), the environment's overrides of
settings, riding out a database or Redis that is away (``services``, ``db_retry``), and
what every output shows of stored text: credentials masked, control characters escaped
(``shown``).

May import: nothing of zeroarchive (Scrapy, the standard library and small libraries only).
Imported by: everything; it must never import another zeroarchive package.
"""
