"""What the monitor never shows: passwords in URLs (a site's proxies, its own URL), the
session cookies a site is given and where its cookies file lives."""

from __future__ import annotations

import json
import re
from typing import Any

# Everything between "//" and "@" in an authority: a user, a password, or both.
_USERINFO = re.compile(r"(?<=//)[^/@\s]+@")
SECRET_KEYS = frozenset({"cookies", "cookies_file"})
MASK = "***"


def masked_url(text: str) -> str:
    """``text`` with the credentials of every URL in it masked.

    >>> masked_url("http://bob:s3cret@proxy.example:3128")
    'http://***@proxy.example:3128'
    >>> masked_url("https://news.example/a/1?x=@y")
    'https://news.example/a/1?x=@y'
    """
    return _USERINFO.sub(f"{MASK}@", text)


def _masked(value: Any) -> Any:
    if isinstance(value, str):
        return masked_url(value)
    if isinstance(value, list):
        return [_masked(item) for item in value]
    if isinstance(value, dict):
        return {
            key: MASK if key in SECRET_KEYS and item else _masked(item)
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
