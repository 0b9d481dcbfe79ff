"""`scrapy recheck`: a researcher looks at archived pages again now; the snapshot is stored
and parsed at once and the command says what changed, a second sign of a deletion is
confirmed without the schedule's ten minutes, and a page that cannot be fetched says why."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, select

from tests.conftest import Run, scrapy
from tests.replay import ReplayServer, Route
from tests.test_events import HTML, SOFT_404, T0, article_page, front_page, run, status_page
from tests.test_generic import write_sites
from zeroarchive.core.clock import FAKE_NOW_ENV
from zeroarchive.core.schedule import HOUR, MINUTE
from zeroarchive.storage.schema import article, article_event, publication

NAMES = ("one", "two", "three")


def recheck(*args: str, db_url: str, tmp_path: Path, at: int = T0) -> Run:
    done = scrapy("recheck", *args, db_url=db_url, cwd=tmp_path, extra_env={FAKE_NOW_ENV: str(at)})
    assert "Traceback" not in done.output, done.output
    return done


def test_recheck_says_what_changed_and_confirms_a_second_sign_at_once(
    db_url: str, tmp_path: Path
) -> None:
    routes = {"/": front_page(NAMES), **{f"/news/{n}": article_page(n) for n in NAMES}}
    with ReplayServer(routes) as server:
        server.fallback = Route(200, HTML, (SOFT_404 % "that page").encode())
        config = {"article": "/news/", "following": r"^http://127\.0\.0\.1:\d+/$", "delay": 0}
        sites = [{"name": "farm", "url": server.url("/"), "type": "news", "config": config}]
        loaded = run(
            "load_sites",
            str(write_sites(tmp_path / "s.yaml", sites)),
            db_url=db_url,
            tmp_path=tmp_path,
            at=T0,
        )
        assert loaded.returncode == 0, loaded.output
        run("crawl", "generic", db_url=db_url, tmp_path=tmp_path, at=T0)
        run("parse_snapshots", db_url=db_url, tmp_path=tmp_path, at=T0)
        engine = create_engine(db_url)
        with engine.connect() as conn:
            ids = dict(conn.execute(select(article.c.url, article.c.article_id)).all())
        one, two, three = (server.url(f"/news/{n}") for n in NAMES)

        # Five minutes later (nothing is due): one edited, two gone, three as it was.
        routes["/news/one"] = article_page("one", lead="票價將調漲百分之五")
        routes["/news/two"] = status_page(404)
        t1 = T0 + 5 * MINUTE
        first = recheck(
            one, "--article", str(ids[two]), three, db_url=db_url, tmp_path=tmp_path, at=t1
        )
        assert first.returncode == 0, first.output
        lines = sorted(first.stdout.splitlines())
        assert lines[0].startswith(f"edited {one} (farm): its text changed"), lines
        assert f"--article {ids[one]} --diff" in lines[0]
        assert lines[1].startswith(f"suspected {two} (farm): looks gone (404); the check at "), (
            lines
        )
        assert lines[2] == f"unchanged {three} (farm): the page is as archived", lines
        with engine.connect() as conn:
            kinds = conn.execute(select(article_event.c.kind, article_event.c.article_id)).all()
            text = conn.execute(
                select(publication.c.publication_text)
                .where(publication.c.article_id == ids[one])
                .order_by(publication.c.publication_id.desc())
            ).first()
        assert kinds == [("edited", ids[one])]
        # Parsed by the recheck itself: the new text is there without parse_snapshots.
        assert text is not None and "百分之五" in text[0]

        # The edit and its diff, by article, the days given as researchers write them.
        day = "2027-01-15"  # T0's UTC day
        listed = recheck_events(
            "--article",
            str(ids[one]),
            "--diff",
            "--since",
            day,
            "--until",
            day,
            db_url=db_url,
            tmp_path=tmp_path,
        )
        assert listed.returncode == 0, listed.output
        head, diff, total = listed.stdout.splitlines()
        assert head.split()[2:] == ["edited", "farm", one, "text"], head
        assert diff.strip().startswith("text: ") and "[-十-]{+五+}" in diff, diff
        assert total == "1 event(s)"
        later = recheck_events("--since", "2027-01-16", db_url=db_url, tmp_path=tmp_path)
        assert later.stdout == "0 event(s)\n", later.output

        # One minute on, the second sign: confirmed now, not ten minutes after the first.
        second = recheck(two, db_url=db_url, tmp_path=tmp_path, at=t1 + MINUTE)
        assert second.returncode == 0, second.output
        assert second.stdout.startswith(f"deleted {two} (farm): confirmed now (404)"), second.stdout
        # Asked again while it is gone: still gone, no second event.
        again = recheck(two, db_url=db_url, tmp_path=tmp_path, at=t1 + 2 * MINUTE)
        assert again.stdout.startswith(f"deleted {two} (farm): still gone, deleted since "), (
            again.output
        )
        # The page comes back an hour later: restored.
        routes["/news/two"] = article_page("two")
        third = recheck(two, db_url=db_url, tmp_path=tmp_path, at=t1 + HOUR)
        assert third.stdout.startswith(f"restored {two} (farm)"), third.output
        with engine.connect() as conn:
            kinds = sorted(conn.execute(select(article_event.c.kind)).scalars())
        assert kinds == ["deleted", "edited", "restored"]

        # A page that cannot be fetched says why, and the run fails.
        routes["/news/three"] = status_page(503)
        failed = recheck(
            three,
            "-s",
            "RETRY_TIMES=0",
            db_url=db_url,
            tmp_path=tmp_path,
            at=t1 + 2 * HOUR,
        )
        assert failed.returncode == 1, failed.output
        assert failed.stdout == f"failed {three} (farm): the fetch failed: http_503\n"
        engine.dispose()


def test_recheck_refuses_an_unknown_article_in_one_line(db_url: str, tmp_path: Path) -> None:
    done = recheck("--article", "99", db_url=db_url, tmp_path=tmp_path)
    assert done.returncode == 2, done.output
    assert "no article 99 in the archive" in done.output
    assert "Traceback" not in done.output


def recheck_events(*args: str, db_url: str, tmp_path: Path) -> Run:
    return scrapy("events", *args, db_url=db_url, cwd=tmp_path)
