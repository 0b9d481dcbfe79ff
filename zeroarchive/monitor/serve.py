"""The monitor on uvicorn, with its limits: connections at once, and a stop that waits no
longer than MONITOR_SHUTDOWN_SECONDS whatever runs (a stopping server first makes every
running request's deadline pass, so their statements stop)."""

from __future__ import annotations

import threading
from typing import Any

import uvicorn
from starlette.applications import Starlette

from zeroarchive.monitor.config import MonitorConfig


class MonitorServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, stopping: threading.Event) -> None:
        super().__init__(config)
        self.stopping = stopping

    def handle_exit(self, sig: int, frame: Any) -> None:
        self.stopping.set()
        super().handle_exit(sig, frame)


def make_server(app: Starlette, config: MonitorConfig) -> MonitorServer:
    return MonitorServer(
        uvicorn.Config(
            app,
            host=config.host,
            port=config.port,
            log_config=None,
            access_log=False,
            server_header=False,
            # uvicorn would believe X-Forwarded-For from any loopback peer: clients.py reads
            # it, from MONITOR_TRUSTED_PROXIES only.
            proxy_headers=False,
            limit_concurrency=config.limits.connections,
            timeout_graceful_shutdown=config.limits.shutdown_seconds,
        ),
        app.state.stopping,
    )
