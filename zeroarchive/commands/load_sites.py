from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from zeroarchive.core.services import one_line_errors
from zeroarchive.core.shown import shown
from zeroarchive.sites.record import SiteConfigError, parse_spec
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.sites import AmbiguousSite


def read_site_file(path: Path) -> list[Any]:
    """The entries of a YAML or JSON sites file (a list, or {"sites": [...]})."""
    import yaml  # here: scrapy imports every command module when any command starts

    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc
    if isinstance(data, dict) and "sites" in data:
        data = data["sites"]
    if not isinstance(data, list):
        raise UsageError(f"{path}: expected a list of sites, got {type(data).__name__}")
    return data


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "FILE"

    def short_desc(self) -> str:
        return "Add or update sites from a YAML or JSON file"

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give exactly one sites file")
        path = Path(args[0])
        try:
            entries = read_site_file(path)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read {path}: {exc}") from exc
        archive = open_archive(self.settings)
        now = int(time.time())
        failed = 0
        counts = {"added": 0, "updated": 0, "unchanged": 0}
        for position, entry in enumerate(entries, start=1):
            try:
                spec = parse_spec(entry)
                site_id, action = archive.sites.upsert(spec, now)
            except (SiteConfigError, AmbiguousSite) as exc:
                failed += 1
                print(shown(f"error: entry {position}: {exc}"), file=sys.stderr)
                continue
            for warning in spec.warnings:
                print(shown(f"warning: entry {position}: {warning}"), file=sys.stderr)
            counts[action] += 1
            kind = spec.type + (f", {spec.category}" if spec.category else "")
            print(shown(f"{action:9} #{site_id} {spec.name} ({kind})"))
        print(
            f"{counts['added']} added, {counts['updated']} updated, "
            f"{counts['unchanged']} unchanged, {failed} failed"
        )
        if failed:
            self.exitcode = 1
