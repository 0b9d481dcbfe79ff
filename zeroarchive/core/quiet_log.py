"""A crawl's start-up detail at DEBUG unless asked for (Scrapy's banner and lists of
enabled components and overridden settings, Alembic's migration steps), and its stats
dump on one line.

A first ``scrapy crawl`` that could not reach its site printed about 120 such lines (40
of them migration descriptions) before the one line that said why, and 35 lines of stats
before its closing error. They are kept: ``-L DEBUG`` shows the detail, and any
``-L``/``--loglevel`` given (``-L INFO``), a ``LOG_FILE`` or ``ZEROARCHIVE_LOG_START_UP =
True`` shows it at INFO, and the stats one per line, as before. Warnings and errors are untouched.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

#: (logger, how its start-up messages begin; "" for every INFO line of it).
START_UP = (
    ("scrapy.utils.log", "Scrapy %(version)s started"),
    ("scrapy.utils.log", "Versions:"),
    ("scrapy.addons", "Enabled addons"),
    ("scrapy.middleware", "Enabled "),
    ("scrapy.crawler", "Overridden settings"),
    ("scrapy.core.engine", "Spider opened"),
    ("scrapy.core.engine", "Spider closed"),
    ("alembic.runtime.plugins", ""),
    ("alembic.runtime.migration", ""),
)


class StartUpDetail(logging.Filter):
    """Turns a logger's INFO records that begin with one of ``prefixes`` into DEBUG ones."""

    def __init__(self, prefixes: tuple[str, ...]) -> None:
        super().__init__()
        self.prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.INFO and str(record.msg).startswith(self.prefixes):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


class OneLineStats(logging.Filter):
    """Folds Scrapy's stats dump (a dict, pretty-printed over many lines) onto one line.

    >>> record = logging.makeLogRecord({"msg": "Dumping Scrapy stats:\\n{'a': 1,\\n 'b': 2}"})
    >>> OneLineStats().filter(record), record.msg
    (True, "Dumping Scrapy stats: {'a': 1, 'b': 2}")
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Dumping Scrapy stats:"):
            record.msg = _LINE_BREAK.sub(" ", str(record.msg))
        return True


_LINE_BREAK = re.compile(r"\n\s*")


def asked_for(settings: BaseSettings) -> bool:
    """Whether the start-up detail is wanted at INFO: a level given on the command line
    (``-L``, ``--loglevel``, ``-s LOG_LEVEL=``), a log file (``LOG_FILE``, as scrapyd
    gives its jobs: read later, by someone looking for what ran) or
    ``ZEROARCHIVE_LOG_START_UP``."""
    from scrapy.settings import SETTINGS_PRIORITIES

    given = settings.getpriority("LOG_LEVEL") or 0
    return (
        settings.getbool("ZEROARCHIVE_LOG_START_UP")
        or bool(settings.get("LOG_FILE"))
        or given >= SETTINGS_PRIORITIES["cmdline"]
    )


def quiet_start_up(settings: BaseSettings) -> bool:
    """Put the start-up detail at DEBUG unless ``asked_for``; whether it did. Call before
    Scrapy logs its banner (a command's ``process_options``): the filters are the loggers'
    own, which Scrapy's logging set-up keeps."""
    if asked_for(settings):
        return False
    prefixes: dict[str, list[str]] = {}
    for name, prefix in START_UP:
        prefixes.setdefault(name, []).append(prefix)
    filters: list[tuple[str, logging.Filter]] = [
        (name, StartUpDetail(tuple(found))) for name, found in prefixes.items()
    ]
    filters.append(("scrapy.statscollectors", OneLineStats()))
    for name, added in filters:
        logger = logging.getLogger(name)
        if not any(type(f) is type(added) for f in logger.filters):
            logger.addFilter(added)
    return True


def lowest_shown_level() -> int:
    """The lowest level a record handled in this process may be shown at: its loggers'
    handlers' lowest (a handler without a level shows every record; with no handler at
    all, logging's last resort shows warnings). The child makes no record below it."""
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    levels = [
        handler.level
        for each in loggers
        if isinstance(each, logging.Logger)
        for handler in each.handlers
    ]
    if not levels:
        return logging.lastResort.level if logging.lastResort else logging.WARNING
    return min(levels) or logging.DEBUG
