"""What an answer's first bytes say it is: an image, a video, or an HTML page where an
item was expected (the ``not-media`` refusal). Used by the fetch of every item
(zeroarchive/media/fetch.py) and by video downloads (zeroarchive/media/video.py)."""

from __future__ import annotations

#: The first bytes of the image formats browsers show.
_IMAGE_MAGIC = (
    b"\xff\xd8\xff",
    b"\x89PNG\r\n\x1a\n",
    b"GIF87a",
    b"GIF89a",
    b"BM",
    b"\x00\x00\x01\x00",
)
_VIDEO_MAGIC = (b"\x1a\x45\xdf\xa3", b"OggS")


def is_media(kind: str, body: bytes, content_type: str | None) -> bool:
    """Whether an answer is what an item of ``kind`` should be: an image's bytes must be an
    image (its magic bytes, or SVG), whatever its Content-Type says; a stylesheet, font or
    image of a stylesheet must not be an HTML page; a video must be a video.

    >>> is_media("image", b"\\x89PNG\\r\\n\\x1a\\n...", "image/png")
    True
    >>> is_media("image", b"<!doctype html><html>Not found", "image/jpeg")
    False
    >>> is_media("image", b'<?xml version="1.0"?><svg xmlns="..."/>', "image/svg+xml")
    True
    >>> is_media("image", b"RIFF\\x00\\x00\\x00\\x00WEBPVP8 ", None)
    True
    >>> is_media("style", b"body{color:red}", "text/css"), is_media("style", b"<html>", None)
    (True, False)
    >>> is_media("video", b"\\x00\\x00\\x00\\x18ftypmp42", "video/mp4")
    True
    """
    head = body[:1024]
    mime = (content_type or "").split(";")[0].strip().lower()
    if kind == "image":
        if head.startswith(_IMAGE_MAGIC) or (head[8:12] == b"WEBP" and head[:4] == b"RIFF"):
            return True
        if head[4:8] == b"ftyp" and head[8:12] in (b"avif", b"avis", b"heic", b"mif1"):
            return True
        return b"<svg" in head.lower()
    if kind == "video":
        if head[4:8] == b"ftyp" or head.startswith(_VIDEO_MAGIC):
            return True
        return mime.startswith("video/") and not looks_like_html(head)
    return not looks_like_html(head)


def looks_like_html(head: bytes) -> bool:
    start = head.lstrip()[:64].lower()
    return start.startswith((b"<!doctype html", b"<html", b"<head", b"<body"))
