from __future__ import annotations

import argparse
import re
import signal
import sys
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.commands import site_option
from zeroarchive.core.clock import now, parse_time, utc_minute
from zeroarchive.core.services import one_line_errors
from zeroarchive.core.shown import json_line, shown
from zeroarchive.storage.archive import Archive, open_archive

if TYPE_CHECKING:
    from zeroarchive.storage.fixity import Damage, FixitySource

#: Exit status when the pass found a damaged item (so far, when it stopped at --limit).
EXIT_DAMAGED = 1
_AGE = re.compile(r"(\d+)([dh])")


def since_time(value: str, at: int) -> int:
    """``--since`` as unix seconds: a time as every command takes one (unix seconds, a UTC
    day or time: ``parse_time``), or an age before ``at`` in days or hours (``8d``,
    ``36h``), for a scheduled pass over what is recent.

    >>> since_time("1736496000", 0), since_time("2025-01-10", 0), since_time("2d", 200_000)
    (1736496000, 1736467200, 27200)
    >>> since_time("last week", 0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    scrapy.exceptions.UsageError: --since takes unix seconds, ... not 'last week'
    """
    age = _AGE.fullmatch(value.strip())
    if age:
        return at - int(age[1]) * (86400 if age[2] == "d" else 3600)
    try:
        return parse_time(value)
    except ValueError:
        raise UsageError(
            "--since takes unix seconds, YYYY-MM-DD[THH:MM[:SS]] (UTC) or an age (8d, 36h), "
            f"not {value!r}"
        ) from None


def fixity_sources(
    archive: Archive, site_id: int | None, since: int | None, media_dir: str = ""
) -> list[FixitySource]:
    """What a pass checks, in order: every stored snapshot, then every stored media item
    (read from the backend ``ZEROARCHIVE_MEDIA_DIR`` names), scoped by the same site and
    time."""
    from zeroarchive.media.fixity import MediaFixity
    from zeroarchive.media.store import media_store
    from zeroarchive.storage.snapshot_fixity import SnapshotFixity

    media = media_store(archive.engine, media_dir)
    return [SnapshotFixity(archive.engine, site_id, since), MediaFixity(media, site_id, since)]


def damage_line(damage: Damage) -> str:
    r"""One line of the text report, the URL's credentials masked and no control character
    left to reach the terminal.

    >>> from zeroarchive.storage.fixity import Damage
    >>> url = "https://u:pw@x.example/\x1b[2J"
    >>> print(damage_line(Damage("snapshot", {"article_id": 7}, url, "missing", "x")))
    damaged snapshot article_id=7 url=https://***@x.example/\x1b[2J missing: x
    """
    ids = " ".join(f"{key}={value}" for key, value in damage.ids.items())
    url = damage.url or "-"
    return shown(f"damaged {damage.source} {ids} url={url} {damage.problem}: {damage.detail}")


def _json_line(damage: Damage) -> str:
    return json_line(dict(damage.record()))


def stop_on_sigterm(_signum: int, _frame: object) -> None:
    # A service manager's stop keeps the pass's place as Ctrl-C does.
    raise KeyboardInterrupt


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--site S] [--since WHEN] [--restart] [--limit N] [--json]"

    def short_desc(self) -> str:
        return "Re-read every stored snapshot and media item against its SHA-256 (resumable)"

    def long_desc(self) -> str:
        return (
            "Fixity check: read every stored snapshot back as the archive gives it (every "
            "frame decompressed, references and repeats followed) and compare it with the "
            "SHA-256 recorded when it was stored; then every stored media item (images, "
            "stylesheets, video) against the SHA-256 that names it. Prints one line per "
            "damaged item on "
            "stdout (digest-mismatch, undecompressable, missing, depends-on-damaged) and a "
            "summary on stderr; exits 1 when any item is damaged, 0 when all are whole. "
            "Stopped (Ctrl-C, SIGTERM, --limit), the same command goes on where it "
            "stopped, and the run that ends the pass lists all of its damage."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--site", help="only this site's snapshots (id or name)")
        parser.add_argument(
            "--since",
            metavar="WHEN",
            help="only snapshots taken at or after WHEN: unix seconds, a UTC day or time "
            "(YYYY-MM-DD[THH:MM]), or an age (8d, 36h; counted from when the pass begins)",
        )
        parser.add_argument(
            "--restart", action="store_true", help="drop a stopped pass and start over"
        )
        parser.add_argument(
            "--limit",
            type=int,
            metavar="N",
            help="check at most N items in this run, then stop; the next run goes on",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="one JSON object per damaged item: source, article_id, snapshot_at, url, "
            "problem, detail",
        )

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from zeroarchive.storage.fixity import begin, verify

        if args:
            raise UsageError(f"verify takes no arguments, not {' '.join(args)!r}")
        if opts.limit is not None and opts.limit < 1:
            raise UsageError(f"--limit takes 1 or more items, not {opts.limit}")
        since = None if opts.since is None else since_time(opts.since, now())
        archive = open_archive(self.settings)
        site_id = None if opts.site is None else site_option(archive, opts.site).site_id
        scope = "all" if site_id is None else f"site:{site_id}"
        if opts.since is not None:
            scope += f" since:{opts.since}"
        first = fixity_sources(archive, site_id, since)[0].name
        run = begin(archive.engine, scope, since, first, restart=opts.restart)
        show = _json_line if opts.json else damage_line

        def report(damage: Damage) -> None:
            print(show(damage), flush=True)

        if run.resumed:
            print(
                f"verify: going on with the pass begun {utc_minute(run.started_at)} UTC: "
                f"{run.checked:,} item(s) checked, {len(run.damage)} damaged so far",
                file=sys.stderr,
            )
            for damage in run.damage:
                report(damage)
        signal.signal(signal.SIGTERM, stop_on_sigterm)
        assert self.settings is not None
        media_dir = self.settings.get("ZEROARCHIVE_MEDIA_DIR") or ""
        sources = fixity_sources(archive, site_id, run.since, media_dir)
        verify(archive.engine, run, sources, report, opts.limit)
        state = "pass complete" if run.complete else "stopped at --limit (run again to go on)"
        print(
            f"verify: {state}: {run.checked:,} item(s) checked ({run.checked_now:,} by this "
            f"run), {len(run.damage)} damaged",
            file=sys.stderr,
        )
        if run.damage:
            self.exitcode = EXIT_DAMAGED
