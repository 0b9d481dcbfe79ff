"""The monitor as an ASGI app (Starlette): the dashboard's pages, the archived pages as
stored, and /graphql. Read-only: nothing here writes to the database."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from ariadne import graphql_sync
from sqlalchemy.engine import Engine
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from zeroarchive.monitor import events_page, pages
from zeroarchive.monitor.auth import AuthMiddleware
from zeroarchive.monitor.config import MonitorConfig
from zeroarchive.monitor.sites_api import Context, build_schema
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
            await asyncio.to_thread(_count, stats, charts)
        except Exception:
            logger.exception("Monitor: counting site stats failed; the last counts stay")


def create_app(
    engine: Engine,
    config: MonitorConfig,
    stats_config: SiteStatsConfig,
    clock: Callable[[], float] = time.time,
) -> Starlette:
    stats = StatsCache(engine, stats_config, config.chart_days, clock)
    charts = pages.Charts(config.chart_days)
    schema = build_schema()

    async def graphql_endpoint(request: Request) -> Response:
        if request.method == "GET":
            data: Any = {"query": request.query_params.get("query", "")}
            if "variables" in request.query_params:
                data["variables"] = request.query_params["variables"]
        else:
            try:
                data = await request.json()
            except (json.JSONDecodeError, UnicodeDecodeError):
                return JSONResponse({"errors": [{"message": "the body is not JSON"}]}, 400)
        if isinstance(data, dict) and isinstance(data.get("variables"), str):
            try:
                data["variables"] = json.loads(data["variables"])
            except json.JSONDecodeError:
                return JSONResponse({"errors": [{"message": "variables are not JSON"}]}, 400)
        context = Context(engine=engine, stats=stats, hist={})
        success, result = await run_in_threadpool(
            graphql_sync, schema, data, context_value=context, logger=__name__
        )
        return JSONResponse(result, status_code=200 if success else 400)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        # Counted before the server listens, so no page ever waits for the grouped scans.
        view = await asyncio.to_thread(_count, stats, charts)
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
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    middleware = []
    if config.requires_auth:
        middleware.append(
            Middleware(
                AuthMiddleware,
                token=config.token,
                username=config.username,
                password=config.password,
            )
        )
    app = Starlette(
        routes=[
            *pages.routes(),
            *events_page.routes(),
            Route("/graphql", graphql_endpoint, methods=["GET", "POST"]),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        middleware=middleware,
        lifespan=lifespan,
    )
    app.state.engine = engine
    app.state.stats = stats
    app.state.config = config
    app.state.charts = charts
    return app
