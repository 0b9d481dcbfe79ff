"""The embedded default: a SQLite file, Scrapy's own scheduler, no servers.

Every setting of the project has its default here and only here; components read them
into typed configs without defaults of their own. Every ``ZEROARCHIVE_*`` setting can
also come from the environment through settings/prod.py; ``ZEROARCHIVE_DB_URL`` is read
from the environment here too.
"""

from scrapy.settings import default_settings as _scrapy_defaults

# --- Project ---------------------------------------------------------------------------
BOT_NAME = "zeroarchive"
COMMANDS_MODULE = "zeroarchive.commands"
NEWSPIDER_MODULE = "spiders"
SPIDER_MODULES = ["spiders"]

# --- Storage ---------------------------------------------------------------------------
ZEROARCHIVE_DB_RETRY_SECONDS = 900.0
ZEROARCHIVE_DB_URL = "sqlite:///zeroarchive.db"
ZEROARCHIVE_DUE_BATCH = 500
ZEROARCHIVE_LEASE_SECONDS = 3600
# A crawl reads a site's record again once it is this many seconds old: a long-running
# worker follows edits of the sites table (its delay, patterns, watch) without a restart.
ZEROARCHIVE_SITE_REFRESH_SECONDS = 300
ZEROARCHIVE_LOCK_DIR = None
# Where media items' bytes are kept (zeroarchive/media/store.py): empty for the archive's own
# database, else a content-addressed directory (a local path or a shared mount).
ZEROARCHIVE_MEDIA_DIR = ""
ZEROARCHIVE_SNAPSHOT_BATCH = 50
ZEROARCHIVE_SNAPSHOT_BATCH_BYTES = 16 * 1024 * 1024
ZEROARCHIVE_SNAPSHOT_FLUSH_SECONDS = 2.0
# Where snapshot batches are written: "process" (a writer process beside the crawl, so that
# compressing and SQL do not take turns with it) or "thread" (in the crawl's own process).
ZEROARCHIVE_SNAPSHOT_WRITER = "process"

# --- Parser (scrapy parse_snapshots) -----------------------------------------------------
# The zone page times without an offset are read in.
PARSER_TIMEZONE = "Asia/Taipei"
# PTT/Dcard list walks stop after this many pages in a row with nothing new (0 = never).
ZEROARCHIVE_STALE_LIST_PAGES = 2

# --- Search (scrapy search, scrapy reindex) ------------------------------------------------
# parse_snapshots indexes each new publication version for search in the same transaction;
# off, it does not (the index then lags until `scrapy reindex`).
SEARCH_INDEX_ENABLED = True
# Publications indexed per transaction by `scrapy reindex`.
SEARCH_REINDEX_BATCH = 500

# --- Copies (scrapy copies; docs/researchers/copies.md) ------------------------------------
# parse_snapshots fingerprints each new publication version and clusters its copies in the
# same transaction; off, it does not (the clusters then lag until `scrapy copies --rebuild`).
COPIES_ENABLED = True
# Two bodies are copies when at least this share of the shorter one (its shingles, after
# folding Chinese script and dropping the sites' boilerplate) is in the other.
COPIES_MIN_SIMILARITY = 0.8
# A line at either end of a site's articles is its boilerplate once this many articles had it.
COPIES_BOILERPLATE_ARTICLES = 5
# Articles fingerprinted per transaction by `scrapy copies --rebuild`.
COPIES_REBUILD_BATCH = 500

# --- WARC (scrapy export_warc, import_warc, rotate_snapshots --format warc) -------------
# A WARC file is rolled once it holds this many bytes (the usual ~1 GB).
WARC_EXPORT_ROLL_BYTES = 1024 * 1024 * 1024
# Imported snapshots written per transaction.
WARC_IMPORT_BATCH = 200

# --- 0archive import (scrapy import_0archive) --------------------------------------------
# Rows per batch (one transaction each); --batch overrides it.
IMPORT_0ARCHIVE_BATCH = 200
# Raw snapshot bytes read per batch at most: 0archive's pages are up to 16 MB (MEDIUMTEXT).
IMPORT_0ARCHIVE_BATCH_BYTES = 16 * 1024 * 1024

# --- Airtable (scrapy sync_sites; the key only from the AIRTABLE_API_KEY environment) ----
AIRTABLE_BASE_ID = None
AIRTABLE_ENDPOINT_URL = "https://api.airtable.com"
AIRTABLE_MAX_RETRIES = 5
AIRTABLE_PAGE_SIZE = 100
AIRTABLE_RATE_LIMIT_WAIT = 30.0
AIRTABLE_REQUESTS_PER_SECOND = 5.0
AIRTABLE_TABLE = "Sites"
AIRTABLE_TIMEOUT = 30.0
# More type labels, or other meanings of 0archive's: {"label": "site type"} (JSON from -s).
AIRTABLE_TYPE_MAP: dict[str, str] = {}
AIRTABLE_VIEW = None

# --- Browser (the facebook spider) --------------------------------------------------------
# Debian's Chromium, never a browser downloaded by `playwright install`.
BROWSER_CHROMIUM = "/usr/bin/chromium"
BROWSER_CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Chromium's own Google services, made unresolvable inside the browser: flags do not stop
# its account check (accounts.google.com), on-demand component downloads and clock checks,
# and a worker may reach nothing but the sites it archives (docs/operators/offline.md).
BROWSER_UNREACHABLE_HOSTS = [
    "accounts.google.com",
    "android.clients.google.com",
    "clients2.google.com",
    "clientservices.googleapis.com",
    "content-autofill.googleapis.com",
    "edgedl.me.gvt1.com",
    "optimizationguide-pa.googleapis.com",
    "redirector.gvt1.com",
    "safebrowsing.googleapis.com",
    "update.googleapis.com",
]
BROWSER_CONTEXT_PAGES = 20
# Seconds a rendered page may take to settle (no network for half a second) before it is kept;
# also what a screenshot's images, loaded as the page is scrolled, may take.
BROWSER_RENDER_WAIT = 10.0
# The browser window's width (CSS px): rendered pages and their screenshots.
BROWSER_VIEWPORT_WIDTH = 1280
FACEBOOK_EXPAND_SECONDS = 180.0
FACEBOOK_EXPAND_WAIT = 10.0
FACEBOOK_IDLE_SCROLLS = 3
FACEBOOK_SCROLL_SECONDS = 300.0
FACEBOOK_SCROLL_WAIT = 2.0

# --- Feeds and sitemaps as list pages (generic sites) --------------------------------------
# The most a feed or sitemap may weigh, downloaded or decompressed (the protocol allows
# 50 MB; a bigger one is an error of the site, not a reason to hold it all in memory).
FEEDS_MAX_BYTES = 16 * 1024 * 1024
# A sitemap index is followed to this many of its sitemaps, the newest by lastmod.
FEEDS_SITEMAPS_PER_INDEX = 10

# --- Politeness and safety -------------------------------------------------------------
CONCURRENT_REQUESTS = 32
# A callback here yields one or two items. Scrapy starts this many asyncio tasks for every
# response whatever it yields, and 100 of them (the default) cost ~2 ms a page.
CONCURRENT_ITEMS = 8
# Scrapy looks for `return value` in generator callbacks by parsing their source (~0.6 ms),
# and its cache forgets a bound method once no request holds it, so workers parsed
# parse_snapshot again for many pages (3.5 % of a distributed worker's busy time).
WARN_ON_GENERATOR_RETURN_VALUE = False
DOWNLOAD_DELAY = 1.0
DOWNLOAD_MAXSIZE = 32 * 1024 * 1024
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_WARNSIZE = 8 * 1024 * 1024
REDIRECT_MAX_TIMES = 10
RETRY_BACKOFF_BASE = 2.0
RETRY_BACKOFF_MAX = 60.0
RETRY_TIMES = 3
ROBOTSTXT_OBEY = True
# Bot challenges, captchas and login walls are failures of kind blocked, not snapshots.
BLOCK_PAGES_ENABLED = True
# A Public Suffix List file for the cookie rules (middlewares/cookies.py); None = the copy
# bundled with tldextract. Never downloaded: workers may reach nothing but the sites.
COOKIES_PUBLIC_SUFFIX_LIST = None
# A host name that did not resolve is not looked up again, nor its requests retried, for
# the rest of the run, at most this long (a worker that never exits tries it again after).
DNS_FAILURES_ENABLED = True
DNS_FAILURES_KEEP_SECONDS = 600.0
# Proxies shared by every site without a `proxy` of its own, used in turn. One with
# credentials only from the environment variable of this name (comma-separated).
ZEROARCHIVE_PROXIES: list[str] = []
SITE_POLICY_CONCURRENCY = 2
SITE_POLICY_ENABLED = True
# Seconds between the requests of a site whose config gives no `delay`. The environment
# variable of the same name wins (the tests set it to 0).
ZEROARCHIVE_SITE_DELAY = 1.0
# Requests (saves, redirects, meta refreshes included) to hosts that are or resolve to
# loopback, private, link-local, multicast or reserved addresses are refused; True allows
# them for every site (one site: its `allow_private_targets: true`). Also read from the
# environment variable of this name, as ZEROARCHIVE_DB_URL is (a lab or test deployment).
ZEROARCHIVE_ALLOW_PRIVATE_TARGETS = False
THROTTLE_BASE = 5.0
THROTTLE_ENABLED = True
THROTTLE_HTTP_CODES = [429]
THROTTLE_MAX = 600.0
THROTTLE_TIMES = 5
USER_AGENT = "zeroarchive/0.1 (web archive for disinformation research)"

# --- Components ------------------------------------------------------------------------
ADDONS = {"zeroarchive.distributed.addon.DistributedAddon": 0}
DOWNLOADER_MIDDLEWARES = {
    "middlewares.url_guard.UrlGuardDownloaderMiddleware": 40,
    # Before all that send or make requests: it sees redirects and meta refreshes too.
    "middlewares.private_targets.PrivateTargetsDownloaderMiddleware": 45,
    "middlewares.site_policy.SitePolicyDownloaderMiddleware": 50,
    # Before Scrapy's HttpProxyMiddleware (750), which turns credentials into a header.
    "middlewares.proxies.ProxyDownloaderMiddleware": 60,
    # robots.txt once per host and run (the spider's Sitemap: reading included), and a
    # host that cannot be reached is one line, not a stack trace per request.
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "middlewares.robots.RobotsTxtDownloaderMiddleware": 55,
    # Scrapy's cookie rules with a Public Suffix List that is never fetched.
    "scrapy.downloadermiddlewares.cookies.CookiesMiddleware": None,
    "middlewares.cookies.CookiesDownloaderMiddleware": 700,
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    "middlewares.retry_backoff.BackoffRetryDownloaderMiddleware": 550,
    "middlewares.throttle.ThrottleDownloaderMiddleware": 560,
    # Scrapy's meta refresh redirects, in its place (580), without decoding every page to
    # find none (middlewares/meta_refresh.py).
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "middlewares.meta_refresh.MetaRefreshDownloaderMiddleware": 580,
    # After retry and throttle in process_response order: a block page is not retried.
    "middlewares.block_pages.BlockPagesDownloaderMiddleware": 580,
    # After retry in process_request order, so before it in process_exception order: a
    # host name that did not resolve is marked not to be retried.
    "middlewares.dns_failures.DnsFailuresDownloaderMiddleware": 590,
    # Last before Scrapy's HttpProxyMiddleware (750): yt-dlp downloads a page's videos with
    # the request as the middlewares above made it (proxy, user agent, cookies, Referer).
    "middlewares.video.VideoDownloaderMiddleware": 745,
    # Last: a media request's batch of items of one host, fetched once every middleware
    # above has seen the request (zeroarchive/media/fetch.py).
    "middlewares.media.MediaBatchDownloaderMiddleware": 990,
}
# Nobody needs a remote shell into an archiving crawler: the remote control and the telnet
# console are left out of Scrapy's base list (so their *_ENABLED settings do nothing here),
# not just switched off: Scrapy imports every listed extension (even one set to None)
# before asking it, and the remote control's aiohttp alone cost 0.3-0.5 s of CPU at the
# start of every crawl.
_left_out = (
    "scrapy.extensions.remote_control.RemoteControl",
    "scrapy.extensions.telnet.TelnetConsole",
)
# Ours in the base list, so an EXTENSIONS of the operator's cannot drop it: no password of
# a URL in the crawl's log (zeroarchive/crawl/masked_logs.py).
EXTENSIONS_BASE = {
    "zeroarchive.crawl.masked_logs.MaskedLogs": 0,
    **{
        name: order
        for name, order in _scrapy_defaults.EXTENSIONS_BASE.items()
        if name not in _left_out
    },
}
# Every page a walk's page finds for it carries the walk's round (distributed mode counts
# them: zeroarchive/distributed/walks.py).
SPIDER_MIDDLEWARES = {
    "middlewares.walk_rounds.WalkRoundsSpiderMiddleware": 600,
    # Each stored page's images, stylesheets and videos (zeroarchive/media/).
    "middlewares.media.MediaSpiderMiddleware": 650,
}
# Screenshots of rendered pages (media kind `screenshot`): png or webp, and the height a
# taller page is cut at (px).
SCREENSHOT_FORMAT = "png"
SCREENSHOT_MAX_HEIGHT = 10000
# Off: no page's media is fetched, whatever its site's `media` says. The environment
# variable of the same name wins (a lab or test deployment whose saved pages name their
# images on the live sites).
ZEROARCHIVE_MEDIA_ENABLED = True
# Videos (zeroarchive/media/video.py, yt-dlp): the best format up to this height in pixels
# (0: the best there is), this many downloads at once per crawl process, and the seconds
# one download may take in all (its connections give up sooner, after DOWNLOAD_TIMEOUT
# without a byte).
ZEROARCHIVE_VIDEO_CONCURRENCY = 2
ZEROARCHIVE_VIDEO_MAX_HEIGHT = 720
ZEROARCHIVE_VIDEO_TIMEOUT = 3600.0
# An item URL this crawl fetched and kept less than this many seconds ago is recorded for
# another snapshot from the bytes held, not fetched again (a browser's cache); 0: never.
ZEROARCHIVE_MEDIA_REUSE_SECONDS = 86400
ITEM_PIPELINES = {
    "pipelines.articles.ArticlesPipeline": 300,
    "pipelines.snapshots.SnapshotsPipeline": 400,
}

# --- Distributed mode (on when REDIS_URL is set) ----------------------------------------
# REDIS_URL (environment or -s) turns it on; zeroarchive.distributed.addon then sets SCHEDULER
# and DUPEFILTER_CLASS, so neither is set here.
REDIS_URL = None
BLOOMFILTER_CAPACITY = 100_000_000
BLOOMFILTER_CHECK_SECONDS = 60.0
BLOOMFILTER_ERROR_RATE = 1e-4
# 7, not the optimal 13 at 1e-4: redis's time for a check grows with the bits it sets
# (~0.4-0.6 us each), and 7 is the fewest that keep a filter under 3 bytes per URL at
# 1e-4 (2.80; 8: 2.63; 13: 2.40), for checks about twice as cheap as the optimal's.
BLOOMFILTER_HASHES = 7
BLOOMFILTER_KEY = "%(spider)s:bloom"
# Redis strings hold at most 512 MiB: a bigger filter is split over keys of this many bits.
BLOOMFILTER_KEY_BITS = 2**32
BLOOMFILTER_LIST_CAPACITY = 100_000
BLOOMFILTER_LIST_TTL = 7200
ZEROARCHIVE_DISTRIBUTED_DUPEFILTER = "zeroarchive.distributed.dupefilter.BloomDupeFilter"
# A worker's heartbeat key expires this many seconds after its last renewal (renewed every
# third of it); `scrapy schedule` then takes back at once what the worker held.
ZEROARCHIVE_HEARTBEAT_SECONDS = 30
# A worker waits for work for ever (scrapyd), unless this many idle seconds pass (0 = never).
ZEROARCHIVE_IDLE_LIMIT = 0
ZEROARCHIVE_QUEUE_HIGH_WATER = 20000
# How often an idle worker looks for new requests in the shared queue: an idle worker
# notices the snapshots another one queued this late (0.67 % of a core idle, 0.33 % at 0.25).
ZEROARCHIVE_QUEUE_POLL_SECONDS = 0.1
# How many queued requests a worker takes per round trip (it puts back what it did not
# start when it closes; a killed worker's share comes due again with its leases).
ZEROARCHIVE_QUEUE_PREFETCH = 8
# Seconds a redis command (connection) may take before the caller sees an error.
ZEROARCHIVE_REDIS_CONNECT_TIMEOUT = 10.0
ZEROARCHIVE_REDIS_TIMEOUT = 30.0
# While the database or redis is away, a worker, `scrapy schedule` and a crawl's writes try
# again after this pause, doubled after each failed try up to the longest.
ZEROARCHIVE_RETRY_PAUSE_MAX_SECONDS = 60.0
ZEROARCHIVE_RETRY_PAUSE_SECONDS = 1.0

# --- Operations ------------------------------------------------------------------------
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
# Scrapy's, without its two DEBUG records a page when the crawl does not show DEBUG.
LOG_FORMATTER = "zeroarchive.crawl.log_formatter.QuietLogFormatter"
# A crawl's start-up detail (Scrapy's banner, its lists of components and overridden
# settings, Alembic's migration steps) at INFO; otherwise at DEBUG unless -L is given.
ZEROARCHIVE_LOG_START_UP = False
LOGSTATS_INTERVAL = 60.0
# `scrapy monitor`: where it listens (any address but loopback needs MONITOR_TOKEN or
# MONITOR_USERNAME/MONITOR_PASSWORD in the environment), how often it counts site stats
# again, the days its charts draw, and how many articles a site page lists.
# MONITOR_ALLOWED_HOSTS: the Host names clients use besides loopback ones (needed to listen
# on 0.0.0.0). The rest bounds what one request may cost (docs/researchers/monitor.md,
# "Limits"): body and query size, GraphQL depth, aliases, fields, fragments, repeats of one
# field in one selection set, cost (a list multiplies what is under it by its size),
# seconds of work, requests at once, connections, the wait of a stopping server, log lines
# a minute.
# Save page now: without a login only a browser on this machine (loopback, no proxy headers)
# may save; MONITOR_SAVE_PAGES_PER_HOUR bounds the pages one client saves in an hour (0 =
# saving off); MONITOR_TRUSTED_PROXIES names the reverse proxies (addresses or CIDR
# networks) whose X-Forwarded-For / Forwarded headers say who the client is.
MONITOR_ALLOWED_HOSTS: list[str] = []
MONITOR_CHART_DAYS = 28
MONITOR_HOST = "127.0.0.1"
MONITOR_LOG_REFUSALS_PER_MINUTE = 20
MONITOR_MAX_ALIASES = 30
MONITOR_MAX_BODY_BYTES = 65_536
MONITOR_MAX_CONNECTIONS = 100
MONITOR_MAX_COST = 200_000
MONITOR_MAX_DEPTH = 10
MONITOR_MAX_FIELDS = 1000
MONITOR_MAX_FRAGMENTS = 20
MONITOR_MAX_QUERY_CHARS = 16_384
MONITOR_MAX_REPEATS = 5
MONITOR_PORT = 8080
MONITOR_REFRESH_SECONDS = 60
MONITOR_REQUEST_SECONDS = 10.0
MONITOR_SAVE_PAGES_PER_HOUR = 60
MONITOR_SHUTDOWN_SECONDS = 3
MONITOR_SITE_ARTICLES = 100
MONITOR_TRUSTED_PROXIES: list[str] = []
MONITOR_WORKERS = 4
# `scrapy site_stats`: flag sites without a new article for this many days; snapshots due
# for longer than this many seconds count as overdue.
SITE_STATS_OVERDUE_SECONDS = 3600
SITE_STATS_QUIET_DAYS = 3
# A site whose latest walk began this long after its list pages last answered is flagged.
SITE_STATS_UNANSWERED_SECONDS = 86400
