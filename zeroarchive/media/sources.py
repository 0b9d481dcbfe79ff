"""The images of platform posts, per source: pure functions beside ``find`` (which reads
any HTML page).

- PTT: the post page's own images (``find_media``), and every link in the post and its
  pushes that leads to an image: imgur (``i.imgur.com/<id>.<ext>`` as it is, an
  ``imgur.com/<id>`` page as its image) or a URL ending in an image extension. PTT shows
  these links as the images under the text, and its pushes are mostly such links. An
  image linked over http and embedded over https is one item (the first spelling).
- Dcard: the snapshot is JSON (``{"post": ..., "comments": [...]}``, spiders/dcard.py):
  the post's and each comment's ``media`` (``[{"url"}]``) and ``mediaMeta``
  (``[{"url", "type"}]``, thumbnails skipped), and the image links in their text.
- Facebook: the rendered post's photos, the ``<img>``\\s inside a link to a photo
  (``/photos/``, ``photo.php``), in the post and in its comments, and ``og:image``; not
  the avatars of everyone who commented.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import urljoin, urlsplit

import lxml.etree
import lxml.html

from zeroarchive.media.find import IMAGE_META, Found, find_media

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp", ".avif")
_IMGUR_PATH = re.compile(r"^/([A-Za-z0-9]{5,8})(\.[A-Za-z0-9]{3,4})?$")
_TEXT_URL = re.compile(r"""https?://[^\s"'<>\[\]{}|\\^`]+""")
_PHOTO_LINK = re.compile(r"/photos/|/photo\.php|/photo/")

Finder = Callable[[bytes, str, Iterable[str]], list[Found]]


def imgur_image(url: str) -> str | None:
    """The image an imgur URL shows: a direct image as it is (``.gifv``, imgur's video of a
    GIF, as the GIF), an image page ``imgur.com/<id>`` as ``i.imgur.com/<id>.jpg`` (imgur
    answers that with the image whatever its format), by the link's own scheme; None for
    albums, galleries and anything else.

    >>> imgur_image("http://i.imgur.com/V6b9uwi.jpg")
    'http://i.imgur.com/V6b9uwi.jpg'
    >>> imgur_image("https://imgur.com/Q8zNjBd"), imgur_image("http://m.imgur.com/YKklB5n")
    ('https://i.imgur.com/Q8zNjBd.jpg', 'http://i.imgur.com/YKklB5n.jpg')
    >>> imgur_image("https://i.imgur.com/abcdefg.gifv")
    'https://i.imgur.com/abcdefg.gif'
    >>> imgur_image("https://imgur.com/a/abcde"), imgur_image("https://example.com/abcde")
    (None, None)
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if host != "imgur.com" and not host.endswith(".imgur.com"):
        return None
    match = _IMGUR_PATH.match(parts.path)
    if match is None:
        return None
    image, extension = match.group(1), (match.group(2) or "").lower()
    if host == "i.imgur.com" and extension and extension != ".gifv":
        return url
    scheme = parts.scheme or "https"
    if extension == ".gifv":
        return f"{scheme}://i.imgur.com/{image}.gif"
    if extension and extension not in IMAGE_EXTENSIONS:
        return None
    return f"{scheme}://i.imgur.com/{image}{extension or '.jpg'}"


def linked_image(url: str) -> str | None:
    """The image a link leads to: imgur's, or a URL whose path ends in an image extension.

    >>> linked_image("https://pbs.example/media/a.JPG?name=orig")
    'https://pbs.example/media/a.JPG?name=orig'
    >>> linked_image("https://www.ptt.cc/bbs/Gossiping/M.1459688662.A.CFE.html") is None
    True
    """
    found = imgur_image(url)
    if found is not None:
        return found
    try:
        path = urlsplit(url).path.lower()
    except ValueError:
        return None
    return url if path.endswith(IMAGE_EXTENSIONS) else None


def _same(url: str) -> str:
    """What two spellings of one item share: its URL without the scheme. PTT writes an
    imgur link as the author typed it (``http://imgur.com/<id>``) and its embed of the
    same image as ``//imgur.com/<id>`` (https on an https page): one image, not two.

    >>> _same("http://i.imgur.com/SdtkkiQ.jpg") == _same("https://i.imgur.com/SdtkkiQ.jpg")
    True
    """
    return url.split("://", 1)[-1]


def _keep(found: list[Found], seen: set[str], kind: str, url: str | None) -> None:
    if url and url.startswith(("http://", "https://")) and _same(url) not in seen:
        seen.add(_same(url))
        found.append(Found(kind, url))


def _parse(body: bytes) -> lxml.html.HtmlElement | None:
    if not body.strip():
        return None
    try:
        return lxml.html.fromstring(body)
    except (ValueError, lxml.etree.ParserError):
        return None


def ptt_media(body: bytes, page_url: str, kinds: Iterable[str]) -> list[Found]:
    """The items of a PTT post page: ``find_media``'s, then the image links of the post
    and its pushes, in the page's order."""
    wanted = list(kinds)
    found = find_media(body, page_url, wanted)
    if "image" not in wanted:
        return found
    root = _parse(body)
    if root is None:
        return found
    seen = {_same(item.url) for item in found}
    for link in root.iter("a"):
        href = (link.get("href") or "").strip()
        if href:
            _keep(found, seen, "image", linked_image(urljoin(page_url, href)))
    return found


def _text_images(text: Any) -> Iterator[str]:
    if isinstance(text, str):
        for url in _TEXT_URL.findall(text):
            image = linked_image(url.rstrip(".,;:!?)）」"))
            if image is not None:
                yield image


def _json_images(entry: Any) -> Iterator[str]:
    """The images of one Dcard post or comment object."""
    if not isinstance(entry, dict):
        return
    for media in entry.get("media") or []:
        if isinstance(media, dict) and isinstance(media.get("url"), str):
            yield media["url"]
    for meta in entry.get("mediaMeta") or []:
        if not isinstance(meta, dict) or not isinstance(meta.get("url"), str):
            continue
        kind = str(meta.get("type") or "image")
        if kind.startswith("image") and not kind.endswith("thumbnail"):
            yield meta["url"]
    yield from _text_images(entry.get("content"))


def dcard_media(body: bytes, page_url: str, kinds: Iterable[str]) -> list[Found]:
    """The images of a Dcard snapshot (the post and every comment), each once.

    >>> doc = {"post": {"content": "看這 http://i.imgur.com/V6b9uwi.jpg\\nimgur.com/x",
    ...     "mediaMeta": [{"url": "https://m.example/a.jpg", "type": "image/megapx"},
    ...                   {"url": "https://m.example/a-t.jpg", "type": "image/thumbnail"}]},
    ...        "comments": [{"content": "https://imgur.com/Q8zNjBd 好"}]}
    >>> [f.url for f in dcard_media(json.dumps(doc).encode(), "https://d/_api/posts/1", ["image"])]
    ['https://m.example/a.jpg', 'http://i.imgur.com/V6b9uwi.jpg', 'https://i.imgur.com/Q8zNjBd.jpg']
    """
    if "image" not in kinds:
        return []
    try:
        document = json.loads(body)
    except ValueError:
        return []
    if not isinstance(document, dict):
        return []
    entries = [document.get("post"), *(document.get("comments") or [])]
    found: list[Found] = []
    seen: set[str] = set()
    for entry in entries:
        for url in _json_images(entry):
            _keep(found, seen, "image", urljoin(page_url, url.strip()))
    return found


def facebook_media(body: bytes, page_url: str, kinds: Iterable[str]) -> list[Found]:
    """The photos of a rendered Facebook post (and its comments), ``og:image``, and the
    page's stylesheets and videos when asked for."""
    wanted = list(kinds)
    found = find_media(body, page_url, [kind for kind in wanted if kind != "image"])
    if "image" not in wanted:
        return found
    root = _parse(body)
    if root is None:
        return found
    seen = {_same(item.url) for item in found}
    images: list[Found] = []
    for meta in root.iter("meta"):
        name = (meta.get("property") or meta.get("name") or "").lower()
        if name in IMAGE_META:
            _keep(images, seen, "image", urljoin(page_url, (meta.get("content") or "").strip()))
    for link in root.iter("a"):
        if not _PHOTO_LINK.search(link.get("href") or ""):
            continue
        for img in link.iter("img"):
            fragment = lxml.html.tostring(img)
            for item in find_media(fragment, page_url, ["image"]):
                _keep(images, seen, "image", item.url)
    return images + found


def sends_referer(item_url: str, page_url: str) -> bool:
    """Whether an item's request carries its page as ``Referer``, as a browser's does: not
    for imgur's images from PTT, which imgur has refused since March 2017 (PTT's own pages
    show them through imgur's embed, never with a PTT Referer).

    >>> sends_referer("https://i.imgur.com/a1b2c3d.jpg", "https://www.ptt.cc/bbs/X/M.1.A.2.html")
    False
    >>> sends_referer("https://i.imgur.com/a1b2c3d.jpg", "https://news.example/1")
    True
    """
    item = (urlsplit(item_url).hostname or "").lower()
    page = (urlsplit(page_url).hostname or "").lower()
    from_ptt = page == "ptt.cc" or page.endswith(".ptt.cc")
    return not (from_ptt and (item == "imgur.com" or item.endswith(".imgur.com")))


FINDERS: dict[str, Finder] = {"ptt": ptt_media, "dcard": dcard_media, "facebook": facebook_media}


def source_finder(source: str) -> Finder | None:
    """The finder of a source's posts, or None for pages any HTML finder reads.

    >>> source_finder("dcard") is dcard_media, source_finder("generic")
    (True, None)
    """
    return FINDERS.get(source)
