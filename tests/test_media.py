"""Media (zeroarchive/media/): the items a page shows found on real saved pages, stored once
by content in either backend, refusals recorded, `scrapy media --json`, `scrapy verify`
finding a damaged item; end-to-end crawls of local pages with their images."""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sqlalchemy import event, func, select, update

from tests.conftest import scrapy
from tests.replay import ReplayServer, Route
from tests.test_generic import Run, stat, write_sites
from zeroarchive.core.items import FetchedPage
from zeroarchive.media import find
from zeroarchive.media.fetch import media_outputs
from zeroarchive.media.find import (
    _TAGS,
    Found,
    _found,
    _parsed_tags,
    _Unsure,
    find_media,
    scan_tags,
)
from zeroarchive.media.fixity import MediaFixity
from zeroarchive.media.store import (
    DatabaseBlobs,
    DirectoryBlobs,
    MediaStore,
    blobs_for,
)
from zeroarchive.sites.record import Site, SiteConfigError, parse_config
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.fixity import DIGEST_MISMATCH, MISSING, check
from zeroarchive.storage.schema import media_chunk, media_item

FIXTURES = Path(__file__).parent / "fixtures"
PAGES = FIXTURES / "extraction-benchmark-dev" / "html"
PNG = (FIXTURES / "media" / "dashboard.png").read_bytes()
PNG2 = (FIXTURES / "media" / "site.png").read_bytes()
ALL_KINDS = ("image", "style", "video")
#: The suite turns media off (tests/conftest.py): these crawls serve their own images.
MEDIA_ON = {"ZEROARCHIVE_MEDIA_ENABLED": "1"}


def saved_page(digest: str) -> bytes:
    return gzip.decompress((PAGES / f"{digest}.html.gz").read_bytes())


# --- finding items on real saved pages ------------------------------------------------------


def test_picture_takes_its_source_and_lazy_images_their_real_url() -> None:
    # express.co.uk: <picture><source srcset=webp><img src=preloader.gif data-src=jpg>.
    page = saved_page("624fcd903d56fc7055fa7097b330629450c095ad6937318deb027be7803bbf35")
    urls = [f.url for f in find_media(page, "https://www.express.co.uk/news/x", ["image"])]
    webp = "https://cdn.images.express.co.uk/img/dynamic/78/590x/HongKongnews-1206313.webp?r=1574161542926"
    assert webp in urls
    assert webp.replace(".webp", ".jpg") not in urls  # the same image's other candidate
    assert "https://cdn.images.express.co.uk/img/page/preloaderbig.gif" not in urls
    assert urls[0] == "https://cdn.images.express.co.uk/img/dynamic/78/750x445/1206313.jpg"  # og


def test_data_lazy_src_replaces_a_data_uri_placeholder() -> None:
    page = saved_page("0e014df693f182824fe5e24030ddbe1d0b96ddb9685cf20d5766457ed32ffa2d")
    found = find_media(page, "https://theantijunecleaver.com/2014/09/x/", ALL_KINDS)
    urls = [f.url for f in found]
    assert "https://theantijunecleaver.com/wp-content/uploads/2019/11/ajc-header-2019.png" in urls
    assert not any(url.startswith("data:") for url in urls)
    assert len(urls) == len(set(urls))
    # rel=preload as=style, turned into a stylesheet on load.
    styles = [f.url for f in found if f.kind == "style"]
    assert (
        "https://theantijunecleaver.com/wp-includes/css/dist/block-library/style.min.css" in styles
    )


def test_og_image_and_stylesheet_of_a_page() -> None:
    page = saved_page("16c30add7e96315e9cc957d85aa876ccb6b70055f0ddab51547a586117cc1f56")
    found = find_media(page, "https://www.vox.com/x", ALL_KINDS)
    og = "https://cdn.vox-cdn.com/thumbor/MFE_tu0NB0BcZbH7piS8KySMuy0="
    assert [f.kind for f in found if f.url.startswith(og)] == ["image"]
    assert (
        "style",
        "https://www.vox.com/style/community/441/e0362c221a106712c67b16f52465e401/chorus.css",
    ) in found


def test_only_the_kinds_asked_for() -> None:
    page = saved_page("16c30add7e96315e9cc957d85aa876ccb6b70055f0ddab51547a586117cc1f56")
    assert {f.kind for f in find_media(page, "https://www.vox.com/x", ["style"])} == {"style"}


# --- the store ------------------------------------------------------------------------------


@pytest.fixture(params=["database", "directory"])
def store(request: pytest.FixtureRequest, db_url: str, tmp_path: Path) -> MediaStore:
    archive = open_archive(url=db_url)
    directory = str(tmp_path / "media") if request.param == "directory" else ""
    return MediaStore(archive.engine, blobs_for(directory))


def lxml_items(page: bytes, url: str, kinds: tuple[str, ...]) -> list[Found]:
    """What ``find_media`` found before its scanner: lxml's parse of the whole page."""
    parsed = _parsed_tags(page, [tag for kind, tag in _TAGS if kind in kinds])
    return [] if parsed is None else _found(url, set(kinds), *parsed)


@pytest.fixture(scope="module")
def saved_pages() -> list[tuple[Path, bytes]]:
    """Every saved real HTML page of the fixtures, decompressed once for the five cases of
    the scanner's test (each case took 0.2 CPU s to read and decompress them again)."""
    pages = []
    for path in sorted(FIXTURES.rglob("*.htm*")):
        page = path.read_bytes()
        if path.name.endswith(".gz"):
            page = gzip.decompress(page)
        if b"<" in page[:5000]:
            pages.append((path, page))
    return pages


#: Saved pages with bytes their declared encoding does not have: libxml2 stops there
#: ("Invalid bytes in character encoding") and lxml's tree ends early; a browser shows the
#: rest, and the scanner finds its items too.
TRUNCATED_BY_LXML = {
    "udn_s1.html.gz",
    "udn_s2.html.gz",
    "liberty_times_big5_s1.html.gz",
    "gerapy-netease_international_news.html.gz",
    "gerapy-rtfund_xxpl.html.gz",
    "cwced-a6e8b739.html.gz",
    "magichtml-39dd62c5ba88.html.gz",  # declares gb2312, holds UTF-8
}


@pytest.mark.parametrize(
    "kinds", [("image",), ("style",), ("video",), ("image", "style"), ALL_KINDS]
)
def test_the_scanner_finds_what_lxml_finds_on_every_saved_page(
    kinds: tuple[str, ...],
    saved_pages: list[tuple[Path, bytes]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``find_media`` scans a page for its tags of interest instead of parsing it whole
    (lxml's parse was most of finding's cost); on every saved real page of the fixtures it
    finds the same items in the same order, but where lxml stopped at a bad byte."""
    # What find_media's own scans answered (scanning each page once more here cost a
    # third of the test's CPU).
    scans: list[bool] = []

    def scan(html: bytes, tags: list[str]) -> object:
        answer = scan_tags(html, tags)
        scans.append(answer is not None)
        return answer

    monkeypatch.setattr(find, "scan_tags", scan)
    pages = 0
    for path, page in saved_pages:
        url = f"https://{path.parent.name}.example/a/page.html"
        ours, theirs = find_media(page, url, kinds), lxml_items(page, url, kinds)
        pages += 1
        assert len(scans) == pages, f"{path}: find_media did not scan it once"
        if path.name in TRUNCATED_BY_LXML:
            assert ours[: len(theirs)] == theirs, path
        else:
            assert ours == theirs, path
    assert pages > 100
    assert sum(scans) > pages * 0.7, "most pages are scanned, not parsed"


def test_items_after_a_bad_byte_are_found_as_a_browser_shows_them() -> None:
    # udn.com 2014 (Big5): one byte Big5 does not have, on line 418 of 1,000; lxml's tree
    # ended there and the page's images below it were never fetched.
    page = (FIXTURES / "tw-news-2014" / "html" / "udn_s1.html.gz").read_bytes()
    page = gzip.decompress(page)
    url = "https://udn.com/NEWS/x.shtml"
    before = lxml_items(page, url, ("image",))
    found = find_media(page, url, ("image",))
    assert found[: len(before)] == before
    assert len(found) > len(before)
    assert Found("image", "http://g.udn.com/1024MAIN/img/arr_4.gif") in found[len(before) :]


@pytest.mark.parametrize(
    ("page", "scanned"),
    [
        # Upper case, a ">" in quotes, comments, a script and a title, a repeated name.
        (
            b"""<HTML><IMG SRC='a.png' ALT="x > y"><!-- <img src=no.png> --><!--><img
            src=after.png><script>d.write("<img src=s.png>")</script><title><img src=t.png>
            </title><img src="b.png?x=1&amp;y=2&w=3" src=dup.png><img src=c.png/>""",
            True,
        ),
        # A <picture> whose <source> comes after its <img>, a video's sources and poster.
        (
            b"""<picture><img src=p.jpg><source srcset="p-1.webp 100w, p-2.webp 900w">
            </picture><video poster=v.jpg><source src=v.mp4><source src=v.webm></video>
            <meta property="og:image" content="og.png"><meta name=description content=x>""",
            True,
        ),
        # A stylesheet with text past ASCII (a font's name), its URLs plain.
        (b"<style>@font-face{font-family:'\xe5\xad\x97'; src:url(f.woff2)}</style>", True),
        # What the scanner leaves to lxml: a tag in quotes, references, bytes past ASCII,
        # an open <picture>, a URL past ASCII in a <style>.
        (b'<div title="<img src=q.png>"></div><img src=a.png>', False),
        (b'<img src="&#47;ref.png"><img src="/caf\xc3\xa9.png"><img src="a&lt;b.png">', False),
        (b"<picture><source srcset=s.webp><img src=open.png>", False),
        (b"<style>.x{background:url(/\xe5\xad\x97.png)}</style><base href=/b/>", False),
    ],
)
def test_the_scanner_reads_markup_as_lxml_does(page: bytes, scanned: bool) -> None:
    url = "https://news.example/p/1"
    expected = lxml_items(page, url, ALL_KINDS)
    assert find_media(page, url, ALL_KINDS) == expected
    assert expected, "each page shows items"
    tags = scan_tags(page, [tag for _, tag in _TAGS])
    if scanned:
        assert tags is not None
        assert _found(url, set(ALL_KINDS), *tags) == expected
    elif tags is not None:  # scanned, then left to lxml as a value is read
        with pytest.raises(_Unsure):
            _found(url, set(ALL_KINDS), *tags)


def test_an_item_is_stored_once_and_read_back(store: MediaStore) -> None:
    with store.engine.begin() as conn:
        first = store.put(conn, [PNG[:1000], PNG[1000:]], "image/png", 1)
        again = store.put(conn, [PNG], "image/png", 2)
    assert first.new and not again.new
    assert first.sha256 == again.sha256 == hashlib.sha256(PNG).digest()
    assert b"".join(store.read(first.sha256)) == PNG
    with store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(media_item)).scalar() == 1
        chunks = conn.execute(select(func.count()).select_from(media_chunk)).scalar()
    assert chunks == (1 if isinstance(store.blobs, DatabaseBlobs) else 0)


def test_a_held_item_costs_one_lookup_and_no_write(store: MediaStore) -> None:
    with store.engine.begin() as conn:
        store.put(conn, [PNG], "image/png", 1)
    statements: list[str] = []

    def seen(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        statements.append(statement)

    event.listen(store.engine, "before_cursor_execute", seen)
    try:
        with store.engine.begin() as conn:
            assert not store.put(conn, [PNG], "image/png", 2).new
    finally:
        event.remove(store.engine, "before_cursor_execute", seen)
    assert [s.split()[0].upper() for s in statements] == ["SELECT"]


def chunks_of(size: int) -> Iterator[bytes]:
    block = hashlib.sha256(b"media").digest() * (65536 // 32)
    for _ in range(size // len(block)):
        yield block


def test_a_20_mb_item_is_streamed_with_memory_bounded(store: MediaStore) -> None:
    size = 20 * 2**20
    tracemalloc.start()
    try:
        with store.engine.begin() as conn:
            put = store.put(conn, chunks_of(size), "video/mp4", 1)
        total = sum(len(chunk) for chunk in store.read(put.sha256))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert put.size == total == size
    assert put.sha256 == hashlib.sha256(b"".join(chunks_of(size))).digest()
    # Bounded by the chunk, not the item: pymysql copies a 1 MiB chunk ~8 times as it
    # escapes it (8.5 MB measured); a whole item held would be 20 MB and more.
    assert peak < size // 2, peak


def test_the_directory_backend_keeps_items_by_digest(db_url: str, tmp_path: Path) -> None:
    blobs = DirectoryBlobs(tmp_path / "m")
    store = MediaStore(open_archive(url=db_url).engine, blobs)
    with store.engine.begin() as conn:
        put = store.put(conn, [PNG2], "image/png", 1)
    digest = put.sha256.hex()
    assert (tmp_path / "m" / digest[:2] / digest[2:4] / digest).read_bytes() == PNG2
    assert list((tmp_path / "m" / "tmp").iterdir()) == []


def test_verify_finds_a_damaged_and_a_missing_item(store: MediaStore) -> None:
    with store.engine.begin() as conn:
        damaged = store.put(conn, [PNG], "image/png", 1).sha256
        lost = store.put(conn, [PNG2], "image/png", 1).sha256
    if isinstance(store.blobs, DirectoryBlobs):
        path = store.blobs.path(damaged)
        path.write_bytes(PNG[:-1] + b"\x00")
        store.blobs.path(lost).unlink()
    else:
        with store.engine.begin() as conn:
            row = media_chunk.c
            conn.execute(
                update(media_chunk)
                .where(row.sha256 == damaged, row.seq == 0)
                .values(data=PNG[:-1] + b"\x00")
            )
            conn.execute(media_chunk.delete().where(row.sha256 == lost))
    source = MediaFixity(store, None, None)
    problems = {item.digest: check(item) for item in source.items(None)}
    assert source.count(None) == 2
    assert problems[damaged] is not None and problems[damaged][0] == DIGEST_MISMATCH
    assert problems[lost] is not None and problems[lost][0] == MISSING


# --- end to end: a crawl of local pages with their media -------------------------------------

CSS = b".hero{background:url(img/bg.png)} @font-face{src:url('/fonts/missing.woff2')}"
HTML = "text/html; charset=utf-8"


def article(n: int, extra: str = "") -> bytes:
    return f"""<!doctype html><html><head><title>Article {n}</title>
<meta property="og:image" content="/img/logo.png">
<link rel="stylesheet" href="/css/site.css"></head><body><h1>Article {n}</h1>
<p>Text of article {n}, long enough to be an article of its own.</p>
<img src="/img/logo.png">
<picture><source srcset="/img/photo-small.png 400w, /img/photo-{n}.png 1600w">
<img src="/img/fallback.png"></picture>
<img src="data:image/gif;base64,R0lGOD" data-src="/img/lazy-{n}.png">
<img src="/img/missing.png"><img src="/img/not-an-image.png">{extra}
</body></html>""".encode()


def media_routes(sites: int = 2) -> dict[str, Route]:
    png = (("Content-Type", "image/png"),)
    routes = {
        "/img/logo.png": Route(200, png, PNG),
        "/img/photo-small.png": Route(200, png, PNG2),
        "/img/fallback.png": Route(200, png, PNG2),
        "/img/not-an-image.png": Route(
            200, (("Content-Type", "image/png"),), b"<!doctype html><html>oops</html>"
        ),
        "/css/site.css": Route(200, (("Content-Type", "text/css"),), CSS),
        "/css/img/bg.png": Route(200, png, PNG2),
        "/big.png": Route(200, png, PNG + b"\x00" * 4096),
    }
    for n in range(1, 4):
        routes[f"/img/photo-{n}.png"] = Route(200, png, PNG + bytes([n]))
        routes[f"/img/lazy-{n}.png"] = Route(200, png, PNG2 + bytes([n]))
    for site in range(sites):
        routes[f"/s{site}/"] = Route(
            200,
            (("Content-Type", HTML),),
            "".join(f'<a href="/s{site}/news/{n}">{n}</a>' for n in (1, 2)).encode(),
        )
        for n in (1, 2):
            routes[f"/s{site}/news/{n}"] = Route(200, (("Content-Type", HTML),), article(n))
    return routes


def sites_of(server: ReplayServer, **configs: dict[str, object]) -> list[dict[str, object]]:
    return [
        {
            "name": name,
            "url": server.url(f"/{path}/"),
            "config": {"article": f"/{path}/news/", "delay": 0, **config},
        }
        for (name, config), path in zip(configs.items(), ("s0", "s1"), strict=False)
    ]


def load_and_crawl(db_url: str, tmp_path: Path, sites: list[dict[str, object]]) -> Run:
    loaded = scrapy(
        "load_sites", str(write_sites(tmp_path / "sites.yaml", sites)), db_url=db_url, cwd=tmp_path
    )
    assert loaded.returncode == 0, loaded.output
    run = scrapy("crawl", "generic", db_url=db_url, cwd=tmp_path, extra_env=MEDIA_ON)
    assert run.returncode == 0 and "Traceback" not in run.output, run.output
    return run


def media_json(db_url: str, tmp_path: Path, *args: str) -> list[dict[str, object]]:
    run = scrapy("media", "--json", *args, db_url=db_url, cwd=tmp_path)
    assert run.returncode == 0, run.output
    return [json.loads(line) for line in run.stdout.splitlines()]


KEYS = [
    "article_id",
    "snapshot_at",
    "kind",
    "url",
    "sha256",
    "bytes",
    "content_type",
    "fetched_at",
    "stored",
    "reason",
]


def test_a_crawl_keeps_each_image_form_once_and_records_every_refusal(
    db_url: str, tmp_path: Path
) -> None:
    with ReplayServer(media_routes()) as server:
        run = load_and_crawl(db_url, tmp_path, sites_of(server, one={}, two={}))
        hits = server.hits
        base = server.base_url
    rows = media_json(db_url, tmp_path)
    assert rows and all(list(row) == KEYS for row in rows)
    by_url: dict[str, list[dict[str, object]]] = {}
    for row in rows:
        by_url.setdefault(str(row["url"]).removeprefix(base), []).append(row)
    # Four articles on two sites: each shows the logo once (og:image and <img>).
    logo = by_url["/img/logo.png"]
    assert len(logo) == len({r["article_id"] for r in logo}) == 4
    assert all(r["stored"] and r["sha256"] == hashlib.sha256(PNG).hexdigest() for r in logo)
    assert {r["bytes"] for r in logo} == {len(PNG)}
    # The largest of the <picture>, not its <img> fallback; the lazy image, not its placeholder.
    assert len(by_url["/img/photo-1.png"]) == 2 and "/img/fallback.png" not in by_url
    assert "/img/photo-small.png" not in by_url
    assert len(by_url["/img/lazy-2.png"]) == 2
    # The stylesheet and what it references, resolved against its own URL.
    assert by_url["/css/site.css"][0]["kind"] == "style"
    assert by_url["/css/img/bg.png"][0]["kind"] == "style"
    assert {r["reason"] for r in by_url["/fonts/missing.woff2"]} == {"failed:404"}
    missing = by_url["/img/missing.png"]
    assert {(r["stored"], r["reason"], r["sha256"], r["bytes"]) for r in missing} == {
        (False, "failed:404", None, None)
    }
    assert {r["reason"] for r in by_url["/img/not-an-image.png"]} == {"not-media"}
    # Bytes stored once: distinct digests of what was stored.
    stored = {r["sha256"] for r in rows if r["stored"]}
    engine = open_archive(url=db_url).engine
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(media_item)).scalar() == len(stored)
    assert stat(run, "zeroarchive/media/items") == sum(1 for r in rows if r["stored"])
    assert stat(run, "zeroarchive/media/new") == len(stored)
    # og:image and <img> are one item of a page; a logo this crawl already holds is
    # recorded from it, not fetched again (zeroarchive/media/fetch.py, MediaReuse).
    assert 1 <= hits["/img/logo.png"] <= 4
    assert hits["/img/logo.png"] + stat(run, "zeroarchive/media/reused") >= 4
    assert all(r["snapshot_at"] <= r["fetched_at"] for r in rows)
    table = scrapy("media", "--site", "one", db_url=db_url, cwd=tmp_path)
    lines = table.stdout.splitlines()
    assert table.returncode == 0 and len(lines) == len(
        [
            r
            for r in rows
            if r["article_id"]
            in {r["article_id"] for r in media_json(db_url, tmp_path, "--site", "one")}
        ]
    )
    logo_line = next(line for line in lines if line.endswith("/img/logo.png"))
    assert hashlib.sha256(PNG).hexdigest()[:16] in logo_line and " stored " in logo_line
    assert any("failed:404" in line and line.endswith("/img/missing.png") for line in lines)


def test_too_large_and_too_many_are_recorded_and_the_page_kept(db_url: str, tmp_path: Path) -> None:
    routes = media_routes()
    for n in (1, 2):
        routes[f"/s0/news/{n}"] = Route(
            200, (("Content-Type", HTML),), article(n, '<img src="/big.png">')
        )
    with ReplayServer(routes) as server:
        load_and_crawl(
            db_url,
            tmp_path,
            sites_of(
                server,
                big={"media_max_bytes": len(PNG) + 100, "media": ["images"]},
                few={"media_max_items": 2},
            ),
        )
    on_big = media_json(db_url, tmp_path, "--site", "big")
    big = [r for r in on_big if str(r["url"]).endswith("/big.png")]
    assert len(big) == 2
    assert {(r["stored"], r["reason"], r["bytes"]) for r in big} == {(False, "too-large", None)}
    assert {r["kind"] for r in on_big} == {"image"}  # its `media` replaced the default
    few = media_json(db_url, tmp_path, "--site", "few")
    assert sum(1 for r in few if r["reason"] != "too-many") == 4  # two each
    assert sum(1 for r in few if r["reason"] == "too-many") > 0
    engine = open_archive(url=db_url).engine
    from zeroarchive.storage.schema import article_snapshot

    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(article_snapshot)).scalar() == 4


def test_site_filter_kind_filter_and_verify_of_the_directory_backend(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    media_dir = tmp_path / "media"
    setting = ("-s", f"ZEROARCHIVE_MEDIA_DIR={media_dir}")
    with ReplayServer(media_routes()) as server:
        loaded = scrapy(
            "load_sites",
            str(_sites_file(tmp_path, sites_of(server, one={}, two={"media": ["styles"]}))),
            db_url=db_url,
            cwd=tmp_path,
        )
        assert loaded.returncode == 0, loaded.output
        run = scrapy("crawl", "generic", *setting, db_url=db_url, cwd=tmp_path, extra_env=MEDIA_ON)
        assert run.returncode == 0 and "Traceback" not in run.output, run.output
    two = media_json(db_url, tmp_path, "--site", "two")
    assert two and {r["kind"] for r in two} == {"style"}
    images = media_json(db_url, tmp_path, "--kind", "image")
    assert images and {r["kind"] for r in images} == {"image"}
    files = [p for p in media_dir.rglob("*") if p.is_file() and p.parent.name != "tmp"]
    assert sorted(p.name for p in files) == sorted(
        {str(r["sha256"]) for r in media_json(db_url, tmp_path) if r["stored"]}
    )
    whole = scrapy("verify", *setting, db_url=db_url, cwd=tmp_path)
    assert whole.returncode == 0, whole.output
    logo = hashlib.sha256(PNG).hexdigest()
    (media_dir / logo[:2] / logo[2:4] / logo).write_bytes(PNG[::-1])
    damaged = scrapy("verify", "--json", *setting, db_url=db_url, cwd=tmp_path)
    assert damaged.returncode == 1, damaged.output
    found = [json.loads(line) for line in damaged.stdout.splitlines()]
    assert [(d["source"], d["sha256"], d["problem"]) for d in found] == [
        ("media", logo, "digest-mismatch")
    ]
    assert str(found[0]["url"]).endswith("/img/logo.png")


def _sites_file(tmp_path: Path, sites: list[dict[str, object]]) -> Path:
    return write_sites(tmp_path / "sites.yaml", sites)


class _Spider:
    def parse_media(self) -> None: ...

    def media_failed(self) -> None: ...


def _site(config: dict[str, object]) -> Site:
    return Site(1, "s", "https://s.example/", "news", parse_config(config, "s"))


def test_an_unchanged_page_fetches_no_media_again() -> None:
    body = article(1)
    headers = {"Content-Type": [HTML]}
    page = FetchedPage(1, 1, "news", 5, 200, "https://s.example/a/1", headers, "utf-8", body)
    site = _site({"article": "/a/"})
    unchanged = hashlib.sha256(body).hexdigest()
    assert not list(media_outputs(page, site, unchanged, _Spider()))
    first = list(media_outputs(page, site, None, _Spider()))
    changed = list(media_outputs(page, site, hashlib.sha256(b"before").hexdigest(), _Spider()))
    assert first and [r.url for r in first] == [r.url for r in changed]


def test_media_requests_carry_the_page_as_referer_and_the_size_limit() -> None:
    body = article(1)
    page = FetchedPage(1, 1, "news", 5, 200, "https://s.example/a/1", {}, "utf-8", body)
    site = _site({"article": "/a/", "media_max_bytes": 12345})
    requests = list(media_outputs(page, site, None, _Spider()))
    assert requests and all(
        r.headers.get("Referer") == b"https://s.example/a/1"
        and r.meta["download_maxsize"] == 12345
        and r.dont_filter
        for r in requests
    )


def test_a_sites_media_list_replaces_its_default() -> None:
    assert _site({}).media == ("images", "styles")
    assert _site({"media": ["video"]}).media == ("video",)
    youtube = Site(2, "y", "https://www.youtube.com/@x", "youtube", parse_config({}, "y"))
    assert youtube.media == ("images", "styles", "video")
    with pytest.raises(SiteConfigError, match="screenshots"):
        parse_config({"media": ["screenshots"]}, "s")
    assert parse_config({"video_keep_days": 7}, "s").video_keep_days == 7


def test_media_ride_the_redis_queue(mariadb_url: str, redis_url: str, tmp_path: Path) -> None:
    from tests.test_distributed import finish, load_sites, schedule_once, start_worker

    with ReplayServer(media_routes(sites=1)) as server:
        load_sites(mariadb_url, tmp_path, sites_of(server, one={}))
        schedule_once(mariadb_url, redis_url, tmp_path)
        log = tmp_path / "worker.log"
        worker = start_worker(
            mariadb_url, redis_url, tmp_path, log, "ZEROARCHIVE_IDLE_LIMIT=2", extra_env=MEDIA_ON
        )
        output = finish(worker, log)
        hits = dict(server.hits)
    rows = media_json(mariadb_url, tmp_path)
    logo = [r for r in rows if str(r["url"]).endswith("/img/logo.png")]
    assert len(logo) == 2 and all(r["stored"] for r in logo)
    assert 1 <= hits["/img/logo.png"] <= 2
    assert {r["reason"] for r in rows if str(r["url"]).endswith("/missing.png")} == {"failed:404"}
    assert stat_of(output, "zeroarchive/media/new") == len(
        {r["sha256"] for r in rows if r["stored"]}
    )


def stat_of(output: str, key: str) -> int:
    from tests.test_distributed import stat as distributed_stat

    return distributed_stat(output, key)


def test_a_changed_version_gets_its_own_set_and_an_unchanged_one_none(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    t0 = 1_700_000_000
    routes = media_routes(sites=1)
    with ReplayServer(routes) as server:
        loaded = scrapy(
            "load_sites",
            str(_sites_file(tmp_path, sites_of(server, one={"media": ["images"]}))),
            db_url=db_url,
            cwd=tmp_path,
        )
        assert loaded.returncode == 0, loaded.output
        for hour, mode in ((0, "all"), (2, "snapshot")):
            if hour:
                routes["/s0/news/1"] = Route(
                    200, (("Content-Type", HTML),), article(1, "<p>Edited.</p>")
                )
            run = scrapy(
                "crawl",
                "generic",
                "-a",
                f"mode={mode}",
                db_url=db_url,
                cwd=tmp_path,
                extra_env={**MEDIA_ON, "ZEROARCHIVE_FAKE_NOW": str(t0 + hour * 3600)},
            )
            assert run.returncode == 0 and "Traceback" not in run.output, run.output
        base = server.base_url
    rows = media_json(db_url, tmp_path)
    sets = {(r["article_id"], r["snapshot_at"]) for r in rows}
    edited = {r["article_id"] for r in rows if str(r["url"]) == f"{base}/img/photo-1.png"}.pop()
    other = ({r["article_id"] for r in rows} - {edited}).pop()
    assert sorted(at for a, at in sets if a == edited) == [t0, t0 + 7200]
    assert [at for a, at in sets if a == other] == [t0]
    engine = open_archive(url=db_url).engine
    from zeroarchive.storage.schema import article_snapshot

    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(article_snapshot)).scalar() == 4


class _Streaming(BaseHTTPRequestHandler):
    """An image of unknown length: no Content-Length, the body until the connection ends."""

    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:
        if not self.path.startswith("/stream.png"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()
        try:
            self.wfile.write(PNG)
            for _ in range(64):
                self.wfile.write(b"\x00" * 65536)
        except ConnectionError:
            pass

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_an_item_too_large_while_it_streams_is_too_large(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    streaming = ThreadingHTTPServer(("127.0.0.1", 0), _Streaming)
    threading.Thread(target=streaming.serve_forever, daemon=True).start()
    image = f"http://127.0.0.1:{streaming.server_port}/stream.png"
    routes = media_routes(sites=1)
    routes["/s0/news/1"] = Route(200, (("Content-Type", HTML),), article(1, f'<img src="{image}">'))
    try:
        with ReplayServer(routes) as server:
            load_and_crawl(
                db_url,
                tmp_path,
                sites_of(server, one={"media": ["images"], "media_max_bytes": 2**20}),
            )
    finally:
        streaming.shutdown()
        streaming.server_close()
    rows = [r for r in media_json(db_url, tmp_path) if r["url"] == image]
    assert [(r["stored"], r["reason"]) for r in rows] == [(False, "too-large")]


def test_a_pages_items_load_as_a_browser_loads_them_not_at_the_sites_delay() -> None:
    from types import SimpleNamespace

    from scrapy.http import Request

    from middlewares.site_policy import MEDIA_CONNECTIONS, SitePolicyDownloaderMiddleware
    from middlewares.site_policy import SitePolicyConfig as PolicyConfig

    site = _site({"article": "/a/", "delay": 5, "cookies": {"session": "s3cret"}})
    downloader = SimpleNamespace(per_slot_settings={}, slots={})
    crawler = SimpleNamespace(
        spider=SimpleNamespace(site_of=lambda request: site),
        engine=SimpleNamespace(downloader=downloader),
        stats=None,
    )
    middleware = SitePolicyDownloaderMiddleware(crawler, PolicyConfig(2))  # type: ignore[arg-type]
    page = FetchedPage(1, 1, "news", 5, 200, "https://s.example/a/1", {}, "utf-8", article(1))
    # The page's items on one host share one request (zeroarchive/media/fetch.py, batched).
    first = next(iter(media_outputs(page, site, None, _Spider())))
    own, cdn = (
        Request(url, meta=first.meta, headers=first.headers)
        for url in ("https://s.example/img/a.png", "https://cdn.example/img/b.png")
    )
    middleware.process_request(own)
    middleware.process_request(cdn)
    middleware.process_request(Request("https://s.example/a/2"))
    assert own.meta["download_slot"] == "media-s.example"
    assert cdn.meta["download_slot"] == "media-cdn.example"
    assert downloader.per_slot_settings["media-cdn.example"] == {
        "delay": 0.0,
        "concurrency": MEDIA_CONNECTIONS,
    }
    assert downloader.per_slot_settings["site-1"] == {"delay": 5.0, "concurrency": 2}
    # The site's cookies go to its own host, never to another one's images.
    assert own.cookies == {"session": "s3cret"} and not cdn.cookies


def test_verify_reaches_items_by_the_site_and_time_of_the_snapshots_that_showed_them(
    db_url: str,
) -> None:
    from zeroarchive.media.store import MediaRecord, media_store
    from zeroarchive.sites.record import parse_spec

    archive = open_archive(url=db_url)
    ids = []
    for name in ("one", "two"):
        spec = parse_spec(
            {"name": name, "url": f"https://{name}.example/", "config": {"article": "/a/"}}
        )
        site_id = archive.sites.upsert(spec, 1)[0]
        archive.articles.add(site_id, "Article", [f"https://{name}.example/a/1"], 1)
        ids.append(site_id)
    store = media_store(archive.engine, "")
    from zeroarchive.storage.schema import article as article_table

    with archive.engine.connect() as conn:
        articles = conn.execute(
            select(article_table.c.article_id).order_by(article_table.c.site_id)
        ).scalars()
        article_ids = list(articles)
    with archive.engine.begin() as conn:
        shown = []
        for article_id, (body, at) in zip(article_ids, ((PNG, 100), (PNG2, 200)), strict=True):
            put = store.put(conn, [body], "image/png", at)
            shown.append(
                MediaRecord(
                    article_id,
                    at,
                    "image",
                    f"https://x/{article_id}.png",
                    put.sha256,
                    put.size,
                    "image/png",
                    at,
                    True,
                    None,
                )
            )
        store.record(conn, shown)
    png, png2 = hashlib.sha256(PNG).hexdigest(), hashlib.sha256(PNG2).hexdigest()
    assert [i.position for i in MediaFixity(store, ids[0], None).items(None)] == [png]
    assert [i.position for i in MediaFixity(store, None, 150).items(None)] == [png2]
    assert MediaFixity(store, ids[1], 300).count(None) == 0
    assert MediaFixity(store, None, None).count(None) == 2


def test_an_html5_video_is_kept_when_the_site_asks_for_video(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    # The first bytes of an MP4 file (an ISO BMFF ftyp box), then its data.
    mp4 = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + bytes(range(256)) * 64
    routes = media_routes(sites=1)
    videos = '<video controls><source src="/v/clip.mp4" type="video/mp4"></video>'
    videos += '<video src="/v/page.html"></video>'
    routes["/s0/news/1"] = Route(200, (("Content-Type", HTML),), article(1, videos))
    routes["/v/clip.mp4"] = Route(200, (("Content-Type", "video/mp4"),), mp4)
    routes["/v/page.html"] = Route(
        200, (("Content-Type", "video/mp4"),), b"<html><body>x</body></html>"
    )
    with ReplayServer(routes) as server:
        load_and_crawl(db_url, tmp_path, sites_of(server, one={"media": ["video"]}))
    rows = media_json(db_url, tmp_path, "--kind", "video")
    by_path = {str(r["url"]).rsplit("/", 2)[-1]: r for r in rows}
    assert by_path["clip.mp4"]["stored"] and by_path["clip.mp4"]["bytes"] == len(mp4)
    assert by_path["clip.mp4"]["sha256"] == hashlib.sha256(mp4).hexdigest()
    assert by_path["page.html"]["reason"] == "not-media"
    assert {r["kind"] for r in media_json(db_url, tmp_path)} == {"video"}
