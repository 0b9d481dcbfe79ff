"""The MariaDB engine: a Mroonga table with a FULLTEXT index — Groonga inside the server,
so every query is answered through the index, never with a LIKE scan.

The table holds each document's normalised text keyed by document id (``search_doc``),
compressed (zlib: Mroonga indexes only what it stores, and the text is in ``publication``
already), written (``mroonga_text``) so that Groonga's TokenBigram with NormalizerAuto
cuts it into the tokens of ``text.index_text``, SQLite's (the tokens themselves, stored
instead, took 1.4x the room: bench/README.md). Queries run in boolean mode with
``*D+`` (terms ANDed), every phrase quoted, so nothing in a query is Groonga syntax; match
escalation (Groonga's fallback to looser matching when nothing matches exactly) is off.
Each document ends with filter tokens (parser version, site, article, older), so Groonga
filters, counts and ranks a search without MariaDB reading its rows (about 30-60 us each,
the compressed text with them). The parser's hook writes Mroonga's rows after the
commits, many at once; writes are put back when a transaction rolls back.
"""

from __future__ import annotations

import json
import logging
import re
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Integer,
    Text,
    bindparam,
    column,
    event,
    func,
    select,
    table,
    text,
    tuple_,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.sql import ColumnElement, FromClause

from zeroarchive.search.index import (
    MAX_TOTAL,
    Doc,
    Found,
    Hits,
    IndexUnavailable,
    SearchRequest,
    SharedSearch,
    new_doc_ids,
    read_docs,
    site_doc_ids,
)
from zeroarchive.search.plan import Phrase, Plan, TermPlan, has_prefix, only_prefixes
from zeroarchive.search.reindex import whole_rebuild_pending
from zeroarchive.search.text import (
    CJK,
    CJK_SPACE,
    MAX_TOKEN,
    SEPARATOR,
    WORD,
    is_cjk,
    normalize,
)
from zeroarchive.storage.publications import AddedVersion
from zeroarchive.storage.schema import publication, search_doc

TABLE = "publication_search"
#: MariaDB's error for a function it does not know.
NO_SUCH_FUNCTION = 1305
REBUILDING = (
    "the search index is being rebuilt (scrapy reindex): search again when it has "
    "finished; a stopped reindex goes on when run again"
)
INSTALL_HINT = (
    "MariaDB has no Mroonga: apt-get install mariadb-plugin-mroonga, then as root "
    "INSTALL SONAME 'ha_mroonga' and CREATE FUNCTION mroonga_command RETURNS STRING "
    "SONAME 'ha_mroonga.so'; then run scrapy reindex"
)
COMMAND_HINT = (
    "MariaDB's Mroonga has no mroonga_command: as root CREATE FUNCTION mroonga_command "
    "RETURNS STRING SONAME 'ha_mroonga.so'"
)
CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
    " doc_id BIGINT NOT NULL PRIMARY KEY,"
    " body LONGTEXT NOT NULL COMMENT 'flags \"COLUMN_SCALAR|COMPRESS_ZLIB\"',"
    " date BIGINT NOT NULL,"
    " article_id BIGINT NOT NULL,"
    " version INT NOT NULL,"
    f" FULLTEXT INDEX ft_{TABLE} (body)"
    ' COMMENT \'tokenizer "TokenBigram", normalizer "NormalizerAuto"\''
    ") ENGINE=Mroonga DEFAULT CHARSET=utf8mb4"
)
# A deleted publication's search_doc row goes by a trigger (0012); its tokens with it, or
# the filter tokens would still count it.
FORGET = (
    "CREATE TRIGGER IF NOT EXISTS search_doc_forget AFTER DELETE ON search_doc"
    f" FOR EACH ROW DELETE FROM {TABLE} WHERE doc_id = OLD.doc_id"
)
_fts = table(
    TABLE,
    column("doc_id"),
    column("body", Text),
    column("date", BigInteger),
    column("article_id", BigInteger),
    column("version", Integer),
)
#: Between two CJK runs a space apart: Groonga leaves out of a query's tokens the lone
#: last character of a run followed by more (it keeps its position), so "台灣 海峽" would
#: also find "台灣海峽" without a token of its own between the two.
CJK_BREAK = "\ue002"
#: CJK characters that Groonga 7's NormalizerAuto types as symbols, each a token of its
#: own where ``index_text`` pairs it (Hangul conjoining jamo, 々〆〇, Hangzhou numerals,
#: kana repeat marks): found by tokenizing every CJK character ``normalize`` keeps. Written
#: as private-use characters, paired as the rest (a run never holds one of its own).
_SYMBOL_LIKE = (
    (0x1100, 0x1159),
    (0x115F, 0x11A2),
    (0x11A8, 0x11F9),
    (0x3005, 0x3007),
    (0x3021, 0x3029),
    (0x3031, 0x3035),
    (0x303B, 0x303C),
)
_PRIVATE = {
    code: 0xE100 + number
    for number, code in enumerate(c for low, high in _SYMBOL_LIKE for c in range(low, high + 1))
}
#: Word runs Groonga keeps whole (letters or digits alone, ASCII: its normaliser leaves
#: them as they are); any other is spelled in letters (``_spelled``).
_PLAIN = re.compile(r"[a-z]+|[0-9]+")
#: What ``mroonga_text`` takes in one step: a CJK run; plain words one space apart; any
#: other word run.
_PIECE = re.compile(
    rf"([{CJK}]+)"
    rf"|((?:[a-z]{{1,{MAX_TOKEN}}}|[0-9]{{1,{MAX_TOKEN}}})(?!{WORD})"
    rf"(?: (?:[a-z]{{1,{MAX_TOKEN}}}|[0-9]{{1,{MAX_TOKEN}}})(?!{WORD}))*)"
    rf"|({WORD}+)"
)
_HEX_LETTERS = str.maketrans("0123456789abcdef", "abcdefghijklmnop")
#: Mroonga's pragma that ANDs a boolean-mode query's terms.
AND = "*D+ "
#: Groonga adds 1 to a document's score for each query term it holds: a filter token too.
FILTER_SCORE = 1
#: An --all-versions search reads the older versions that hold the query (about 30 us a
#: row); past this many it is left to SQL.
MAX_OLDER = 20_000
#: In a connection's ``info``: the documents its transaction wrote to Mroonga, whose
#: writes are not undone by a rollback (Groonga has no transactions).
TOUCHED = "zeroarchive.search.mroonga.touched"
#: In a connection's ``info``: the documents its transaction indexed for the parser's
#: hook (``index_version``), whose Mroonga rows are written once it commits, many at once:
#: a Mroonga statement costs the server about 1 ms besides its rows (bench/README.md).
PENDING = "zeroarchive.search.mroonga.pending"
#: Per engine, documents committed and not yet written to Mroonga (by ``flush``).
_DUE: weakref.WeakKeyDictionary[Engine, set[int]] = weakref.WeakKeyDictionary()
#: Documents due before the hook writes them (a parse run's end writes the rest).
FLUSH_EVERY = 500
#: Engines whose commits and rollbacks are watched for them.
_WATCHED: weakref.WeakSet[Engine] = weakref.WeakSet()
logger = logging.getLogger(__name__)
#: Databases whose table is known to be there (each search asks; SHOW ENGINES is not free).
_READY: set[str] = set()


def create_table(conn: Connection) -> str | None:
    """Create the Mroonga table if it is missing; None, or why it cannot be."""
    engines = {row[0].lower() for row in conn.execute(text("SHOW ENGINES"))}
    if "mroonga" not in engines:
        return INSTALL_HINT
    try:
        conn.execute(text("SELECT mroonga_command('status')"))
    except DBAPIError as exc:
        if exc.orig is not None and exc.orig.args[:1] == (NO_SUCH_FUNCTION,):
            return COMMAND_HINT
        raise
    conn.execute(text(CREATE))
    conn.execute(text(FORGET))
    return None


def _keys_disabled(conn: Connection) -> bool:
    shown = conn.execute(text(f"SHOW INDEX FROM {TABLE}")).mappings().all()
    return any("disabled" in (row.get("Comment") or "") for row in shown)


def _enable_keys(conn: Connection) -> None:
    """Enable the index if a compaction (``compact``) was stopped between its two steps;
    not while a whole rebuild is pending (it builds the index when it ends)."""
    if _keys_disabled(conn) and not whole_rebuild_pending(conn):
        conn.execute(text(f"ALTER TABLE {TABLE} ENABLE KEYS"))


def _spelled(kind: str, value: str) -> str:
    """``value`` as one token Groonga keeps whole: letters after "ÿ" and ``kind`` (a
    letter past p, so that no two kinds share a token).

    >>> _spelled("w", "c++"), _spelled("w", "19世")
    ('ÿwgdclcl', 'ÿwdbdjoelijg')
    """
    return f"ÿ{kind}" + value.encode().hex().translate(_HEX_LETTERS)


def mroonga_text(folded: str) -> str:
    """What Mroonga stores for normalised text, for Groonga's TokenBigram (with its
    NormalizerAuto) to cut into the tokens of ``text.index_text`` (with ``CJK_BREAK``
    between CJK runs a space apart, and its own spellings of some characters and words):
    the runs a space apart, and the marks between them where the runs do not tell.

    >>> mroonga_text("在台灣 vaccine, 台灣x 々 covid19")
    '在台灣 \\ue001 vaccine \\ue000 台灣 x \\ue001 \\ue1f0 \\ue001 ÿwgdgphggjgedbdj'
    """
    parts: list[str] = []
    end = 0
    last_cjk = False
    for found in _PIECE.finditer(folded):
        start = found.start()
        cjk, plain = found.group(1), found.group(2)
        if start != end and parts:
            if not folded[end:start].isspace():
                parts.append(SEPARATOR)
            elif (cjk is not None) != last_cjk:
                parts.append(CJK_SPACE)
            elif cjk is not None:
                parts.append(CJK_BREAK)
        if cjk is not None:
            parts.append(cjk.translate(_PRIVATE))
        elif plain is not None:
            parts.append(plain)
        else:
            parts.append(_word(found.group(3)[:MAX_TOKEN]))
        end, last_cjk = found.end(), cjk is not None
    return " ".join(parts)


def _word(word: str) -> str:
    return word if _PLAIN.fullmatch(word) else _spelled("w", word)


def _mark(kind: str, *values: object) -> str:
    """A filter token: "q" parser version, "r" site, "s" article, "t" older ("u", a date,
    is no longer written)."""
    return _spelled(kind, "/".join(map(str, values)))


def mroonga_document(doc: Doc, latest: bool) -> str:
    """The document's text (``mroonga_text``), and its filter tokens: its parser version,
    its site, its article (to ask which of some articles' latest versions hold a query),
    and, unless it is its article's latest version, an "older" mark: the latest are found
    by excluding the few older ones (Groonga takes 4-5 ms per 100,000 documents to
    intersect with a token most documents hold, far less to exclude a rare one). Dates
    are filtered by the table's ``date`` column (``_date_filter``); an index built before
    that also holds date tokens, no longer asked for."""
    marks = (
        f"{_mark('q', doc.parser_version)} {_mark('r', doc.site_id)}"
        f" {_mark('s', doc.parser_version, doc.article_id)}"
    )
    if not latest:
        marks += " " + _mark("t")
    title, body = mroonga_text(normalize(doc.title)), mroonga_text(normalize(doc.text))
    return f"{title} {SEPARATOR} {body} {SEPARATOR} {marks}"


def query_text(tokens: Sequence[str]) -> str:
    """The string Groonga cuts into a phrase's tokens (``text.phrase_tokens``), as it
    cuts a query: a CJK run's pairs written as the run, and its last character left out
    when more follows (Groonga leaves it out too; its position stays).

    >>> query_text(("台灣", "灣", "海峽", "\\ue001", "covid19"))
    '台灣 \\ue002 海峽 \\ue001 ÿwgdgphggjgedbdj'
    >>> query_text(("台", "台灣"))
    '台 \\ue002 台灣'
    """
    parts: list[str] = []
    open_run = False  # the last part is a CJK run whose next pair may follow
    last_cjk = False
    for token in tokens:
        if not is_cjk(token):
            parts.append(token if token in (SEPARATOR, CJK_SPACE) else _word(token))
            open_run = last_cjk = False
            continue
        token = token.translate(_PRIVATE)
        if open_run and token[0] == parts[-1][-1]:
            if len(token) == 2:
                parts[-1] += token[1]
            else:
                open_run = False  # the run's last character
            continue
        if last_cjk:
            parts.append(CJK_BREAK)
        parts.append(token)
        open_run, last_cjk = len(token) == 2, True
    return " ".join(parts)


def _quoted(token: str) -> str:
    return '"' + token.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _phrase(phrase: Phrase) -> str:
    # A lone CJK character as a prefix; everything else quoted (no quote in query_text).
    if phrase.prefix:
        return phrase.tokens[0].translate(_PRIVATE) + "*"
    return '"' + query_text(phrase.tokens) + '"'


def _term(term: TermPlan) -> str:
    return "(" + " OR ".join("(" + " ".join(map(_phrase, f)) + ")" for f in term) + ")"


def mroonga_query(engine_plan: Plan, filters: Sequence[str] = ()) -> str:
    """The boolean-mode query for a plan (and ``filters``, more terms), its prefixes last:
    Groonga 7 searches whatever follows a prefix (``台*``) as a prefix too (``"ab"`` then
    finds ``abc``; a phrase of several tokens then nothing).

    >>> from zeroarchive.search.plan import plan
    >>> from zeroarchive.search.query import parse_query
    >>> mroonga_query(plan(parse_query('台 "台灣海峽" NEAR -covid -灣')))
    '*D+ (("台灣海峽")) (("near")) -(("covid")) ((台*)) -((灣*))'
    """
    positive = list(engine_plan.positive)
    mixed = [term for term in positive if has_prefix(term) and not only_prefixes(term)]
    if mixed:  # only in a superset plan (plan.py): one such term at most, or none
        positive = [term for term in positive if term not in mixed] or mixed[:1]
        positive = [tuple(sorted(t, key=lambda form: form[0].prefix)) for t in positive]
    parts = [_term(t) for t in positive if not only_prefixes(t)] + list(filters)
    parts += ["-" + _term(t) for t in engine_plan.excluded if not only_prefixes(t)]
    parts += [_term(t) for t in positive if only_prefixes(t)]
    parts += ["-" + _term(t) for t in engine_plan.excluded if only_prefixes(t)]
    return AND + " ".join(parts)


class MroongaIndex(SharedSearch):
    name = "mariadb-mroonga"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._recovered = False
        if engine not in _WATCHED:
            _WATCHED.add(engine)
            event.listen(engine, "commit", _committed)
            event.listen(engine, "rollback", _rolled_back)

    def available(self) -> str | None:
        key = str(self.engine.url)
        if key in _READY:
            return None
        with self.engine.begin() as conn:
            missing = create_table(conn)
            if missing is None:
                _enable_keys(conn)
        if missing is None:
            _READY.add(key)
        return missing

    def index_version(self, conn: Connection, added: AddedVersion) -> None:
        """``search_doc`` now, in the version's transaction; Mroonga's rows after it commits
        (``flush``), those of many versions in one statement."""
        if not self._recovered:
            self._recover()
        docs = read_docs(conn, publication.c.publication_id == added.publication_id)
        if not docs:
            return
        new, old, changed = new_doc_ids(conn, docs)
        # search_doc's trigger has deleted the old documents' rows: put back on a rollback.
        _touch(conn, old.values())
        conn.info.setdefault(PENDING, set()).update(new.values(), old.values(), changed)
        if len(_DUE.get(self.engine, ())) >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        """Write the committed documents' Mroonga rows as ``search_doc`` has them now."""
        due = _DUE.pop(self.engine, None)
        if not due:
            return
        try:
            with self.engine.begin() as conn:
                resync(conn, sorted(due))
        except SQLAlchemyError:
            _DUE.setdefault(self.engine, set()).update(due)
            raise

    def _recover(self) -> None:
        """Write the rows a process stopped before it flushed them (killed after a commit):
        the documents newer than Mroonga's newest (ids only grow), and the other versions
        of their articles, whose latest marks changed with them. Once per index object,
        before it first indexes a version."""
        doc = search_doc.c
        with self.engine.begin() as conn:
            newest = conn.execute(select(func.max(_fts.c.doc_id))).scalar() or 0
            lost = select(doc.article_id, doc.parser_version).where(doc.doc_id > newest)
            missing = conn.execute(
                select(doc.doc_id).where(
                    tuple_(doc.article_id, doc.parser_version).in_(lost.distinct())
                )
            ).scalars()
            resync(conn, sorted(missing))
        self._recovered = True

    def search(self, request: SearchRequest) -> Hits:
        self.flush()  # this process's own versions are found as soon as they commit
        try:
            return super().search(request)
        except DBAPIError:
            with self.engine.connect() as conn:
                if _keys_disabled(conn):
                    raise IndexUnavailable(REBUILDING) from None
            raise

    def _prepare(self, conn: Connection) -> None:
        # Else a query nothing matches exactly is searched again loosely ("ab" finds "abc").
        conn.execute(text("SET SESSION mroonga_match_escalation_threshold = -1"))

    def _add(self, conn: Connection, docs: Sequence[tuple[int, Doc, bool]]) -> None:
        _touch(conn, [doc_id for doc_id, _, _ in docs])
        conn.execute(
            _fts.insert(),
            [_row(doc_id, d, latest) for doc_id, d, latest in docs],
        )

    def _relabel(self, conn: Connection, doc_ids: set[int]) -> None:
        _touch(conn, doc_ids)
        marks = conn.execute(
            select(search_doc.c.publication_id, search_doc.c.doc_id, search_doc.c.latest).where(
                search_doc.c.doc_id.in_(sorted(doc_ids))
            )
        ).all()
        docs = {
            d.publication_id: d
            for d in read_docs(conn, publication.c.publication_id.in_([m[0] for m in marks]))
        }
        conn.execute(
            _fts.update().where(_fts.c.doc_id == bindparam("doc")).values(body=bindparam("body")),
            [
                {"doc": m.doc_id, "body": mroonga_document(docs[m.publication_id], m.latest)}
                for m in marks
                if m.publication_id in docs
            ],
        )

    def _fast(
        self, conn: Connection, request: SearchRequest, engine_plan: Plan
    ) -> tuple[list[Found], int] | None:
        """Filtered inside the index (its filter tokens; dates by Groonga's ``date``
        column), and Groonga's own select counts the latest versions and ranks the first
        page of them in one statement, without MariaDB reading a row of the table. With
        --all-versions, see ``_all_versions``."""
        filters = _other_versions(conn, request.parser_version)
        if request.site_ids:
            sites = " OR ".join(_quoted(_mark("r", s)) for s in request.site_ids)
            filters.insert(0, f"({sites})")
        dates = _date_filter(request.since, request.until)
        if request.all_versions:
            found = self._all_versions(conn, request, engine_plan, filters, dates)
            if found is None:
                return None
            ranked, total = found
        else:
            total, rows = _select(
                conn,
                mroonga_query(engine_plan, [*filters, "-" + _quoted(_mark("t"))]),
                "_key,_score,date",
                _sortby(request),
                offset=request.offset,
                limit=request.limit,
                where=dates,
            )
            ranked = [(float(score), date, doc_id) for doc_id, score, date in rows]
        if total == 0:
            return [], 0
        publications = dict(
            conn.execute(
                select(search_doc.c.doc_id, search_doc.c.publication_id).where(
                    search_doc.c.doc_id.in_([doc_id for _, _, doc_id in ranked])
                )
            ).all()
        )
        found_page = [
            Found(publications[doc_id], round(score, 6))
            for score, _, doc_id in ranked
            if doc_id in publications
        ]
        return found_page, total

    def _all_versions(
        self,
        conn: Connection,
        request: SearchRequest,
        engine_plan: Plan,
        filters: list[str],
        dates: str,
    ) -> tuple[list[tuple[float, int, int]], int] | None:
        """The page of (score, date, document id) and the total of an --all-versions
        search: each article once, by its latest version if that holds the query, else by
        its newest older version that does (scored as a latest version's: one filter token
        less). The total is Groonga's count of the articles of every version that holds
        it (of the latest versions alone, when that is past ``MAX_TOTAL`` already). The
        older versions that hold it are read (a tenth of the hits in bench/search.py;
        None, for SQL, past ``MAX_OLDER``), and only those that would rank on the page are
        asked whether their article's latest version holds it too (asking for all, by
        article token, took 10 ms per 1,000 at 1,000,000)."""
        count, older = _select(
            conn,
            mroonga_query(engine_plan, [*filters, _quoted(_mark("t"))]),
            "_key,_score,date,article_id,version",
            limit=MAX_OLDER,
            where=dates,
        )
        if count > MAX_OLDER:
            return None
        end = request.offset + request.limit
        total, rows = _select(
            conn,
            mroonga_query(engine_plan, [*filters, "-" + _quoted(_mark("t"))]),
            "_key,_score,date",
            _sortby(request),
            limit=end,
            where=dates,
        )
        # Each latest hit is an article of its own: past the cap, no more counting.
        if older and total <= MAX_TOTAL:
            total = _articles(conn, mroonga_query(engine_plan, filters), dates)
        newest: dict[int, tuple[int, tuple[float, int, int]]] = {}  # article: version, hit
        for doc_id, score, date, article_id, version in older:
            if article_id not in newest or version > newest[article_id][0]:
                newest[article_id] = (version, (float(score) - FILTER_SCORE, date, doc_id))
        article_of = {hit[2]: article_id for article_id, (_, hit) in newest.items()}
        older_ids = {row[0] for row in older}
        latest = {doc_id for doc_id, _, _ in rows}
        ranked = sorted(
            [(float(score), date, doc_id) for doc_id, score, date in rows]
            + [hit for _, hit in newest.values()],
            key=(lambda r: (-r[0], -r[1], -r[2]))
            if request.sort == "relevance"
            else (lambda r: (-r[1], -r[2])),
        )
        page: list[tuple[float, int, int]] = []
        checked: dict[int, bool] = {}  # older hit: whether it counts (its latest does not)
        for position, hit in enumerate(ranked):
            if len(page) == end:
                break
            if hit[2] in latest:
                page.append(hit)
                continue
            if hit[2] not in checked:
                ask = [h[2] for h in ranked[position:] if h[2] not in latest]
                ask = ask[: end - len(page)]
                held = self._latest_hold(
                    conn,
                    engine_plan,
                    request.parser_version,
                    dates,
                    [article_of[d] for d in ask],
                    older_ids,
                )
                checked.update((d, article_of[d] not in held) for d in ask)
            if checked[hit[2]]:
                page.append(hit)
        return page[request.offset :], total

    def _latest_hold(
        self,
        conn: Connection,
        engine_plan: Plan,
        parser_version: str,
        dates: str,
        articles: list[int],
        older: set[int],
    ) -> set[int]:
        """Which of these articles' latest versions hold the query (of ``dates``): the
        documents of their article tokens that hold it and are not ``older`` ones (asking
        for the latest mark cost as much again)."""
        tokens = " OR ".join(_quoted(_mark("s", parser_version, a)) for a in articles)
        # The article tokens first: Groonga intersects from the left, and a token most
        # documents hold cost 6 ms per 100,000 documents after them, 150 ms before them.
        query = mroonga_query(engine_plan).removeprefix(AND)
        _, held = _select(conn, f"({tokens}) {query}", "_key,article_id", where=dates)
        return {article_id for doc_id, article_id in held if doc_id not in older}

    def begin_rebuild(self) -> None:
        # Groonga keeps its index up to date document by document at three times the
        # server's work of building it once from all of them (bench/README.md).
        with self.engine.begin() as conn:
            conn.execute(text(f"ALTER TABLE {TABLE} DISABLE KEYS"))

    def compact(self) -> None:
        # Groonga's index, updated document by document, holds 2.3x the space it needs
        # (bench/README.md); disabled and enabled again it is built anew in one pass.
        with self.engine.begin() as conn:
            conn.execute(text(f"ALTER TABLE {TABLE} DISABLE KEYS"))
            conn.execute(text(f"ALTER TABLE {TABLE} ENABLE KEYS"))

    def _forget(self, conn: Connection, docs: Sequence[tuple[int, Doc]]) -> None:
        _touch(conn, [doc_id for doc_id, _ in docs])
        conn.execute(_fts.delete().where(_fts.c.doc_id.in_([doc_id for doc_id, _ in docs])))

    def clear(self, conn: Connection, site_id: int | None = None) -> None:
        if site_id is None:
            conn.execute(text(f"TRUNCATE TABLE {TABLE}"))
            conn.execute(search_doc.delete())
            return
        docs = [doc for doc, _ in site_doc_ids(conn, site_id)]
        for start in range(0, len(docs), 1000):
            chunk = docs[start : start + 1000]
            _touch(conn, chunk)
            conn.execute(_fts.delete().where(_fts.c.doc_id.in_(chunk)))
            conn.execute(search_doc.delete().where(search_doc.c.doc_id.in_(chunk)))

    def matched(self, plan: Plan, scored: bool) -> FromClause:
        # MariaDB's dialect spells match() MATCH (body) AGAINST (... IN BOOLEAN MODE).
        against = _fts.c.body.match(mroonga_query(plan))
        columns: list[ColumnElement[Any]] = [_fts.c.doc_id]
        if scored:
            columns.append(against.label("score"))
        return select(*columns).select_from(_fts).where(against).subquery("matched")


def _row(doc_id: int, doc: Doc, latest: bool) -> dict[str, Any]:
    """The Mroonga row of a document."""
    return {
        "doc_id": doc_id,
        "body": mroonga_document(doc, latest),
        "date": doc.date,
        "article_id": doc.article_id,
        "version": doc.version,
    }


def _other_versions(conn: Connection, parser_version: str) -> list[str]:
    """Filters that leave out the documents of other parser versions: their tokens in
    Groonga's lexicon, each excluded (none after a reindex). Asking for this version's
    token instead costs as much as it has documents: about 45 ms at 1,000,000 (Groonga
    intersects a token's every posting)."""
    tokens = f'_key @^ "{_mark("q", "")}"'  # every parser version's: "ÿq" and the version
    arguments = ["table", f"{TABLE}#ft_{TABLE}", "filter", tokens]
    arguments += ["output_columns", "_key", "limit", "-1"]
    _, _columns, *keys = _select_command(conn, arguments)[0]
    mine = _mark("q", parser_version)
    return ["-" + _quoted(key) for (key,) in keys if key != mine]


def _sortby(request: SearchRequest) -> str:
    """Groonga's sort keys for a request's order (recency breaks ties)."""
    return "-_score,-date,-_key" if request.sort == "relevance" else "-date,-_key"


def _articles(conn: Connection, query: str, where: str) -> int:
    """How many articles have a document the query finds (Groonga's drilldown)."""
    options = ["output_columns", "_key", "limit", "0", "drilldown", "article_id"]
    options += ["drilldown_limit", "0", "drilldown_output_columns", "_key"]
    _, ((articles,), *_) = _groonga(conn, query, where, options)
    return int(articles)


def _date_filter(since: int | None, until: int | None) -> str:
    """Groonga's filter script for ``[since, until)`` of the documents' ``date`` column
    (as SQL filters ``search_doc.date``), or "" for no bound.

    >>> _date_filter(86400, None), _date_filter(None, 5), _date_filter(None, None)
    ('date >= 86400', 'date < 5', '')
    """
    bounds = []
    if since is not None:
        bounds.append(f"date >= {int(since)}")
    if until is not None:
        bounds.append(f"date < {int(until)}")
    return " && ".join(bounds)


def _select(
    conn: Connection,
    query: str,
    columns: str,
    sortby: str = "",
    offset: int = 0,
    limit: int = -1,
    where: str = "",
) -> tuple[int, list[list[Any]]]:
    """How many documents a boolean-mode query (``mroonga_query``) finds, of those that
    pass ``where`` (a Groonga filter script, of no user input), and ``columns`` of
    ``limit`` of them (-1: all) from ``offset`` in the order of ``sortby``."""
    options = ["output_columns", columns, "offset", str(offset), "limit", str(limit)]
    if sortby:
        options += ["sortby", sortby]
    ((count,), _columns, *rows), *_ = _groonga(conn, query, where, options)
    return int(count), rows


def _groonga(conn: Connection, query: str, where: str, options: list[str]) -> list[Any]:
    """Groonga's own select (``mroonga_command``) over the table, its answer. One
    statement: Groonga counts the matches as it finds them and sorts only for the page,
    where a MATCH takes one statement to count (MariaDB stepping through every match)
    and another to rank, each finding them anew (bench/README.md). Parsed as Mroonga
    parses a MATCH in boolean mode (terms ANDed, a leading NOT allowed, no match
    escalation)."""
    arguments = ["table", TABLE, "match_columns", "body", "query", query.removeprefix(AND)]
    arguments += ["query_flags", "ALLOW_LEADING_NOT", "match_escalation_threshold", "-1"]
    arguments += options
    if where:
        arguments += ["filter", where]
    return _select_command(conn, arguments)


def _select_command(conn: Connection, arguments: list[str]) -> list[Any]:
    """Groonga's answer to ``select`` with these arguments, through ``mroonga_command``;
    its cache of answers is not used (an answer may outlive a write)."""
    answer = conn.execute(
        select(func.mroonga_command("select", *arguments, "cache", "no"))
    ).scalar_one()
    return list(json.loads(answer))


def _touch(conn: Connection, doc_ids: Iterable[int]) -> None:
    conn.info.setdefault(TOUCHED, set()).update(doc_ids)


def _committed(conn: Connection) -> None:
    conn.info.pop(TOUCHED, None)
    pending = conn.info.pop(PENDING, None)
    if pending:
        _DUE.setdefault(conn.engine, set()).update(pending)


def _rolled_back(conn: Connection) -> None:
    """Before a rollback: put the documents the transaction wrote back as the database
    will be after it — on another connection, which sees what was committed."""
    conn.info.pop(PENDING, None)  # never written
    touched = conn.info.pop(TOUCHED, None)
    if not touched:
        return
    try:
        with conn.engine.begin() as other:
            resync(other, sorted(touched))
    except SQLAlchemyError as exc:
        logger.warning("Search index not put back after a rollback (%s): run scrapy reindex", exc)


def resync(conn: Connection, doc_ids: list[int]) -> None:
    """Make these documents in Mroonga what ``search_doc`` and the publications say: gone
    without a ``search_doc`` row, else written anew with its mark (latest or older)."""
    doc = search_doc.c
    for start in range(0, len(doc_ids), 1000):
        chunk = doc_ids[start : start + 1000]
        marks = {
            row.publication_id: (row.doc_id, row.latest)
            for row in conn.execute(
                select(doc.publication_id, doc.doc_id, doc.latest).where(doc.doc_id.in_(chunk))
            )
        }
        conn.execute(_fts.delete().where(_fts.c.doc_id.in_(chunk)))
        if not marks:
            continue
        rows = [
            _row(marks[d.publication_id][0], d, marks[d.publication_id][1])
            for d in read_docs(conn, publication.c.publication_id.in_(list(marks)))
        ]
        if rows:
            conn.execute(_fts.insert(), rows)
