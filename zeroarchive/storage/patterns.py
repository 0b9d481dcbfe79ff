"""A site's article patterns (site_pattern) and the links its latest walk matched to no
regex (site_unmatched_link): what zeroarchive/crawl/article_patterns.py learns and what
site_stats reports."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Engine, RowMapping
from sqlalchemy.exc import IntegrityError

from zeroarchive.core.url_shapes import url_shape
from zeroarchive.sites.patterns import (
    ARTICLE_VERDICT,
    OTHER_VERDICT,
    SET,
    Pattern,
)
from zeroarchive.storage.schema import site, site_pattern, site_unmatched_link

#: Verdicts a person may set, and "forget" (drop the shape: learnt again from scratch).
SETTABLE = (ARTICLE_VERDICT, OTHER_VERDICT)
MAX_EXAMPLE = 2048
MAX_SHAPE = 512


@dataclass(frozen=True)
class UnmatchedShape:
    shape: str
    links: int
    example: str


def _pattern(row: RowMapping) -> Pattern:
    pattern = Pattern(
        shape=str(row["shape"]),
        verdict=str(row["verdict"]),
        origin=str(row["origin"]),
        links=int(row["links"]),
        article_pages=int(row["article_pages"]),
        other_pages=int(row["other_pages"]),
        example=str(row["example"]),
    )
    pattern.mark_saved()
    return pattern


class PatternStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def load(self, site_id: int) -> list[Pattern]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(site_pattern).where(site_pattern.c.site_id == site_id)
            ).mappings()
            return [_pattern(row) for row in rows]

    def by_site(self) -> dict[int, list[Pattern]]:
        """Every site's patterns, most links first."""
        out: dict[int, list[Pattern]] = {}
        query = select(site_pattern).order_by(
            site_pattern.c.site_id, site_pattern.c.links.desc(), site_pattern.c.shape
        )
        with self.engine.connect() as conn:
            for row in conn.execute(query).mappings():
                out.setdefault(int(row["site_id"]), []).append(_pattern(row))
        return out

    def save(self, site_id: int, patterns: Iterable[Pattern], now: int) -> None:
        """Add what this crawl saw of each pattern since it was loaded or last saved (other
        workers add theirs to the same rows), then settle each verdict on the totals. The
        patterns are marked saved only once the transaction is committed."""
        written: list[tuple[Pattern, Pattern | None]] = []
        with self.engine.begin() as conn:
            for pattern in patterns:
                if len(pattern.shape) > MAX_SHAPE:
                    continue
                links, article_pages, other_pages = pattern.unsaved()
                key = (site_pattern.c.site_id == site_id) & (site_pattern.c.shape == pattern.shape)
                row = conn.execute(select(site_pattern).where(key)).mappings().first()
                if row is None:
                    conn.execute(
                        site_pattern.insert().values(
                            site_id=site_id,
                            shape=pattern.shape,
                            verdict=pattern.verdict,
                            origin=pattern.origin,
                            links=pattern.links,
                            article_pages=pattern.article_pages,
                            other_pages=pattern.other_pages,
                            example=pattern.example[:MAX_EXAMPLE],
                            updated_at=now,
                        )
                    )
                    written.append((pattern, None))
                    continue
                total = _pattern(row)
                total.links += links
                total.article_pages += article_pages
                total.other_pages += other_pages
                total.settle()
                conn.execute(
                    update(site_pattern)
                    .where(key)
                    .values(
                        links=site_pattern.c.links + links,
                        article_pages=site_pattern.c.article_pages + article_pages,
                        other_pages=site_pattern.c.other_pages + other_pages,
                        verdict=total.verdict,
                        updated_at=now,
                    )
                )
                written.append((pattern, total))
        for pattern, totals in written:
            if totals is not None:
                pattern.verdict = totals.verdict
                pattern.links = totals.links
                pattern.article_pages = totals.article_pages
                pattern.other_pages = totals.other_pages
            pattern.mark_saved()

    def set(self, site_id: int, shape: str, verdict: str, now: int) -> str:
        """A person's verdict on a shape (a regex on the path and query, as shown by
        `scrapy sites --json`, or a URL, which stands for its shape); the shape set."""
        if verdict not in SETTABLE:
            raise ValueError(f"a pattern is {' or '.join(SETTABLE)}, not {verdict!r}")
        if shape.startswith(("http://", "https://")):
            shape = url_shape(shape)
        if len(shape) > MAX_SHAPE:
            raise ValueError(f"a pattern has {MAX_SHAPE} characters at most")
        key = (site_pattern.c.site_id == site_id) & (site_pattern.c.shape == shape)
        with self.engine.begin() as conn:
            done = conn.execute(
                update(site_pattern).where(key).values(verdict=verdict, origin=SET, updated_at=now)
            ).rowcount
            if not done:
                try:
                    conn.execute(
                        site_pattern.insert().values(
                            site_id=site_id,
                            shape=shape,
                            verdict=verdict,
                            origin=SET,
                            links=0,
                            article_pages=0,
                            other_pages=0,
                            example="",
                            updated_at=now,
                        )
                    )
                except IntegrityError:
                    raise ValueError(f"no site #{site_id}") from None
        return shape

    def forget(self, site_id: int, shape: str) -> int:
        """Drop a shape (learnt or set): its links are decided afresh. Rows dropped."""
        if shape.startswith(("http://", "https://")):
            shape = url_shape(shape)
        with self.engine.begin() as conn:
            return int(
                conn.execute(
                    delete(site_pattern).where(
                        (site_pattern.c.site_id == site_id) & (site_pattern.c.shape == shape)
                    )
                ).rowcount
            )

    # --- links that matched no regex -------------------------------------------------

    def save_unmatched(self, site_id: int, shapes: Mapping[str, tuple[int, str]]) -> None:
        """Add a walk's unmatched links by shape (count, one example) to the counts of the
        site's current walk (the one its last_crawl_at names); an older walk's are dropped."""
        with self.engine.begin() as conn:
            walk_at = conn.execute(
                select(site.c.last_crawl_at).where(site.c.site_id == site_id)
            ).scalar()
            if walk_at is None:
                return
            conn.execute(
                delete(site_unmatched_link).where(
                    (site_unmatched_link.c.site_id == site_id)
                    & (site_unmatched_link.c.walk_at != walk_at)
                )
            )
            for shape, (links, example) in shapes.items():
                if len(shape) > MAX_SHAPE:
                    continue
                key = (site_unmatched_link.c.site_id == site_id) & (
                    site_unmatched_link.c.shape == shape
                )
                done = conn.execute(
                    update(site_unmatched_link)
                    .where(key)
                    .values(links=site_unmatched_link.c.links + links)
                ).rowcount
                if not done:
                    conn.execute(
                        site_unmatched_link.insert().values(
                            site_id=site_id,
                            shape=shape,
                            links=links,
                            example=example[:MAX_EXAMPLE],
                            walk_at=walk_at,
                        )
                    )

    def unmatched(self, top: int) -> dict[int, list[UnmatchedShape]]:
        """Per site, its latest walk's most common unmatched link shapes."""
        out: dict[int, list[UnmatchedShape]] = {}
        query = select(site_unmatched_link).order_by(
            site_unmatched_link.c.site_id,
            site_unmatched_link.c.links.desc(),
            site_unmatched_link.c.shape,
        )
        with self.engine.connect() as conn:
            for row in conn.execute(query):
                shapes = out.setdefault(int(row.site_id), [])
                if len(shapes) < top:
                    shapes.append(UnmatchedShape(row.shape, int(row.links), row.example))
        return out
