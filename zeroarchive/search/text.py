"""Text as the search sees it: NFKC-normalised, case folded, whitespace collapsed, and cut
into runs — CJK runs (matched as contiguous strings) and word runs (matched whole).

The same functions normalise what is indexed, what is queried and what is checked, so the
three always agree.
"""

from __future__ import annotations

import functools
import operator
import re
import unicodedata

#: Han, kana, Hangul and Bopomofo: written without spaces, matched as contiguous strings.
CJK = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c"
    "\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31bf\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003134f"
)
#: A character of a word run: a letter, digit or underscore that is not CJK.
WORD = rf"[^\W{CJK}]"
RUN = re.compile(rf"[{CJK}]+|{WORD}+")
_CJK_RUN = re.compile(rf"[{CJK}]+")
_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """``text`` NFKC-normalised, case folded, every run of whitespace one space.

    >>> normalize("Ｔａｉｗａｎ  海峽\\nＡＢＣ")
    'taiwan 海峽 abc'
    """
    return " ".join(_fold(text).split())


@functools.lru_cache(maxsize=1 << 16)
def _fold_char(char: str) -> str:
    # NFKC turns a few characters (e.g. U+3000's relatives) into spaces.
    return _SPACE.sub(" ", _fold(char))


@functools.cache
def _nfkc_table() -> list[int | str]:
    """What each BMP character becomes alone under NFKC (itself, as its code, when NFKC
    keeps it): a list, which ``str.translate`` reads 2.5x faster than a dict."""
    table: list[int | str] = list(range(0x10000))
    for code in range(0x10000):
        if 0xD800 <= code < 0xE000:
            continue
        folded = unicodedata.normalize("NFKC", chr(code))
        if folded != chr(code):
            table[code] = folded
    return table


def _nfkc(text: str) -> str:
    """NFKC, fast for most texts: character by character through a table (C speed),
    which is the answer whenever its result is normalised (it is then the normal form of
    a string equivalent to ``text``); the whole normalisation otherwise."""
    if unicodedata.is_normalized("NFKC", text):
        return text
    mapped = text.translate(_nfkc_table())
    if unicodedata.is_normalized("NFKC", mapped):
        return mapped
    return unicodedata.normalize("NFKC", text)


def _fold(text: str) -> str:
    folded = _nfkc(text).casefold()
    # Folding case can undo NFKC (a few characters fold to non-normalised ones): again.
    if not unicodedata.is_normalized("NFKC", folded):
        folded = unicodedata.normalize("NFKC", folded)
    return folded


def fold_with_origins(text: str) -> tuple[str, list[int]]:
    """``text`` folded character by character as ``normalize`` folds it whole (the same
    but where NFKC composes across characters), and for each character of the result the
    index in ``text`` (after NFC) it came from — to mark a match in the original text.

    >>> fold_with_origins("Ａ  ß")
    ('a ss', [0, 1, 3, 3])
    """
    text = unicodedata.normalize("NFC", text)
    out: list[str] = []
    origins: list[int] = []
    space = False
    for index, char in enumerate(text):
        if char.isspace():
            if not space and out:
                out.append(" ")
                origins.append(index)
            space = True
            continue
        space = False
        folded = _fold_char(char)
        out.append(folded)
        origins.extend([index] * len(folded))
    result = "".join(out)
    if result.endswith(" "):
        result = result[:-1]
        origins.pop()
    return result, origins


def nfc(text: str) -> str:
    """The form of ``text`` whose indexes ``fold_with_origins`` reports."""
    return unicodedata.normalize("NFC", text)


def runs(folded: str) -> list[str]:
    """The CJK runs and word runs of normalised text, in order.

    >>> runs("covid-19疫苗 c++ 台")
    ['covid', '19', '疫苗', 'c', '台']
    """
    return RUN.findall(folded)


def is_cjk(run: str) -> bool:
    return bool(_CJK_RUN.fullmatch(run))


#: A token for the punctuation or symbols between two runs (and between title and body).
SEPARATOR = "\ue000"
#: A token for a space between a CJK run and a word run (none between two of one kind: a
#: space there is implied by the tokens themselves).
CJK_SPACE = "\ue001"
#: Word runs are indexed up to this many characters (engines' keys have a size limit).
MAX_TOKEN = 64


#: What ``index_text`` takes in one step: a CJK run, a word run cut at ``MAX_TOKEN``, or
#: words one space apart (their tokens as written: one step for many words).
_PIECE = re.compile(
    rf"([{CJK}]+)|({WORD}{{{MAX_TOKEN}}}){WORD}+"
    rf"|{WORD}{{1,{MAX_TOKEN}}}(?!{WORD})(?: {WORD}{{1,{MAX_TOKEN}}}(?!{WORD}))*"
)


def index_text(folded: str) -> str:
    """The tokens an index holds for normalised text, one space apart: each word run
    whole, each CJK run as its overlapping pairs of characters and its last character
    alone, and what stands between runs where the runs alone do not tell it (punctuation,
    a space between CJK and a word) — so a query's string of runs and spaces is a phrase
    of tokens, found in exactly the texts that hold it.

    >>> index_text("在台灣 vaccine, 台灣x")
    '在台 台灣 灣 \ue001 vaccine \ue000 台灣 灣 x'
    """
    parts: list[str] = []
    end = 0
    last_cjk = False
    for found in _PIECE.finditer(folded):
        start = found.start()
        cjk = found.group(1)
        if start != end and parts:
            if not folded[end:start].isspace():
                parts.append(SEPARATOR)
            elif (cjk is not None) != last_cjk:
                parts.append(CJK_SPACE)
        if cjk is not None:
            parts.extend(map(operator.add, cjk, cjk[1:]))
            parts.append(cjk[-1])
        else:
            parts.append(found.group(2) or found.group())
        end, last_cjk = found.end(), cjk is not None
    return " ".join(parts)


def index_document(title: str, body: str) -> str:
    """What an index holds for a publication: its tokens, one space apart (the title's and
    the body's apart, so no phrase runs from one into the other)."""
    return f"{index_text(normalize(title))} {SEPARATOR} {index_text(normalize(body))}"


def phrase_tokens(form: str) -> tuple[tuple[str, ...], bool] | None:
    """The tokens a text's index holds wherever the normalised ``form`` occurs in it, and
    whether the last is a prefix (a lone CJK character, the start of a pair); None when
    the tokens cannot tell (the form has punctuation or symbols, a word too long, or a lone
    CJK character at the end of a longer form): only the text can.

    >>> phrase_tokens("台灣 海峽")
    (('台灣', '灣', '海峽'), False)
    >>> phrase_tokens("台")
    (('台',), True)
    >>> phrase_tokens("bnt疫苗"), phrase_tokens("covid-19")
    ((('bnt', '疫苗'), False), None)
    """
    found = list(RUN.finditer(form))
    if not found or found[0].start() != 0 or found[-1].end() != len(form):
        return None
    tokens: list[str] = []
    for number, match in enumerate(found):
        run, cjk = match.group(), is_cjk(match.group())
        if number:
            gap = form[found[number - 1].end() : match.start()]
            if gap and not gap.isspace():
                return None
            if gap and cjk != is_cjk(found[number - 1].group()):
                tokens.append(CJK_SPACE)
        if not cjk:
            if len(run) > MAX_TOKEN:
                return None
            tokens.append(run)
            continue
        tokens.extend(map(operator.add, run, run[1:]))
        # A run inside the form ends where the text's run ends; the last may go on.
        if number < len(found) - 1:
            tokens.append(run[-1])
        elif len(run) == 1:
            if tokens:
                return None
            return (run,), True
    return tuple(tokens), False
