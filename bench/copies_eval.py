"""Copies: precision and recall on real articles and generated variants (issue 38, point 6).

Real bodies: the gold texts of bench/data/cjk-news (Chinese, Japanese, Korean news), the
Taiwanese news pages of the corpora (tw-news-2014, tw-news-twnews; read by the project's
parser) and the extraction benchmark's checked bodies (English and six other languages);
licences in each folder's SOURCE.txt. Originals that copy one another (two outlets' one
story, one page in two sets) are kept once. They are split by a hash of their name into a
tuning half and a held-out half BEFORE anything is tuned; the report gives both.

Each original is published on its outlet's site; its variants on farm sites, later, in a
shuffled order: converted to the other Chinese script (OpenCC) and retitled; cut to its
first two thirds, to half, to a third; paragraphs reordered with an ad inserted; verbatim; wrapped
in the farm's own header and footer (each farm wraps every article it posts, so the
wrapping is boilerplate shared by unrelated articles); paragraphs re-split and
punctuation changed (what another markup gives); and all at once (converted, cut, wrapped).
Every pair of one original's family is a true pair; every other pair is a false one. Apart
from both halves, the real pairs the corpora hold (``REAL_PAIRS``: one story under two
URLs; wire stories and other outlets' reports of the same news). The
index is built as the parse run's hook builds it (``CopyIndex.add``, one transaction per
publication), and the clusters are compared with the truth: pair precision and recall,
recall per kind of variant, and whether each cluster's ``first`` is the original.

    python bench/copies_eval.py [--tune] [--min-similarity 0.8]

``--tune`` also scans the containment threshold on the tuning half (the held-out half is
reported at the setting's value only).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import itertools
import json
import lzma
import random
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import opencc  # noqa: E402
from sqlalchemy import select  # noqa: E402

from bench.corpora import CORPORA  # noqa: E402
from zeroarchive.copies.fingerprint import body, containment, fold, shingles  # noqa: E402
from zeroarchive.copies.hook import CopiesHook  # noqa: E402
from zeroarchive.copies.index import CopiesConfig, CopyIndex  # noqa: E402
from zeroarchive.copies.read import clusters  # noqa: E402
from zeroarchive.core.encoding import detect_encoding  # noqa: E402
from zeroarchive.core.items import Parsed  # noqa: E402
from zeroarchive.parser import PARSER_VERSION, parse_snapshot  # noqa: E402
from zeroarchive.sites.record import parse_spec  # noqa: E402
from zeroarchive.storage.archive import close_archives, open_archive  # noqa: E402
from zeroarchive.storage.publications import ArticleInfo, PublicationStore  # noqa: E402
from zeroarchive.storage.schema import article  # noqa: E402

START = 1_700_000_000
HOUR = 3600
MIN_CHARS = 200
KINDS = (
    "converted+retitled",
    "cut 2/3",
    "cut 1/2",
    "cut 1/3",
    "reordered+ad",
    "verbatim",
    "wrapped",
    "markup",
    "converted+cut+wrapped",
)
FARMS = 6
ADS = (
    "【廣告】限時優惠！立即下載APP領取新會員好禮，再抽最新款手機，活動只到本週日為止。",
    "Advertisement: subscribe now and get three months free, offer ends on Sunday night.",
)


@dataclass(frozen=True)
class Original:
    name: str
    outlet: str
    text: str


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


def originals() -> list[Original]:
    """The real bodies, each story once."""
    kept: list[Original] = []
    sets: list = []
    for original in corpus_bodies():
        if len(original.text) < MIN_CHARS:
            continue
        mine = shingles(body(fold(original.text)))
        if any(containment(mine, other) >= 0.5 for other in sets):
            continue  # the same story twice in the corpora: not two originals
        kept.append(original)
        sets.append(mine)
    return kept


def corpus_bodies() -> list[Original]:
    """Every real body of the three sets, as found (a story may be there twice)."""
    found: list[Original] = []
    gold = json.loads((REPO / "bench" / "data" / "cjk-news" / "gold.json").read_text())
    for name, entry in sorted(gold.items()):
        found.append(Original(f"cjk/{name}", entry.get("publisher") or name, entry["body"]))
    for folder in ("tw-news-2014", "tw-news-twnews"):
        expected = json.loads((CORPORA / folder / "expected.json").read_text())
        for file, entry in sorted(expected.items()):
            path = CORPORA / folder / ("html" if folder == "tw-news-2014" else "") / file
            if not path.exists():
                path = path.with_name(file + (".gz" if folder == "tw-news-2014" else ".xz"))
            opener = gzip.decompress if path.suffix == ".gz" else lzma.decompress
            raw = opener(path.read_bytes())
            parsed = parse_snapshot("Article", raw, detect_encoding(raw), entry["url"])
            found.append(Original(f"{folder}/{file}", entry["outlet"], parsed.text))
    truth = json.loads(
        (CORPORA / "extraction-benchmark-dev" / "ground-truth_subset.json").read_text()
    )
    for key, entry in sorted(truth.items()):
        outlet = entry["url"].split("/")[2]
        found.append(Original(f"aeb/{key[:12]}", outlet, entry["articleBody"]))
    return found


#: Real pairs of the corpora, found by comparing every two of their bodies (containment
#: 0.3 or more; pages that are one saved page twice, in cjk-news and tw-news-2014, left
#: out), labelled by reading them; never tuned on. (name, name, a copy?, what they are)
REAL_PAIRS = (
    (
        "tw-news-2014/liberty_times_news_s1.html",
        "tw-news-2014/liberty_times_s3.html",
        True,
        "one 自由時報 story under two URLs (news.ltn.com.tw and libertytimes.com.tw)",
    ),
    (
        "aeb/06e5123e4ef7",
        "aeb/1ace8c85aaee",
        False,
        "a Reuters story carried by VentureBeat, and TechCrunch's own report of it quoting"
        " Reuters (containment 0.41)",
    ),
    (
        "aeb/b37be3535e1f",
        "aeb/e1c7023ee214",
        False,
        "the ESA hibernation study: CTV's wire story and phys.org's (containment 0.36)",
    ),
)


def real_pairs(config: CopiesConfig) -> list[tuple[str, str, bool, bool, str]]:
    """Each real pair published on its outlets' sites (the earlier name first), as the
    parse hook adds them: (name, name, labelled a copy, found a copy, what they are)."""
    bodies = {item.name.removesuffix(".gz").removesuffix(".xz"): item for item in corpus_bodies()}
    results = []
    for one, other, copy, what in REAL_PAIRS:
        items = [bodies[one], bodies[other]]
        with tempfile.TemporaryDirectory() as folder:
            archive = open_archive(url=f"sqlite:///{folder}/copies.db")
            store = PublicationStore(archive.engine, PARSER_VERSION)
            store.register_parser({}, START)
            hooks = (CopiesHook(CopyIndex(config)),)
            for number, item in enumerate(items):
                name = f"{number}-" + hashlib.sha256(item.outlet.encode()).hexdigest()[:8]
                spec = parse_spec(
                    {
                        "name": name,
                        "url": f"https://{name}.example/",
                        "type": "news",
                        "config": {"article": "/"},
                    }
                )
                site_id = archive.sites.upsert(spec, START)[0]
                url = f"https://{name}.example/{number}"
                when = START + number * HOUR
                archive.articles.add(site_id, "Article", [url], when)
                with archive.engine.connect() as conn:
                    article_id = int(
                        conn.execute(
                            select(article.c.article_id).where(article.c.url == url)
                        ).scalar_one()
                    )
                parsed = Parsed(canonical_url=url, title="", text=item.text)
                info = ArticleInfo(article_id, site_id, "Article", url)
                store.add_version(info, when, parsed, parsed.digest(), when, hooks)
            found = any(len(cluster.members) == 2 for cluster in clusters(archive.engine))
            close_archives()
        results.append((one, other, copy, found, what))
    return results


def split(items: list[Original]) -> tuple[list[Original], list[Original]]:
    """Tuning and held-out halves, by a hash of each name (fixed before any tuning)."""
    tune, held = [], []
    for item in items:
        digest = hashlib.sha256(item.name.encode()).digest()[0]
        (tune if digest % 2 == 0 else held).append(item)
    return tune, held


_T2S = opencc.OpenCC("t2s")
_S2T = opencc.OpenCC("s2t")


def converted(text: str) -> str:
    simplified = _T2S.convert(text)
    return _S2T.convert(text) if simplified == text else simplified


def cut(text: str, share: float) -> str:
    """The text's first ``share`` of characters (lines kept as they were)."""
    return "\n".join(_lines(text[: round(len(text) * share)]))


def reordered(text: str, rng: random.Random) -> str:
    parts = _lines(text)
    middle = len(parts) // 2
    return "\n".join([*parts[middle:], rng.choice(ADS), *parts[:middle]])


def wrapped(text: str, farm: int) -> str:
    top = f"本文轉載自網路第{farm}號平台，版權歸原作者所有，如有侵權請聯繫我們刪除，謝謝。"
    bottom = (
        f"免責聲明：本站（{farm}號）所刊載之文章僅代表作者個人觀點，不代表本站立場。"
        "歡迎分享本文給更多朋友，並追蹤我們的粉絲專頁獲得最新消息。"
    )
    return f"{top}\n{text}\n{bottom}"


def remarked(text: str) -> str:
    """Paragraphs split and joined elsewhere, punctuation and spaces changed."""
    parts = _lines(text)
    joined = [" ".join(parts[i : i + 2]) for i in range(0, len(parts), 2)]
    return "\n\n".join(line.replace("，", ", ").replace("。", ".\n") for line in joined)


def variant(kind: str, text: str, farm: int, rng: random.Random) -> str:
    if kind == "converted+retitled":
        return converted(text)
    if kind == "cut 2/3":
        return cut(text, 2 / 3)
    if kind == "cut 1/2":
        return cut(text, 1 / 2)
    if kind == "cut 1/3":
        return cut(text, 1 / 3)
    if kind == "reordered+ad":
        return reordered(text, rng)
    if kind == "verbatim":
        return text
    if kind == "wrapped":
        return wrapped(text, farm)
    if kind == "markup":
        return remarked(text)
    return wrapped(cut(converted(text), 0.7), farm)


@dataclass
class Result:
    true_pairs: int
    found_pairs: int
    right_pairs: int
    recall_by_kind: dict[str, float]
    firsts_right: int
    clusters: int

    @property
    def precision(self) -> float:
        return self.right_pairs / self.found_pairs if self.found_pairs else 1.0

    @property
    def recall(self) -> float:
        return self.right_pairs / self.true_pairs if self.true_pairs else 1.0


def brief(text: str, farm: int) -> str:
    """A short item in a farm's wrapping: most of its body is the farm's boilerplate."""
    return wrapped(max(_lines(text), key=len)[:60], farm)


def run(
    items: list[Original],
    config: CopiesConfig,
    kinds: tuple[str, ...] = KINDS,
    others: list[Original] = (),  # type: ignore[assignment]
    seed: int = 38,
) -> Result:
    """Publish the originals and their variants of ``kinds`` as the parse run would, with
    a short wrapped brief of each of ``others`` on the farms (unrelated to everything
    else: hard negatives), and compare the clusters with the truth."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as folder:
        archive = open_archive(url=f"sqlite:///{folder}/copies.db")
        engine = archive.engine
        site_ids: dict[str, int] = {}

        def site(name: str) -> int:
            if name not in site_ids:
                spec = parse_spec(
                    {
                        "name": name,
                        "url": f"https://{name}.example/",
                        "type": "news",
                        "config": {"article": "/"},
                    }
                )
                site_ids[name] = archive.sites.upsert(spec, START)[0]
            return site_ids[name]

        posts: list[tuple[str, int, str, str | None]] = []  # site, time, text, kind
        family: dict[int, int] = {}
        for number, original in enumerate(items):
            outlet = "o-" + hashlib.sha256(original.outlet.encode()).hexdigest()[:8]
            posts.append((outlet, START + number, original.text, None))
            family[len(posts) - 1] = number
            for kind in kinds:
                farm = rng.randrange(FARMS)
                text = variant(kind, original.text, farm, rng)
                when = START + HOUR + rng.randrange(48 * HOUR)
                posts.append((f"farm{farm}", when, text, kind))
                family[len(posts) - 1] = number
        for number, other in enumerate(others, len(items)):
            farm = rng.randrange(FARMS)
            posts.append(
                (f"farm{farm}", START + rng.randrange(48 * HOUR), brief(other.text, farm), "brief")
            )
            family[len(posts) - 1] = number
        order = list(range(len(posts)))
        rng.shuffle(order)
        store = PublicationStore(engine, PARSER_VERSION)
        store.register_parser({}, START)
        hooks = (CopiesHook(CopyIndex(config)),)
        ids: dict[int, int] = {}
        for number in order:
            name, when, text, _ = posts[number]
            url = f"https://{name}.example/{number}"
            site_id = site(name)
            archive.articles.add(site_id, "Article", [url], when)
            with engine.connect() as conn:
                article_id = int(
                    conn.execute(
                        select(article.c.article_id).where(article.c.url == url)
                    ).scalar_one()
                )
            ids[number] = article_id
            parsed = Parsed(canonical_url=url, title="", text=text)
            info = ArticleInfo(article_id, site_id, "Article", url)
            store.add_version(info, when, parsed, parsed.digest(), when, hooks)
        post_of = {article_id: number for number, article_id in ids.items()}
        found_pairs = right = 0
        linked: set[tuple[int, int]] = set()
        firsts = total = 0
        for cluster in clusters(engine):
            total += 1
            numbers = [post_of[m.article_id] for m in cluster.members]
            first = post_of[cluster.first.article_id]
            families = Counter(family[n] for n in numbers)
            main = families.most_common(1)[0][0]
            firsts += posts[first][3] is None and family[first] == main
            for a, b in itertools.combinations(numbers, 2):
                found_pairs += 1
                if family[a] == family[b]:
                    right += 1
                    linked.add((min(a, b), max(a, b)))
        true_pairs = 0
        by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        members_of: dict[int, list[int]] = defaultdict(list)
        for number, fam in family.items():
            members_of[fam].append(number)
        for numbers in members_of.values():
            true_pairs += len(numbers) * (len(numbers) - 1) // 2
            source = next((n for n in numbers if posts[n][3] is None), None)
            for n in numbers:
                kind = posts[n][3]
                if source is not None and kind is not None:
                    by_kind[kind][1] += 1
                    by_kind[kind][0] += (min(source, n), max(source, n)) in linked
        close_archives()
    return Result(
        true_pairs,
        found_pairs,
        right,
        {kind: hit / count for kind, (hit, count) in by_kind.items()},
        firsts,
        total,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tune", action="store_true")
    parser.add_argument("--min-similarity", type=float, default=0.8)
    args = parser.parse_args()
    items = originals()
    tune, held = split(items)
    languages = Counter(o.name.split("/")[0] for o in items)
    print(f"originals: {len(items)} ({dict(languages)}); tuning {len(tune)}, held out {len(held)}")
    print(f"variants per original: {len(KINDS)} ({', '.join(KINDS)})")
    if args.tune:
        for threshold in (0.6, 0.7, 0.8, 0.9):
            result = run(tune, CopiesConfig(min_similarity=threshold))
            print(
                f"tuning, min similarity {threshold}: precision {result.precision:.3f}, "
                f"recall {result.recall:.3f}"
            )
    config = CopiesConfig(min_similarity=args.min_similarity)
    pairs = real_pairs(config)
    right = sum(copy == found for _, _, copy, found, _ in pairs)
    print(f"real pairs of the corpora (kept apart, never tuned on): {right}/{len(pairs)} right")
    for one, other, copy, found, what in pairs:
        print(
            f"  {one} ~ {other}: labelled {'copy' if copy else 'not a copy'}, found"
            f" {'a copy' if found else 'none'} ({what})"
        )
    for label, part, other in (("tuning", tune, held), ("held out", held, tune)):
        result = run(part, config, others=other)
        print(
            f"{label}: {result.clusters} clusters, pairs true {result.true_pairs}, found "
            f"{result.found_pairs}, right {result.right_pairs}: precision "
            f"{result.precision:.3f}, recall {result.recall:.3f}; first right in "
            f"{result.firsts_right}/{result.clusters}"
        )
        for kind in KINDS:
            print(f"  recall of {kind}: {result.recall_by_kind.get(kind, 0):.3f}")
        # One variant per original: no other member of its family helps to find it.
        alone = []
        for kind in KINDS:
            single = run(part, config, (kind,))
            alone.append(f"{kind} {single.recall:.3f} (precision {single.precision:.3f})")
        print(f"  one variant per original, pair recall: {'; '.join(alone)}")


if __name__ == "__main__":
    main()
