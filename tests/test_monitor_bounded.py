"""Bounded work per request (issue 37): a diff of a long changed line, a snippet of a text
of megabytes, a page over its time. Each costs what its limits say, checks the request's
deadline as it goes, and gives its thread back soon after its 503; pages and GraphQL
queries share MONITOR_WORKERS; another site's page cannot make the browser load them."""

from __future__ import annotations

import random
import threading
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import replace

import pytest

from tests.monitor_archive import LIMITS, NOW, Built, build
from tests.test_monitor import make_client
from zeroarchive.core import deadline
from zeroarchive.core.items import Parsed
from zeroarchive.events.diff import diff as edit_ops
from zeroarchive.monitor.diff import CHAR_BUDGET, MAX_LINE_CHARS, side_by_side
from zeroarchive.search.match import Matcher
from zeroarchive.search.query import parse_query
from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.publications import ArticleInfo, PublicationStore


def noise(length: int, seed: int, letters: str = "ab") -> str:
    """Text of two letters: the worst case of difflib's matcher (few long common runs)."""
    rng = random.Random(seed)
    return "".join(rng.choice(letters) for _ in range(length))


def cpu_seconds(work: object) -> float:
    started = time.process_time()
    work()  # type: ignore[operator]
    return time.process_time() - started


def test_a_long_changed_line_is_diffed_in_bounded_time() -> None:
    # 8,000 characters: difflib marked them in about 10 CPU s (20,000: 33-80 s).
    old, new = noise(8_000, 1), noise(8_000, 2)
    found = []
    assert cpu_seconds(lambda: found.append(side_by_side(f"t\n{old}\nend", f"t\n{new}\nend"))) < 1
    [diff] = found
    assert [row.kind for row in diff.rows] == ["equal", "replace", "equal"]
    assert f"over {MAX_LINE_CHARS:,} characters" in diff.notes[0]
    # An edit of a few characters in the same long line is still marked exactly.
    edited = old[:4_000] + "XYZ" + old[4_003:]
    [row] = side_by_side(old, edited).rows
    assert [text for text, changed in row.new if changed] == ["XYZ"]
    assert "".join(text for text, _ in row.new) == edited
    # The stored edit of an event (the parse run) is bounded the same way.
    assert cpu_seconds(lambda: edit_ops(old, new)) < 1


def test_many_changed_lines_share_one_budget() -> None:
    # Many letters: each line is quick to compare, the budget is what stops it.
    letters = "".join(chr(0x4E00 + n) for n in range(3000))
    old = "\n".join(noise(900, n, letters) for n in range(60))
    new = "\n".join(noise(900, 100 + n, letters) for n in range(60))
    diff = side_by_side(old, new)
    marked_whole = sum(1 for row in diff.rows if len(row.new) == 1 and row.new[0][1])
    assert marked_whole == 60 - (CHAR_BUDGET // 900 + 1)
    assert any("compared: marked whole" in note for note in diff.notes)


def test_the_diff_and_the_snippet_stop_at_the_deadline() -> None:
    stopped = threading.Event()
    stopped.set()  # a stopping server: every deadline has passed
    matcher = Matcher(parse_query("疫苗"))
    with deadline.deadline(60, stopped):
        with pytest.raises(deadline.TimeUp):
            side_by_side("a\nb", "a\nc")
        with pytest.raises(deadline.TimeUp):
            matcher.snippet("疫苗", "新聞" * 100 + "疫苗")
    # Without a deadline (a crawl, a parse run) nothing stops them.
    assert side_by_side("a\nb", "a\nc").rows[1].kind == "replace"


@pytest.mark.parametrize(
    "body",
    [
        # NFKC makes 4 characters of each (the guess of where the match is misses).
        "㍿" * 500_000 + "疫苗" + "新聞" * 250_000,
        # Whitespace after the match, which normalising collapses (the guess misses too).
        "新聞" * 250_000 + "疫苗" + " " * 500_000 + "新聞" * 250_000,
    ],
    ids=["ligatures", "spaces"],
)
def test_a_snippet_of_a_huge_text_is_built_in_small_memory(body: str) -> None:
    """Folding the whole text character by character held a list of a million positions
    (72 MB for the first, 278 MB at 4 MB of text, 9.9 s); a window at a time, a few MB."""
    matcher = Matcher(parse_query("疫苗"))
    tracemalloc.start()
    try:
        snippet = matcher.snippet("疫苗", body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert snippet.pieces[1] == "疫苗"
    assert peak < 16_000_000, peak


@pytest.fixture
def long_versions(db_url: str) -> Iterator[tuple[Built, list[int]]]:
    """The monitor's test archive, its article with two more versions of 100 long lines
    each, every line changed (difflib alone: 10 s of CPU to mark)."""
    built = build(db_url)
    archive = open_archive(url=db_url)
    store = PublicationStore(archive.engine, "bounded")
    info = ArticleInfo(built.article_id, built.sites["ltn"], "Article", "https://x.example/a")
    ids = []
    for seed in (1, 2):
        text = "\n".join(noise(1_000, seed * 1_000 + n) for n in range(100))
        parsed = Parsed("https://x.example/a", f"v{seed}", text)
        at = NOW - 100 + seed
        ids.append(store.add_version(info, at, parsed, parsed.digest(), at)[0])
    yield built, ids


def test_a_page_over_its_time_gives_its_thread_back(
    db_url: str, long_versions: tuple[Built, list[int]]
) -> None:
    built, (old, new) = long_versions
    limits = replace(LIMITS, request_seconds=0.3, workers=1)
    with make_client(db_url, limits=limits) as client:
        workers: threading.BoundedSemaphore = client.app.state.workers  # type: ignore[attr-defined]
        started = time.monotonic()
        answer = client.get(f"/articles/{built.article_id}", params={"a": old, "b": new})
        assert answer.status_code == 503 and "ran out of time" in answer.text
        # The thread stops at its next check, and only then is its worker given back.
        while not workers.acquire(blocking=False):
            assert time.monotonic() - started < 3, "the page's thread ran on after its 503"
            time.sleep(0.02)
        workers.release()
        roomy = replace(LIMITS, request_seconds=60)
    with make_client(db_url, limits=roomy) as client:
        answer = client.get(f"/articles/{built.article_id}", params={"a": old, "b": new})
        assert answer.status_code == 200
        assert "compared: marked whole" in answer.text


def test_pages_and_queries_share_the_workers(db_url: str) -> None:
    built = build(db_url)
    with make_client(db_url, limits=replace(LIMITS, workers=1)) as client:
        workers: threading.BoundedSemaphore = client.app.state.workers  # type: ignore[attr-defined]
        assert workers.acquire(blocking=False)  # a query or page running
        try:
            for path in ("/sites", f"/articles/{built.article_id}", "/search?q=x", "/events"):
                answer = client.get(path)
                assert answer.status_code == 503 and "busy" in answer.text, path
            graphql = client.post("/graphql", json={"query": "{ sites { count } }"})
            assert graphql.status_code == 503
        finally:
            workers.release()
        assert client.get("/sites").status_code == 200
        assert client.post("/graphql", json={"query": "{ sites { count } }"}).status_code == 200


def test_another_sites_page_cannot_load_a_page(db_url: str) -> None:
    built = build(db_url)
    diff = f"/articles/{built.article_id}"
    with make_client(db_url) as client:
        for site, destination, status in (
            ("cross-site", "image", 403),  # an <img> on any page the researcher opens
            ("same-site", "iframe", 403),  # another app on this machine, framing it
            ("cross-site", "empty", 403),  # fetch() from another site
            ("cross-site", "document", 200),  # a link followed to the monitor
            ("same-origin", "image", 200),  # the monitor's own pages
            ("none", "document", 200),  # typed in the address bar
        ):
            answer = client.get(
                diff, headers={"Sec-Fetch-Site": site, "Sec-Fetch-Dest": destination}
            )
            assert answer.status_code == status, (site, destination, answer.status_code)
        assert client.get(diff).status_code == 200  # no fetch metadata: scripts, curl
