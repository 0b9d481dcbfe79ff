"""Reading and writing Site rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.engine import Engine, RowMapping

from zeroarchive.sites.record import (
    ADHOC_PREFIX,
    Site,
    SiteConfigError,
    SiteSpec,
    parse_config,
    split_patterns,
)
from zeroarchive.storage.articles import due_for_snapshot
from zeroarchive.storage.schema import article, site


@dataclass(frozen=True)
class SiteRow:
    """A site as the `scrapy sites` listing shows it."""

    site_id: int
    name: str
    type: str
    category: str | None
    url: str
    is_active: bool
    articles: int
    last_crawl_at: int
    next_crawl_at: int
    #: The ``article`` regexes its config gives (none: its article links are learnt).
    article: tuple[str, ...] = ()


def given_article(config_json: str, name: str) -> tuple[str, ...]:
    r"""The ``article`` regexes of a stored config, as written (a config that no longer
    parses gives none here: the crawl reports it).

    >>> given_article('{"article": "/a/\\\\d+; /b/"}', "demo")
    ('/a/\\d+', '/b/')
    """
    try:
        raw = json.loads(config_json or "{}")
        return tuple(p.pattern for p in split_patterns(raw.get("article"), name, "article"))
    except (json.JSONDecodeError, SiteConfigError, AttributeError):
        return ()


class AmbiguousSite(LookupError):
    """A name that several sites share; the message lists their ids and URLs."""


#: The largest id a BIGINT column holds: a bigger number names no site (never an error).
MAX_ID = 2**63 - 1


def _as_id(key: str) -> int | None:
    """``key`` as a site id when it is written in ASCII digits, at most 18 of them (more
    cannot be an id, and ``int`` refuses 5,000).

    >>> _as_id("12"), _as_id("x12"), _as_id("²"), _as_id("9" * 5000)
    (12, None, None, None)
    """
    return int(key) if len(key) <= 18 and key.isascii() and key.isdigit() else None


def _adhoc() -> Any:
    """The ad-hoc sites of saved pages, by name (sites.record.ADHOC_PREFIX)."""
    return site.c.name.startswith(ADHOC_PREFIX, autoescape=True)


def site_from_row(row: RowMapping) -> Site:
    """The typed Site of a database row; raises SiteConfigError if its config is bad."""
    try:
        raw = json.loads(row["config"] or "{}")
    except json.JSONDecodeError as exc:
        raise SiteConfigError(row["name"], "config", f"not valid JSON: {exc}") from exc
    return Site(
        site_id=row["site_id"],
        name=row["name"],
        url=row["url"],
        type=row["type"],
        config=parse_config(raw, row["name"]),
        is_active=bool(row["is_active"]),
        category=row["category"],
    )


class SiteStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def upsert(self, spec: SiteSpec, now: int) -> tuple[int, str]:
        """Insert or update the site of ``spec``: the one with its Airtable id, else the
        one site of its name that no Airtable row owns (names of sites from files are
        their keys; names of synced sites need not be unique).

        Returns the site id and what happened: "added", "updated" or "unchanged".
        """
        values = {
            "url": spec.url,
            "type": spec.type,
            "category": spec.category,
            "config": spec.config_json(),
            "is_active": spec.is_active,
        }
        if spec.airtable_id is not None:
            values["airtable_id"] = spec.airtable_id
        with self.engine.begin() as conn:
            existing = None
            if spec.airtable_id is not None:
                query = select(site).where(site.c.airtable_id == spec.airtable_id)
                existing = conn.execute(query).mappings().first()
            if existing is None:
                query = select(site).where(site.c.name == spec.name, site.c.airtable_id.is_(None))
                rows = conn.execute(query.order_by(site.c.site_id)).mappings().all()
                if len(rows) > 1:
                    raise AmbiguousSite(_ambiguous(spec.name, rows))
                existing = rows[0] if rows else None
            if existing is None:
                result = conn.execute(
                    site.insert().values(name=spec.name, created_at=now, updated_at=now, **values)
                )
                key = result.inserted_primary_key
                assert key is not None
                return int(key[0]), "added"
            if existing["name"] == spec.name and all(
                existing[key] == value for key, value in values.items()
            ):
                return int(existing["site_id"]), "unchanged"
            conn.execute(
                update(site)
                .where(site.c.site_id == existing["site_id"])
                .values(name=spec.name, updated_at=now, **values)
            )
            return int(existing["site_id"]), "updated"

    def specs(self) -> list[tuple[int, SiteSpec]]:
        """Every site, inactive ones too, as (id, spec) with its config as stored."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(site).order_by(site.c.site_id)).mappings().all()
        return [
            (
                int(row["site_id"]),
                SiteSpec(
                    name=row["name"],
                    url=row["url"],
                    type=row["type"],
                    config=json.loads(row["config"] or "{}"),
                    is_active=bool(row["is_active"]),
                    airtable_id=row["airtable_id"],
                    category=row["category"],
                ),
            )
            for row in rows
        ]

    def apply_specs(self, changes: Sequence[tuple[int | None, SiteSpec]], now: int) -> list[int]:
        """Write each spec over the site with its id, or add it (id None), in ONE transaction:
        a sync lands whole or not at all. Returns the site ids in order."""
        ids = []
        with self.engine.begin() as conn:
            for site_id, spec in changes:
                values = {
                    "name": spec.name,
                    "url": spec.url,
                    "type": spec.type,
                    "config": spec.config_json(),
                    "is_active": spec.is_active,
                    "airtable_id": spec.airtable_id,
                    "category": spec.category,
                    "updated_at": now,
                }
                if site_id is None:
                    key = conn.execute(site.insert().values(created_at=now, **values))
                    assert key.inserted_primary_key is not None
                    ids.append(int(key.inserted_primary_key[0]))
                else:
                    conn.execute(update(site).where(site.c.site_id == site_id).values(**values))
                    ids.append(site_id)
        return ids

    def get(self, key: int | str, types: Sequence[str] | None = None) -> Site | None:
        """The site with this id or name (a numeric string is tried as an id first), of one
        of ``types`` when given; AmbiguousSite when several such sites have the name."""
        with self.engine.connect() as conn:
            row = None
            site_id = key if isinstance(key, int) else _as_id(key)
            if site_id is not None and 0 < site_id <= MAX_ID:
                by_id = select(site).where(site.c.site_id == site_id)
                row = conn.execute(by_id).mappings().first()
                if row is not None and types is not None and row["type"] not in types:
                    row = None
            if row is None:
                by_name = select(site).where(site.c.name == str(key)).order_by(site.c.site_id)
                if types is not None:
                    by_name = by_name.where(site.c.type.in_(list(types)))
                rows = conn.execute(by_name).mappings().all()
                if len(rows) > 1:
                    raise AmbiguousSite(_ambiguous(str(key), rows))
                row = rows[0] if rows else None
        return site_from_row(row) if row is not None else None

    def ids_named(self, key: str) -> list[int]:
        """The ids of every site named ``key``, or with that id (a search may span the
        sites that share a name)."""
        clause = site.c.name == key
        site_id = _as_id(key)
        if site_id is not None and 0 < site_id <= MAX_ID:
            clause = or_(clause, site.c.site_id == site_id)
        with self.engine.connect() as conn:
            return sorted(conn.execute(select(site.c.site_id).where(clause)).scalars())

    def renders(self, types: Sequence[str], screenshots: bool = False) -> bool:
        """Whether an active site of these types is to be rendered by a browser (its config
        says ``render``, or 0archive's ``selenium``; with ``screenshots``, also when its
        ``media`` asks for a screenshot of its pages)."""
        query = select(site.c.name, site.c.config).where(
            site.c.is_active.is_(True), site.c.type.in_(list(types))
        )
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        for row in rows:
            try:
                config = parse_config(json.loads(row.config or "{}"), row.name)
                if config.render or (screenshots and "screenshot" in (config.media or ())):
                    return True
            except (ValueError, SiteConfigError):
                continue
        return False

    def active_rows(self, types: tuple[str, ...]) -> list[RowMapping]:
        with self.engine.connect() as conn:
            query = (
                select(site)
                .where(site.c.is_active.is_(True), site.c.type.in_(types))
                .order_by(site.c.site_id)
            )
            return list(conn.execute(query).mappings())

    def watched_rows(self, types: tuple[str, ...]) -> list[RowMapping]:
        """The sites of these types whose articles the long-tail watch checks: the active
        ones, and the ad-hoc sites of saved pages (inactive, but their pages are watched)."""
        with self.engine.connect() as conn:
            query = (
                select(site)
                .where(or_(site.c.is_active.is_(True), _adhoc()), site.c.type.in_(types))
                .order_by(site.c.site_id)
            )
            return list(conn.execute(query).mappings())

    def due_rows(
        self, types: tuple[str, ...], now: int, *, lists: bool = True, snapshots: bool = False
    ) -> list[RowMapping]:
        """Active sites of these types with due work: the due-work selection.

        A site is due when its list pages are (``lists``) or, with ``snapshots``, when one
        of its articles is: article schedules do not follow the list page schedule. An
        ad-hoc site of saved pages (inactive) is due only for its articles.
        """
        if not (lists or snapshots):
            return []
        with self.engine.connect() as conn:
            due = []
            if lists:
                due.append(site.c.next_crawl_at <= now)
            adhoc_due = None
            if snapshots:
                # Its own statement over the range of due articles in ix_Article_scheduled:
                # as a subquery of Site, MariaDB ran it per site over all of the site's
                # articles (10M articles: 9 s). DISTINCT of an expression, or SQLite reads
                # all of ix_Article_site_next for its site order (1M articles: 3.5 s).
                site_id = (article.c.site_id + 0).label("site_id")
                due_articles = select(site_id).where(due_for_snapshot(now)).distinct()
                with_due = site.c.site_id.in_(list(conn.execute(due_articles).scalars()))
                due.append(with_due)
                adhoc_due = and_(_adhoc(), with_due)
            selected = and_(site.c.is_active.is_(True), or_(*due))
            if adhoc_due is not None:
                selected = or_(selected, adhoc_due)
            query = select(site).where(site.c.type.in_(types), selected).order_by(site.c.site_id)
            return list(conn.execute(query).mappings())

    def mark_list_crawl(
        self, site_id: int, now: int, next_at: int, walk_owner: str | None = None
    ) -> None:
        """A walk starts at ``now`` (queued or begun by ``walk_owner``); the next is due at
        ``next_at``."""
        with self.engine.begin() as conn:
            conn.execute(
                update(site)
                .where(site.c.site_id == site_id)
                .values(last_crawl_at=now, next_crawl_at=next_at, walk_owner=walk_owner)
            )

    def set_next_crawl(self, site_id: int, next_at: int) -> None:
        """The site's list pages are next due at ``next_at`` (no walk begins now)."""
        with self.engine.begin() as conn:
            conn.execute(
                update(site).where(site.c.site_id == site_id).values(next_crawl_at=next_at)
            )

    def names(self) -> dict[int, str]:
        """Every site's name by id."""
        with self.engine.connect() as conn:
            return {
                row.site_id: row.name for row in conn.execute(select(site.c.site_id, site.c.name))
            }

    def listing(self) -> list[SiteRow]:
        counts = (
            select(article.c.site_id, func.count().label("n"))
            .group_by(article.c.site_id)
            .subquery()
        )
        query = (
            select(site, func.coalesce(counts.c.n, 0).label("articles"))
            .outerjoin(counts, counts.c.site_id == site.c.site_id)
            .order_by(site.c.site_id)
        )
        with self.engine.connect() as conn:
            return [
                SiteRow(
                    site_id=row["site_id"],
                    name=row["name"],
                    type=row["type"],
                    category=row["category"],
                    url=row["url"],
                    is_active=bool(row["is_active"]),
                    articles=int(row["articles"]),
                    last_crawl_at=row["last_crawl_at"],
                    next_crawl_at=row["next_crawl_at"],
                    article=given_article(row["config"], row["name"]),
                )
                for row in conn.execute(query).mappings()
            ]


def _ambiguous(name: str, rows: Sequence[RowMapping]) -> str:
    listed = "; ".join(f"#{row['site_id']} {row['url']}" for row in rows)
    return f"{len(rows)} sites are named {name!r}: {listed} (give the id instead)"
