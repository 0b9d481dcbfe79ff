"""Sites: what is archived and how. The ``Site`` record and its validated config
(``record``), proxies and cookie files (``proxies``), and 0archive's Sites table in
Airtable: reading it (``airtable``), its rows as sites (``airtable_rows``) and the plan of
a sync (``sync``).

May import: ``sources`` and ``core``.
Never imported by: ``sources`` or ``core`` (a Site is built on the registry, not the
reverse). Storing sites is ``storage``'s job; this package never touches the database.
"""
