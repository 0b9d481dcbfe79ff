"""Silent edits, found as the parser adds publication versions: a new version whose
normalised title or body differs from the version the article showed before is an
``edited`` event with its diff (``diff``). A version that differs only in what the parser
keeps besides (comments, counters, metadata) is none.

``edit_hook`` is a ``VersionHook`` (zeroarchive/storage/publications.py): it runs inside
the transaction that adds the version, so the event commits with it. Parsing again (a new
parser version) adds no second event: events are unique per article, kind and snapshot.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.engine import Connection

from zeroarchive.events.diff import edit_diff
from zeroarchive.events.store import insert_event
from zeroarchive.storage.publications import AddedVersion
from zeroarchive.storage.schema import publication


def edit_hook(conn: Connection, added: AddedVersion) -> None:
    """Record an ``edited`` event when this version changed the publication's text."""
    if added.version < 2:
        return
    parser_version = conn.execute(
        select(publication.c.parser_version).where(
            publication.c.publication_id == added.publication_id
        )
    ).scalar_one()
    previous = conn.execute(
        select(publication.c.title, publication.c.publication_text, publication.c.last_seen_at)
        .where(
            publication.c.article_id == added.article_id,
            publication.c.parser_version == parser_version,
            publication.c.publication_id != added.publication_id,
            publication.c.first_seen_at < added.snapshot_at,
        )
        .order_by(publication.c.last_seen_at.desc())
        .limit(1)
    ).first()
    if previous is None:
        return
    found = edit_diff(
        (previous.title, previous.publication_text), (added.parsed.title, added.parsed.text)
    )
    if found is None:
        return
    insert_event(
        conn,
        "edited",
        added.article_id,
        added.site_id,
        added.snapshot_at,
        ",".join(found["fields"]),
        previous.last_seen_at,
        added.snapshot_at,
        found,
    )
