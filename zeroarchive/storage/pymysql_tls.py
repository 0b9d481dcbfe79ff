"""PyMySQL connections that share one TLS context when none of their own is asked for
(see ``engine._pymysql_connect``). Imported only where a PyMySQL engine connects."""

from __future__ import annotations

import functools
import ssl
from typing import Any

from pymysql.connections import Connection


@functools.cache
def preferred_context() -> ssl.SSLContext:
    """The context PyMySQL builds for its "preferred" TLS (no option given: no CA, no
    certificate check, TLS only if the server offers it), built once for the process.
    A context is not changed by the connections that wrap their sockets with it."""
    return Connection._create_ssl_ctx(None, {})


class SharedTlsConnection(Connection):
    def _create_ssl_ctx(self, sslp: Any) -> ssl.SSLContext:
        if isinstance(sslp, dict) and not sslp:
            return preferred_context()
        context: ssl.SSLContext = super()._create_ssl_ctx(sslp)
        return context
