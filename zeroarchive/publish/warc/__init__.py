"""WARC: snapshots out as WARC/1.1 (and WACZ) for pywb and ReplayWeb.page, WARCs in as
snapshots. records = what one snapshot becomes; export, rotation and importer use it."""
