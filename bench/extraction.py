"""Parser benchmarks, in one run:

1. body extraction on ../shared/corpora/extraction-benchmark-dev against its ground truth,
   scored as scrapinghub/article-extraction-benchmark's evaluate.py scores (4-token
   shingles, per-page TP/FP/FN normalised, precision and recall averaged over pages, F1 of
   the averages), for zeroarchive's generic parser, readability-lxml alone and trafilatura
   alone (its defaults, and with favor_precision as the parser runs it); then the same
   extractors on the same pages and on the annotated CJK pages of bench/data/cjk-news (its
   tuning part and its held-out part, SPLIT.txt) by character bigrams (word shingles do not
   split Chinese or Japanese text): per-page bigram precision and recall, averaged, F1 of
   the averages; and the pages where the combination scores under 0.5 though one of its
   extractors reaches 0.8;
2. publication-date accuracy on the Taiwanese pages' expected.json (tw-news-2014 and
   tw-news-twnews): right = same second when the expected time has seconds, else same minute;
3. pages per second of the whole generic parse (title, text, dates, metadata, links).

For each CJK part it also prints the mean of the per-page F1 of each extractor, the pages
where zeroarchive is under 0.5 though trafilatura (its defaults) reaches 0.5 (the issue's
aim: none held out), each language's F1 (ja, ko, zh) and the worst pages with their
publisher. ``--tree DIR`` runs the parser of another checkout (``git worktree add /tmp/old
main``) on this checkout's data, so the before and after of a change are scored on the same
pages; ``--json FILE`` writes every page's scores.

Each CJK part is also scored per region (tw, cn, hk, jp, kr) and on the pages of the
sources issue 41 added; it counts the pages under 0.5 where readability-lxml or trafilatura
alone reaches 0.5. ``--part tune`` scores the tuning part only (what tuning may look at),
``--part unseen2`` the third part (build_unseen2.py: pages in neither part, for the issue's
independent check; tuned on since parser 2026.8), ``--part unseen3`` the fourth
(build_unseen3.py: publishers in no other part; read by class for 2026.9), ``--part unseen4``
the fifth (build_unseen4.py: pages of repositories no other part used, made before parser
2026.10 was changed, never tuned on), ``--part unseen5 --pages DIR`` the sixth
(build_unseen5.py: Japanese dailies' pages of a repository with no licence, so not in this
repository: the script writes them and their gold to DIR; made before parser 2026.11 was
changed, read by class for it), ``--part unseen6`` the seventh (build_unseen6.py: NetEase
Finance pages of a repository no other part used, made after 2026.11, read by class for it),
``--part unseen7`` the eighth (build_unseen7.py: Chinese news pages of a repository no other
part used, made after 2026.11's last rule change and scored once, never read for a rule),
``--part unseen8`` the ninth (build_unseen8.py: Japanese and Taiwanese news pages of htmldate's
tests no other part took, made before parser 2026.12 was changed and scored once before it),
``--part unseen9`` the tenth (build_unseen9.py: GeneralNewsExtractor's pages unseen3 left out,
made after parser 2026.12's rule and scored once with it),
``--cjk-only`` leaves out the English benchmark, the dates and the speed.

Usage: python bench/extraction.py [--tree DIR] [--json FILE] [--worst 10] [--part both]
    [--pages DIR] [--cjk-only]
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import lzma
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import trafilatura

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
if "--tree" in sys.argv:  # the parser of another checkout, imported before this one's
    sys.path.insert(0, str(Path(sys.argv[sys.argv.index("--tree") + 1]).resolve()))

from bench.corpora import CORPORA  # noqa: E402
from zeroarchive.core.encoding import decode_body, detect_encoding  # noqa: E402
from zeroarchive.parser import PARSER_VERSION, parse_snapshot  # noqa: E402
from zeroarchive.parser.generic import (  # noqa: E402
    main_text,
    page_tree,
    readability_text,
    trafilatura_text,
)

try:
    from zeroarchive.parser.generic import article_text
except ImportError:  # a parser before promotion boxes (2026.3 and older)
    article_text = main_text

BENCHMARK = CORPORA / "extraction-benchmark-dev"
CJK = REPO / "bench" / "data" / "cjk-news"
_TOKEN_RE = re.compile(r"\w+", re.UNICODE | re.MULTILINE | re.IGNORECASE | re.DOTALL)
Scores = tuple[float, float, float]


def _shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    tokens = _TOKEN_RE.findall(text or "")
    return Counter(
        tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1)) if tokens[i : i + n]
    )


def tp_fp_fn(true: str, pred: str) -> Scores:
    """evaluate.py's string_shingle_matching: normalised (tp, fp, fn) of one page."""
    expected, found = _shingles(true), _shingles(pred)
    tp = fp = fn = 0.0
    for key in set(expected) | set(found):
        tp += min(expected[key], found[key])
        fp += max(0, found[key] - expected[key])
        fn += max(0, expected[key] - found[key])
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (tp, fp, fn)


def metrics(pages: list[Scores]) -> dict[str, float]:
    """evaluate.py's metrics_from_tp_fp_fns."""

    def precision(tp: float, fp: float, fn: float) -> float:
        if fp == fn == 0:
            return 1.0
        return 0.0 if tp == fp == 0 else tp / (tp + fp)

    def recall(tp: float, fp: float, fn: float) -> float:
        if fp == fn == 0:
            return 1.0
        return 0.0 if tp == fn == 0 else tp / (tp + fn)

    p = statistics.mean(precision(*s) for s in pages if s[0] + s[1] > 0)
    r = statistics.mean(recall(*s) for s in pages if s[0] + s[2] > 0)
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r)}


def char_bigrams(text: str) -> Counter[str]:
    """The character bigrams of ``text`` with its white space taken out.

    >>> sorted(char_bigrams("台 北市").elements())
    ['北市', '台北']
    """
    chars = "".join(text.split())
    return Counter(chars[i : i + 2] for i in range(len(chars) - 1))


def bigram_scores(true: str, pred: str) -> Scores:
    """(precision, recall, F1) of one page's extracted text by character bigrams."""
    expected, found = char_bigrams(true), char_bigrams(pred)
    common = sum((expected & found).values())
    precision = common / sum(found.values()) if found else float(not expected)
    recall = common / sum(expected.values()) if expected else 1.0
    total = precision + recall
    return precision, recall, 2 * precision * recall / total if total else 0.0


def bigram_metrics(pages: list[Scores]) -> dict[str, float]:
    p = statistics.mean(s[0] for s in pages)
    r = statistics.mean(s[1] for s in pages)
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


EXTRACTORS: dict[str, Callable[[str], str]] = {
    # The tree, as the parser hands it to both extractors.
    "zeroarchive": lambda html: article_text(page_tree(html))[0],
    "readability-lxml": lambda html: readability_text(html)[0],
    "trafilatura": lambda html: trafilatura.extract(html) or "",
    "trafilatura precision": trafilatura_text,
}
# The extractors the combination is made of: a page one of them gets right must stay right.
PARTS = ("readability-lxml", "trafilatura", "trafilatura precision")


def benchmark_pages() -> dict[str, tuple[str, str]]:
    """{key: (html, gold body)} of extraction-benchmark-dev."""
    truth = json.loads((BENCHMARK / "ground-truth_subset.json").read_text(encoding="utf-8"))
    pages = {}
    for key in truth:
        raw = gzip.decompress((BENCHMARK / "html" / f"{key}.html.gz").read_bytes())
        pages[key] = (decode_body(raw, detect_encoding(raw)), truth[key]["articleBody"])
    return pages


_GOLD: dict[str, dict[str, str]] = json.loads((CJK / "gold.json").read_text(encoding="utf-8"))


# Parts whose pages the repository does not hold (their source states no licence): their
# build script writes the pages (html/<name>.html.gz) and gold.json to a directory outside it.
OUTSIDE = ("unseen5",)


def outside_pages(where: Path) -> dict[str, tuple[str, str]]:
    """{name: (html, gold body)} of a part written outside the repository to ``where``."""
    gold = json.loads((where / "gold.json").read_text(encoding="utf-8"))
    _GOLD.update(gold)  # the regions and publishers of its pages
    pages = {}
    for name, entry in sorted(gold.items()):
        raw = gzip.decompress((where / "html" / f"{name}.html.gz").read_bytes())
        pages[name] = (decode_body(raw, detect_encoding(raw)), entry["body"])
    return pages


def cjk_pages(part: str) -> dict[str, tuple[str, str]]:
    """{name: (html, gold body)} of one part ("tune", "heldout", "unseen2", "unseen3",
    "unseen4", "unseen6", "unseen7", "unseen8", "unseen9") of the CJK pages in the repository."""
    gold = json.loads((CJK / "gold.json").read_text(encoding="utf-8"))
    names = [
        line.split()[1]
        for line in (CJK / "SPLIT.txt").read_text(encoding="utf-8").splitlines()
        if line.startswith(f"{part} ")
    ]
    pages = {}
    for name in names:
        raw = gzip.decompress((CJK / "html" / f"{name}.html.gz").read_bytes())
        pages[name] = (decode_body(raw, detect_encoding(raw)), gold[name]["body"])
    return pages


def extracted(pages: dict[str, tuple[str, str]]) -> dict[str, dict[str, str]]:
    """Every extractor's text of every page: {extractor: {page: text}}."""
    return {
        name: {key: extract(html) for key, (html, _) in pages.items()}
        for name, extract in EXTRACTORS.items()
    }


def extraction(pages: dict[str, tuple[str, str]], texts: dict[str, dict[str, str]]) -> None:
    for name, found in texts.items():
        scores = [tp_fp_fn(gold, found[key]) for key, (_, gold) in pages.items()]
        m = metrics(scores)
        print(
            f"  {name:<22} precision={m['precision']:.4f} recall={m['recall']:.4f} F1={m['f1']:.4f}"
        )


PageScores = dict[str, dict[str, Scores]]


def bigrams(
    pages: dict[str, tuple[str, str]], texts: dict[str, dict[str, str]], worst: int = 0
) -> PageScores:
    per_page = {
        name: {key: bigram_scores(gold, found[key]) for key, (_, gold) in pages.items()}
        for name, found in texts.items()
    }
    for name, scores in per_page.items():
        m = bigram_metrics(list(scores.values()))
        print(
            f"  {name:<22} precision={m['precision']:.4f} recall={m['recall']:.4f} F1={m['f1']:.4f}"
        )
    misses = [
        (key, scores[2], max(per_page[part][key][2] for part in PARTS))
        for key, scores in per_page["zeroarchive"].items()
        if scores[2] < 0.5 and max(per_page[part][key][2] for part in PARTS) >= 0.8
    ]
    print(f"  pages under 0.5 where an extractor reaches 0.8: {len(misses)}")
    for key, ours, best in misses:
        print(f"    {key}: zeroarchive {ours:.3f}, best extractor {best:.3f}")
    if worst:
        means = "  ".join(
            f"{name} {statistics.mean(s[2] for s in scores.values()):.4f}"
            for name, scores in per_page.items()
        )
        print(f"  mean of the per-page F1: {means}")
        ours, theirs = per_page["zeroarchive"], per_page["trafilatura"]
        alone = per_page["readability-lxml"]
        below = [key for key in ours if ours[key][2] < 0.5 <= max(theirs[key][2], alone[key][2])]
        print(
            f"  pages under 0.5 where readability-lxml or trafilatura alone reaches 0.5: "
            f"{len(below)} {below}"
        )
        gold = _GOLD
        groups: dict[str, list[str]] = {}
        for key in ours:
            groups.setdefault(f"lang {gold[key]['lang']}", []).append(key)
        for key in ours:
            groups.setdefault(f"region {region(gold[key])}", []).append(key)
        groups["new sources (issue 41)"] = [key for key in ours if new_source(gold[key])]
        for group, keys in sorted(groups.items()):
            if not keys:
                continue
            print(f"  {group}, {len(keys)} pages: F1 (mean of the per-page F1)")
            for name, scores in per_page.items():
                chosen = [scores[key] for key in keys]
                print(
                    f"    {name:<22} {bigram_metrics(chosen)['f1']:.4f} "
                    f"({statistics.mean(s[2] for s in chosen):.4f})"
                )
        print(f"  worst {worst} pages (zeroarchive / readability-lxml / trafilatura):")
        for key in sorted(ours, key=lambda k: ours[k][2])[:worst]:
            where = gold.get(key, {}).get("publisher", "")
            print(
                f"    {key} ({where}): {ours[key][2]:.3f} / "
                f"{per_page['readability-lxml'][key][2]:.3f} / {theirs[key][2]:.3f}"
            )
    return per_page


def region(entry: dict[str, str]) -> str:
    """Where a CJK page's publisher is: jp, kr, tw, hk, or cn (mainland China and the other
    Chinese-language sites).

    >>> region({"lang": "zh", "publisher": "hk.news.yahoo.com", "source": "x"})
    'hk'
    """
    if entry["lang"] != "zh":
        return {"ja": "jp", "ko": "kr"}[entry["lang"]]
    publisher, source = entry["publisher"], entry["source"]
    if source.startswith(("lulalala/", "virus-warnning/")) or publisher.endswith(".tw"):
        return "tw"
    if source.startswith("ayltai/") or publisher.endswith(".hk") or publisher.startswith("hk."):
        return "hk"
    return "hk" if publisher == "on.cc" else "cn"


def new_source(entry: dict[str, str]) -> bool:
    """Whether a page came from the sources issue 41 added (build_new.py)."""
    source = entry["source"]
    return "magic-html" in source or (
        source.startswith("flairNLP/fundus") and entry["lang"] != "ko"
    )


def tw_news_pages() -> list[tuple[str, dict[str, str], bytes]]:
    pages = []
    for corpus, unpack in (("tw-news-2014", gzip.decompress), ("tw-news-twnews", lzma.decompress)):
        folder = CORPORA / corpus
        expected = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
        for name, facts in expected.items():
            path = folder / "html" / name if (folder / "html" / name).exists() else folder / name
            pages.append((name, facts, unpack(path.read_bytes())))
    return pages


def date_accuracy() -> tuple[int, int, list[str], float]:
    right, wrong, seconds = 0, [], 0.0
    pages = tw_news_pages()
    for name, facts, raw in pages:
        started = time.perf_counter()
        parsed = parse_snapshot("Article", raw, detect_encoding(raw), facts["url"])
        seconds += time.perf_counter() - started
        expected = int(dt.datetime.fromisoformat(facts["published_at"]).timestamp())
        got = parsed.published_at
        exact = expected % 60 != 0
        if got is not None and (got == expected if exact else got // 60 == expected // 60):
            right += 1
        else:
            wrong.append(f"{name}: expected {facts['published_at']}, got {got}")
    return right, len(pages), wrong, seconds


def throughput() -> tuple[int, float]:
    """Whole generic parses of every benchmark and Taiwanese page."""
    raws = [raw for _, _, raw in tw_news_pages()]
    raws += [gzip.decompress(p.read_bytes()) for p in sorted((BENCHMARK / "html").glob("*.gz"))]
    started = time.perf_counter()
    for raw in raws:
        parse_snapshot("Article", raw, detect_encoding(raw), "https://example.com/a")
    return len(raws), time.perf_counter() - started


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", help="a checkout whose parser is scored (default: this one)")
    parser.add_argument("--json", help="write every page's (precision, recall, F1) here")
    parser.add_argument("--worst", type=int, default=10, help="worst CJK pages to list")
    parser.add_argument(
        "--part",
        choices=(
            "tune",
            "heldout",
            "both",
            "unseen2",
            "unseen3",
            "unseen4",
            "unseen5",
            "unseen6",
            "unseen7",
            "unseen8",
            "unseen9",
        ),
        default="both",
        help="the CJK parts scored: while tuning, `tune` only (the held-out part is never "
        "looked at page by page); `unseen2` to `unseen9` the pages of "
        "build_unseen2.py to build_unseen9.py, scored apart (`unseen5` with --pages)",
    )
    parser.add_argument(
        "--pages",
        type=Path,
        help="the directory build_unseen5.py wrote unseen5's pages and gold to (they are not "
        "in the repository: their source states no licence)",
    )
    parser.add_argument(
        "--cjk-only", action="store_true", help="skip the English benchmark, dates and speed"
    )
    args = parser.parse_args()
    print(f"parser {PARSER_VERSION}")
    everything: dict[str, PageScores] = {}
    sets = {}
    if not args.cjk_only:
        sets["extraction-benchmark-dev (60 pages)"] = benchmark_pages()
    if args.part in ("tune", "both"):
        sets["CJK tuning part"] = cjk_pages("tune")
    if args.part in ("heldout", "both"):
        sets["CJK held-out part"] = cjk_pages("heldout")
    if args.part in OUTSIDE:
        if args.pages is None:
            parser.error(f"--part {args.part} needs --pages DIR (see bench/README.md)")
        sets[f"CJK {args.part} part"] = outside_pages(args.pages)
    elif args.part.startswith("unseen"):
        sets[f"CJK {args.part} part"] = cjk_pages(args.part)
    for title, pages in sets.items():
        texts = extracted(pages)
        if title.startswith("extraction-benchmark"):
            print(f"{title}, evaluate.py method (4-token shingles)")
            extraction(pages, texts)
        print(f"{title}, {len(pages)} pages, character bigrams")
        worst = args.worst if title.startswith("CJK") else 0
        everything[title] = bigrams(pages, texts, worst)
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1), encoding="utf-8")
    if args.cjk_only:
        return
    right, total, wrong, _ = date_accuracy()
    print(f"published_at on tw-news expected.json: {right}/{total} right")
    for line in wrong:
        print(f"  wrong: {line}")
    count, seconds = throughput()
    print(f"whole generic parse: {count} pages in {seconds:.1f} s = {count / seconds:.1f} pages/s")


if __name__ == "__main__":
    main()
