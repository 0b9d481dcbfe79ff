"""The media items a stored page shows, and those a stylesheet references: pure functions.

An ``<img>``'s URL is the largest candidate of its ``srcset`` (and of the ``<source>``\\s of
the ``<picture>`` around it, whose ``<img>`` is one more candidate), else its lazy-loading
attribute (``data-src`` and the like: the real image behind a placeholder), else ``src``;
``og:image``/``twitter:image`` are images too. Stylesheets (``<link rel=stylesheet>``) are
kind ``style``, as are the fonts and images their ``url(...)`` and ``@import`` name.
Videos: ``<video src>``, ``<video><source>``, ``og:video``; a video's ``poster`` is an
image. URLs are resolved against the
page (and its ``<base href>``); ``data:`` URIs are skipped; each URL is kept once.

A page is scanned for its tags of interest (``scan_tags``), not parsed whole: what the
scanner cannot decide as lxml would (a value past ASCII, a character reference, a tag
inside another's quotes) goes to lxml's parse. Where a page has bytes its declared encoding
lacks, lxml's tree ends there; the scanner, as a browser, reads on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from html import entities as html_entities
from typing import Any, NamedTuple, Protocol
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
    # Only the tags of the kinds wanted: a page's <style>s are scanned for nothing else.
    tags = [tag for kind, tag in _TAGS if kind in wanted]
    scanned = scan_tags(html, tags) if isinstance(html, bytes) else None
    if scanned is None:
        parsed = _parsed_tags(html, tags)
        if parsed is None:
            return []
        scanned = parsed
    try:
        return _found(page_url, wanted, *scanned)
    except _Unsure:
        # A value the scanner cannot read as lxml would (bytes past ASCII, a reference).
        parsed = _parsed_tags(html, tags)
        return [] if parsed is None else _found(page_url, wanted, *parsed)


def _found(
    page_url: str, wanted: set[str], base_href: str | None, elements: Sequence[Element]
) -> list[Found]:
    base = urljoin(page_url, base_href.strip()) if base_href else page_url
    found: list[Found] = []
    seen: set[str] = set()

    def keep(kind: str, url: str | None) -> None:
        if not url or kind not in wanted or _is_data(url):
            return
        absolute = resolve(base, url.strip())
        if absolute.startswith(("http://", "https://")) and absolute not in seen:
            seen.add(absolute)
            found.append(Found(kind, absolute.split("#")[0]))

    for tag, element, text, sources in elements:
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
            # The <source>s of the <picture> around it first: of equal candidates, a
            # browser shows the first.
            for source in sources:
                for name in ("srcset", *LAZY_SRCSETS):
                    candidates.extend(srcset_candidates(source.get(name) or ""))
            candidates.extend(_image_candidates(element))
            keep("image", largest(c for c in candidates if not _is_data(c[0])))
        elif tag == "video":
            keep("image", element.get("poster"))
            keep("video", element.get("src"))
            for source in sources:
                keep("video", source.get("src"))
        elif tag == "style" and text:
            for url in css_urls(text):
                if _MARK in url:
                    raise _Unsure("a URL past ASCII in a <style>")
                keep("style", url)
    return found


class _Attributes(Protocol):
    def get(self, key: str, default: None = None) -> str | None: ...

    def keys(self) -> Any: ...


#: A tag of interest in the page's order: its name, attributes, text (a ``<style>``'s)
#: and the ``<source>``\s that go with it (a ``<picture>``'s for its ``<img>``, a
#: ``<video>``'s own).
Element = tuple[str, _Attributes, "str | None", Sequence[_Attributes]]


def _parsed_tags(html: bytes | str, tags: Sequence[str]) -> tuple[str | None, list[Element]] | None:
    """The page's ``<base href>`` and its tags of interest, by lxml's parse (None: not
    parsable)."""
    try:
        root = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return None
    base = next((e.get("href") for e in root.iter("base") if e.get("href")), None)
    elements: list[Element] = []
    for element in root.iter(*tags):
        tag = element.tag
        sources: Sequence[_Attributes] = ()
        if tag == "img":
            # libxml2 does not know <source> is empty: the <img> may sit inside one.
            picture = next(element.iterancestors("picture"), None)
            if picture is not None:
                sources = [source.attrib for source in picture.iter("source")]
        elif tag == "video":
            sources = [source.attrib for source in element.iter("source")]
        elements.append((tag, element.attrib, element.text, sources))
    return base, elements


class _Unsure(Exception):
    """What the scanner does not decide as lxml would: the page goes to lxml."""


class _ScannedAttributes(dict[str, bytes]):
    """A tag's attributes as the page wrote them; a value is read as lxml would give it,
    or ``_Unsure`` (bytes past ASCII, whose encoding lxml would detect; a character
    reference other than ``&amp;``; a carriage return)."""

    def get(self, key: str, default: None = None) -> str | None:  # type: ignore[override]
        value = dict.get(self, key)
        return None if value is None else _value(value)


def _value(raw: bytes) -> str:
    if not raw.isascii() or b"\r" in raw:
        raise _Unsure("not plain ASCII")
    if b"&" in raw:
        raw = raw.replace(b"&amp;", b"&")
        if _REFERENCE.search(raw):
            raise _Unsure("a character reference")
    return raw.decode("ascii")


#: Where the scanner stops at a ``<``: a comment, an element whose content is text (its
#: end found by ``str.find``), a tag of interest, or the end of a ``<picture>``/``<video>``.
_OPENING = re.compile(
    rb"<(?:(!--)|(script|style|textarea|title|xmp|iframe|noembed|noframes|plaintext)"
    rb"(?=[\s/>])|(img|meta|link|source|picture|video|base)(?=[\s/>])|/(picture|video)"
    rb"(?=[\s/>]))"
)
#: The rest of a start tag: attributes (quoted values may hold ``>``) up to its ``>``.
_TAG_REST = re.compile(rb"""(?:[^>"']|"[^"]*"|'[^']*')*>""")
_ATTRIBUTE = re.compile(rb"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")
_COMMENT_END = re.compile(rb"--!?>")
#: What the scanner puts for each byte past ASCII in a ``<style>`` (DEL: not white space,
#: a quote nor a bracket to ``css_urls``).
_MARK = "\x7f"
_MARK_HIGH = bytes(range(128)) + b"\x7f" * 128
#: What every name of ``IMAGE_META`` and ``VIDEO_META`` holds.
_OG_OR_TWITTER = re.compile(rb"og:|twitter:")
#: A character reference lxml would decode: numeric, named with ``;``, or a legacy name
#: without one.
_REFERENCE = re.compile(
    rb"&(?:#|[A-Za-z][A-Za-z0-9]*;|(?:"
    + b"|".join(
        name.encode()
        for name in sorted(html_entities.html5, key=lambda name: -len(name))
        if not name.endswith(";")
    )
    + rb")(?![A-Za-z0-9=]))"
)


def scan_tags(html: bytes, tags: Sequence[str]) -> tuple[str | None, list[Element]] | None:
    """The page's ``<base href>`` and its tags of interest as ``_parsed_tags`` gives them,
    found without parsing the whole page (a regular expression to the next tag of
    interest, the end of a script found by ``bytes.find``): lxml's parse was most of what
    finding a page's items cost (1.3 ms of 1.6 on the extraction benchmark's pages).
    None when the page holds anything it does not decide as lxml would (a value past
    ASCII, a character reference, a tag inside another's quotes, an unclosed
    ``<picture>``): lxml parses that page.

    >>> base, found = scan_tags(b'''<BASE href="/b/"><!-- <img src=no.png> -->
    ... <script>x = "<img src=no.png>"</script><picture><img SRC=p.jpg>
    ... <source srcset="p.webp 9w"></picture>''', ["img"])
    >>> base, [(tag, a.get("src"), [s.get("srcset") for s in src]) for tag, a, _, src in found]
    ('/b/', [('img', 'p.jpg', ['p.webp 9w'])])
    >>> scan_tags(b"<picture><img src=a.png>", ["img"]) is None  # unclosed
    True
    """
    if html[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\0" in html:
        return None  # UTF-16 or -32: bytes are not characters
    wanted = set(tags)
    try:
        return _scan(html, wanted)
    except _Unsure:
        return None


def _scan(html: bytes, wanted: set[str]) -> tuple[str | None, list[Element]]:
    low = html.lower()
    base: str | None = None
    elements: list[Element] = []
    # The <picture> or <video> open, and the <source>s seen in it.
    open_tag: str | None = None
    sources: list[_Attributes] = []
    position = 0
    search = _OPENING.search
    while (match := search(low, position)) is not None:
        start = match.start()
        # A "<" after the last ">": this one is inside another tag (a quoted value) or
        # after a stray "<" in the text, where lxml may see no tag.
        if low.rfind(b"<", position, start) > low.rfind(b">", position, start):
            raise _Unsure("a tag inside another")
        if match.group(1):  # a comment
            after = match.end()
            if low.startswith((b">", b"->"), after):
                position = low.index(b">", after) + 1
                continue
            end = _COMMENT_END.search(low, after)
            if end is None:
                raise _Unsure("an unclosed comment")
            position = end.end()
            continue
        text_tag = match.group(2)
        if text_tag is not None:
            if text_tag == b"plaintext":
                raise _Unsure("<plaintext>")
            rest = _TAG_REST.match(html, match.end())
            if rest is None:
                raise _Unsure("an unclosed tag")
            close = low.find(b"</" + text_tag, rest.end())
            if close < 0:
                raise _Unsure("an unclosed text element")
            if text_tag == b"style" and "style" in wanted:
                # Its bytes past ASCII (the page's own text: a font's name) marked, so
                # that a URL holding one goes to lxml (``_found``) and the rest is read.
                css = html[rest.end() : close].translate(_MARK_HIGH).decode("ascii")
                attributes = _attributes(html, match.end(), rest.end() - 1)
                elements.append(("style", attributes, css, ()))
            position = close + 2
            continue
        closing = match.group(4)
        if closing is not None:
            if open_tag == closing.decode():
                open_tag = None
            position = match.end()
            continue
        tag = match.group(3).decode()
        rest = _TAG_REST.match(html, match.end())
        if rest is None:
            raise _Unsure("an unclosed tag")
        position = rest.end()
        if tag == "base":
            if base is None:
                base = _attributes(html, match.end(), position - 1).get("href") or None
            continue
        if tag in ("picture", "video"):
            if open_tag is not None:
                raise _Unsure("a <picture> or <video> in another")
            open_tag, sources = tag, []
            if tag == "picture" or tag not in wanted:
                continue
        if tag == "source":
            if open_tag is not None:
                sources.append(_attributes(html, match.end(), position - 1))
            continue
        if tag not in wanted:
            continue
        if tag == "meta" and not _OG_OR_TWITTER.search(low, match.end(), position):
            continue  # not og:image nor og:video: what a page's many <meta>s mostly are
        attributes = _attributes(html, match.end(), position - 1)
        if tag == "img":
            elements.append((tag, attributes, None, sources if open_tag == "picture" else ()))
        elif tag == "video":
            elements.append((tag, attributes, None, sources))
        else:
            elements.append((tag, attributes, None, ()))
    if open_tag is not None:
        raise _Unsure(f"an unclosed <{open_tag}>")
    return base, elements


def _attributes(html: bytes, start: int, end: int) -> _ScannedAttributes:
    """The attributes between ``start`` and ``end``: names lower-cased, the first of
    repeated names kept (as a browser does), a name without a value empty."""
    attributes = _ScannedAttributes()
    for found in _ATTRIBUTE.finditer(html, start, end):
        name = found.group(1).lower().decode("latin-1")
        if name not in attributes:
            quoted, single, bare = found.group(2, 3, 4)
            attributes[name] = next((v for v in (quoted, single, bare) if v is not None), b"")
    return attributes


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
