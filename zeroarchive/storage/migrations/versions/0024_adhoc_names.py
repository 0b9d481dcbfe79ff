"""Ad-hoc sites lose the credentials a saved URL gave their name and URL.

`scrapy save https://user:password@host/...` named its ad-hoc site ``saved:user:password@host``
(and ``saved:<source>:https://user:password@host/...`` for a post), which every page and
feed showed. New ones are named without them (events/saving.py); this renames the old
ones, data only. A cleaned name another site already has gets `` #<site id>``, so a save
of that host keeps finding the one site of that name.

Revision ID: 0024
Revises: 0023
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"

_SITE = sa.table(
    "Site",
    sa.column("site_id", sa.BigInteger),
    sa.column("name", sa.String),
    sa.column("url", sa.String),
)
#: ``saved:``, a platform's ``<source>:``, a URL's scheme, then ``user[:password]@``.
_CREDENTIALS = re.compile(
    r"^(?P<head>saved:(?:(?:ptt|dcard|facebook|youtube):)?(?:https?://)?)[^/@\s]*@"
)


def clean_name(name: str) -> str:
    """An ad-hoc site's name without a URL's credentials.

    >>> clean_name("saved:ann:pw@news.example:8443")
    'saved:news.example:8443'
    >>> clean_name("saved:ptt:https://ann:pw@www.ptt.cc/bbs/X/index.html")
    'saved:ptt:https://www.ptt.cc/bbs/X/index.html'
    >>> clean_name("saved:facebook:https://m.facebook.com/a@b/posts/")
    'saved:facebook:https://m.facebook.com/a@b/posts/'
    """
    return _CREDENTIALS.sub(r"\g<head>", name, count=1)


def clean_url(url: str) -> str:
    """
    >>> clean_url("https://ann:pw@news.example:8443/"), clean_url("https://x.example/a@b")
    ('https://news.example:8443/', 'https://x.example/a@b')
    """
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def upgrade() -> None:
    conn = op.get_bind()
    rows = conn.execute(
        sa.select(_SITE.c.site_id, _SITE.c.name, _SITE.c.url).where(
            _SITE.c.name.like("saved:%"), _SITE.c.name.like("%@%")
        )
    ).all()
    for site_id, name, url in rows:
        cleaned = clean_name(name)
        if cleaned == name:
            continue
        taken = conn.execute(
            sa.select(sa.func.count()).select_from(_SITE).where(_SITE.c.name == cleaned)
        ).scalar()
        conn.execute(
            _SITE.update()
            .where(_SITE.c.site_id == site_id)
            .values(name=f"{cleaned} #{site_id}" if taken else cleaned, url=clean_url(url))
        )


def downgrade() -> None:
    """The credentials are gone: nothing to undo."""
