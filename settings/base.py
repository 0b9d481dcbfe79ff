"""The embedded default: a SQLite file, Scrapy's own scheduler, no servers.

Every ``ZEROARCHIVE_*`` setting can also come from the environment through
settings/prod.py; ``ZEROARCHIVE_DB_URL`` is read from the environment here too.
"""

# --- Project ---------------------------------------------------------------------------
BOT_NAME = "zeroarchive"
COMMANDS_MODULE = "zeroarchive.commands"
NEWSPIDER_MODULE = "spiders"
SPIDER_MODULES = ["spiders"]

# --- Storage ---------------------------------------------------------------------------
ZEROARCHIVE_DB_URL = "sqlite:///zeroarchive.db"
ZEROARCHIVE_DUE_BATCH = 500
ZEROARCHIVE_LEASE_SECONDS = 3600
ZEROARCHIVE_LOCK_DIR = None
ZEROARCHIVE_SNAPSHOT_BATCH = 50
ZEROARCHIVE_SNAPSHOT_BATCH_BYTES = 16 * 1024 * 1024
ZEROARCHIVE_SNAPSHOT_FLUSH_SECONDS = 2.0

# --- Politeness and safety -------------------------------------------------------------
CONCURRENT_REQUESTS = 32
DOWNLOAD_DELAY = 1.0
DOWNLOAD_MAXSIZE = 32 * 1024 * 1024
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_WARNSIZE = 8 * 1024 * 1024
REDIRECT_MAX_TIMES = 10
RETRY_BACKOFF_BASE = 2.0
RETRY_BACKOFF_MAX = 60.0
RETRY_TIMES = 3
ROBOTSTXT_OBEY = True
SITE_POLICY_CONCURRENCY = 2
SITE_POLICY_ENABLED = True
USER_AGENT = "zeroarchive/0.1 (web archive for disinformation research)"

# --- Components ------------------------------------------------------------------------
DOWNLOADER_MIDDLEWARES = {
    "middlewares.url_guard.UrlGuardDownloaderMiddleware": 40,
    "middlewares.site_policy.SitePolicyDownloaderMiddleware": 50,
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    "middlewares.retry_backoff.BackoffRetryDownloaderMiddleware": 550,
}
ITEM_PIPELINES = {
    "pipelines.articles.ArticlesPipeline": 300,
    "pipelines.snapshots.SnapshotsPipeline": 400,
}

# --- Operations ------------------------------------------------------------------------
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
LOGSTATS_INTERVAL = 60.0
# Nobody needs a remote shell into an archiving crawler; off everywhere, not just on workers.
REMOTE_CONTROL_ENABLED = False
TELNETCONSOLE_ENABLED = False
