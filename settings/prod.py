"""Production: everything that differs between deployments comes from the environment.

ZEROARCHIVE_DB_URL   e.g. mysql+pymysql://user:password@db-host:3306/archive (required)
ZEROARCHIVE_*        any setting of settings/base.py, e.g. ZEROARCHIVE_DUE_BATCH=1000
REDIS_URL, AIRTABLE_API_KEY, AIRTABLE_BASE_ID, ...  read by the components that use them
"""

import os

from settings.base import *  # noqa: F403

# The database URL holds a password: it is read from the environment where it is used and
# never copied into settings, which Scrapy logs at start.
if not os.environ.get("ZEROARCHIVE_DB_URL"):
    raise RuntimeError("settings.prod needs ZEROARCHIVE_DB_URL in the environment")
ZEROARCHIVE_DB_URL = None

for _name, _value in os.environ.items():
    # Secrets stay out of settings, which Scrapy logs: they are read from the environment.
    if _name.startswith("ZEROARCHIVE_") and _name not in (
        "ZEROARCHIVE_DB_URL",
        "ZEROARCHIVE_PROXIES",
    ):
        globals()[_name] = _value
LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO")
if "LOG_LEVEL" in os.environ:
    # A level asked for shows the start-up detail at it, as -L does (zeroarchive/core/quiet_log.py).
    ZEROARCHIVE_LOG_START_UP = True
