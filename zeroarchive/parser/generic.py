"""Generic article pages: title, main text, dates, links and metadata.

The main text is where readability-lxml and trafilatura agree (bench/extraction.py measured
this against either alone): readability's blocks that trafilatura also kept, or trafilatura's
text when it holds all of readability's and more, unless the more is mostly the text of links
or other items outside the headline's element. Where the two disagree, the page's own
evidence (``evidence``: its description, where its headline sits) decides, not which
extractor proposed a text. Promotion boxes (paywall, subscription, newsletter, cookie,
pop-ups: ``boxes``) are taken out of the page first, and calls to act left at the end of the
text after it, so a lead above a paywall is the body.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from zoneinfo import ZoneInfo

import lxml.etree
import lxml.html
import trafilatura
from lxml.html import HtmlElement
from readability import Document

from zeroarchive.core.encoding import decode_body
from zeroarchive.core.errors import ParseError
from zeroarchive.core.items import Parsed
from zeroarchive.parser.boxes import drop_boxes, is_prompt, strip_prompts
from zeroarchive.parser.dates import modified_at, published_at
from zeroarchive.parser.evidence import (
    HeadlinePlace,
    PageEvidence,
    described,
    described_block,
    linked_share,
    page_evidence,
    squeeze,
)
from zeroarchive.parser.listing import listing_links
from zeroarchive.parser.metadata import PageMetadata, page_metadata, split_keywords
from zeroarchive.parser.readable import readability_text
from zeroarchive.parser.sections import continued_sections
from zeroarchive.parser.text import element_text, hashtags, link_urls

# Chinese and Japanese are written without spaces: each Han or kana character is a token of
# its own, or a whole sentence would be one "word" and no shingle of two extractors' texts
# would match (Korean puts spaces between words).
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN_RE = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")
_SHINGLE = 4
# Below this share of readability's shingles in trafilatura's text the two picked different
# parts of the page, and readability's choice is kept whole.
_AGREEMENT = 0.5
_CONTAINED = 0.9
_LINE_KEPT = 0.5
# Where trafilatura's text holds readability's and more, and at least this share of the more
# is the text of the page's links, the more is a stream of other stories or a menu (on the
# tuning and benchmark pages: 0.40-0.84 where readability's text was right, 0.00-0.14 where
# trafilatura's was).
_LINKED_EXTRA = 0.3
# Characters (spaces left out) of a run of readability's lines between confirmed ones that is
# kept though trafilatura's text leaves it out: bylines, captions and comment counts are
# shorter.
_INNER_SECTION = 200
# ... made of lines each this long: a kicker, a credit or a "More information:" is shorter
# (captions are told by the page's figure and caption elements, or by being there twice).
_INNER_LINE = 20
# Characters (spaces left out) of one line of readability's, between confirmed ones, that ends
# the sentence the line before it left open and is kept though trafilatura's text leaves it
# out: the rest of a paragraph after a line break or a code sample (tuning pages: 72 and 102).
_SENTENCE_REST = 40
# What a sentence, or a quotation closing one, ends with.
_SENTENCE_END = tuple('。．！？!?.」』）)”"')
# Characters (spaces left out) of a run of trafilatura's lines between shared ones that is
# added to readability's: such runs that were the article's on the tuning and benchmark pages
# (link lists, footnotes) had 92-596, those that were not (headings such as "DON'T MISS",
# a game's console commands, a changelog's bullets) at most 65.
_INNER_RUN = 80
# ... which brings at least this many word 4-grams (or Han and kana 4-grams) of its own: 80
# characters are 12 or more English words, 80 Chinese or Japanese tokens.
_INNER_RUN_NEW = 8
# A text holding less than this of the page's own description took another block; one
# holding this much or more of it took the article.
_UNDESCRIBED = 0.5
_DESCRIBED = 0.8
_NO_EVIDENCE = PageEvidence()


@lru_cache(maxsize=64)
def shingles(text: str, n: int = _SHINGLE) -> frozenset[tuple[str, ...]]:
    """The word n-grams of ``text`` (the extraction benchmark's unit of comparison).

    >>> sorted(shingles("a b c d e", 4))
    [('a', 'b', 'c', 'd'), ('b', 'c', 'd', 'e')]
    >>> shingles("a b", 4)
    frozenset({('a', 'b')})
    >>> sorted(shingles("林義雄宣布", 4))
    [('林', '義', '雄', '宣'), ('義', '雄', '宣', '布')]
    """
    # Cached: main_text asks for a text's shingles twice (``agree``, then ``combine``).
    tokens = _TOKEN_RE.findall(text)
    if len(tokens) < n:
        return frozenset([tuple(tokens)] if tokens else [])
    # The n-grams made by zip in C: a slice and a tuple per token in Python cost a third of
    # the combination's time.
    return frozenset(zip(*(tokens[i:] for i in range(n)), strict=False))


def combine(
    readable: str,
    extracted: str,
    evidence: PageEvidence = _NO_EVIDENCE,
    place: HeadlinePlace | None = None,
) -> str:
    """Readability's text cut down to what trafilatura's text confirms.

    >>> body = "Body one two three four five six seven eight nine ten."
    >>> combine(body + "\\nShare on Facebook now please", body)
    'Body one two three four five six seven eight nine ten.'
    >>> combine(body, "")
    'Body one two three four five six seven eight nine ten.'

    Where readability took a paywall's box and trafilatura the lead, the lead is the body:

    >>> box, lead = "この記事は会員限定です。続きをお読みください。", "首相は新たな対策を発表した。"
    >>> combine(box, lead) == lead
    True

    Where one of the two holds the page's own description and the other none of it, the
    one that holds it took the article (a short item beside a longer stream):

    >>> item, stream = "首相は新たな経済対策を発表した。", "別の記事の見出しと要約がここに並ぶ。"
    >>> evidence = PageEvidence(descriptions=("首相は新たな経済対策を発表した。",))
    >>> combine(stream, item, evidence) == item
    True
    """
    chosen = _combined(readable, extracted, evidence, place)
    score = described(chosen, evidence)
    if score is not None and score < _UNDESCRIBED:
        for other in (extracted, readable):
            # A site's own blurb in a footer describes no article: the other text must lie
            # no farther from the headline (as near: a lead and the box under it, 2 levels).
            if (described(other, evidence) or 0.0) >= _DESCRIBED and (
                place is None or place.as_close(other, chosen)
            ):
                return other
    return chosen


def _combined(
    readable: str,
    extracted: str,
    evidence: PageEvidence,
    place: HeadlinePlace | None,
) -> str:
    ours, theirs = shingles(readable), shingles(extracted)
    if not ours:
        return extracted
    if not theirs:
        return readable
    common = len(ours & theirs)
    if common / len(ours) >= _CONTAINED and common / len(theirs) < 0.8:
        # trafilatura's text holds readability's and more: the more is the article's (a long
        # body readability cut short) unless it is mostly the text of links.
        extra = [
            line
            for line in extracted.split("\n")
            if (mine := shingles(line)) and len(mine & ours) / len(mine) < _LINE_KEPT
        ]
        if (
            linked_share(extra, evidence.linked) >= _LINKED_EXTRA
            and linked_share(readable.split("\n"), evidence.linked) < _LINKED_EXTRA
        ):
            # Unless readability's text is links as well: a listing, whose more is more of it.
            return readable
        # Nor when the more lies outside the element that holds the headline and
        # readability's text, in items of its own (the next stories under a short item).
        container = place.container(readable) if place is not None else None
        if container is not None and place is not None:
            inside = sum(len(squeeze(line)) for line in extra if squeeze(line) in container)
            outside = sum(len(squeeze(line)) for line in extra) - inside
            if outside > inside and place.in_other_items(extra) >= 0.5:
                return readable
        return extracted
    if common / len(ours) < _AGREEMENT or common / len(theirs) < _AGREEMENT:
        # The two took different parts of the page: readability's, unless its part is a
        # call to act (a paywall or newsletter box that outweighed a short lead).
        if all(is_prompt(line) for line in readable.split("\n")):
            return extracted
        # Or where only trafilatura's part is in the element that holds the headline (a
        # sidebar's teaser beside a short item).
        if (
            place is not None
            and place.container(readable) is None
            and place.container(extracted) is not None
        ):
            return extracted
        # Or where readability's part is the article's header (its headline, byline, date
        # and tags) or as short as one (a comment box's stub), and trafilatura's a longer text
        # under the same headline.
        if (
            place is not None
            and place.is_header(readable)
            and len(squeeze(extracted)) > len(squeeze(readable))
            and place.container(extracted)
        ):
            return extracted
        return readable
    joined = " ".join(_TOKEN_RE.findall(extracted))
    lines = readable.split("\n")
    confirmed = []
    for line in lines:
        mine = shingles(line)
        confirmed.append(
            not mine
            or len(mine & theirs) / len(mine) >= _LINE_KEPT
            or " ".join(_TOKEN_RE.findall(line)) in joined
        )
    for i in range(1, len(lines) - 1):
        if (
            not confirmed[i]
            and confirmed[i - 1]
            and confirmed[i + 1]
            and _sentence_rest(lines[i - 1], lines[i], evidence)
        ):
            confirmed[i] = True
    kept = []
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) and confirmed[end] == confirmed[start]:
            end += 1
        run = lines[start:end]
        if confirmed[start] or _inner_section(run, evidence, start > 0 and end < len(lines)):
            kept += run
        start = end
    if place is not None:
        _insert_inner_runs(kept, extracted, ours, place)
    return "\n".join(kept)


def _insert_inner_runs(
    kept: list[str], extracted: str, ours: frozenset, place: HeadlinePlace
) -> None:
    """Put into ``kept`` (readability's lines) the runs of trafilatura's lines that
    readability's text leaves out, where such a run lies between lines both texts hold, in
    the element that holds the headline, and is long enough to be the article's (a list of
    links in a post, footnotes, a code listing), each after the line it follows in
    trafilatura's text."""
    if len(shingles(extracted) - ours) < _INNER_RUN_NEW:
        # Too little of trafilatura's text is new for a run that long (most pages): its
        # lines are not split and compared, a hundredth of a parse.
        return
    lines = extracted.split("\n")
    shared = [
        not (mine := shingles(line)) or len(mine & ours) / len(mine) >= _LINE_KEPT for line in lines
    ]
    anchors = [i for i, line in enumerate(lines) if shared[i] and shingles(line)]
    if not anchors or not kept:
        return
    run: list[str] = []
    for i in range(anchors[0], anchors[-1] + 1):
        if not shared[i]:
            run.append(lines[i])
            continue
        if (
            run
            and sum(len(squeeze(line)) for line in run) >= _INNER_RUN
            and place.container(" ".join(run)) is not None
        ):
            before = shingles(lines[i - len(run) - 1])
            at = max(range(len(kept)), key=lambda k: len(shingles(kept[k]) & before))
            kept[at + 1 : at + 1] = run
        run = []


def _sentence_rest(before: str, line: str, evidence: PageEvidence) -> bool:
    """Whether ``line``, which trafilatura's text leaves out, ends the sentence that the line
    ``before`` it left open: the second part of a paragraph split by a line break, an
    inline figure or a code sample, not a caption, a credit or a link.

    >>> rest = "100万，投资回报可能是400万或者更多，从社会的总体效益来看，这个投入是值得的。"
    >>> _sentence_rest("例如国家财政在粮食生产上投入", rest, _NO_EVIDENCE)
    True
    >>> _sentence_rest("这是一件利国利民的好事情。", rest, _NO_EVIDENCE)
    False
    """
    rest = squeeze(line)
    return (
        len(rest) >= _SENTENCE_REST
        and not squeeze(before).endswith(_SENTENCE_END)
        and rest.endswith(_SENTENCE_END)
        and rest not in evidence.captions
        and linked_share([line], evidence.linked) < _LINKED_EXTRA
        and not is_prompt(line)
    )


def _inner_section(run: list[str], evidence: PageEvidence, inside: bool) -> bool:
    """Whether lines of readability's text that trafilatura's leaves out are the article's
    all the same: a long stretch of prose between lines both confirm (a section, a day of a
    diary, a table trafilatura skipped), not a byline, a figure's caption or a row of links."""
    sizes = [len(squeeze(line)) for line in run]
    return (
        inside
        and min(sizes) >= _INNER_LINE
        and sum(sizes) >= _INNER_SECTION
        and len(set(run)) == len(run)
        and not any(squeeze(line) in evidence.captions for line in run)
        and linked_share(run, evidence.linked) < _LINKED_EXTRA
        and not all(is_prompt(line) for line in run)
    )


def article_text(tree: HtmlElement, meta: PageMetadata | None = None) -> tuple[str, list[str]]:
    """(main text, hrefs in it) of a parsed page, which loses its scripts, styles and
    promotion boxes on the way (its metadata ``meta`` is read first when not given)."""
    if meta is None:
        meta = page_metadata(tree, "")
    # Out once, before the extractors would each copy and walk them to take them out again;
    # the dates read scripts in the page's ``html``.
    lxml.etree.strip_elements(tree, "script", "style", with_tail=False)
    drop_boxes(tree)
    return main_text(tree, page_evidence(tree, meta))


def trafilatura_text(page: str | HtmlElement, fast: bool = False) -> str:
    """trafilatura's text; ``fast`` skips its own comparison with its readability port and
    jusText (two fifths of its time)."""
    return trafilatura.extract(page, favor_precision=True, include_comments=False, fast=fast) or ""


def agree(readable: str, extracted: str) -> bool:
    """Whether ``combine`` keeps the lines of readability's text that trafilatura's confirms:
    the two took mostly the same part of the page, and neither holds the other and more."""
    ours, theirs = shingles(readable), shingles(extracted)
    if not ours or not theirs:
        return False
    common = len(ours & theirs)
    if common / len(ours) >= _CONTAINED and common / len(theirs) < 0.8:
        return False
    return common / len(ours) >= _AGREEMENT and common / len(theirs) >= _AGREEMENT


def main_text(
    page: str | HtmlElement, evidence: PageEvidence = _NO_EVIDENCE
) -> tuple[str, list[str]]:
    """(main text, hrefs in readability's main text) of a page or of its parsed tree.

    trafilatura runs fast first; where its text and readability's disagree (a page in
    five of the benchmark's and CJK pages) it runs again in full, with its own comparison,
    and the combination is made of that: the same text as the full run alone, at less cost.
    """
    readable, hrefs = readability_text(page)
    extracted = trafilatura_text(page, fast=True)
    if not agree(readable, extracted):
        extracted = trafilatura_text(page)
    place = HeadlinePlace(page, evidence.title) if isinstance(page, HtmlElement) else None
    text = combine(readable, extracted, evidence, place)
    if isinstance(page, HtmlElement) and (described(readable, evidence) or 1.0) < _UNDESCRIBED:
        # readability took a block without the page's own description: where the element
        # holding that description is shorter than the text chosen, it is the article and
        # the rest a longer neighbour (a short item above a stream of other stories).
        block = described_block(page, evidence, _DESCRIBED)
        if block is not None:
            found = element_text(block)
            if (
                len(found) < len(text)
                and (described(found, evidence) or 0.0) >= _DESCRIBED
                and place is not None
                and place.closer(found, text)
            ):
                text = found
    if isinstance(page, HtmlElement):
        # The block the text ends in may be the first of several sections (a heading, then
        # a block of the same template): the article goes on in them.
        text = continued_sections(page, text)
    return strip_prompts(text), hrefs


# Without comments and processing instructions, as trafilatura parses a page for itself: with
# them its text differed on 23 of the 138 benchmark and CJK pages, without them on 2 (pages
# it refused to parse as HTML itself, and now reads: CJK tuning part 0.9231 -> 0.9403).
_TREE_PARSER = lxml.html.HTMLParser(
    remove_comments=True, remove_pis=True, collect_ids=False, default_doctype=False
)
# Every element an HtmlElement, chosen in C: lxml.html's own lookup is a Python call for
# every element the parsers touch (8% of a parse), to give form elements classes of their
# own that no step here uses.
_TREE_PARSER.set_element_class_lookup(
    lxml.etree.ElementDefaultClassLookup(
        element=HtmlElement,
        comment=lxml.html.HtmlComment,
        pi=lxml.html.HtmlProcessingInstruction,
        entity=lxml.html.HtmlEntity,
    )
)


def page_tree(html: str) -> HtmlElement:
    """The page parsed once, for the metadata, readability, trafilatura and the dates."""
    return lxml.html.document_fromstring(html, parser=_TREE_PARSER)


def parse_generic(raw: bytes, encoding: str, url: str, tz: ZoneInfo) -> Parsed:
    html = decode_body(raw, encoding)
    if not html.strip():
        raise ParseError("empty page")
    try:
        tree = page_tree(html)
    except (ValueError, lxml.etree.ParserError) as exc:
        raise ParseError(f"not HTML: {exc}") from exc
    meta = page_metadata(tree, url)
    text, hrefs = article_text(tree, meta)
    metadata = meta.as_dict()
    items = listing_links(tree, meta, text)
    if items is not None:
        # A section or tag page fetched as an article: no body (not its items' headlines
        # run together), its items' links kept, and said so.
        text, hrefs = "", items
        metadata["listing"] = {"items": len(items)}
    title = _title(meta, tree) or _readability_title(html)
    keywords = split_keywords(
        meta.all("keywords", "news_keywords") + _jsonld_list(meta, "keywords")
    )
    tags = tuple(dict.fromkeys(meta.all("article:tag") + _jsonld_list(meta, "articleSection")))
    return Parsed(
        canonical_url=meta.canonical or meta.first("og:url") or url,
        title=title,
        text=text,
        language=meta.language,
        published_at=published_at(meta, tree, html, url, text, tz),
        modified_at=modified_at(meta, tz),
        author=_author(meta),
        hashtags=hashtags(text),
        urls=link_urls(hrefs, url),
        keywords=keywords,
        tags=tags,
        metadata=metadata,
    )


_TITLE_SEPARATOR_RE = re.compile(r"\s*[|｜]\s*|\s+[-–—_»]\s+")
_ALL_SPACE_RE = re.compile(r"\s+")


def title_from(candidates: list[str], headings: list[str]) -> str:
    """The headline: the part of a declared title (site names cut off) that the page also
    shows as a heading, else the longest part of the first declared title.

    >>> title_from(["Meth campaign | News | The Hill"], ["The Hill", "Meth campaign"])
    'Meth campaign'
    >>> title_from(["自由電子報 - 果汁？啤酒？難分 「飲誘」青少年"], [])
    '果汁？啤酒？難分 「飲誘」青少年'
    """
    segments = [
        part.strip()
        for title in candidates
        for part in [title, *_TITLE_SEPARATOR_RE.split(title)]
        if part.strip()
    ]
    by_key: dict[str, str] = {}
    for part in segments:
        by_key.setdefault(_ALL_SPACE_RE.sub("", part), part)
    shown = [by_key[key] for h in headings if (key := _ALL_SPACE_RE.sub("", h)) in by_key]
    if shown:
        # Site and section names are headings too, and shorter than headlines.
        return max(shown, key=len)
    if not candidates:
        return ""
    parts = [p.strip() for p in _TITLE_SEPARATOR_RE.split(candidates[0].strip()) if p.strip()]
    return max(parts, key=len) if parts else ""


def _title(meta: PageMetadata, tree: HtmlElement) -> str:
    candidates = []
    headline = meta.jsonld_value("headline")
    if isinstance(headline, str):
        candidates.append(headline)
    candidates += [meta.first("og:title", "twitter:title") or "", tree.findtext(".//title") or ""]
    candidates = [c.strip() for c in candidates if c and c.strip()]
    headings = [h.text_content() for h in tree.xpath("//h1 | //h2")]
    return title_from(candidates, headings)


def _readability_title(html: str) -> str:
    # Parses the page again, so only for the few pages that declare no usable title.
    return str(Document(html).short_title()).strip()


def _author(meta: PageMetadata) -> str | None:
    value = meta.jsonld_value("author")
    names = [v.get("name") if isinstance(v, dict) else v for v in _as_list(value)]
    clean = [n.strip() for n in names if isinstance(n, str) and n.strip()]
    if clean:
        return ", ".join(dict.fromkeys(clean))
    return meta.first("author", "article:author", "dable:author", "parsely-author")


def _as_list(value: object) -> list[object]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _jsonld_list(meta: PageMetadata, key: str) -> list[str]:
    values: Iterable[object] = _as_list(meta.jsonld_value(key))
    return [v for v in values if isinstance(v, str)]
