"""The archive in the formats others read: WARC/1.1 and WACZ for pywb and ReplayWeb.page,
rotation's export of old months as WARC, and WARCs read back in as snapshots
(``warc``).

May import: ``storage``, ``media`` (a snapshot's items in a WARC), ``sites``, ``sources``,
``core``.
Never imported by: ``storage``, ``crawl``, ``parser`` or anything below them; only
``commands`` (and the monitor, should it offer a download) use it.
"""
