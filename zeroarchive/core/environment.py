"""Settings the environment overrides: where the servers are (``ZEROARCHIVE_DB_URL``,
``REDIS_URL``). Their passwords stay out of Scrapy's settings dump when they come from the
environment, and one variable moves a whole deployment."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


def from_environment(name: str, settings: BaseSettings | None) -> str | None:
    """The environment variable ``name``, else the setting of that name, else None.

    >>> from scrapy.settings import Settings
    >>> from_environment("ZEROARCHIVE_NO_SUCH", Settings({"ZEROARCHIVE_NO_SUCH": "x"}))
    'x'
    """
    from_env = os.environ.get(name)
    if from_env:
        return from_env
    if settings is not None and settings.get(name):
        return str(settings.get(name))
    return None
