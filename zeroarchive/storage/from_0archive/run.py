"""One import of a 0archive database, phase by phase: sites, articles, redirects, then
the snapshots of every rotated month table (oldest first) and of the live table.

Each batch is one transaction that also records which archive rows the 0archive rows
became (``legacy_id``), so a run killed at any moment and started again ends with the
same rows, none twice, and a second run adds nothing. ``dry_run`` reads everything the
same way, writes nothing, and names every problem.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TextIO

from sqlalchemy.engine import Engine

from zeroarchive.core import clock
from zeroarchive.core.progress import Progress
from zeroarchive.core.urls import UrlRejected
from zeroarchive.storage.from_0archive.articles import (
    ArticleCounts,
    TargetSite,
    canonical,
    write_articles,
    write_redirects,
)
from zeroarchive.storage.from_0archive.sites import map_site, write_sites
from zeroarchive.storage.from_0archive.snapshots import (
    SnapshotCounts,
    SnapshotWriter,
    imported_keys,
    skip_reason,
    text_encoding,
)
from zeroarchive.storage.from_0archive.source import (
    OldArticle,
    OldSnapshot,
    ZeroArchiveDb,
    prefetched,
)

RESUME = "run the same command again: what is imported already is skipped"


@dataclass(frozen=True)
class ImportOptions:
    #: Rows per batch (one transaction each; IMPORT_0ARCHIVE_BATCH or --batch).
    batch: int
    #: Raw snapshot bytes per batch at most (bounds memory with pages of up to 16 MB;
    #: IMPORT_0ARCHIVE_BATCH_BYTES).
    batch_bytes: int
    #: 0archive site ids to import (their articles and snapshots); None: every site.
    site_ids: tuple[int, ...] | None = None
    dry_run: bool = False
    #: Type labels to site types (``sources.label_types`` with AIRTABLE_TYPE_MAP).
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass
class ImportReport:
    dry_run: bool = False
    sites: int = 0
    sites_already: int = 0
    sites_inactive: int = 0
    articles: ArticleCounts = field(default_factory=ArticleCounts)
    moves: int = 0
    snapshots: SnapshotCounts = field(default_factory=SnapshotCounts)
    problems: list[str] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return self.articles.skipped + self.snapshots.skipped

    def summary(self) -> str:
        counts = (
            f"{self.sites} sites, {self.articles.imported} articles, "
            f"{self.snapshots.imported} snapshots ({self.skipped} skipped)"
        )
        return f"dry run: would import {counts}" if self.dry_run else f"imported {counts}"


class ZeroArchiveImport:
    def __init__(
        self,
        source: ZeroArchiveDb,
        engine: Engine | None,
        options: ImportOptions,
        say: Callable[[str], None],
        progress_stream: TextIO | None = None,
        now: int | None = None,
    ) -> None:
        if engine is None and not options.dry_run:
            raise ValueError("an import that writes needs the archive's engine")
        self.source = source
        self.engine = engine
        self.options = options
        self.say = say
        self.stream = progress_stream
        self.now = now if now is not None else clock.now()
        self.report = ImportReport(dry_run=options.dry_run)

    def skip(self, what: str, reason: str) -> None:
        self.say(f"skipped {what}: {reason}")

    def problem(self, what: str, reason: str) -> None:
        line = f"{what}: {reason}"
        self.report.problems.append(line)
        self.say(f"problem: {line}")

    def run(self) -> ImportReport:
        sites = self._sites()
        self._articles(sites)
        self._redirects(sites)
        for table in self.source.snapshot_tables():
            self._snapshots(table, sites)
        self._not_imported()
        return self.report

    def _progress(self, what: str, total: int, unit: str) -> Progress:
        return Progress(what, total=total, unit=unit, resume=RESUME, stream=self.stream)

    def _sites(self) -> dict[int, TargetSite]:
        wanted = self.options.site_ids
        olds = self.source.sites(wanted)
        missing = sorted(set(wanted or ()) - {old.site_id for old in olds})
        if missing:
            raise ValueError(f"no site {', '.join(map(str, missing))} in the 0archive database")
        mapped = [map_site(old, self.options.labels) for old in olds]
        for item in mapped:
            label = f"site {item.old.site_id} ({item.old.name}, {item.old.type})"
            if item.problem:
                self.report.sites_inactive += 1
                self.problem(label, f"kept inactive, no spider can crawl it: {item.problem}")
            for warning in item.spec.warnings:
                self.say(f"warning: {label}: {warning}")
        if self.engine is None:
            self.report.sites = len(mapped)
            return {m.old.site_id: TargetSite(0, m.url_rules) for m in mapped}
        with self.engine.begin() as conn:
            written = write_sites(conn, self.source.key, mapped, self.now, self.say)
        self.report.sites = written.added + written.linked
        self.report.sites_already = written.already
        by_id = {m.old.site_id: m for m in mapped}
        return {
            old_id: TargetSite(new_id, by_id[old_id].url_rules)
            for old_id, new_id in written.ids.items()
        }

    def _articles(self, sites: dict[int, TargetSite]) -> None:
        where, args = _site_filter(self.options.site_ids)
        total = self.source.count(f"SELECT COUNT(*) FROM Article{where}", args)
        counts = self.report.articles
        with self._progress("0archive articles", total, "article") as progress:
            for batch in self.source.articles(self.options.site_ids, self.options.batch):
                if self.engine is None:
                    for old in batch:
                        reason = _article_problem(old.site_id, old.url, sites)
                        if reason:
                            self.skip(f"article {old.article_id} ({old.url[:200]})", reason)
                            counts.skipped += 1
                        else:
                            counts.imported += 1
                else:
                    with self.engine.begin() as conn:
                        write_articles(
                            conn, self.source.key, batch, sites, self.now, counts, self.skip
                        )
                progress.advance(len(batch))

    def _redirects(self, sites: dict[int, TargetSite]) -> None:
        options = self.options
        batches = self.source.articles(options.site_ids, options.batch, redirects_only=True)
        where, args = _site_filter(options.site_ids)
        where += " AND" if where else " WHERE"
        total = self.source.count(
            f"SELECT COUNT(*) FROM Article{where} redirect_to IS NOT NULL AND redirect_to <> ''",
            args,
        )
        with self._progress("0archive redirects", total, "article") as progress:
            for batch in batches:
                self._redirect_batch(batch, sites)
                progress.advance(len(batch))

    def _redirect_batch(self, batch: list[OldArticle], sites: dict[int, TargetSite]) -> None:
        if self.engine is not None:
            with self.engine.begin() as conn:
                self.report.moves += write_redirects(
                    conn, self.source.key, batch, sites, self.now, self.skip
                )
            return
        for old in batch:
            target = sites.get(old.site_id)
            if target is None or old.redirect_to is None:
                continue
            try:
                canonical(old.redirect_to, target.rules)
            except UrlRejected as exc:
                what = f"redirect of article {old.article_id} to {old.redirect_to[:200]}"
                self.problem(what, f"URL rejected: {exc}")
            else:
                self.report.moves += 1

    def _snapshots(self, table: str, sites: dict[int, TargetSite]) -> None:
        counts = self.report.snapshots
        writer = SnapshotWriter(self.engine, self.source.key) if self.engine else None
        total = self.source.estimated_rows(table)
        options = self.options
        imported = partial(imported_keys, self.engine, self.source.key) if self.engine else None
        batches = prefetched(
            self.source.snapshots(
                table, options.site_ids, options.batch, options.batch_bytes, imported
            )
        )
        with self._progress(f"0archive snapshots ({table})", total, "snapshot") as progress:
            try:
                for batch in batches:
                    counts.already += batch.already
                    if writer is None:
                        self._check_snapshots(batch.rows, sites, counts, batch.utf8)
                    elif batch.rows:
                        writer.write(batch.rows, counts, self.skip, self.problem, batch.utf8)
                    progress.advance(len(batch.rows) + batch.already)
            finally:
                if writer is not None:
                    writer.close()

    def _check_snapshots(
        self,
        batch: list[OldSnapshot],
        sites: dict[int, TargetSite],
        counts: SnapshotCounts,
        utf8: bool,
    ) -> None:
        for snap in batch:
            imported = (
                snap.site_id is not None
                and _article_problem(snap.site_id, snap.url or "", sites) is None
            )
            if not imported or snap.raw is None:
                self.skip(snap.name(), skip_reason(snap, imported))
                counts.skipped += 1
                continue
            encoding = None if utf8 else text_encoding(snap.raw)
            if encoding is not None:
                counts.not_utf8 += 1
                why = f"not valid UTF-8 text: would be kept as it is, read as {encoding}"
                self.problem(snap.name(), why)
            counts.imported += 1

    def _not_imported(self) -> None:
        """0archive's two tables that have no place here, each named once with its count."""
        stats = self.source.site_stats_rows(self.options.site_ids)
        if stats:
            self.say(
                f"skipped 0archive's SiteStats: {_rows(stats)} (its daily counts of new and "
                "updated articles per site: the archive counts new articles per site and "
                "day from the imported articles themselves, and re-snapshots are its "
                "snapshot rows)"
            )
        keys = self.source.variable_keys()
        if keys:
            shown = ", ".join(key[:60] for key in keys[:10]) + (", ..." if len(keys) > 10 else "")
            self.say(
                f"skipped 0archive's Variable: {_rows(len(keys))} ({shown}; its processes' "
                "locks, such as discover:pid, which the archive keeps as leases of its own)"
            )


def _rows(count: int) -> str:
    return f"{count} row" + ("s" * (count != 1))


def _site_filter(site_ids: tuple[int, ...] | None) -> tuple[str, list[int]]:
    if not site_ids:
        return "", []
    return f" WHERE site_id IN ({', '.join(['%s'] * len(site_ids))})", list(site_ids)


def _article_problem(site_id: int, url: str, sites: Mapping[int, TargetSite]) -> str | None:
    target = sites.get(site_id)
    if target is None:
        return f"its site {site_id} is not in 0archive"
    try:
        canonical(url, target.rules)
    except UrlRejected as exc:
        return f"URL rejected: {exc}"
    return None
