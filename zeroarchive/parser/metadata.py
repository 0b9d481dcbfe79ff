"""Page metadata: <meta> names and properties, Open Graph, JSON-LD, canonical link, language."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

from lxml.html import HtmlElement

from zeroarchive.core.language import normalise_language

logger = logging.getLogger(__name__)

_ARTICLE_TYPES = frozenset(
    {"Article", "NewsArticle", "BlogPosting", "ReportageNews", "AnalysisNewsArticle", "WebPage"}
)


@dataclass(frozen=True)
class PageMetadata:
    meta: dict[str, list[str]] = field(default_factory=dict)
    jsonld: list[Any] = field(default_factory=list)
    canonical: str | None = None
    language: str | None = None

    def first(self, *names: str) -> str | None:
        """The first non-empty value among the meta names/properties ``names``."""
        for name in names:
            for value in self.meta.get(name.lower(), ()):
                if value.strip():
                    return value.strip()
        return None

    def all(self, *names: str) -> list[str]:
        return [v.strip() for n in names for v in self.meta.get(n.lower(), ()) if v.strip()]

    def jsonld_articles(self) -> Iterator[dict[str, Any]]:
        """JSON-LD objects of an article type, the most specific types first."""
        found = [node for node in _walk(self.jsonld) if _types(node) & _ARTICLE_TYPES]
        found.sort(key=lambda node: "WebPage" in _types(node))
        yield from found

    def jsonld_types(self) -> set[str]:
        """Every ``@type`` of the page's JSON-LD objects, nested ones too."""
        return {kind for node in _walk(self.jsonld) for kind in _types(node)}

    def jsonld_value(self, key: str) -> Any:
        for node in self.jsonld_articles():
            if node.get(key):
                return node[key]
        return None

    def as_dict(self) -> dict[str, Any]:
        return {"meta": self.meta, "jsonld": self.jsonld, "canonical": self.canonical}


def _types(node: dict[str, Any]) -> set[str]:
    value = node.get("@type")
    if isinstance(value, str):
        return {value}
    if isinstance(value, list):
        return {v for v in value if isinstance(v, str)}
    return set()


def _walk(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for child in value.values():
            yield from _walk(child)
    elif isinstance(value, list):
        for child in value:
            yield from _walk(child)


def page_metadata(tree: HtmlElement, base_url: str) -> PageMetadata:
    """Everything the page declares about itself in its markup."""
    meta: dict[str, list[str]] = {}
    for element in tree.iter("meta"):
        key = element.get("property") or element.get("name") or element.get("itemprop")
        key = key or element.get("http-equiv")
        content = element.get("content")
        if key and content is not None:
            meta.setdefault(key.strip().lower(), []).append(content)
    jsonld: list[Any] = []
    for script in tree.xpath('//script[@type="application/ld+json"]'):
        source = (script.text or "").strip()
        if not source:
            continue
        try:
            jsonld.append(json.loads(source, strict=False))
        except ValueError:
            logger.debug("Unreadable JSON-LD block on %s", base_url)
    canonical = None
    for link in tree.xpath('//link[@rel="canonical"][@href]'):
        canonical = urljoin(base_url, link.get("href").strip())
        break
    language = tree.get("lang") or tree.get("xml:lang")
    if not language:
        language = next(iter(meta.get("content-language", ())), None)
    if not language and meta.get("og:locale"):
        language = meta["og:locale"][0].replace("_", "-")
    return PageMetadata(meta, jsonld, canonical, normalise_language(language))


def split_keywords(values: list[str]) -> tuple[str, ...]:
    """Keywords from comma (or 、/，) separated meta values, distinct, in order.

    >>> split_keywords(["台灣,選舉， 政治", "選舉"])
    ('台灣', '選舉', '政治')
    """
    out: dict[str, None] = {}
    for value in values:
        for part in value.replace("，", ",").replace("、", ",").split(","):
            if part.strip():
                out[part.strip()] = None
    return tuple(out)
