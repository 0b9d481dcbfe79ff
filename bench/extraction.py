"""Parser benchmarks, in one run:

1. body extraction on ../shared/corpora/extraction-benchmark-dev against its ground truth,
   scored as scrapinghub/article-extraction-benchmark's evaluate.py scores (4-token
   shingles, per-page TP/FP/FN normalised, precision and recall averaged over pages, F1 of
   the averages), for zeroarchive's generic parser, readability-lxml alone and trafilatura
   alone;
2. publication-date accuracy on the Taiwanese pages' expected.json (tw-news-2014 and
   tw-news-twnews): right = same second when the expected time has seconds, else same minute;
3. pages per second of the whole generic parse (title, text, dates, metadata, links).

Usage: python bench/extraction.py
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

from bench.corpora import CORPORA  # noqa: E402
from zeroarchive.encoding import decode_body, detect_encoding  # noqa: E402
from zeroarchive.parser import PARSER_VERSION, parse_snapshot  # noqa: E402
from zeroarchive.parser.generic import main_text, readability_text  # noqa: E402

BENCHMARK = CORPORA / "extraction-benchmark-dev"
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


def extraction() -> dict[str, dict[str, float]]:
    truth = json.loads((BENCHMARK / "ground-truth_subset.json").read_text(encoding="utf-8"))
    pages = {}
    for key in truth:
        raw = gzip.decompress((BENCHMARK / "html" / f"{key}.html.gz").read_bytes())
        pages[key] = decode_body(raw, detect_encoding(raw))
    extractors: dict[str, Callable[[str], str]] = {
        "zeroarchive": lambda html: main_text(html)[1],
        "readability-lxml": lambda html: readability_text(html)[1],
        "trafilatura": lambda html: trafilatura.extract(html) or "",
    }
    results = {}
    for name, extract in extractors.items():
        started = time.perf_counter()
        scores = [tp_fp_fn(truth[key]["articleBody"], extract(html)) for key, html in pages.items()]
        results[name] = {**metrics(scores), "seconds": time.perf_counter() - started}
    return results


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
    print(f"parser {PARSER_VERSION}; extraction-benchmark-dev (60 pages), evaluate.py method")
    for name, m in extraction().items():
        print(
            f"  {name:<18} precision={m['precision']:.4f} recall={m['recall']:.4f} "
            f"F1={m['f1']:.4f}  ({m['seconds']:.1f} s)"
        )
    right, total, wrong, _ = date_accuracy()
    print(f"published_at on tw-news expected.json: {right}/{total} right")
    for line in wrong:
        print(f"  wrong: {line}")
    count, seconds = throughput()
    print(f"whole generic parse: {count} pages in {seconds:.1f} s = {count / seconds:.1f} pages/s")


if __name__ == "__main__":
    main()
