"""Screenshots of rendered pages (zeroarchive/media/screenshot.py): local pages crawled
through Debian's Chromium, their full-page shots stored as media items of kind
``screenshot``, read back through the media store and decoded with Pillow.

Each crawl starts one browser for all its sites, so each test asks many things of one run."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image
from sqlalchemy import func, select

from tests.conftest import scrapy
from tests.replay import ReplayServer, Route
from tests.test_facebook import chromium  # noqa: F401 (fixture)
from tests.test_generic import Run, stat, write_sites
from zeroarchive.media.store import media_store
from zeroarchive.sites.record import Site, SiteConfigError, parse_config, parse_spec
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.schema import article_snapshot
from zeroarchive.storage.snapshots import iter_snapshots

MEDIA_ON = {"ZEROARCHIVE_MEDIA_ENABLED": "1"}
HTML = (("Content-Type", "text/html; charset=utf-8"),)
PNG = (("Content-Type", "image/png"),)
# Traditional and simplified Chinese, Japanese kana and kanji, Korean hangul.
CHARACTERS = "中文報導新闻ひらカナ한국어"
# A private-use character no font has: what a box (tofu) looks like in this browser.
NO_GLYPH = "\U000f0000"
CELL = 64
RED, BLUE, GREEN = (255, 0, 0), (0, 0, 255), (0, 128, 0)
# The usual lazy loader: an image's real URL goes into src when it scrolls into view.
LAZY_JS = """<script>
new IntersectionObserver((seen, observer) => {
  for (const entry of seen) if (entry.isIntersecting) {
    entry.target.src = entry.target.dataset.src; observer.unobserve(entry.target);
  }
}).observe(document.getElementById("lazy"));
</script>"""


#: The "shot" site's media_max_bytes: more than its small pictures, less than BIG's.
SHOT_MAX_BYTES = 10_000


def png_of(color: tuple[int, int, int], compress_level: int = 6) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (100, 100), color).save(out, "PNG", compress_level=compress_level)
    return out.getvalue()


BIG = png_of(GREEN, compress_level=0)  # 30 kB, uncompressed


def cjk_page(height: int, oversized: bool = False) -> bytes:
    """A page ``height`` px tall: CJK characters in 64 px cells along its top (and a box
    last), a picture at 100 px, and a lazily loaded one 1,300 px down, far below the
    first screen; ``oversized``: two pictures over the site's limit beside the first."""
    big = (
        '<img id="big" src="/img/big.png" style="top:100px;left:200px">'
        '<img id="big-unsized" src="/img/big-unsized.png" style="top:100px;left:400px">'
        if oversized
        else ""
    )
    cells = "".join(
        f'<span class="c" style="left:{i * CELL}px">{c}</span>'
        for i, c in enumerate(CHARACTERS + NO_GLYPH)
    )
    return f"""<!doctype html><html lang="zh-Hant"><head><meta charset="utf-8">
<title>截圖測試</title><style>
body {{ margin: 0; background: #fff; color: #000 }}
.c {{ position: absolute; top: 0; width: {CELL}px; height: {CELL}px; line-height: {CELL}px;
      font: 48px sans-serif; text-align: center }}
img {{ position: absolute; left: 0; width: 100px; height: 100px }}
</style></head><body><div style="height:{height}px"></div>{cells}
<img id="top" src="/img/top.png" style="top:100px">{big}
<img id="lazy" data-src="/img/lazy.png" style="top:1300px">
{LAZY_JS}</body></html>""".encode()


# A page whose content only its script draws: a green band 200 px high and a heading.
SCRIPTED = b"""<!doctype html><html><head><meta charset="utf-8"><title>shell</title></head>
<body style="margin:0"><script>
const band = document.createElement("div");
band.style.cssText = "height:200px;background:rgb(0,128,0)";
document.body.appendChild(band);
const h = document.createElement("h1"); h.textContent = "\\u7531\\u8173\\u672c\\u5beb\\u5165";
document.body.appendChild(h);
</script></body></html>"""
# A page that breaks scrolling: its screenshot fails, its snapshot does not.
UNSCROLLABLE = b"""<!doctype html><html><head><meta charset="utf-8"><title>x</title></head>
<body><p>No scrolling here.</p><script>
window.scrollTo = () => { throw new Error("scrolling refused"); };
</script></body></html>"""


def list_page(prefix: str, n: int) -> Route:
    links = "".join(f'<a href="/{prefix}/news/{i}">{i}</a>' for i in range(1, n + 1))
    return Route(200, HTML, f"<!doctype html><html><body>{links}</body></html>".encode())


def routes() -> dict[str, Route]:
    blocked = b'<!doctype html><html><body><p>Text.</p><img src="/img/blocked.png"></body></html>'
    return {
        "/a/": list_page("a", 2),
        "/a/news/1": Route(200, HTML, cjk_page(1500, oversized=True)),
        "/a/news/2": Route(200, HTML, cjk_page(3000)),
        "/b/": list_page("b", 1),
        "/b/news/1": Route(200, HTML, blocked),
        "/c/": list_page("c", 2),
        "/c/news/1": Route(200, HTML, SCRIPTED),
        "/c/news/2": Route(200, HTML, UNSCROLLABLE),
        # Without a size: read by the browser's guard up to the limit, then handed on.
        "/img/top.png": Route(200, PNG, png_of(RED), unsized=True),
        "/img/big.png": Route(200, PNG, BIG),
        "/img/big-unsized.png": Route(200, PNG, BIG, unsized=True),
        "/img/lazy.png": Route(200, PNG, png_of(BLUE)),
        "/img/blocked.png": Route(200, PNG, png_of(RED)),
    }


def site(server: ReplayServer, name: str, path: str, **config: object) -> dict[str, object]:
    return {
        "name": name,
        "url": server.url(f"/{path}/"),
        "config": {"article": f"/{path}/news/", "delay": 0, **config},
    }


def crawl(
    db_url: str,
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
    spider: str = "generic",
) -> Run:
    run = scrapy(
        "crawl",
        spider,
        *args,
        db_url=db_url,
        cwd=tmp_path,
        extra_env={**MEDIA_ON, **(env or {})},
    )
    assert run.returncode == 0 and "Traceback" not in run.output, run.output
    return run


def load(db_url: str, tmp_path: Path, sites: list[dict[str, object]]) -> None:
    loaded = scrapy(
        "load_sites", str(write_sites(tmp_path / "sites.yaml", sites)), db_url=db_url, cwd=tmp_path
    )
    assert loaded.returncode == 0, loaded.output


def screenshots(db_url: str, tmp_path: Path, *args: str) -> list[dict[str, object]]:
    run = scrapy("media", "--json", "--kind", "screenshot", *args, db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    return [json.loads(line) for line in run.stdout.splitlines()]


def stored_bytes(db_url: str, row: dict[str, object], media_dir: str = "") -> bytes:
    """An item's bytes through the media store (what the monitor and WARC export read)."""
    store = media_store(open_archive(url=db_url).engine, media_dir)
    return b"".join(store.read(bytes.fromhex(str(row["sha256"]))))


def at(base: str) -> Callable[[str], str]:
    return lambda path: base + path


def pixel(image: Image.Image, x: int, y: int) -> tuple[int, int, int]:
    r, g, b = image.convert("RGB").getpixel((x, y))  # type: ignore[misc]
    return (r, g, b)


def test_rendered_pages_are_shot_whole_with_their_pictures_and_cjk_glyphs(
    db_url: str, tmp_path: Path
) -> None:
    with ReplayServer(routes()) as server:
        load(
            db_url,
            tmp_path,
            [
                site(
                    server,
                    "shot",
                    "a",
                    render=True,
                    media=["screenshot"],
                    media_max_bytes=SHOT_MAX_BYTES,
                ),
                site(server, "plain", "b", render=True, media=["styles"]),
                site(server, "unrendered", "c", media=["screenshot"]),
            ],
        )
        run = crawl(db_url, tmp_path, "-s", "SCREENSHOT_MAX_HEIGHT=2000")
        hits = dict(server.hits)
        base = server.base_url
    url = at(base)
    rows = {str(row["url"]): row for row in screenshots(db_url, tmp_path)}
    assert set(rows) == {url(f"/{p}/news/{n}") for p in "ac" for n in (1, 2)}
    shots = {}
    for page_url, row in rows.items():
        assert row["kind"] == "screenshot" and isinstance(row["snapshot_at"], int)
        if row["stored"]:
            body = stored_bytes(db_url, row)
            assert hashlib.sha256(body).hexdigest() == row["sha256"]
            assert row["bytes"] == len(body) and row["content_type"] == "image/png"
            assert row["reason"] is None
            shots[page_url] = Image.open(io.BytesIO(body))
    # The page's whole height at the window's width; the taller one cut at the maximum.
    short, tall = shots[url("/a/news/1")], shots[url("/a/news/2")]
    assert short.format == "PNG" and short.size == (1280, 1500)
    assert tall.size == (1280, 2000)
    assert stat(run, "zeroarchive/screenshots/cut") == 1
    # CJK drawn as glyphs: each character its own picture, none the box of a missing glyph.
    cells = [short.crop((i * CELL, 0, (i + 1) * CELL, CELL)).tobytes() for i in range(14)]
    box = cells.pop()
    assert len(set(cells)) == len(CHARACTERS) and box not in cells
    # The picture loaded by the browser for the shot, and the one loaded on scroll.
    assert pixel(short, 50, 150) == RED and pixel(short, 50, 1350) == BLUE
    assert hits.get("/img/lazy.png", 0) >= 1
    # Pictures over the site's media_max_bytes, announced or not, asked for and refused.
    assert len(BIG) > SHOT_MAX_BYTES > len(png_of(RED))
    assert hits.get("/img/big.png", 0) >= 1 and hits.get("/img/big-unsized.png", 0) >= 1
    assert pixel(short, 250, 150) != GREEN and pixel(short, 450, 150) != GREEN
    assert stat(run, "zeroarchive/screenshots/images_too_large") == 2
    # Without a screenshot the browser loads no picture (the crawl fetches media itself).
    assert hits.get("/img/blocked.png", 0) == 0
    assert not screenshots(db_url, tmp_path, "--site", "plain")
    # `screenshot` on a site without `render`: its snapshots are rendered for the shot.
    scripted = shots[url("/c/news/1")]
    assert scripted.size == (1280, 720) and pixel(scripted, 50, 50) == GREEN
    failed = rows[url("/c/news/2")]
    assert (failed["stored"], failed["reason"], failed["sha256"], failed["bytes"]) == (
        False,
        "failed:browser",
        None,
        None,
    )
    assert stat(run, "zeroarchive/screenshots/taken") == 3
    assert stat(run, "zeroarchive/screenshots/failed") == 1
    assert stat(run, "zeroarchive/media/refused/failed") == 1
    engine = open_archive(url=db_url).engine
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(article_snapshot)).scalar() == 5
    by_url = {s.url: s.snapshot for s in iter_snapshots(engine)}
    assert by_url[url("/c/news/1")].rendered
    assert "由腳本寫入" in by_url[url("/c/news/1")].raw.decode("utf-8")
    assert by_url[url("/c/news/2")].rendered  # its snapshot kept though its shot failed


def test_webp_a_narrower_window_and_a_shot_per_changed_version_only(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    media_dir = str(tmp_path / "media")
    t0 = 1_700_000_000
    pages = routes()
    plain = b"<!doctype html><html><body><h1>Article</h1><p>Text.</p></body></html>"
    pages["/a/news/1"] = pages["/a/news/2"] = Route(200, HTML, plain)
    settings = (
        *("-s", "SCREENSHOT_FORMAT=webp"),
        *("-s", "BROWSER_VIEWPORT_WIDTH=800"),
        *("-s", f"ZEROARCHIVE_MEDIA_DIR={media_dir}"),
    )
    with ReplayServer(pages) as server:
        # `render: true` and no `media`: the default list has the screenshot.
        load(db_url, tmp_path, [site(server, "rendered", "a", render=True)])
        crawl(db_url, tmp_path, *settings, env={"ZEROARCHIVE_FAKE_NOW": str(t0)})
        pages["/a/news/2"] = Route(200, HTML, plain.replace(b"Text.", b"Edited text."))
        again = crawl(
            db_url,
            tmp_path,
            "-a",
            "mode=snapshot",
            *settings,
            env={"ZEROARCHIVE_FAKE_NOW": str(t0 + 7200)},
        )
        base = server.base_url
    url = at(base)
    rows = screenshots(db_url, tmp_path)
    taken = sorted((str(r["url"]), r["snapshot_at"]) for r in rows)
    assert taken == [
        (url("/a/news/1"), t0),
        (url("/a/news/2"), t0),
        (url("/a/news/2"), t0 + 7200),
    ]
    assert stat(again, "zeroarchive/snapshots_unchanged") == 1
    for row in rows:
        body = stored_bytes(db_url, row, media_dir)
        assert body[:4] == b"RIFF" and body[8:12] == b"WEBP"
        assert row["content_type"] == "image/webp"
        image = Image.open(io.BytesIO(body))
        assert image.format == "WEBP" and image.size == (800, 720)
    # The two first versions look alike: one item, stored once.
    assert rows[0]["sha256"] == rows[1]["sha256"]


def test_a_screenshot_site_renders_on_a_redis_worker(
    mariadb_url: str, redis_url: str, tmp_path: Path
) -> None:
    from tests.test_distributed import finish, load_sites, schedule_once, start_worker
    from tests.test_distributed import stat as worker_stat

    with ReplayServer(routes()) as server:
        load_sites(mariadb_url, tmp_path, [site(server, "unrendered", "c", media=["screenshot"])])
        schedule_once(mariadb_url, redis_url, tmp_path)
        log = tmp_path / "worker.log"
        worker = start_worker(
            mariadb_url, redis_url, tmp_path, log, "ZEROARCHIVE_IDLE_LIMIT=3", extra_env=MEDIA_ON
        )
        output = finish(worker, log)
        base = server.base_url
    url = at(base)
    rows = {str(r["url"]): r for r in screenshots(mariadb_url, tmp_path)}
    shot = rows[url("/c/news/1")]
    assert shot["stored"] and rows[url("/c/news/2")]["reason"] == "failed:browser"
    image = Image.open(io.BytesIO(stored_bytes(mariadb_url, shot)))
    assert image.size == (1280, 720) and pixel(image, 50, 50) == GREEN
    assert worker_stat(output, "zeroarchive/screenshots/taken") == 1


def test_which_sites_get_a_screenshot() -> None:
    def site_of(type_: str, url: str, config: dict[str, object]) -> Site:
        return Site(1, "s", url, type_, parse_config(config, "s"))

    assert "screenshot" not in site_of("news", "https://n.example/", {}).media
    rendered = site_of("news", "https://n.example/", {"render": True}).media
    assert rendered == ("images", "styles", "screenshot")
    facebook = site_of("facebook", "https://m.facebook.com/x/posts/", {}).media
    assert "screenshot" in facebook
    assert site_of("news", "https://n.example/", {"render": True, "media": []}).media == ()
    spec = parse_spec(
        {"name": "n", "url": "https://n.example/", "config": {"media": ["screenshot"]}}
    )
    assert spec.config["media"] == ["screenshot"]
    with pytest.raises(SiteConfigError, match="no screenshot"):
        parse_spec(
            {
                "name": "board",
                "url": "https://www.ptt.cc/bbs/Gossiping/index.html",
                "config": {"media": ["images", "screenshot"]},
            }
        )


def test_facebook_posts_are_shot_by_default(tmp_path: Path) -> None:
    from tests.facebook_server import FacebookServer
    from tests.test_facebook import FAST

    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    # One post: what is shot by default is the point, not how many.
    with FacebookServer(posts=1) as fb:
        site = {"name": "nintendo", "url": fb.url(fb.page_path), "type": "facebook"}
        load(db_url, tmp_path, [{**site, "config": {"delay": 0}}])
        run = crawl(db_url, tmp_path, *FAST, spider="facebook")
        posts = {post.post_id for post in fb.posts}
    rows = screenshots(db_url, tmp_path)
    # The URL the browser showed: a post's /<id> answers with its story.php page.
    assert sorted(str(r["url"]).split("story_fbid=")[1].split("&")[0] for r in rows) == sorted(
        posts
    )
    assert len({r["article_id"] for r in rows}) == len(posts)
    assert all(r["stored"] and r["content_type"] == "image/png" for r in rows)
    image = Image.open(io.BytesIO(stored_bytes(db_url, rows[0])))
    assert image.format == "PNG" and image.width == 1280
    assert stat(run, "zeroarchive/screenshots/taken") == len(posts)
