"""Copies: what fingerprinting and clustering cost (issue 38, "Speed and scale").

1. Builds ``--publications`` publications (several sizes: ``--publications 100000,300000``)
   from the real articles of bench/copies_eval.py: paragraphs of their sentences
   recombined (real text; ``bodies``), a tenth of them copies of one of the 20,000 bodies
   before them (converted, cut, reordered with an ad, wrapped), over 50 sites; once in a
   SQLite file, once in MariaDB.
2. ``scrapy copies --rebuild``'s code over them: publications per CPU second (this
   process; on MariaDB the server's CPU is added), both passes counted.
3. The index's size on disk against the text it covers (SQLite: dbstat pages of the copy
   tables; MariaDB: their data and index length).
4. ``scrapy copies --article``'s query (``read.cluster_of``) for 300 articles, half of
   them in a cluster: p50/p95 milliseconds.
5. The parse hook's own work on that archive: 500 more bodies (a tenth copies) added one
   transaction each, as the hook adds them: CPU milliseconds per publication.
6. ``parse_pending`` over the extraction benchmark's pages (``--copies`` times) without
   and with the copies hook, on SQLite: what the hook adds to a parse run.
7. ``--parse-rounds N``: after each size's rebuild, N pairs of parse runs of those pages
   (``--copies`` times, on new sites) into that archive, without and with the hook: what
   the hook adds to a parse run at the archive's size.

    python bench/copies_speed.py [--publications 20000] [--copies 3] [--skip-mariadb]
        [--parse-rounds 2]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import create_engine, func, select, text  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402

from bench.copies_eval import ADS, converted, cut, originals, wrapped  # noqa: E402
from bench.corpora import CORPORA  # noqa: E402
from zeroarchive.copies.fingerprint import fold  # noqa: E402
from zeroarchive.copies.hook import copies_hook  # noqa: E402
from zeroarchive.copies.index import CopyIndex  # noqa: E402
from zeroarchive.copies.read import cluster_of  # noqa: E402
from zeroarchive.copies.rebuild import rebuild  # noqa: E402
from zeroarchive.core.encoding import detect_encoding  # noqa: E402
from zeroarchive.core.items import FetchedPage  # noqa: E402
from zeroarchive.parser import PARSER_VERSION  # noqa: E402
from zeroarchive.parser.run import ParseRunConfig, parse_pending  # noqa: E402
from zeroarchive.sites.record import parse_spec  # noqa: E402
from zeroarchive.storage.archive import close_archives, open_archive  # noqa: E402
from zeroarchive.storage.publications import PublicationStore  # noqa: E402
from zeroarchive.storage.schema import article, copy_doc, publication  # noqa: E402

MARIADB = "mysql+pymysql://root@127.0.0.1:3306"
START = 1_700_000_000
SITES = 50
TABLES = ("copy_doc", "copy_band", "copy_block", "copy_cluster")
#: Bodies a copy may be taken from: the last this many.
WINDOW = 20_000
#: Bodies added through the hook's path after the rebuild.
HOOKED = 500


#: The longest piece of text ``bodies`` draws (``--pool pieces``).
PIECE = 160


def _pieces(sentence: str) -> list[str]:
    """A sentence as pieces of at most ``PIECE`` characters, cut after its clauses'
    commas where it can be (a "sentence" of the corpora with no full stop runs to 2,000
    characters; drawn whole into a thousand unrelated bodies it makes them half copies of
    each other, which unrelated articles are not).

    >>> [len(piece) for piece in _pieces("甲" * 100 + "，" + "乙" * 100 + "。")]
    [101, 101]
    """
    if len(sentence) <= PIECE:
        return [sentence]
    found, current = [], ""
    for clause in re.split(r"(?<=[，,；;、：:])", sentence):
        while len(clause) > PIECE:
            if current:
                found.append(current)
                current = ""
            found.append(clause[:PIECE])
            clause = clause[PIECE:]
        if len(current) + len(clause) > PIECE:
            found.append(current)
            current = ""
        current += clause
    if current:
        found.append(current)
    return [piece for piece in found if len(piece) > 15]


def bodies(count: int, seed: int = 38, pool_kind: str = "pieces") -> Iterator[str]:
    """Bodies of real sentences: 3-8 paragraphs of 2-5 sentences drawn from all the
    articles' sentences (so two bodies share a sentence now and then, as two articles on
    one subject do, but rarely more), a tenth copies of one of the ``WINDOW`` bodies
    before (content farms copy within days, not years; and memory stays bounded).
    ``pool_kind`` "pieces": sentences longer than ``PIECE`` drawn as their pieces
    (``_pieces``); "sentences": whole (the set of the figures before 2026-11-29 15:00)."""
    rng = random.Random(seed)
    sentences = [
        sentence.strip() + "。"
        for o in originals()
        for sentence in re.split(r"[。！？.!?]\s*", o.text.replace("\n", " "))
        if len(sentence.strip()) > 15
    ]
    if pool_kind == "pieces":
        pool = [piece for sentence in sentences for piece in _pieces(sentence)]
    elif pool_kind == "sentences":
        pool = sentences
    else:
        raise ValueError(f"no such pool: {pool_kind}")
    made: list[str] = []
    for _ in range(count):
        if made and rng.random() < 0.1:
            source = rng.choice(made)
            kind = rng.randrange(4)
            if kind == 0:
                body = converted(source)
            elif kind == 1:
                body = cut(source, 0.7)
            elif kind == 2:
                parts = source.split("\n")
                body = "\n".join([*parts[len(parts) // 2 :], ADS[0], *parts[: len(parts) // 2]])
            else:
                body = wrapped(source, rng.randrange(6))
        else:
            body = "\n".join(
                "".join(rng.sample(pool, rng.randint(2, 5))) for _ in range(rng.randint(3, 8))
            )
        made.append(body)
        if len(made) > WINDOW:
            del made[: len(made) - WINDOW]
        yield body


def load(url: str, texts: Iterable[str], count: int) -> tuple[int, list[int]]:
    """The publications, written in bulk (their parse is not what is measured); returns
    the characters written and the articles left without one for ``hook_cost``."""
    archive = open_archive(url=url)
    sites = []
    for number in range(SITES):
        spec = parse_spec(
            {
                "name": f"s{number}",
                "url": f"https://s{number}.example/",
                "type": "news",
                "config": {"article": "/"},
            }
        )
        sites.append(archive.sites.upsert(spec, START)[0])
    PublicationStore(archive.engine, PARSER_VERSION).register_parser({}, START)
    urls = [f"https://s{n % SITES}.example/a/{n}" for n in range(count + HOOKED)]
    for number in range(SITES):
        archive.articles.add(sites[number], "Article", urls[number::SITES], START)
    with archive.engine.connect() as conn:
        ids = dict(conn.execute(select(article.c.url, article.c.article_id)).all())
    characters = 0
    texts = iter(texts)
    for start in range(0, count, 2000):
        rows = []
        for n in range(start, min(start + 2000, count)):
            at = START + n * 60
            body = next(texts)
            characters += len(body)
            rows.append(
                {
                    "article_id": ids[urls[n]],
                    "parser_version": PARSER_VERSION,
                    "version": 1,
                    "producer_id": 0,
                    "site_id": sites[n % SITES],
                    "canonical_url": urls[n],
                    "title": "",
                    "publication_text": body,
                    "first_seen_at": at,
                    "last_seen_at": at,
                    "last_updated_at": at,
                    "hashtags": "[]",
                    "urls": "[]",
                    "keywords": "[]",
                    "tags": "[]",
                    "metadata": "{}",
                    "comments": "[]",
                    "comment_count": 0,
                    "content_hash": bytes(32),
                    "parsed_at": at,
                }
            )
        with archive.engine.begin() as conn:
            conn.execute(publication.insert(), rows)
    close_archives()
    return characters, [ids[url] for url in urls[count:]]


def _server_pid() -> int | None:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        if fields[0].endswith("(mariadbd") or fields[0].endswith("(mysqld"):
            return int(stat.parent.name)
    return None


def _cpu_of(stat: Path) -> float:
    try:
        ticks = stat.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(ticks[11]) + int(ticks[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu() -> float:
    """CPU seconds of the whole server (every client's work: others' tests too)."""
    pid = _server_pid()
    return 0.0 if pid is None else _cpu_of(Path(f"/proc/{pid}/stat"))


class ServerThread:
    """CPU seconds of the server threads that serve an engine of ``connections`` pooled
    connections (``pool_size=connections, max_overflow=0``; the server runs a thread per
    connection): this run's own queries, not the other clients' of a shared server. InnoDB's
    background threads (flushing, purge) are not counted; ``server_cpu`` around the same
    run bounds them from above."""

    def __init__(self, engine: Engine, connections: int = 1) -> None:
        pid = _server_pid()
        self.stats: list[Path] = []
        if pid is None:
            return
        tasks = Path(f"/proc/{pid}/task")
        held = [engine.connect() for _ in range(connections)]
        for conn in held:
            before = {stat: _cpu_of(stat) for stat in tasks.glob("*/stat")}
            conn.exec_driver_sql("SELECT BENCHMARK(30000000, CRC32('zeroarchive'))").all()
            after = {stat: _cpu_of(stat) for stat in tasks.glob("*/stat")}
            self.stats.append(max(after, key=lambda stat: after[stat] - before.get(stat, 0.0)))
        for conn in held:
            conn.close()

    def cpu(self) -> float:
        return sum(_cpu_of(stat) for stat in self.stats)


def sizes(url: str) -> tuple[int, int]:
    """Bytes of the copy tables on disk, and of the text they cover."""
    engine = create_engine(url)
    with engine.connect() as conn:
        covered = int(
            conn.execute(
                select(func.sum(func.length(publication.c.publication_text))).where(
                    publication.c.article_id.in_(select(copy_doc.c.article_id))
                )
            ).scalar()
            or 0
        )
        if url.startswith("sqlite"):
            # length() counts characters in SQLite: the bytes are what the text weighs.
            covered = int(
                conn.execute(
                    text(
                        "SELECT SUM(LENGTH(CAST(publication_text AS BLOB))) FROM publication"
                        " WHERE article_id IN (SELECT article_id FROM copy_doc)"
                    )
                ).scalar()
                or 0
            )
            index = int(
                conn.execute(
                    text(
                        "SELECT SUM(pgsize) FROM dbstat WHERE name IN "
                        "('copy_doc','copy_band','copy_block','copy_cluster',"
                        "'ix_copy_doc_cluster','ix_copy_doc_site')"
                        " OR name LIKE 'sqlite_autoindex_copy%'"
                    )
                ).scalar()
                or 0
            )
        else:
            for table in TABLES:
                conn.execute(text(f"ANALYZE TABLE {table}"))
            index = int(
                conn.execute(
                    text(
                        "SELECT SUM(data_length + index_length) FROM information_schema.tables"
                        " WHERE table_schema = DATABASE() AND table_name IN :names"
                    ).bindparams(names=TABLES)
                ).scalar()
                or 0
            )
    engine.dispose()
    return index, covered


def latency(url: str, count: int = 300) -> tuple[float, float, int]:
    archive = open_archive(url=url)
    with archive.engine.connect() as conn:
        clustered = list(
            conn.execute(
                select(copy_doc.c.article_id).where(copy_doc.c.cluster_id.is_not(None))
            ).scalars()
        )
        alone = list(
            conn.execute(
                select(copy_doc.c.article_id).where(copy_doc.c.cluster_id.is_(None)).limit(5000)
            ).scalars()
        )
    rng = random.Random(5)
    asked = rng.sample(clustered, min(count // 2, len(clustered))) + rng.sample(
        alone, min(count // 2, len(alone))
    )
    times = []
    found = 0
    for article_id in asked:
        started = time.perf_counter()
        cluster = cluster_of(archive.engine, article_id)
        times.append((time.perf_counter() - started) * 1000)
        found += cluster is not None
    close_archives()
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], found


def hook_cost(url: str, ids: list[int], count: int, pool: str = "pieces") -> float:
    """CPU milliseconds (this process and the server's) per publication of ``HOOKED`` more
    bodies added as the parse hook adds them (``CopyIndex.add``, a transaction each), on
    the archive the rebuild indexed: new ones, and a tenth copies of bodies it holds."""
    engine = create_engine(url, pool_size=1, max_overflow=0)
    rng = random.Random(7)
    with engine.connect() as conn:
        sources = list(
            conn.execute(
                select(publication.c.publication_text).where(
                    publication.c.publication_id.in_(
                        [rng.randrange(1, count) for _ in range(HOOKED // 10)]
                    )
                )
            ).scalars()
        )
        site_id = int(
            conn.execute(
                select(article.c.site_id).where(article.c.article_id == ids[0])
            ).scalar_one()
        )
    fresh = bodies(HOOKED, seed=count, pool_kind=pool)
    texts = [cut(source, 0.8) if n % 2 else converted(source) for n, source in enumerate(sources)]
    texts += [next(fresh) for _ in range(HOOKED - len(texts))]
    rng.shuffle(texts)
    ids = ids[: len(texts)]
    with engine.begin() as conn:
        for article_id, body in zip(ids, texts, strict=True):
            conn.execute(
                publication.insert().values(
                    article_id=article_id,
                    parser_version=PARSER_VERSION,
                    version=1,
                    producer_id=0,
                    site_id=site_id,
                    canonical_url=f"https://hooked.example/{article_id}",
                    title="",
                    publication_text=body,
                    first_seen_at=START + count * 60,
                    last_seen_at=START + count * 60,
                    last_updated_at=START + count * 60,
                    hashtags="[]",
                    urls="[]",
                    keywords="[]",
                    tags="[]",
                    metadata="{}",
                    comments="[]",
                    comment_count=0,
                    content_hash=bytes(32),
                    parsed_at=START,
                )
            )
        publications = dict(
            conn.execute(
                select(publication.c.article_id, publication.c.publication_id).where(
                    publication.c.article_id.in_(ids)
                )
            ).all()
        )
    index = CopyIndex()
    server = server_cpu() if url.startswith("mysql") else 0.0
    cpu = time.process_time()
    for article_id, body in zip(ids, texts, strict=True):
        with engine.begin() as conn:
            index.add(conn, article_id, site_id, publications[article_id], body, START + count * 60)
    cpu = time.process_time() - cpu
    server = (server_cpu() - server) if url.startswith("mysql") else 0.0
    engine.dispose()
    return (cpu + server) * 1000 / len(texts)


def _pages() -> list[bytes]:
    pages = sorted((CORPORA / "extraction-benchmark-dev" / "html").glob("*.html.gz"))
    return [gzip.decompress(path.read_bytes()) for path in pages]


def _snapshots(archive: Any, name: str, raws: list[bytes], copies: int) -> None:
    """The pages stored as snapshots of ``copies`` articles each on a new site ``name``."""
    spec = parse_spec(
        {
            "name": name,
            "url": f"https://{name}.example/",
            "type": "news",
            "config": {"article": "/a"},
        }
    )
    site_id = archive.sites.upsert(spec, START)[0]
    urls = [f"https://{name}.example/a/{c}/{n}" for c in range(copies) for n in range(len(raws))]
    archive.articles.add(site_id, "Article", urls, START)
    with archive.engine.connect() as conn:
        ids = dict(
            conn.execute(
                select(article.c.url, article.c.article_id).where(article.c.site_id == site_id)
            ).all()
        )
    archive.snapshots.save(
        [
            FetchedPage(
                article_id=ids[f"https://{name}.example/a/{c}/{n}"],
                site_id=site_id,
                article_type="Article",
                fetched_at=START,
                status=200,
                final_url=f"https://{name}.example/a/{c}/{n}",
                headers={"Content-Type": ["text/html"]},
                encoding=detect_encoding(raw),
                body=raw,
            )
            for c in range(copies)
            for n, raw in enumerate(raws)
        ]
    )


def parse_overhead(copies: int, rounds: int = 2) -> dict[str, float]:
    raws = _pages()
    results: dict[str, float] = {}
    for label, hooked in [("without", False), ("with", True)] * rounds:
        with tempfile.TemporaryDirectory() as folder:
            archive = open_archive(url=f"sqlite:///{folder}/parse.db")
            _snapshots(archive, "news", raws, copies)
            hooks = (copies_hook(),) if hooked else ()
            cpu = time.process_time()
            started = time.perf_counter()
            parse_pending(archive.engine, ParseRunConfig(), now=START, hooks=hooks)
            wall = time.perf_counter() - started
            cpu = time.process_time() - cpu
            for key, value in ((label, wall), (label + " cpu", cpu)):
                results[key] = min(results.get(key, 1e9), value)
            close_archives()
    return results


class TimedHook:
    """A version hook with its own CPU seconds summed: this process's and, on MariaDB,
    the serving server threads' (a less noisy figure than two parse runs' difference)."""

    def __init__(self, hook: Any, threads: ServerThread | None) -> None:
        self.hook, self.threads, self.spent = hook, threads, 0.0

    def _server(self) -> float:
        return self.threads.cpu() if self.threads else 0.0

    def __call__(self, conn: Any, added: Any) -> None:
        cpu, server = time.process_time(), self._server()
        self.hook(conn, added)
        self.spent += time.process_time() - cpu + self._server() - server


def parse_at_scale(url: str, copies: int, rounds: int) -> dict[str, list[float]]:
    """``parse_pending`` over the extraction benchmark's pages (``copies`` articles each,
    on a new site per run) on the archive at ``url``, whose copy index the rebuild filled:
    without and with the hook, alternately. The CPU seconds of each run: this process's
    plus, on MariaDB, those of the server threads that served its two pooled connections;
    ``hook``: the hook's own share of each run with it."""
    raws = _pages()
    # The fold's tables are built once per process (~0.2 CPU s): not charged to one run.
    fold("臺灣")
    archive = open_archive(url=url)
    engine = create_engine(url, pool_size=2, max_overflow=0, pool_timeout=30)
    threads = ServerThread(engine, 2) if url.startswith("mysql") else None
    spent: dict[str, list[float]] = {"without": [], "with": [], "hook": []}
    # New sites each call: pages stored again on the same articles would be unchanged.
    run = secrets.token_hex(3)
    for number, (label, hooked) in enumerate([("without", False), ("with", True)] * rounds):
        _snapshots(archive, f"parse{run}{number}{label}", raws, copies)
        timed = TimedHook(copies_hook(), threads)
        server = threads.cpu() if threads else 0.0
        cpu = time.process_time()
        parse_pending(engine, ParseRunConfig(), now=START, hooks=(timed,) if hooked else ())
        cpu = time.process_time() - cpu + ((threads.cpu() - server) if threads else 0.0)
        spent[label].append(cpu)
        if hooked:
            spent["hook"].append(timed.spent)
    engine.dispose()
    close_archives()
    return spent


def timed_rebuild(url: str) -> dict[str, float]:
    """``rebuild`` over the archive at ``url``: articles done, this process's CPU
    seconds, the serving server thread's (MariaDB), the whole server's, wall seconds."""
    engine = create_engine(url, pool_size=1, max_overflow=0)
    mariadb = url.startswith("mysql")
    thread = ServerThread(engine) if mariadb else None
    whole = server_cpu() if mariadb else 0.0
    server = thread.cpu() if thread else 0.0
    cpu = time.process_time()
    started = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        done, _ = rebuild(engine, stream=quiet)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    server = (thread.cpu() - server) if thread else 0.0
    whole = (server_cpu() - whole) if mariadb else 0.0
    engine.dispose()
    return {"done": done, "cpu": cpu, "server": server, "whole": whole, "wall": wall}


#: What ``--old`` runs in the old code's tree (its own bench module measures it alike).
_OLD = """
import json, sys
sys.path.insert(0, ".")
from bench.copies_speed import ServerThread, create_engine, rebuild, server_cpu
import bench.copies_speed as bench
if not hasattr(bench, "timed_rebuild"):
    import os, time
    def timed(url):
        engine = create_engine(url, pool_size=1, max_overflow=0)
        mariadb = url.startswith("mysql")
        thread = ServerThread(engine) if mariadb else None
        whole = server_cpu() if mariadb else 0.0
        server = thread.cpu() if thread else 0.0
        cpu, started = time.process_time(), time.perf_counter()
        with open(os.devnull, "w") as quiet:
            done, _ = rebuild(engine, stream=quiet)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        server = (thread.cpu() - server) if thread else 0.0
        whole = (server_cpu() - whole) if mariadb else 0.0
        engine.dispose()
        return {"done": done, "cpu": cpu, "server": server, "whole": whole, "wall": wall}
    bench.timed_rebuild = timed
print(json.dumps(bench.timed_rebuild(sys.argv[1])))
"""


def old_rebuild(tree: Path, url: str) -> dict[str, float]:
    """``timed_rebuild`` by the code of ``tree`` (a ``git archive`` of ``--old``)."""
    out = subprocess.run(
        [sys.executable, "-c", _OLD, url],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def memberships(url: str) -> set[frozenset[int]]:
    """The clusters as sets of article ids (what two rebuilds must agree on)."""
    engine = create_engine(url)
    with engine.connect() as conn:
        found: dict[int, set[int]] = {}
        for article_id, cluster_id in conn.execute(
            select(copy_doc.c.article_id, copy_doc.c.cluster_id).where(
                copy_doc.c.cluster_id.is_not(None)
            )
        ):
            found.setdefault(cluster_id, set()).add(article_id)
    engine.dispose()
    return {frozenset(members) for members in found.values()}


def measure(
    url: str,
    count: int,
    label: str,
    old: Path | None = None,
    pool: str = "pieces",
    parse_rounds: int = 0,
    copies: int = 1,
) -> None:
    characters, free = load(url, bodies(count, pool_kind=pool), count)
    earlier = None
    if old is not None:
        before = old_rebuild(old, url)
        earlier = memberships(url)
        spent = before["cpu"] + before["server"]
        index, covered = sizes(url)
        p50, p95, _ = latency(url)
        print(
            f"{label} {count}, the code before: rebuild {before['wall']:.1f} s wall,"
            f" {before['cpu']:.1f} CPU s + {before['server']:.1f} server thread ="
            f" {before['done'] / spent:.0f} publications per CPU second; index"
            f" {index / covered:.3f}x the text; --article p50 {p50:.1f} ms, p95 {p95:.1f} ms;"
            f" load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    timing = timed_rebuild(url)
    done, cpu, server = int(timing["done"]), timing["cpu"], timing["server"]
    wall, whole = timing["wall"], timing["whole"]
    if earlier is not None:
        now = memberships(url)
        print(
            f"{label} {count}: clusters before {len(earlier)}, now {len(now)}, the same"
            f" {len(earlier & now)}",
            flush=True,
        )
    index, covered = sizes(url)
    p50, p95, found = latency(url)
    with create_engine(url).connect() as conn:
        clusters = conn.execute(text("SELECT COUNT(*) FROM copy_cluster")).scalar()
    hooked = hook_cost(url, free, count, pool)
    print(
        f"{label} {count}: rebuild of {done} publications ({characters / count:.0f} characters"
        f" each): {wall:.1f} s wall, {cpu:.1f} CPU s here + {server:.1f} server thread ="
        f" {done / (cpu + server):.0f} publications per CPU second ({done / wall:.0f}/s"
        f" wall; the whole server's CPU meanwhile {whole:.1f} s); {clusters} clusters",
        flush=True,
    )
    print(
        f"{label} {count}: index {index / 1e6:.1f} MB for {covered / 1e6:.1f} MB of text ="
        f" {index / covered:.3f}x; --article query p50 {p50:.1f} ms, p95 {p95:.1f} ms"
        f" ({found} of the articles asked had a cluster); the hook's work"
        f" {hooked:.2f} CPU ms per publication; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    if parse_rounds:
        runs = parse_at_scale(url, copies, parse_rounds)
        without, with_hook = min(runs["without"]), min(runs["with"])
        shares = list(zip(runs["hook"], runs["with"], strict=True))
        pages = 60 * copies
        print(
            f"{label} {count}: parse runs of {pages} pages into this archive, CPU s without"
            f" the hook {', '.join(f'{v:.2f}' for v in runs['without'])}, with"
            f" {', '.join(f'{v:.2f}' for v in runs['with'])}: least against least"
            f" {with_hook / without - 1:+.1%} ({(with_hook - without) * 1000 / pages:.1f} CPU ms"
            f" a page added, parse {without * 1000 / pages:.1f}); the hook's own CPU in each run"
            f" with it {', '.join(f'{v:.2f}' for v in runs['hook'])} s ="
            f" {', '.join(f'{h / (w - h):+.1%}' for h, w in shares)} of"
            f" the rest of its run; load {os.getloadavg()[0]:.1f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--publications", default="20000", help="sizes, comma-separated")
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--skip-mariadb", action="store_true")
    parser.add_argument("--skip-sqlite", action="store_true")
    parser.add_argument("--skip-parse", action="store_true")
    parser.add_argument(
        "--parse-rounds",
        type=int,
        default=0,
        help="after each size's rebuild, this many pairs of parse runs (without and with the"
        " hook) of the extraction benchmark's pages (--copies times) into that archive",
    )
    parser.add_argument("--database-prefix", default="bench_copies_", help="MariaDB's")
    parser.add_argument(
        "--pool",
        choices=("pieces", "sentences"),
        default="pieces",
        help="what bodies are drawn from: sentences cut to pieces of at most 160 characters,"
        " or whole sentences (the figures before 2026-11-29 15:00)",
    )
    parser.add_argument(
        "--old", help="a git revision whose rebuild runs first on the same archive, to compare"
    )
    args = parser.parse_args()
    old = None
    if args.old:
        old = Path(tempfile.mkdtemp(prefix="copies-old-"))
        archive = subprocess.run(
            ["git", "archive", args.old], cwd=REPO, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
    for count in (int(size) for size in args.publications.split(",")):
        if not args.skip_sqlite:
            with tempfile.TemporaryDirectory() as folder:
                measure(
                    f"sqlite:///{folder}/copies.db",
                    count,
                    "SQLite",
                    old,
                    args.pool,
                    args.parse_rounds,
                    args.copies,
                )
        if not args.skip_mariadb:
            name = args.database_prefix + secrets.token_hex(4)
            server = create_engine(MARIADB)
            with server.begin() as conn:
                conn.execute(text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
            try:
                measure(
                    f"{MARIADB}/{name}?charset=utf8mb4",
                    count,
                    "MariaDB",
                    old,
                    args.pool,
                    args.parse_rounds,
                    args.copies,
                )
            finally:
                with server.begin() as conn:
                    conn.execute(text(f"DROP DATABASE {name}"))
    if old is not None:
        shutil.rmtree(old)
    if not args.skip_parse:
        cost = parse_overhead(args.copies)
        print(
            f"parse run ({args.copies} x the extraction benchmark's pages, SQLite): "
            f"{cost['without']:.1f} s without the hook, {cost['with']:.1f} s with "
            f"({cost['with'] / cost['without'] - 1:+.1%} wall, "
            f"{cost['with cpu'] / cost['without cpu'] - 1:+.1%} CPU); parse CPU per page"
            f" without the hook {cost['without cpu'] * 1000 / (60 * args.copies):.1f} ms"
        )


if __name__ == "__main__":
    main()
