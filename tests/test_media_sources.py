"""The images of PTT, Dcard and Facebook posts (zeroarchive/media/sources.py), found on real
saved posts: imgur links in Dcard posts and comments (tests/fixtures/dcard), the photos of a
rendered Facebook post (tests/fixtures/facebook), PTT post pages with and without imgur
links (tests/fixtures/ptt); and a Dcard crawl that keeps its posts' imgur images through
the crawl's own media path."""

from __future__ import annotations

import hashlib
import json
import lzma
import threading
import urllib.error
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.conftest import scrapy
from tests.dcard_server import DcardApp
from tests.emulator import EmulatorServer
from tests.test_dcard import THROTTLE
from tests.test_generic import articles_by_url, stat, write_sites
from tests.test_media import MEDIA_ON, PNG, media_json
from zeroarchive.media.sources import dcard_media, facebook_media, ptt_media

FIXTURES = Path(__file__).parent / "fixtures"


def dcard_document(post_id: int) -> bytes:
    """A Dcard snapshot as spiders/dcard.py stores it, from the real post and comments."""
    posts = json.loads((FIXTURES / "dcard" / "posts.json").read_text(encoding="utf-8"))
    post = next(p for p in posts if p["content"]["id"] == post_id)
    return json.dumps({"post": post["content"], "comments": post["comments"]}).encode()


def test_a_dcard_posts_imgur_links_are_its_images() -> None:
    page = "https://www.dcard.tw/_api/posts/224362503"
    found = dcard_media(dcard_document(224362503), page, ["image", "style"])
    assert [(f.kind, f.url) for f in found] == [
        ("image", f"http://i.imgur.com/{image}.jpg")
        for image in ("V6b9uwi", "eBB1est", "iJXd5DM", "HghMORV")
    ]
    # Image pages (imgur.com/<id>, imgur.com/<id>.jpg) as their image on i.imgur.com.
    mixed = [f.url for f in dcard_media(dcard_document(224362364), page, ["image"])]
    assert "http://i.imgur.com/NoY5loQ.jpg" in mixed and "http://i.imgur.com/oc7INpx.jpg" in mixed
    assert all(urlsplit(url).hostname == "i.imgur.com" for url in mixed)
    assert len(mixed) == len(set(mixed))
    assert dcard_media(dcard_document(224362503), page, ["style"]) == []


def test_a_dcard_comments_images_count_too() -> None:
    # The real post 224341009 with its 375 real comments: some show an image.
    content = json.loads((FIXTURES / "dcard" / "single_post_content.json").read_text("utf-8"))
    comments = json.loads((FIXTURES / "dcard" / "single_post_comments.json").read_text("utf-8"))
    document = json.dumps({"post": content, "comments": comments}).encode()
    found = [f.url for f in dcard_media(document, "https://www.dcard.tw/_api/posts/1", ["image"])]
    shown = ["http://i.imgur.com/6u7L3pm.jpg", "http://i.imgur.com/HxQ3xHa.jpg"]  # floors 286, 302
    assert [url for url in found if url in shown] == shown
    # A link to a news article in a comment is no image.
    assert not any("appledaily" in url for url in found)


def facebook_post() -> bytes:
    return lzma.decompress(
        (FIXTURES / "facebook" / "TestGetPosts.test_get_posts-01.xz").read_bytes()
    )


def test_a_facebook_posts_photos_not_its_commenters_avatars() -> None:
    page = "https://m.facebook.com/story.php?story_fbid=3065154550235644&id=119240841493711"
    body = facebook_post()
    found = facebook_media(body, page, ["image"])
    urls = [f.url for f in found]
    # og:image (the first photo as shared), the post's four photos (one large, three
    # small), then one more photo the page links to; none of the avatars of the ~30
    # commenters the page also shows.
    photo_ids = ("3065146506903115", "3065146630236436", "3065146790236420", "3065146896903076")
    assert photo_ids[0] in urls[0] and "/fr/" in urls[0]
    assert [next(i for i in photo_ids if i in url) for url in urls[1:5]] == list(photo_ids)
    assert len(urls) == 6 and "4194934717257616" in urls[5] and body.count(b"<img") > 100
    assert all("&amp;" not in url and url.startswith("https://scontent.") for url in urls)
    assert not any("/p480x480/" in url and "_n.jpg" in url and "t1.6435-1" in url for url in urls)


def test_a_ptt_post_page_takes_no_link_for_an_image() -> None:
    body = (FIXTURES / "ptt" / "tommady-pttifierLib__TestContentHTML.html").read_bytes()
    page = "https://www.ptt.cc/bbs/Gossiping/M.1459688662.A.CFE.html"
    found = ptt_media(body, page, ["image"])
    # Its links are to PTT itself and to web pages, none to an image.
    assert b"<a " in body and found == []


def test_a_ptt_posts_imgur_links_are_its_images_each_once() -> None:
    """A real Beauty post (2017): seven imgur image pages, each linked (http, as typed) and
    embedded by PTT (``//imgur.com/<id>``, https on PTT's https page): seven images."""
    body = (FIXTURES / "ptt" / "roycrxtw-beautyland-api__example-post.html").read_bytes()
    page = "https://www.ptt.cc/bbs/Beauty/M.1501930028.A.1B3.html"
    found = ptt_media(body, page, ["image", "style"])
    ids = ("SdtkkiQ", "70KeHU5", "rqXKHz7", "9OO8mn0", "7IRcApy", "AFpqhmK", "dorn34U")
    assert [f.url for f in found if f.kind == "image"] == [
        f"http://i.imgur.com/{image}.jpg" for image in ids
    ]
    # PTT's own stylesheets (protocol-relative) are the page's look.
    styles = [f.url for f in found if f.kind == "style"]
    assert len(styles) == 5 and all(s.startswith("https://images.ptt.cc/") for s in styles)
    assert ptt_media(body, page, ["style"]) == [f for f in found if f.kind == "style"]


class _Images(BaseHTTPRequestHandler):
    """A forward proxy that stands for imgur: an image for every i.imgur.com URL (bytes of
    its own per URL; no robots.txt), everything else relayed to its (local) server."""

    def do_GET(self) -> None:
        url = self.path
        imgur = urlsplit(url).hostname == "i.imgur.com"
        if imgur:
            self.server.imgur.append(url)  # type: ignore[attr-defined]
        if imgur and url.endswith("/robots.txt"):
            body = b"no robots.txt"
            self.send_response(404)
            self.send_header("Content-Type", "text/plain")
        elif imgur:
            body = PNG + hashlib.sha256(url.encode()).digest()
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
        else:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            try:
                with opener.open(url, timeout=30) as answer:
                    status, body, kind = (
                        answer.status,
                        answer.read(),
                        answer.headers["Content-Type"],
                    )
            except urllib.error.HTTPError as exc:
                status, body, kind = exc.code, exc.read(), "text/plain"
            self.send_response(status)
            self.send_header("Content-Type", kind or "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_dcard_crawl_keeps_its_posts_imgur_images(db_url: str, tmp_path: Path) -> None:
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), _Images)
    proxy.imgur = []  # type: ignore[attr-defined]
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        with EmulatorServer(DcardApp(page_size=30)) as server:
            site = {
                "name": "funny",
                "url": server.url("/f/funny"),
                "type": "dcard",
                "config": {
                    "depth": 1,
                    "delay": 0,
                    "proxy": f"http://127.0.0.1:{proxy.server_port}",
                },
            }
            loaded = scrapy(
                "load_sites",
                str(write_sites(tmp_path / "s.yaml", [site])),
                db_url=db_url,
                cwd=tmp_path,
            )
            assert loaded.returncode == 0, loaded.output
            run = scrapy(
                "crawl", "dcard", *THROTTLE, db_url=db_url, cwd=tmp_path, extra_env=MEDIA_ON
            )
            assert run.returncode == 0 and "Traceback" not in run.output, run.output
            post_url = server.url("/f/funny/p/224362503")
    finally:
        proxy.shutdown()
        proxy.server_close()
    rows = media_json(db_url, tmp_path)
    stored = {r["url"]: r for r in rows if r["stored"]}
    for image in ("V6b9uwi", "eBB1est", "iJXd5DM", "HghMORV"):
        url = f"http://i.imgur.com/{image}.jpg"
        assert url in stored, rows
        assert (
            stored[url]["sha256"]
            == hashlib.sha256(PNG + hashlib.sha256(url.encode()).digest()).hexdigest()
        )
    assert {r["kind"] for r in rows} == {"image"}
    # Every image of every post was fetched through the crawl and stored, each once per post.
    refused = sorted((r["reason"], r["url"]) for r in rows if not r["stored"])
    assert not refused and stat(run, "zeroarchive/media/items") == len(rows)
    # robots.txt of i.imgur.com asked for first, as for any host.
    fetched = Counter(proxy.imgur)  # type: ignore[attr-defined]
    assert fetched.pop("http://i.imgur.com/robots.txt") == 1
    recorded = Counter(r["url"] for r in rows)
    assert fetched == recorded, (fetched - recorded, recorded - fetched)
    assert articles_by_url(db_url)[post_url]["snapshot_count"] >= 1
