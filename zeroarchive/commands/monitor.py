from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.utils.log import configure_logging
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import SQLAlchemyError

from zeroarchive.core.services import (
    ServiceUnavailable,
    is_unreachable,
    one_line_errors,
    reason,
    safe_url,
)
from zeroarchive.core.shown import mask_logs
from zeroarchive.storage.engine import current_revision, db_url_from, head_revision, make_engine
from zeroarchive.storage.site_stats import SiteStatsConfig

logger = logging.getLogger(__name__)


class MonitorError(RuntimeError):
    """Why the monitor cannot start, in one line."""


def open_read_only(url: str) -> Engine:
    """An engine on an archive whose schema is up to date. The monitor never creates a
    database or migrates one: that is `scrapy migrate`'s job."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = parsed.database
        if not path or path == ":memory:" or not Path(path).is_file():
            raise MonitorError(f"no SQLite database at {path or '(none)'}")
    engine = make_engine(url)
    try:
        revision = current_revision(engine)
    except SQLAlchemyError as exc:
        engine.dispose()
        if is_unreachable(exc):
            raise ServiceUnavailable("the database", url, reason(exc)) from None
        raise MonitorError(f"cannot open the database {safe_url(url)}: {reason(exc)}") from None
    if revision is None:
        raise MonitorError(f"{safe_url(url)} holds no zeroarchive schema: run `scrapy migrate`")
    if revision != head_revision():
        raise MonitorError(
            f"{safe_url(url)} is at schema {revision}, this code reads {head_revision()}: "
            "run `scrapy migrate`"
        )
    return engine


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--host 127.0.0.1] [--port 8080]"

    def short_desc(self) -> str:
        return "Serve the read-only site monitor and the GraphQL sites API"

    def long_desc(self) -> str:
        return (
            "A dashboard of every site (site_stats, new articles per day), each site's "
            "recent articles, each article's snapshots and publication versions, and "
            "/graphql (POST application/json). Any address but loopback needs MONITOR_TOKEN "
            "or MONITOR_USERNAME and MONITOR_PASSWORD in the environment, and 0.0.0.0 needs "
            "MONITOR_ALLOWED_HOSTS. Every request is bounded by the MONITOR_MAX_* limits and "
            "MONITOR_REQUEST_SECONDS (see docs/researchers/monitor.md)."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--host", help="address to listen on (default MONITOR_HOST)")
        parser.add_argument("--port", type=int, help="port to listen on (default MONITOR_PORT)")

    @one_line_errors
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from zeroarchive.monitor.app import create_app
        from zeroarchive.monitor.config import MonitorConfig
        from zeroarchive.monitor.serve import make_server

        if args:
            raise UsageError(f"unexpected argument(s): {' '.join(args)}")
        assert self.settings is not None
        try:
            config = MonitorConfig.from_settings(self.settings, opts.host, opts.port)
            stats_config = SiteStatsConfig.from_settings(self.settings)
            engine = open_read_only(db_url_from(self.settings))
        except (ValueError, MonitorError) as exc:
            print(f"monitor: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        configure_logging(self.settings)
        mask_logs()
        app = create_app(engine, config, stats_config)
        logger.info(
            "Monitor on http://%s:%s/ (%s)",
            config.host,
            config.port,
            "auth required" if config.requires_auth else "no auth: loopback only",
        )
        server = make_server(app, config)
        server.run()
        logger.info("Monitor stopped")
        engine.dispose()
