"""Full-text search, SQLite FTS5 and MariaDB Mroonga side by side (issue 23, "Speed").

1. Builds ``--publications`` publications of mixed CJK and English text, recombined from
   the corpora's paragraphs (bench/data/cjk-news: Chinese, Japanese, Korean news; the
   extraction benchmark and newspaper4k: English), 10 % of the articles with a second,
   edited version, over 20 sites — once in a SQLite file, once in a MariaDB database.
2. Indexes them with ``scrapy reindex``'s code (publications/s, and per CPU second) and
   measures the index's size against the text it covers (SQLite: pages added; MariaDB:
   the database's Groonga files on disk, so the bench runs on the server's machine).
3. Runs each kind of query (a 2-character CJK word, a 4-character CJK string, an English
   word, two words ANDed, a phrase; each also with --all-versions, with --site, with
   --since and with --since and --all-versions) over several words of that kind picked
   from the corpus, first 20 hits with their total, and prints p50/p95 milliseconds per
   kind and engine side by side.
4. ``parse_pending`` over the extraction benchmark's pages (``--copies`` times) with and
   without the index hook, on both engines: what indexing adds to a parse run.

    python bench/search.py [--publications 100000] [--copies 5] [--skip-mariadb]

``--mariadb-database NAME`` fills and indexes that database and keeps it; run again with
the same name and ``--publications``, it is only queried (with ``--skip-sqlite
--skip-parse``: the queries alone, in minutes instead of the hour a 1,000,000 build takes).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import secrets
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import create_engine, select, text  # noqa: E402

from bench.corpora import CORPORA  # noqa: E402
from zeroarchive.core.encoding import detect_encoding  # noqa: E402
from zeroarchive.core.items import FetchedPage  # noqa: E402
from zeroarchive.parser import PARSER_VERSION  # noqa: E402
from zeroarchive.parser.run import ParseRunConfig, parse_pending  # noqa: E402
from zeroarchive.search import open_index  # noqa: E402
from zeroarchive.search.index import SearchRequest, index_hook  # noqa: E402
from zeroarchive.search.query import parse_query  # noqa: E402
from zeroarchive.search.reindex import reindex  # noqa: E402
from zeroarchive.sites.record import parse_spec  # noqa: E402
from zeroarchive.storage.archive import close_archives, open_archive  # noqa: E402
from zeroarchive.storage.schema import article, producer, publication  # noqa: E402

MARIADB = "mysql+pymysql://root@127.0.0.1:3306"
START = 1_735_689_600  # 2025-01-01
SITES = 20
CJK_RUN = re.compile(r"[\u4e00-\u9fff]{2,}")


def paragraphs() -> list[str]:
    found: list[str] = []
    gold = json.loads((REPO / "bench/data/cjk-news/gold.json").read_text(encoding="utf-8"))
    for record in gold.values():
        found.extend(p.strip() for p in record["body"].split("\n") if len(p.strip()) > 30)
    truth = CORPORA / "extraction-benchmark-dev" / "ground-truth_subset.json"
    for record in json.loads(truth.read_text(encoding="utf-8")).values():
        body = record.get("articleBody") or ""
        found.extend(p.strip() for p in re.split(r"\n+|(?<=\.) (?=[A-Z])", body) if len(p) > 60)
    for path in sorted((CORPORA / "newspaper4k" / "txt").glob("*.txt")):
        found.extend(
            p.strip() for p in path.read_text(encoding="utf-8").split("\n") if len(p.strip()) > 30
        )
    return found


def documents(count: int, seed: int = 23) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pool = paragraphs()
    docs = []
    for _ in range(count):
        body = "\n".join(rng.sample(pool, rng.randint(3, 7)))
        title = rng.choice(pool)[:40]
        docs.append((title, body))
    return docs


def query_words(docs: list[tuple[str, str]], seed: int = 5) -> dict[str, list[str]]:
    """Words of each kind, picked from the texts among those of middling frequency."""
    rng = random.Random(seed)
    sample = [b for _, b in docs[:2000]]
    bigrams: Counter[str] = Counter()
    fours: Counter[str] = Counter()
    words: Counter[str] = Counter()
    for body in sample:
        for run in CJK_RUN.findall(body):
            bigrams.update({run[i : i + 2] for i in range(len(run) - 1)})
            fours.update({run[i : i + 4] for i in range(len(run) - 3)})
        words.update(w.lower() for w in re.findall(r"[A-Za-z]{5,}", body))

    def middling(counter: Counter[str], n: int) -> list[str]:
        ranked = [w for w, c in counter.most_common() if 20 <= c <= 200]
        return rng.sample(ranked, min(n, len(ranked)))

    english = middling(words, 20)
    return {
        "cjk-2": middling(bigrams, 10),
        "cjk-4": middling(fours, 10),
        "english": english[:10],
        "two words": [f"{a} {b}" for a, b in zip(english[:5], english[5:10], strict=True)]
        + [f"{a} {b}" for a, b in zip(middling(bigrams, 5), english[10:15], strict=True)],
        "phrase": [f'"{m}"' for m in _phrases(sample, rng)],
    }


def _phrases(sample: list[str], rng: random.Random) -> list[str]:
    found = []
    for body in rng.sample(sample, 40):
        words = re.findall(r"[A-Za-z]{3,}", body)
        if len(words) > 10:
            start = rng.randrange(len(words) - 2)
            found.append(" ".join(words[start : start + 2]).lower())
    return found[:10]


def versions_of(articles: int) -> int:
    """Publication versions ``load`` makes of ``articles`` texts: every tenth has two."""
    return articles + articles // 10


def load(url: str, docs: list[tuple[str, str]]) -> tuple[int, int]:
    """The publications, straight into the table; return (publications, text bytes)."""
    archive = open_archive(url=url)
    engine = archive.engine
    site_ids = []
    for number in range(SITES):
        spec = parse_spec(
            {
                "name": f"site{number}",
                "url": f"https://s{number}.example/",
                "type": "news",
                "config": {"article": "/a/"},
            }
        )
        site_ids.append(archive.sites.upsert(spec, START)[0])
    with engine.begin() as conn:
        conn.execute(
            producer.insert(),
            [
                {
                    "producer_id": n + 1,
                    "name": f"site{n}",
                    "type": "news",
                    "url": "https://x/",
                    "languages": "[]",
                    "first_seen_at": START,
                    "last_updated_at": START,
                }
                for n in range(SITES)
            ],
        )
    size = 0
    rows: list[dict[str, object]] = []
    articles: list[dict[str, object]] = []
    publication_id = 0
    for number, (title, body) in enumerate(docs, 1):
        site_id = site_ids[number % SITES]
        at = START + number * 60
        url = f"https://s{number % SITES}.example/a/{number}"
        articles.append(
            {
                "article_id": number,
                "site_id": site_id,
                "url": url,
                "url_hash": number.to_bytes(16, "big"),
                "article_type": "Article",
                "created_at": at,
                "first_snapshot_at": at,
                "last_snapshot_at": at,
                "next_snapshot_at": 0,
                "snapshot_count": 1,
                "failure_count": 0,
                "lease_until": 0,
            }
        )
        versions = [(title, body)]
        if number % 10 == 0:  # an edit: the first paragraph went
            versions.append((title, body.split("\n", 1)[-1]))
        for version, (version_title, version_body) in enumerate(versions, 1):
            publication_id += 1
            size += len(version_title.encode()) + len(version_body.encode())
            rows.append(
                {
                    "publication_id": publication_id,
                    "article_id": number,
                    "parser_version": PARSER_VERSION,
                    "version": version,
                    "producer_id": number % SITES + 1,
                    "site_id": site_id,
                    "canonical_url": url,
                    "title": version_title,
                    "publication_text": version_body,
                    "published_at": at,
                    "first_seen_at": at + (version - 1) * 86_400,
                    "last_seen_at": at + version * 86_400,
                    "last_updated_at": at,
                    "hashtags": "[]",
                    "urls": "[]",
                    "keywords": "[]",
                    "tags": "[]",
                    "metadata": "{}",
                    "comments": "[]",
                    "comment_count": 0,
                    "content_hash": b"\0" * 32,
                    "parsed_at": at,
                }
            )
        if len(rows) >= 2000:
            _flush(engine, articles, rows)
    _flush(engine, articles, rows)
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO parser_info VALUES (:v, :t, '{}')"), {"v": PARSER_VERSION, "t": START}
        )
    return publication_id, size


def _flush(
    engine: object, articles: list[dict[str, object]], rows: list[dict[str, object]]
) -> None:
    with engine.begin() as conn:  # type: ignore[attr-defined]
        if articles:
            conn.execute(article.insert(), articles)
        if rows:
            conn.execute(publication.insert(), rows)
    articles.clear()
    rows.clear()


def index_size(url: str, engine: object) -> int:
    with engine.connect() as conn:  # type: ignore[attr-defined]
        if url.startswith("sqlite"):
            pages = conn.execute(text("PRAGMA page_count")).scalar_one()
            free = conn.execute(text("PRAGMA freelist_count")).scalar_one()
            size = conn.execute(text("PRAGMA page_size")).scalar_one()
            return int((pages - free) * size)
        # InnoDB's sizes in information_schema are estimates until analysed.
        conn.execute(text("ANALYZE TABLE search_doc"))
        innodb = conn.execute(
            text(
                "SELECT data_length + index_length FROM information_schema.tables"
                " WHERE table_schema = DATABASE() AND table_name = 'search_doc'"
            )
        ).scalar_one()
        # Mroonga's data_length leaves out the full-text index's files (index_length is 0):
        # the database's Groonga files on disk, when the server is on this machine.
        datadir, name = conn.execute(text("SELECT @@datadir, DATABASE()")).one()
        files = list(Path(datadir).glob(f"{name}.mrn*"))
        if not files:
            raise SystemExit(f"cannot read {datadir}: run the bench on the server's machine")
        return int(innodb or 0) + sum(path.stat().st_blocks * 512 for path in files)


def measure_index(url: str, total: int) -> dict[str, float]:
    engine = open_archive(url=url).engine
    index = open_index(engine)
    before = index_size(url, engine)
    server = server_cpu() if url.startswith("mysql") else 0.0
    cpu = time.process_time()
    started = time.perf_counter()
    done, _ = reindex(engine, index, PARSER_VERSION, batch=1000, stream=sys.stderr)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    server = (server_cpu() if url.startswith("mysql") else 0.0) - server
    after = index_size(url, engine)
    return {
        "indexed": done,
        "rate": done / wall,
        "cpu_rate": done / max(cpu, 1e-9),
        "all_cpu_rate": done / max(cpu + server, 1e-9),
        "bytes": after - before if url.startswith("sqlite") else after,
    }


def measure_queries(
    url: str, words: dict[str, list[str]], publications: int
) -> dict[str, tuple[list[float], list[int]]]:
    engine = open_archive(url=url).engine
    index = open_index(engine)
    timings: dict[str, list[float]] = {}
    hits: dict[str, list[int]] = {}
    since = START + publications * 30 // 86_400 * 86_400
    for kind, queries in words.items():
        for variant, options in (
            ("", {}),
            (" all-versions", {"all_versions": True}),
            (" site", {"site_ids": (3,)}),
            # The newer half of the articles (a minute apart), from a UTC day as the CLI's.
            (" since", {"since": since}),
            (" all-versions since", {"all_versions": True, "since": since}),
        ):
            name = kind + variant
            for raw in queries:
                request = SearchRequest(parse_query(raw), PARSER_VERSION, limit=20, **options)
                for _ in range(2):
                    started = time.perf_counter()
                    found = index.search(request)
                    timings.setdefault(name, []).append((time.perf_counter() - started) * 1000)
                hits.setdefault(name, []).append(found.total)
    return {name: (times, hits[name]) for name, times in timings.items()}


def p(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def parse_overhead(url_for: callable, copies: int, rounds: int = 2) -> dict[str, float]:  # type: ignore[valid-type]
    """The parse run without and with the index hook, ``rounds`` times in turn: the least
    wall time, CPU time and server CPU time of each (the server is shared)."""
    pages = sorted((CORPORA / "extraction-benchmark-dev" / "html").glob("*.html.gz"))
    results: dict[str, float] = {}
    for label, hooked in [("without", False), ("with", True)] * rounds:
        url = url_for()
        archive = open_archive(url=url)
        spec = parse_spec(
            {
                "name": "b",
                "url": "https://news.example/",
                "type": "news",
                "config": {"article": "/a"},
            }
        )
        site_id = archive.sites.upsert(spec, START)[0]
        urls = [f"https://news.example/a/{c}/{n}" for c in range(copies) for n in range(len(pages))]
        archive.articles.add(site_id, "Article", urls, START)
        with archive.engine.connect() as conn:
            ids = dict(conn.execute(select(article.c.url, article.c.article_id)).all())
        batch = []
        for c in range(copies):
            for n, path in enumerate(pages):
                raw = gzip.decompress(path.read_bytes())
                u = f"https://news.example/a/{c}/{n}"
                batch.append(
                    FetchedPage(
                        article_id=ids[u],
                        site_id=site_id,
                        article_type="news",
                        fetched_at=START,
                        status=200,
                        final_url=u,
                        headers={"Content-Type": ["text/html"]},
                        encoding=detect_encoding(raw),
                        body=raw,
                    )
                )
        archive.snapshots.save(batch)
        hooks = (index_hook(open_index(archive.engine)),) if hooked else ()
        server = server_cpu() if url.startswith("mysql") else 0.0
        cpu = time.process_time()
        started = time.perf_counter()
        stats = parse_pending(archive.engine, ParseRunConfig(), now=START, hooks=hooks)
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
        server = (server_cpu() if url.startswith("mysql") else 0.0) - server
        key = label
        for name, value in (("", seconds), (" cpu", cpu), (" server", server)):
            results[key + name] = min(results.get(key + name, 1e9), value)
        assert stats["parser/new_publication"] >= copies * (len(pages) - 5), stats
        close_archives()
    return results


def server_cpu() -> float:
    """CPU seconds (user + system) the MariaDB server has used, from /proc (the bench runs
    on the server's machine); 0 when no mariadbd is found."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        if fields[0].endswith("(mariadbd") or fields[0].endswith("(mysqld"):
            ticks = fields[1].split()
            return (int(ticks[11]) + int(ticks[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


def rows_of_parse() -> list[tuple[str, Any]]:
    """The parse run's rows: label, and its cell from an engine's ``parse_overhead``."""
    return [
        ("parse run, s without index", lambda o: f"{o['without']:.1f}"),
        ("parse run, s with index", lambda o: f"{o['with']:.1f}"),
        ("  indexing adds (wall)", lambda o: f"{o['with'] / o['without'] - 1:+.0%}"),
        ("parse run, CPU s without index", lambda o: _cpu(o, "without")),
        ("parse run, CPU s with index", lambda o: _cpu(o, "with")),
        ("  indexing adds (CPU, with server)", lambda o: f"{_added(o):+.0%}"),
    ]


def _cpu(overhead: dict[str, float], label: str) -> str:
    """This process's CPU seconds + the server's."""
    return f"{overhead[label + ' cpu']:.2f} + {overhead[label + ' server']:.2f}"


def _added(overhead: dict[str, float]) -> float:
    """What indexing adds to a parse run's CPU, the server's included."""
    with_ = overhead["with cpu"] + overhead["with server"]
    return with_ / (overhead["without cpu"] + overhead["without server"]) - 1


def fresh_mariadb(name: str | None = None) -> str:
    name = name or f"search_bench_{secrets.token_hex(4)}"
    admin = create_engine(f"{MARIADB}/test")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
    admin.dispose()
    return f"{MARIADB}/{name}"


def kept_mariadb(name: str, versions: int) -> tuple[str, bool]:
    """The URL of database ``name`` (created when missing), and whether it holds the
    bench's ``versions`` publications indexed already (the load and index are skipped)."""
    admin = create_engine(f"{MARIADB}/test")
    with admin.connect() as conn:
        exists = conn.execute(
            text("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = :n"),
            {"n": name},
        ).scalar_one()
    admin.dispose()
    if not exists:
        return fresh_mariadb(name), False
    url = f"{MARIADB}/{name}"
    engine = create_engine(url)
    with engine.connect() as conn:
        indexed = conn.execute(text("SELECT COUNT(*) FROM search_doc")).scalar_one()
        pending = conn.execute(text("SELECT COUNT(*) FROM search_reindex")).scalar_one()
    engine.dispose()
    if indexed != versions or pending:
        raise SystemExit(f"{name} holds another or an unfinished build: drop it first")
    return url, True


def drop_mariadb(url: str) -> None:
    admin = create_engine(f"{MARIADB}/test")
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[1]}"))
    admin.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--publications", type=int, default=100_000)
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2, help="parse runs with and without")
    parser.add_argument("--skip-mariadb", action="store_true")
    parser.add_argument("--skip-sqlite", action="store_true")
    parser.add_argument(
        "--parse-only", action="store_true", help="only the parse run with and without the index"
    )
    parser.add_argument("--skip-parse", action="store_true", help="no parse run")
    parser.add_argument(
        "--mariadb-database",
        metavar="NAME",
        help="fill and index this database and keep it; if it holds this --publications'"
        " build already, only query it",
    )
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-search-"))
    engines = {} if args.skip_sqlite else {"sqlite": f"sqlite:///{tmp / 'archive.db'}"}
    reused = False
    if args.mariadb_database and not args.skip_mariadb:
        engines["mariadb"], reused = kept_mariadb(
            args.mariadb_database, versions_of(args.publications)
        )
    elif not args.skip_mariadb:
        engines["mariadb"] = fresh_mariadb()
    # The query words come from the first 2,000 texts, the same whatever the count.
    docs = documents(2000 if reused and args.skip_sqlite else args.publications)
    words = query_words(docs)
    print("query words:", json.dumps(words, ensure_ascii=False), file=sys.stderr)
    built: dict[str, dict[str, float]] = {}
    queries: dict[str, dict[str, tuple[list[float], list[int]]]] = {}
    overhead: dict[str, dict[str, float]] = {}
    try:
        for name, url in engines.items() if not args.parse_only else ():
            if name != "mariadb" or not reused:
                started = time.perf_counter()
                versions, size = load(url, docs)
                print(
                    f"{name}: {versions} publication versions ({size / 1e6:.0f} MB of text) "
                    f"loaded in {time.perf_counter() - started:.0f} s",
                    file=sys.stderr,
                )
                built[name] = {**measure_index(url, versions), "text": size, "versions": versions}
            load_average = os.getloadavg()[0]
            server = server_cpu()
            started = time.perf_counter()
            queries[name] = measure_queries(url, words, args.publications)
            print(
                f"{name}: queries {time.perf_counter() - started:.0f} s wall"
                + (f", server CPU {server_cpu() - server:.0f} s" if name == "mariadb" else "")
                + f", load average {load_average:.1f} before, {os.getloadavg()[0]:.1f} after",
                file=sys.stderr,
            )
            close_archives()
        made: list[str] = []
        counter = iter(range(100))

        def sqlite_url() -> str:
            return f"sqlite:///{tmp / f'parse{next(counter)}.db'}"

        def mariadb_url() -> str:
            made.append(fresh_mariadb())
            return made[-1]

        for name in engines if not args.skip_parse else ():
            try:
                overhead[name] = parse_overhead(
                    sqlite_url if name == "sqlite" else mariadb_url, args.copies, args.rounds
                )
            finally:
                for url in made:
                    drop_mariadb(url)
                made.clear()
    finally:
        close_archives()
        if "mariadb" in engines and not args.mariadb_database:
            drop_mariadb(engines["mariadb"])
    names = list(engines)
    if args.parse_only:
        print(
            f"parse run, {args.copies} x 60 pages, least of {args.rounds}"
            + "".join(f"{n:>22}" for n in names)
        )
        for label, value in rows_of_parse():
            print(f"{label:34}" + "".join(f"{value(overhead[n]):>22}" for n in names))
        return
    print("\nquery ms, first 20 hits and their total: p50 / p95 (median hits)")
    print(f"{'':34}" + "".join(f"{n:>22}" for n in names))
    for kind in queries[names[0]]:
        cells = []
        for n in names:
            times, totals = queries[n][kind]
            cells.append(
                f"{p(times, 0.5):.0f} / {p(times, 0.95):.0f} ({statistics.median(totals):.0f})"
            )
        print(f"{kind:34}" + "".join(f"{c:>22}" for c in cells))
    # Without a parse run (--skip-parse) the build's figures are still shown.
    names = [n for n in names if n in built]
    if not names:
        return
    print(
        f"\n{args.publications:,} articles; per engine: "
        + "; ".join(
            f"{n} {built[n]['versions']:,} versions, {built[n]['text'] / 1e6:.0f} MB text"
            for n in names
        )
    )
    print(f"{'':34}" + "".join(f"{n:>22}" for n in names))
    rows = [
        ("index build, publications/s", lambda n: f"{built[n]['rate']:,.0f}"),
        ("  per CPU second (this process)", lambda n: f"{built[n]['cpu_rate']:,.0f}"),
        ("  per CPU second (+ the server's)", lambda n: f"{built[n]['all_cpu_rate']:,.0f}"),
        ("index size / text size", lambda n: f"{built[n]['bytes'] / built[n]['text']:.2f}"),
    ]
    if all(n in overhead for n in names):
        rows += [(label, lambda n, v=value: v(overhead[n])) for label, value in rows_of_parse()]
    for label, value in rows:
        print(f"{label:34}" + "".join(f"{value(n):>22}" for n in names))


if __name__ == "__main__":
    main()
