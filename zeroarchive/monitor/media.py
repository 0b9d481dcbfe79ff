"""The archive's own copies of what a stored page showed: ``/media/<sha256>`` serves an
item's stored bytes, and the stored-page view points its pictures and stylesheets there.

Nothing is ever fetched from the live site: an ``<img>`` (``src``, ``srcset``, lazy
attributes, ``<picture><source>``), a ``<video>`` or ``<audio>`` (``src``, its
``<source>``\\s, ``poster``), a ``<link rel=stylesheet>`` and every CSS ``url(...)`` or
``@import`` is rewritten to the stored item its URL names among the snapshot's media
records (an unchanged re-snapshot shows its earlier version's), or, when the archive does
not hold it, marked missing (an image, video or audio keeps its place with a note of why,
an expired video's "expired" too; a stylesheet, font or background is left out). A
stylesheet served for a page (``?page=ARTICLE.TIME``) has its own ``url(...)``s rewritten
the same way, against its own URL.

A video or audio player asks for parts (``Range: bytes=START-END``, to seek): an item is
served whole (200) or as the one range asked for (206, ``Content-Range``); a range past its
end is a 416; several ranges in one request, or an ``If-Range`` that is not the item's
``ETag`` (its digest), get the whole item.

The item's answer runs nothing and is not for other sites: a Content-Type from the
stored answer only when it is a picture, stylesheet, font or video (else
``application/octet-stream`` as a download), ``nosniff``, a policy with ``sandbox`` (an
SVG or HTML opened on its own runs no script; a video opened on its own may load itself,
for its player), ``Cross-Origin-Resource-Policy:
same-origin``. Items are named by their content, so a browser may keep them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from urllib.parse import urljoin

import lxml.html
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from zeroarchive.media.find import LAZY_ATTRIBUTES, LAZY_SRCSETS, largest, srcset_candidates
from zeroarchive.media.store import MediaRecord, held_item, media_store, shown_set

PREFIX = "/media/"
#: Rows of a snapshot's set read for one page (media_max_items is 40 by default).
SET_LIMIT = 400
#: A stylesheet bigger than this is served as stored, its url()s not rewritten (the
#: page's policy still refuses what they name): rewriting reads it whole.
REWRITE_BYTES = 2 << 20
#: Where a reference to something the archive does not hold goes: nowhere.
NOTHING = "data:,"
_SHOWN_TYPES = ("image/", "font/", "video/", "audio/")
_SHOWN_EXACT = ("text/css", "application/font-woff", "application/vnd.ms-fontobject")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_CSS_URL = re.compile(r"""url\(\s*(['"]?)(.*?)\1\s*\)|@import\s+(['"])(.*?)\3""", re.S)
_PAGE = re.compile(r"([0-9]{1,18})\.([0-9]{1,18})")
_RANGE = re.compile(r"bytes=([0-9]{0,18})-([0-9]{0,18})")
#: What ``requested_range`` answers for a range that starts past the item's end.
UNSATISFIABLE = (-1, -1)
#: Shows where an image of the page was and why it is not there.
MISSING_STYLE = (
    "img[data-archived-missing],video[data-archived-missing],audio[data-archived-missing]"
    "{outline:1px dashed #b71c1c;min-width:2em;min-height:1em;color:#b71c1c;"
    "font:12px sans-serif}[data-archived-note]{color:#b71c1c;font:12px sans-serif}"
)
#: The record kinds a stored page's view shows (its screenshot is shown beside it).
SHOWN_KINDS = ("image", "style", "video")


def item_path(digest: bytes | str, page: str | None = None) -> str:
    """The monitor's URL of a stored item (of a page, for a stylesheet).

    >>> item_path(bytes(32))[:16], item_path("ab" * 32, "3.1700000000")[-18:]
    ('/media/000000000', '?page=3.1700000000')
    """
    name = digest if isinstance(digest, str) else digest.hex()
    return PREFIX + name + ("" if page is None else f"?page={page}")


def served_type(content_type: str | None) -> str | None:
    """The Content-Type an item is served with: the stored one when it names a picture,
    stylesheet, font or video, else None (served as a download).

    >>> served_type("image/png"), served_type("text/css; charset=utf-8"), served_type("text/html")
    ('image/png', 'text/css; charset=utf-8', None)
    """
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    if mime.startswith(_SHOWN_TYPES) or mime in _SHOWN_EXACT:
        return content_type
    return None


class ShownItems:
    """A snapshot's media records by URL, and where the page's references go."""

    def __init__(self, records: list[MediaRecord], page: str | None = None) -> None:
        self.page = page
        self.records = records
        self.by_url: dict[str, MediaRecord] = {}
        for record in records:
            if record.kind == "screenshot":
                continue
            held = self.by_url.get(record.url)
            if held is None or (record.stored and not held.stored):
                self.by_url[record.url] = record

    def stored(self, url: str) -> MediaRecord | None:
        record = self.by_url.get(url.split("#")[0])
        return record if record is not None and record.stored and record.sha256 else None

    def why_missing(self, url: str) -> str:
        record = self.by_url.get(url.split("#")[0])
        return "not archived" if record is None else (record.reason or "not stored")

    def path(self, record: MediaRecord) -> str:
        assert record.sha256 is not None
        is_css = (record.content_type or "").lower().startswith("text/css")
        return item_path(record.sha256, self.page if is_css else None)

    def css(self, css: str, base: str) -> str:
        """``css`` with every ``url(...)`` and ``@import`` pointing at the stored item, or
        at nothing.

        >>> items = ShownItems([MediaRecord(1, 2, "style", "https://s.example/i/bg.png",
        ...     bytes(32), 9, "image/png", 2, True, None)])
        >>> items.css(".a{background:url('../i/bg.png')} .b{background:url(x.png)}",
        ...           "https://s.example/css/site.css")  # doctest: +ELLIPSIS
        '.a{background:url("/media/0000...0000")} .b{background:url("data:,")}'
        """

        def swap(match: re.Match[str]) -> str:
            written = match.group(2) if match.group(2) is not None else match.group(4)
            if (written or "").strip().lower().startswith("data:"):
                return match.group(0)
            record = self.stored(urljoin(base, (written or "").strip()))
            target = NOTHING if record is None else self.path(record)
            return f'url("{target}")' if match.group(2) is not None else f'@import "{target}"'

        return _CSS_URL.sub(swap, css)

    def stylesheets(self, document: lxml.html.HtmlElement, base: str) -> list[str]:
        """The archive's paths of the page's stylesheets it holds, in the page's order
        (read before the page is cleaned: the cleaner drops every stylesheet link)."""
        paths = []
        for link in document.iter("link"):
            rel = (link.get("rel") or "").lower().split()
            href = (link.get("href") or "").strip()
            if href and ("stylesheet" in rel or ("preload" in rel and link.get("as") == "style")):
                record = self.stored(urljoin(base, href))
                if record is not None and self.path(record) not in paths:
                    paths.append(self.path(record))
        return paths

    def rewrite(self, document: lxml.html.HtmlElement, base: str, styles: list[str]) -> None:
        """Point the page's pictures and stylesheets (``styles``, from ``stylesheets``) at
        the stored items (``base``: the URL the page's relative references resolve
        against); every other link goes."""
        for link in list(document.iter("link")):
            link.drop_tree()
        head = document.find("head")
        if head is None:
            head = lxml.html.Element("head")
            document.insert(0, head)
        for number, path in enumerate(styles):
            head.insert(number, lxml.html.Element("link", rel="stylesheet", href=path))
        for img in document.iter("img"):
            self._image(img, base)
        for player in list(document.iter("video", "audio")):
            self._playable(player, base)
        for source in document.iter("source"):
            if next(source.iterancestors("video", "audio"), None) is not None:
                continue  # its player's (_playable)
            for name in ("src", "srcset", *LAZY_SRCSETS):
                _set_aside(source, name)
        for element in document.iter("style"):
            if element.text:
                element.text = self.css(element.text, base)
        for element in document.iter():
            if isinstance(element.tag, str) and element.get("style"):
                element.set("style", self.css(element.get("style"), base))
        note = lxml.html.Element("style")
        note.text = MISSING_STYLE
        head.append(note)

    def _image(self, img: lxml.html.HtmlElement, base: str) -> None:
        candidates: list[tuple[str, float, float]] = []
        picture = next(img.iterancestors("picture"), None)
        if picture is not None:
            for source in picture.iter("source"):
                for name in ("srcset", *LAZY_SRCSETS):
                    candidates.extend(srcset_candidates(source.get(name) or ""))
        for name in ("srcset", *LAZY_SRCSETS):
            candidates.extend(srcset_candidates(img.get(name) or ""))
        for name in (*LAZY_ATTRIBUTES, "src"):
            if (img.get(name) or "").strip():
                candidates.append((img.get(name).strip(), 0.0, 1.0))
        resolved = [
            (urljoin(base, url), width, density)
            for url, width, density in candidates
            if not url.lower().startswith("data:")
        ]
        held = [c for c in resolved if self.stored(c[0]) is not None]
        for name in ("src", "srcset", *LAZY_ATTRIBUTES, *LAZY_SRCSETS):
            _set_aside(img, name)
        chosen = largest(held)
        if chosen is not None:
            record = self.stored(chosen)
            assert record is not None
            img.set("src", self.path(record))
            return
        if not resolved:
            return
        wanted = largest(resolved) or resolved[0][0]
        why = self.why_missing(wanted)
        img.set("data-archived-missing", why)
        img.set("alt", f"[image {why}] {img.get('alt') or ''}".strip())

    def _playable(self, player: lxml.html.HtmlElement, base: str) -> None:
        """A ``<video>`` or ``<audio>``: its ``src`` and ``<source>``\\s that the archive
        holds point at the stored items, the rest are set aside; with none held, it is
        marked missing with a note of why (of its first URL). A ``poster`` is a picture."""
        poster = (player.get("poster") or "").strip()
        if poster and not poster.lower().startswith("data:"):
            record = self.stored(urljoin(base, poster))
            if record is not None:
                player.set("poster", self.path(record))
            else:
                _set_aside(player, "poster")
        # libxml2 nests a <video>'s <source>s in one another: all of them are its own.
        sources = [player, *player.iter("source")]
        wanted = []
        held = False
        for element in sources:
            url = (element.get("src") or "").strip()
            if not url or url.lower().startswith("data:"):
                continue
            wanted.append(urljoin(base, url))
            record = self.stored(wanted[-1])
            if record is not None:
                element.set("src", self.path(record))
                held = True
            else:
                _set_aside(element, "src")
        if held or not wanted:
            return
        why = self.why_missing(wanted[0])
        kind = "video" if player.tag == "video" else "audio"
        player.set("data-archived-missing", why)
        player.set("title", f"[{kind} {why}]")
        note = lxml.html.Element("span")
        note.set("data-archived-note", "")
        note.text = f"[{kind} {why}]"
        note.tail = player.tail
        player.tail = None
        player.addnext(note)


def _set_aside(element: lxml.html.HtmlElement, name: str) -> None:
    """Move a fetching attribute out of the browser's reach, kept for the reader (a data:
    URL stays: it fetches nothing)."""
    value = element.get(name)
    if value is not None and not value.strip().lower().startswith("data:"):
        del element.attrib[name]
        element.set(f"data-archived-{name}", value)


def shown_items(request: Request, article_id: int, snapshot_at: int) -> ShownItems:
    """The pictures, videos and stylesheets (with their fonts and images) a snapshot
    showed."""
    engine = request.app.state.engine
    records = shown_set(engine, article_id, snapshot_at, SHOWN_KINDS, SET_LIMIT)
    return ShownItems(records, f"{article_id}.{snapshot_at}")


def screenshot(request: Request, article_id: int, snapshot_at: int) -> MediaRecord | None:
    """The snapshot's screenshot (an unchanged re-snapshot's: its version's), if stored."""
    engine = request.app.state.engine
    shots = shown_set(engine, article_id, snapshot_at, ("screenshot",), SET_LIMIT)
    stored = [r for r in shots if r.stored and r.sha256 is not None]
    return stored[-1] if stored else None


def requested_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The first and last byte a ``Range`` header asks of an item of ``size`` bytes; None
    for the whole item (no header, one it does not understand, several ranges), and
    ``UNSATISFIABLE`` when the range starts past the end.

    >>> [requested_range(h, 100) for h in ("bytes=0-9", "bytes=90-", "bytes=-10", "bytes=95-200")]
    [(0, 9), (90, 99), (90, 99), (95, 99)]
    >>> [requested_range(h, 100) for h in (None, "bytes=0-1,5-6", "bytes=9-2", "items=0-1")]
    [None, None, None, None]
    >>> requested_range("bytes=100-", 100) == requested_range("bytes=-0", 100) == UNSATISFIABLE
    True
    """
    found = _RANGE.fullmatch((header or "").strip())
    if found is None or not (found[1] or found[2]):
        return None
    if not found[1]:  # the last N bytes
        suffix = int(found[2])
        return UNSATISFIABLE if suffix == 0 or size == 0 else (max(size - suffix, 0), size - 1)
    first = int(found[1])
    if found[2] and int(found[2]) < first:
        return None
    if first >= size:
        return UNSATISFIABLE
    return first, min(int(found[2]) if found[2] else size - 1, size - 1)


#: The policy of an item opened on its own: nothing runs, nothing loads...
ITEM_POLICY = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
#: ...but a video or audio opened on its own, whose player asks this monitor for the item
#: again (by ranges): from its own origin, still with no script.
PLAYER_POLICY = (
    "default-src 'none'; media-src 'self'; style-src 'unsafe-inline'; sandbox allow-same-origin"
)


def _headers(length: int, content_type: str | None = None) -> dict[str, str]:
    player = (content_type or "").lower().startswith(("video/", "audio/"))
    return {
        "Content-Length": str(length),
        "Accept-Ranges": "bytes",
        "Content-Security-Policy": PLAYER_POLICY if player else ITEM_POLICY,
        "X-Content-Type-Options": "nosniff",
        "Cross-Origin-Resource-Policy": "same-origin",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "private, max-age=31536000, immutable",
    }


def _missing() -> Response:
    return Response("no such media item", 404, media_type="text/plain")


def item(request: Request) -> Response:
    """``GET /media/<sha256 hex>``: the item's bytes, streamed from the store."""
    name = request.path_params["digest"]
    if not _HEX64.fullmatch(name):
        return _missing()
    digest = bytes.fromhex(name)
    state = request.app.state
    engine = state.engine
    found = held_item(engine, digest)
    if found is None:
        return _missing()
    store = media_store(engine, state.config.media_dir)
    content_type = served_type(found.content_type)
    headers = _headers(found.size, content_type)
    page = _PAGE.fullmatch(request.query_params.get("page", ""))
    is_css = (content_type or "").lower().startswith("text/css")
    if is_css and page is not None and found.size <= REWRITE_BYTES:
        article_id, snapshot_at = int(page[1]), int(page[2])
        items = shown_items(request, article_id, snapshot_at)
        own = next((r for r in items.by_url.values() if r.sha256 == digest), None)
        try:
            css = b"".join(store.read(digest)).decode("utf-8", "replace")
        except LookupError:
            return _missing()
        body = items.css(css, own.url if own is not None else "").encode("utf-8")
        headers["Content-Length"] = str(len(body))
        return Response(body, headers=headers, media_type="text/css; charset=utf-8")
    headers["ETag"] = f'"{name}"'
    wanted = requested_range(request.headers.get("range"), found.size)
    if_range = request.headers.get("if-range")
    if if_range is not None and if_range.strip() != headers["ETag"]:
        wanted = None
    if wanted == UNSATISFIABLE:
        headers = {**headers, "Content-Range": f"bytes */{found.size}", "Content-Length": "0"}
        return Response(b"", 416, headers=headers)
    start, last = wanted if wanted is not None else (0, found.size - 1)
    try:
        chunks: Iterator[bytes] = iter(store.read(digest, start))
        first = next(chunks, b"")
    except LookupError:
        return _missing()
    if content_type is None:
        headers["Content-Disposition"] = f'attachment; filename="{name}"'
    status = 200
    if wanted is not None:
        status = 206
        headers["Content-Range"] = f"bytes {start}-{last}/{found.size}"
        headers["Content-Length"] = str(last - start + 1)

    def stream() -> Iterator[bytes]:
        left = last - start + 1
        for chunk in itertools.chain((first,), chunks):
            if left <= 0:
                return
            yield chunk[:left]
            left -= len(chunk)

    return StreamingResponse(
        stream(),
        status_code=status,
        headers=headers,
        media_type=content_type or "application/octet-stream",
    )
