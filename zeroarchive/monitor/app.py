"""The monitor as an ASGI app (Starlette): the dashboard's pages, the archived pages as
stored, and /graphql. Read-only but for save page now (save_page.py), which files the
URLs it is given and starts a `scrapy save` process.

Each part brings its own routes (``pages.routes()``, ``graphql_api.route()``): a new page
is one more entry in ``create_app``'s list and, for the navigation bar, in ``pages.NAV``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from sqlalchemy.engine import Engine
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from zeroarchive.monitor import deadline, events_page, graphql_api, pages, save_page, search_page
from zeroarchive.monitor.auth import AuthMiddleware
from zeroarchive.monitor.clients import SCOPE_KEY, ClientMiddleware
from zeroarchive.monitor.config import MonitorConfig
from zeroarchive.monitor.guard import GuardMiddleware
from zeroarchive.monitor.params import BadInput
from zeroarchive.monitor.refusals import Refusals
from zeroarchive.monitor.sites_api import Context, build_schema, list_sizes
from zeroarchive.monitor.stats_cache import StatsCache, StatsView
from zeroarchive.storage.site_stats import SiteStatsConfig

logger = logging.getLogger(__name__)
HERE = Path(__file__).parent


def _count(stats: StatsCache, charts: pages.Charts) -> StatsView:
    view = stats.refresh()
    charts.draw_all(view)
    return view


async def _refresh_forever(stats: StatsCache, charts: pages.Charts, seconds: int) -> None:
    while True:
        await asyncio.sleep(seconds)
        try:
            await deadline.run_in_daemon(lambda: _count(stats, charts))
        except Exception as exc:
            logger.error(
                "Monitor: counting site stats failed (%s: %s); the last counts stay",
                type(exc).__name__,
                str(exc)[:200],
            )


def create_app(
    engine: Engine,
    config: MonitorConfig,
    stats_config: SiteStatsConfig,
    clock: Callable[[], float] = time.time,
    saver: save_page.Saver | None = None,
) -> Starlette:
    stats = StatsCache(engine, stats_config, config.chart_days, clock)
    charts = pages.Charts(config.chart_days)
    refusals = Refusals(config.limits.log_refusals_per_minute)
    # Set when the server is told to stop: every request's deadline passes at once.
    stopping = threading.Event()
    deadline.guard_engine(engine)
    # Pages and GraphQL queries alike: each runs in a thread of its own, at most this many.
    workers = threading.BoundedSemaphore(config.limits.workers)
    # Saving fetches pages and writes: behind a login, or from this machine alone.
    saver = saver or save_page.Saver(
        engine,
        config.requires_auth,
        pages_per_hour=config.save_pages_per_hour,
        allow_private=config.allow_private_targets,
    )
    graphql = graphql_api.GraphQLEndpoint(
        build_schema(),
        lambda scope: Context(
            engine=engine, stats=stats, hist={}, saver=saver, client=scope.get(SCOPE_KEY)
        ),
        lambda: list_sizes(stats),
        config.limits,
        refusals,
        stopping,
        workers,
    )

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        # Counted before the server listens, so no page ever waits for the grouped scans.
        view = await deadline.run_in_daemon(lambda: _count(stats, charts))
        logger.info(
            "Monitor: %d site(s) counted in %.2f s, again every %d s",
            len(view.sites),
            view.seconds,
            config.refresh_seconds,
        )
        task = asyncio.create_task(_refresh_forever(stats, charts, config.refresh_seconds))
        try:
            yield
        finally:
            stopping.set()
            deadline.stop_running(engine)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def bad_input(request: Request, exc: Exception) -> Response:
        return refusals.plain(request.scope, 400, str(exc))

    middleware = [
        Middleware(ClientMiddleware, trusted=config.trusted_proxies),
        Middleware(GuardMiddleware, config=config, refusals=refusals),
    ]
    if config.requires_auth:
        middleware.append(
            Middleware(
                AuthMiddleware,
                token=config.token,
                username=config.username,
                password=config.password,
                refusals=refusals,
            )
        )
    app = Starlette(
        routes=[
            *pages.routes(),
            *search_page.routes(),
            *events_page.routes(),
            *save_page.routes(),
            graphql_api.route(graphql),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={BadInput: bad_input},
    )
    app.state.engine = engine
    app.state.stats = stats
    app.state.config = config
    app.state.charts = charts
    app.state.refusals = refusals
    app.state.stopping = stopping
    app.state.workers = workers
    app.state.saver = saver
    return app
