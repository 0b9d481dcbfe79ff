"""What a parser makes of one snapshot: the fields of a publication."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any


class ParseError(ValueError):
    """The snapshot cannot be parsed as its article type (wrong shape, empty, not a post)."""


@dataclass(frozen=True)
class Parsed:
    canonical_url: str
    title: str
    text: str
    language: str | None = None
    published_at: int | None = None
    # The time the page itself says it was last edited, when it says so.
    modified_at: int | None = None
    author: str | None = None
    hashtags: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    comments: tuple[dict[str, Any], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("hashtags", "urls", "keywords", "tags", "comments"):
            data[key] = list(data[key])
        return data

    def digest(self) -> bytes:
        """SHA-256 of every field: equal digests mean the same publication version."""
        blob = json.dumps(self.as_dict(), ensure_ascii=False, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode("utf-8")).digest()
