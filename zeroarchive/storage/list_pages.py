"""Each site's tracked list pages (list_page): read and written whole, as rows keyed by
the fields of zeroarchive/crawl/list_intervals.py's ``ListPage`` (``interval`` is the
``walk_interval`` column), so the crawl turns them into pages and back without this layer
knowing the rules."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import and_, func, select, update
from sqlalchemy.engine import Connection, Engine, RowMapping
from sqlalchemy.exc import IntegrityError

from zeroarchive.core.urls import url_hash
from zeroarchive.storage.schema import list_page, site

MAX_ETAG = 512
MAX_LAST_MODIFIED = 64
#: Row fields by column: the one whose name differs.
_FIELD = {"walk_interval": "interval"}
_COLUMN = {v: k for k, v in _FIELD.items()}
_KEYS = ("site_id", "url_hash")


def _fields(row: RowMapping) -> dict[str, Any]:
    return {
        _FIELD.get(name, name): value
        for name, value in row.items()
        if name not in _KEYS and name in list_page.c
    }


def _columns(site_id: int, fields: Mapping[str, Any]) -> dict[str, Any]:
    values = {_COLUMN.get(name, name): value for name, value in fields.items()}
    # A validator longer than its column is not kept: the page is asked for in full.
    if values.get("etag") and len(values["etag"]) > MAX_ETAG:
        values["etag"] = None
    if values.get("last_modified") and len(values["last_modified"]) > MAX_LAST_MODIFIED:
        values["last_modified"] = None
    return {"site_id": site_id, "url_hash": url_hash(str(values["url"])), **values}


class ListPageStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def load(self, site_id: int, urls: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """The site's tracked pages (only those of ``urls`` when given)."""
        query = select(list_page).where(list_page.c.site_id == site_id)
        if urls is not None:
            query = query.where(list_page.c.url_hash.in_([url_hash(u) for u in urls]))
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(list_page.c.url)).mappings()
            return [_fields(row) for row in rows]

    def by_site(self, site_ids: Sequence[int] | None = None) -> dict[int, list[dict[str, Any]]]:
        """Every site's tracked pages (of ``site_ids`` when given), by site id."""
        query = select(list_page).order_by(list_page.c.site_id, list_page.c.url)
        if site_ids is not None:
            query = query.where(list_page.c.site_id.in_(list(site_ids)))
        out: dict[int, list[dict[str, Any]]] = {}
        with self.engine.connect() as conn:
            for row in conn.execute(query).mappings():
                out.setdefault(int(row["site_id"]), []).append(_fields(row))
        return out

    def save(
        self, site_id: int, pages: Iterable[Mapping[str, Any]], next_crawl_at: int | None = None
    ) -> None:
        """Write the pages (new ones added), and bring the site's next walk forward to
        ``next_crawl_at`` when that is earlier, in one transaction."""
        with self.engine.begin() as conn:
            for fields in pages:
                self._upsert(conn, _columns(site_id, fields))
            if next_crawl_at is not None:
                conn.execute(
                    update(site)
                    .where(site.c.site_id == site_id, site.c.next_crawl_at > next_crawl_at)
                    .values(next_crawl_at=next_crawl_at)
                )

    @staticmethod
    def _upsert(conn: Connection, values: dict[str, Any]) -> None:
        key = and_(
            list_page.c.site_id == values["site_id"], list_page.c.url_hash == values["url_hash"]
        )
        changed = {k: v for k, v in values.items() if k not in _KEYS}
        if conn.execute(update(list_page).where(key).values(**changed)).rowcount:
            return
        try:
            with conn.begin_nested():
                conn.execute(list_page.insert().values(**values))
        except IntegrityError:
            # Another worker added it a moment ago: ours is the newer state.
            conn.execute(update(list_page).where(key).values(**changed))

    def delete(self, site_id: int, urls: Sequence[str]) -> int:
        """Stop tracking these pages of the site; how many were tracked."""
        if not urls:
            return 0
        hashes = [url_hash(u) for u in urls]
        with self.engine.begin() as conn:
            return int(
                conn.execute(
                    list_page.delete().where(
                        list_page.c.site_id == site_id, list_page.c.url_hash.in_(hashes)
                    )
                ).rowcount
            )

    def mark_linked(self, site_id: int, urls: Sequence[str], at: int, every: int = 0) -> None:
        """The site's walks linked these pages at ``at`` (only rows marked more than
        ``every`` seconds before are written)."""
        if not urls:
            return
        with self.engine.begin() as conn:
            conn.execute(
                update(list_page)
                .where(
                    list_page.c.site_id == site_id,
                    list_page.c.url_hash.in_([url_hash(u) for u in urls]),
                    list_page.c.linked_at < at - every,
                )
                .values(linked_at=at)
            )

    def next_due(self, site_id: int) -> int | None:
        """When the site's earliest tracked page is due; None when it has none."""
        with self.engine.connect() as conn:
            value = conn.execute(
                select(func.min(list_page.c.next_walk_at)).where(list_page.c.site_id == site_id)
            ).scalar()
        return None if value is None else int(value)
