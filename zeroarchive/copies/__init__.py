"""Copies: the same story on other sites, in the other Chinese script, retitled, cut,
reordered or wrapped in boilerplate, and who had it first.

``fingerprint`` turns a publication's body into what is compared (folded to one script,
letters and digits only, each site's boilerplate left out) and into MinHash LSH band keys;
``store`` keeps fingerprints, bands, the sites' boilerplate and clusters in the archive's
database (plain SQL on SQLite and MariaDB alike); ``index`` adds a body: its candidates
from the bands, each checked by exact containment, then its cluster; ``hook`` is the parse
run's ``VersionHook``, as search indexing's is; ``read`` answers ``scrapy copies``;
``rebuild`` recomputes everything, resumably (``pairs``: every candidate pair and the
clusters at once, from all sketches); ``network`` is the site-to-site graph of
who published whose stories after them (``scrapy copy_network``, ``site_stats``).

May import: ``core``, ``storage``, ``search`` (its Chinese fold alone).
Never imported by: ``core``, ``sources``, ``sites``, ``storage``, ``parser``, ``crawl``,
``search``.
"""
