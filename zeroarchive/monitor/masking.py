"""What the monitor never shows: passwords in URLs (a site's proxies, its own URL), the
session cookies a site is given and where its cookies file lives, and any config value
whose key names a secret (password, token, secret, API key, auth). URLs are masked by
zeroarchive.core.shown.masked_url, the one rule of every output."""

from __future__ import annotations

import json
import re
from typing import Any

from zeroarchive.core.shown import MASK, masked_url

# Config keys whose values are secrets whatever they look like.
_SECRET_KEY = re.compile(r"cookie|passw|secret|token|api_?key|auth", re.I)


def _masked(value: Any) -> Any:
    if isinstance(value, str):
        return masked_url(value)
    if isinstance(value, list):
        return [_masked(item) for item in value]
    if isinstance(value, dict):
        return {
            key: MASK if _SECRET_KEY.search(key) and item else _masked(item)
            for key, item in value.items()
        }
    return value


def masked_config(stored: str) -> str:
    """A site's config as stored, for display: credentials masked, pretty-printed.

    >>> print(masked_config('{"proxy": ["http://u:p@px:1"], "cookies_file": "/s/c.txt"}'))
    {
      "cookies_file": "***",
      "proxy": [
        "http://***@px:1"
      ]
    }
    >>> masked_config("{not json")
    '(not valid JSON)'
    """
    try:
        config = json.loads(stored or "{}")
    except json.JSONDecodeError:
        return "(not valid JSON)"
    return json.dumps(_masked(config), ensure_ascii=False, indent=2, sort_keys=True)
