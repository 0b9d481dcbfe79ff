"""The media items a stored page shows, and those a stylesheet references: pure functions.

An ``<img>``'s URL is the largest candidate of its ``srcset`` (and of the ``<source>``\\s of
the ``<picture>`` around it, whose ``<img>`` is one more candidate), else its lazy-loading
attribute (``data-src`` and the like: the real image behind a placeholder), else ``src``;
``og:image``/``twitter:image`` are images too. Stylesheets (``<link rel=stylesheet>``) are
kind ``style``, as are the fonts and images their ``url(...)`` and ``@import`` name.
Videos: ``<video src>``, ``<video><source>``, ``og:video``; a video's ``poster`` is an
image. URLs are resolved against the
page (and its ``<base href>``); ``data:`` URIs are skipped; each URL is kept once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple
from urllib.parse import urljoin

import lxml.etree
import lxml.html

#: Site config names of what to keep, and the kind of the records each gives.
CONFIG_KINDS = {"images": "image", "styles": "style", "video": "video"}
LAZY_ATTRIBUTES = (
    "data-src",
    "data-original",
    "data-lazy-src",
    "data-lazy",
    "data-url",
    "data-hi-res-src",
    "data-full-src",
)
LAZY_SRCSETS = ("data-srcset", "data-lazy-srcset", "data-original-set")
IMAGE_META = (
    "og:image",
    "og:image:url",
    "og:image:secure_url",
    "twitter:image",
    "twitter:image:src",
)
VIDEO_META = ("og:video", "og:video:url", "og:video:secure_url")
_SRCSETS = ("srcset", *LAZY_SRCSETS)
#: The tags each record kind is found in (``<meta>``: og:image, og:video).
_TAGS = (
    ("image", "meta"),
    ("video", "meta"),
    ("style", "link"),
    ("image", "img"),
    ("video", "video"),
    ("style", "style"),
)
_LAZY = frozenset(LAZY_ATTRIBUTES)
_CSS_URL = re.compile(r"""url\(\s*(['"]?)(.*?)\1\s*\)|@import\s+(['"])(.*?)\3""", re.S)
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)


class Found(NamedTuple):
    kind: str
    url: str


def srcset_candidates(srcset: str) -> list[tuple[str, float, float]]:
    """``(url, width, density)`` of each candidate of a ``srcset`` (0 for what it omits).

    >>> srcset_candidates("a.jpg 300w, b.jpg 1200w")
    [('a.jpg', 300.0, 0.0), ('b.jpg', 1200.0, 0.0)]
    >>> srcset_candidates("x.png, y.png 2x")
    [('x.png', 0.0, 1.0), ('y.png', 0.0, 2.0)]
    >>> srcset_candidates("img,w=300.jpg 300w")  # a comma inside a URL stays in it
    [('img,w=300.jpg', 300.0, 0.0)]
    """
    found = []
    for part in re.split(r",\s+|,(?=\s*$)|(?<=[wx]),", srcset.strip()):
        fields = part.split()
        if not fields:
            continue
        url, width, density = fields[0].rstrip(","), 0.0, 1.0 if len(fields) == 1 else 0.0
        for descriptor in fields[1:]:
            try:
                if descriptor.endswith("w"):
                    width = float(descriptor[:-1])
                elif descriptor.endswith("x"):
                    density = float(descriptor[:-1])
            except ValueError:
                continue
        found.append((url, width, density))
    return found


def largest(candidates: Iterable[tuple[str, float, float]]) -> str | None:
    """The URL of the largest candidate: by width, then density; a plain URL is 1x.

    >>> largest([("s.jpg", 0, 1), ("m.jpg", 640, 0), ("l.jpg", 1280, 0)])
    'l.jpg'
    >>> largest([("a.png", 0, 1), ("b.png", 0, 2)])
    'b.png'
    >>> largest([]) is None
    True
    """
    best = max(candidates, key=lambda c: (c[1], c[2]), default=None)
    return None if best is None else best[0]


def _image_candidates(img: lxml.html.HtmlElement) -> list[tuple[str, float, float]]:
    candidates = []
    # Most <img>s carry only a few attributes: look up those they have (C calls), not
    # every lazy-loading name in Python.
    names = img.keys()
    for name in _SRCSETS:
        if name in names:
            candidates.extend(srcset_candidates(img.get(name) or ""))
    plain = None
    if not _LAZY.isdisjoint(names):
        plain = next((img.get(a) for a in LAZY_ATTRIBUTES if (img.get(a) or "").strip()), None)
    plain = plain or img.get("src")
    if plain and plain.strip() and not _is_data(plain):
        candidates.append((plain.strip(), 0.0, 1.0))
    return [c for c in candidates if not _is_data(c[0])]


def _is_data(url: str) -> bool:
    return url.strip()[:5].lower() == "data:"


def find_media(html: bytes | str, page_url: str, kinds: Iterable[str]) -> list[Found]:
    """The items of the given record kinds (image, style, video) a page shows, each once,
    in the page's order, their URLs resolved.

    >>> page = b'''<html><head><base href="https://cdn.example/a/">
    ... <meta property="og:image" content="/og.jpg">
    ... <link rel="stylesheet" href="site.css"></head><body>
    ... <img src="data:image/gif;base64,R0l" data-src="lazy.jpg">
    ... <picture><source srcset="p-800.webp 800w, p-1600.webp 1600w"><img src="p.jpg"></picture>
    ... <img src="s.png" srcset="s.png 1x, s@2x.png 2x"><img src="/og.jpg">
    ... <video src="clip.mp4" poster="still.jpg"></video><video><source src="v.webm"></video>
    ... </body></html>'''
    >>> for item in find_media(page, "https://news.example/p/1", ["image", "style", "video"]):
    ...     print(item.kind, item.url)
    image https://cdn.example/og.jpg
    style https://cdn.example/a/site.css
    image https://cdn.example/a/lazy.jpg
    image https://cdn.example/a/p-1600.webp
    image https://cdn.example/a/s@2x.png
    image https://cdn.example/a/still.jpg
    video https://cdn.example/a/clip.mp4
    video https://cdn.example/a/v.webm
    """
    wanted = set(kinds)
    if not html.strip():
        return []
    try:
        root = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return []
    base = page_url
    for element in root.iter("base"):
        if element.get("href"):
            base = urljoin(page_url, element.get("href").strip())
            break
    found: list[Found] = []
    seen: set[str] = set()

    def keep(kind: str, url: str | None) -> None:
        if not url or kind not in wanted or _is_data(url):
            return
        absolute = resolve(base, url.strip())
        if absolute.startswith(("http://", "https://")) and absolute not in seen:
            seen.add(absolute)
            found.append(Found(kind, absolute.split("#")[0]))

    # Only the tags of the kinds wanted: a page's <style>s are scanned for nothing else.
    tags = [tag for kind, tag in _TAGS if kind in wanted]
    for element in root.iter(*tags):
        tag = element.tag
        if tag == "meta":
            name = (element.get("property") or element.get("name") or "").lower()
            if name in IMAGE_META:
                keep("image", element.get("content"))
            elif name in VIDEO_META:
                keep("video", element.get("content"))
        elif tag == "link":
            rel = (element.get("rel") or "").lower().split()
            # WordPress and others load CSS late: rel=preload as=style, made a stylesheet.
            if "stylesheet" in rel or ("preload" in rel and element.get("as") == "style"):
                keep("style", element.get("href"))
        elif tag == "img":
            candidates = []
            # libxml2 does not know <source> is empty: the <img> may sit inside one.
            picture = next(element.iterancestors("picture"), None)
            if picture is not None:
                # The <source>s first: of equal candidates, a browser shows the first.
                for source in picture.iter("source"):
                    for name in ("srcset", *LAZY_SRCSETS):
                        candidates.extend(srcset_candidates(source.get(name) or ""))
            candidates.extend(_image_candidates(element))
            keep("image", largest(c for c in candidates if not _is_data(c[0])))
        elif tag == "video":
            keep("image", element.get("poster"))
            keep("video", element.get("src"))
            for source in element.iter("source"):
                keep("video", source.get("src"))
        elif tag == "style" and element.text:
            for url in css_urls(element.text):
                keep("style", url)
    return found


def resolve(base: str, url: str) -> str:
    """``urljoin(base, url)``, without its parsing for the URLs pages mostly name: an
    absolute http(s) one, as it is (urljoin's work on a page's 30 URLs was a third of
    finding them), unless it has dot segments, an empty query or fragment, or characters
    urljoin would change.

    >>> resolve("https://a.example/x/", "https://cdn.example/i.png")
    'https://cdn.example/i.png'
    >>> resolve("https://a.example/x/", "../i.png"), resolve("https://a.example/", "//c.example/j")
    ('https://a.example/i.png', 'https://c.example/j')
    """
    if (
        url.startswith(("http://", "https://"))
        and "/." not in url
        and "?#" not in url
        and not url.endswith(("?", "#"))  # urljoin drops an empty query or fragment
        and _PLAIN.match(url)
    ):
        return url
    return urljoin(base, url)


#: What the fast path of ``resolve`` takes as it is: no white space, controls, backslash.
_PLAIN = re.compile(r"[^\x00-\x20\\\x7f]*\Z")


def css_urls(css: str) -> Iterator[str]:
    """The URLs a stylesheet names (``url(...)``, ``@import``), as written, data: skipped.

    >>> list(css_urls('''@import "a.css"; /* url(no.png) */
    ... @font-face{src:url('f.woff2') format("woff2")} .x{background:url(data:image/png;x)}
    ... .y{background-image: url( ../i/bg.png )}'''))
    ['a.css', 'f.woff2', '../i/bg.png']
    """
    for match in _CSS_URL.finditer(_CSS_COMMENT.sub("", css)):
        url = (match.group(2) if match.group(2) is not None else match.group(4) or "").strip()
        if url and not _is_data(url):
            yield url


def stylesheet_items(css: bytes, css_url: str) -> list[str]:
    """The absolute URLs a fetched stylesheet references, each once, resolved against the
    stylesheet's own URL.

    >>> stylesheet_items(b".a{background:url(../img/x.png)} .b{background:url(/y.svg)}",
    ...                  "https://s.example/css/site.css")
    ['https://s.example/img/x.png', 'https://s.example/y.svg']
    """
    urls: list[str] = []
    for url in css_urls(css.decode("utf-8", "replace")):
        absolute = urljoin(css_url, url).split("#")[0]
        if absolute.startswith(("http://", "https://")) and absolute not in urls:
            urls.append(absolute)
    return urls
