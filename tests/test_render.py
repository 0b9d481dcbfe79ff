"""Generic sites with ``render: true`` (0archive's ``selenium``): a local site whose list
links and article bodies are written by JavaScript, crawled through Debian's Chromium.

The site's articles are real saved news pages (tests/fixtures/tw-news-2014); each is served
as an empty shell whose script writes the page's body in, and the list page fetches its
links from a JSON API, so a crawl that does not run scripts finds nothing."""

from __future__ import annotations

import gzip
import json
import secrets
import threading
from pathlib import Path

import lxml.html
from sqlalchemy import create_engine, select

from tests.conftest import Run, scrapy
from tests.emulator import NOT_FOUND, EmulatorServer, Incoming, Reply, html
from tests.test_facebook import TAG, chromium, chromium_pids  # noqa: F401 (fixture)
from tests.test_generic import articles_by_url, stat, write_sites
from zeroarchive.core.encoding import decode_body, detect_encoding
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.schema import article_snapshot
from zeroarchive.storage.snapshots import iter_snapshots

PAGES = Path(__file__).parent / "fixtures" / "tw-news-2014"
EXPECTED = json.loads((PAGES / "expected.json").read_text(encoding="utf-8"))
# Two articles (the first answers 203, the other 200): each more is only browser time.
NAMES = ("cna_s1", "liberty_times_s2")
LIST_SCRIPT = """<!doctype html><html><head><meta charset="utf-8"><title>即時新聞</title></head>
<body><h1>即時新聞</h1><ul id="list"></ul><script>
fetch("/api/latest.json").then(r => r.json()).then(items => {
  for (const item of items) {
    const a = document.createElement("a");
    a.href = item.path; a.textContent = item.title;
    const li = document.createElement("li"); li.appendChild(a);
    document.getElementById("list").appendChild(li);
  }
});
</script></body></html>"""


def real_body(name: str) -> str:
    raw = gzip.decompress((PAGES / "html" / f"{name}.html.gz").read_bytes())
    tree = lxml.html.document_fromstring(decode_body(raw, detect_encoding(raw)))
    for script in tree.xpath("//script"):
        script.drop_tree()
    return "".join(lxml.html.tostring(child, encoding="unicode") for child in tree.body)


def shell(name: str) -> str:
    """An empty page whose script writes the real article in; escaped so that no word of
    the article is in the bytes served."""
    article = {"title": EXPECTED[f"{name}.html.gz"]["title"], "html": real_body(name)}
    data = json.dumps(article, ensure_ascii=True).replace("</", "<\\/")
    return (
        '<!doctype html><html><head><meta charset="utf-8"><title>載入中</title></head>'
        '<body><div id="app">載入中…</div><script>'
        f"const article = {data}; document.title = article.title;"
        'document.getElementById("app").innerHTML = article.html;'
        "</script></body></html>"
    )


class ScriptedSite:
    def __init__(self) -> None:
        self.paths = {f"/news/{n}": name for n, name in enumerate(NAMES, start=1)}

    def handle(self, request: Incoming) -> Reply:
        if request.path == "/news":
            return html(200, LIST_SCRIPT)
        if request.path == "/api/latest.json":
            items = [
                {"path": path, "title": EXPECTED[f"{name}.html.gz"]["title"]}
                for path, name in self.paths.items()
            ]
            body = json.dumps(items, ensure_ascii=False).encode("utf-8")
            return Reply(200, (("Content-Type", "application/json"),), body)
        if request.path in self.paths:
            # The first article answers 203 with headers of its own: a rendered snapshot
            # keeps the status and headers the browser's page came with.
            first = request.path == "/news/1"
            return html(
                203 if first else 200,
                shell(self.paths[request.path]),
                ("X-Archive-Test", request.path),
                ("Cache-Control", "max-age=60"),
            )
        return NOT_FOUND


def crawl(
    db_url: str, tmp_path: Path, server: EmulatorServer, render: bool, tag: str
) -> tuple[Run, list[int]]:
    """Crawl the site once, with or without rendering; the Chromium processes the crawl
    started, sampled while it ran."""
    site = {
        "name": "scripted",
        "url": server.url("/news"),
        "type": "news",
        "config": {"article": r"/news/\d+$", "render": render, "delay": 0},
    }
    loaded = scrapy(
        "load_sites", str(write_sites(tmp_path / "s.yaml", [site])), db_url=db_url, cwd=tmp_path
    )
    assert loaded.returncode == 0, loaded.output
    seen: set[int] = set()
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.25):
            seen.update(chromium_pids(tag))

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        run = scrapy("crawl", "generic", db_url=db_url, cwd=tmp_path, extra_env={TAG: tag})
    finally:
        done.set()
        sampler.join()
    assert run.returncode == 0 and "Traceback" not in run.output, run.output
    return run, sorted(seen)


def test_a_rendered_site_is_archived_as_its_scripts_build_it(db_url: str, tmp_path: Path) -> None:
    tag = secrets.token_hex(6)
    with EmulatorServer(ScriptedSite()) as server:
        run, browsers = crawl(db_url, tmp_path, server, render=True, tag=tag)
        expected = {server.url(path): name for path, name in ScriptedSite().paths.items()}
        hits = dict(server.hits)
    assert browsers, "a rendered site starts the browser"
    assert chromium_pids(tag) == []
    assert set(articles_by_url(db_url)) == set(expected)
    assert stat(run, "zeroarchive/snapshots_saved") == len(NAMES)
    # Every page once: the list, its API call (made by the page's script), each article.
    assert hits["GET /news"] == 1 and hits["GET /api/latest.json"] == 1
    assert all(hits[f"GET {path}"] == 1 for path in ScriptedSite().paths)
    for exported in iter_snapshots(open_archive(url=db_url).engine):
        snapshot = exported.snapshot
        assert snapshot.rendered and snapshot.encoding == "utf-8"
        path = exported.url.split("/", 3)[3]
        assert snapshot.status == (203 if path == "news/1" else 200)
        headers = {k.lower(): v for k, v in snapshot.headers.items()}
        assert headers["x-archive-test"] == [f"/{path}"], snapshot.headers
        assert headers["cache-control"] == ["max-age=60"]
        assert headers["content-type"] == ["text/html; charset=utf-8"]
        page = snapshot.raw.decode("utf-8")
        facts = EXPECTED[f"{expected[exported.url]}.html.gz"]
        assert f"<title>{facts['title']}</title>" in page
        text = lxml.html.fromstring(page).text_content()
        for snippet in facts["body_snippets"]:
            assert snippet in text, (exported.url, snippet)
    engine = create_engine(db_url)
    with engine.connect() as conn:
        assert set(conn.execute(select(article_snapshot.c.rendered)).scalars()) == {True}
    engine.dispose()


def test_a_site_without_render_never_starts_a_browser(tmp_path: Path) -> None:
    tag = secrets.token_hex(6)
    db_url = f"sqlite:///{tmp_path / 'a.db'}"
    with EmulatorServer(ScriptedSite()) as server:
        run, browsers = crawl(db_url, tmp_path, server, render=False, tag=tag)
    assert browsers == []
    assert "'playwright/" not in run.output
    # Without scripts the list page links nothing: why such sites need `render`.
    assert articles_by_url(db_url) == {}
    assert stat(run, "zeroarchive/list_pages") == 1
