"""Adding one article's body to the copy index: its fingerprint, its candidates, the
exact check of each, and its cluster.

A body's candidates are the articles that share an LSH band key with it; each is a copy
when the exact containment of their shingles (the share of the smaller set the other
holds, each body without its own site's boilerplate) reaches ``min_similarity``. The body
joins the cluster of its copies; copies in two clusters merge them into the older one
(the smaller id), and copies in none make a new one. A cluster's ``first`` is its member
first seen; each member's similarity is its containment against the first.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sqlalchemy.engine import Connection

from zeroarchive.copies import store
from zeroarchive.copies.fingerprint import (
    BINS,
    MIN_SHINGLES,
    Folded,
    agreement,
    band_keys,
    body,
    containment,
    edge_blocks,
    fold,
    fold_many,
    keys_from_bytes,
    line_blocks,
    shingles,
    sketch,
    sketch_bytes,
    sketch_from_bytes,
)
from zeroarchive.copies.store import Doc

#: Bins a candidate must agree on to be checked exactly: the ``ROWS`` of the band it
#: shares and ``MIN_AGREEMENT - ROWS`` of the 51 others. A copy cut to a third agrees on 17
#: of them on average, and one a fifth as long as the other on 10 (fewer than 4 once in 50);
#: two articles that share a sentence on 1 or 2: most such candidates cost no body read.
MIN_AGREEMENT = 7
#: Clustered articles of a site read and folded at once when its boilerplate grows.
_RECHECK_BATCH = 500
#: Shingle sets kept per index object (a cluster's first is checked against each newcomer).
_CACHE = 4096
#: Lines whose being boilerplate the hook keeps noted (``CopyIndex._known``; ~100 bytes each).
_KNOWN = 500_000


@dataclass(frozen=True)
class CopiesConfig:
    """``COPIES_*`` settings."""

    #: Containment at or above which two bodies are copies.
    min_similarity: float = 0.8
    #: A line at either end of articles is a site's boilerplate once this many had it.
    boilerplate_articles: int = 5
    #: Articles per transaction of ``scrapy copies --rebuild``.
    rebuild_batch: int = 500

    def __post_init__(self) -> None:
        if not 0 < self.min_similarity <= 1:
            raise ValueError(
                f"COPIES_MIN_SIMILARITY must be above 0 and at most 1, not {self.min_similarity}"
            )
        if self.boilerplate_articles < 2:
            raise ValueError(
                "COPIES_BOILERPLATE_ARTICLES must be 2 or more (a line on one article is "
                f"its own), not {self.boilerplate_articles}"
            )
        if self.rebuild_batch < 1:
            raise ValueError(f"COPIES_REBUILD_BATCH must be 1 or more, not {self.rebuild_batch}")

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | Any) -> CopiesConfig:
        return cls(
            min_similarity=float(settings.get("COPIES_MIN_SIMILARITY", cls.min_similarity)),
            boilerplate_articles=int(
                settings.get("COPIES_BOILERPLATE_ARTICLES", cls.boilerplate_articles)
            ),
            rebuild_batch=int(settings.get("COPIES_REBUILD_BATCH", cls.rebuild_batch)),
        )


class CopyIndex:
    """Adds bodies to the copy tables of one archive (on the caller's connection)."""

    def __init__(self, config: CopiesConfig | None = None) -> None:
        self.config = config or CopiesConfig()
        self._shingles: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()
        # The short lines' hashes of the bodies this object folded (they do not depend on
        # the boilerplate): a site's recheck reads only the bodies it has not folded.
        self._lines: OrderedDict[tuple[int, int], frozenset[int]] = OrderedDict()
        # Each site's boilerplate as last read whole (a rebuild's); a line that becomes
        # boilerplate through this object's learning drops its site's (other writers'
        # lines show on a new object).
        self._boilerplate: dict[int, frozenset[int]] = {}
        # The hook's: by site, whether each short line asked about is boilerplate (only the
        # lines of the bodies it folds are asked, with the statements it makes anyway where
        # it can: a site's whole boilerplate is a scan of all its ``copy_block`` rows).
        self._known: dict[int, dict[int, bool]] = {}
        self._known_lines = 0

    def boilerplate(self, conn: Connection, site_id: int) -> frozenset[int]:
        found = self._boilerplate.get(site_id)
        if found is None:
            found = store.boilerplate(conn, site_id, self.config.boilerplate_articles)
            self._boilerplate[site_id] = found
        return found

    def recheck_site(self, conn: Connection, site_id: int, blocks: set[int]) -> None:
        """Add again the site's clustered articles that hold one of ``blocks``, lines that
        have just become its boilerplate: the copies those lines alone made are none.
        (Only the few articles that counted a line towards boilerplate were fingerprinted
        with it: each body after them is fingerprinted without it.)"""
        self._shingles.clear()
        docs = store.clustered(conn, site_id)
        # Their bodies read and folded a batch at a time (one statement, one fold_many);
        # of those whose lines are known, only the ones that hold such a line.
        for start in range(0, len(docs), _RECHECK_BATCH):
            batch = [
                doc
                for doc in docs[start : start + _RECHECK_BATCH]
                if not blocks.isdisjoint(
                    self._lines.get((doc.article_id, doc.publication_id), blocks)
                )
            ]
            texts = store.publication_texts(conn, [doc.publication_id for doc in batch])
            folded = fold_many([texts.get(doc.publication_id, "") for doc in batch])
            for doc, one in zip(batch, folded, strict=True):
                text = texts.get(doc.publication_id)
                if text is not None and not blocks.isdisjoint(
                    self._note_lines(doc.article_id, doc.publication_id, one)
                ):
                    self.add(
                        conn,
                        doc.article_id,
                        site_id,
                        doc.publication_id,
                        text,
                        doc.first_seen_at,
                        learn=False,
                    )

    def shingles_of(
        self, conn: Connection, site_id: int, folded: Folded, lines: frozenset[int]
    ) -> np.ndarray:
        """The body's shingles without the lines its site has as boilerplate (``lines``:
        its short lines' hashes, ``line_blocks``)."""
        self._ask(conn, {site_id: lines})
        known = self._known.get(site_id, {})
        return shingles(body(folded, {line for line in lines if known.get(line)}))

    def _unknown(self, site_id: int, lines: Collection[int]) -> list[int]:
        known = self._known.get(site_id, {})
        return [line for line in lines if line not in known]

    def _mark(self, site_id: int, lines: Collection[int], boilerplate: Collection[int]) -> None:
        """Note which of ``lines`` are the site's boilerplate (``boilerplate``: those that
        are); the notes are dropped all at once past ``_KNOWN``."""
        if self._known_lines + len(lines) > _KNOWN:
            self._known.clear()
            self._known_lines = 0
        known = self._known.setdefault(site_id, {})
        before = len(known)
        known.update((line, line in boilerplate) for line in lines)
        self._known_lines += len(known) - before

    def _ask(self, conn: Connection, lines: Mapping[int, Collection[int]]) -> None:
        """Ask which of the sites' lines not noted yet are boilerplate, in one statement."""
        unknown = {site: self._unknown(site, some) for site, some in lines.items()}
        unknown = {site: some for site, some in unknown.items() if some}
        if not unknown:
            return
        found = store.boilerplate_among(conn, unknown, self.config.boilerplate_articles)
        for site, some in unknown.items():
            self._mark(site, some, {block for other, block in found if other == site})

    def add(
        self,
        conn: Connection,
        article_id: int,
        site_id: int,
        publication_id: int,
        text: str,
        seen_at: int,
        learn: bool = True,
        now: int | None = None,
        first_seen: int | None = None,
    ) -> None:
        """Fingerprint and cluster an article's body (its latest version, seen at
        ``seen_at``; ``first_seen``: when the article was first seen, if the caller knows).
        ``learn``: count its edge lines towards the site's boilerplate, once per article (a
        rebuild counts them first). A body too short to compare is left out."""
        folded = fold(text)
        lines = self._note_lines(article_id, publication_id, folded)
        # Which of its lines are its site's boilerplate, asked with its row.
        unknown = self._unknown(site_id, lines)
        asked_lines = (site_id, unknown, self.config.boilerplate_articles) if unknown else None
        old, first_snapshot, among = store.doc_and_first_snapshot(conn, article_id, asked_lines)
        self._mark(site_id, unknown, among)
        # Its edge lines counted now; which of them that makes the site's boilerplate is
        # asked with its candidates (one statement), those taken as if none did: the rare
        # body that makes one rechecks the site and asks for its candidates again.
        blocks = edge_blocks(folded) if learn and old is None else set()
        if blocks:
            store.count_blocks(conn, {(site_id, block): 1 for block in blocks})
        asked = (site_id, blocks, self.config.boilerplate_articles) if blocks else None
        mine = self.shingles_of(conn, site_id, folded, lines)
        keys: list[int] = []
        found = store.Sharing({}, {}, set())
        if len(mine) >= MIN_SHINGLES:
            values = sketch(mine)
            keys = band_keys(values).tolist()
            found = store.sharing_docs(conn, keys, article_id, asked)
        elif asked is not None:
            found = store.Sharing({}, {}, store.reached(conn, *asked))
        if found.reached:
            self._boilerplate.pop(site_id, None)
            self._mark(site_id, found.reached, found.reached)
            self.recheck_site(conn, site_id, found.reached)
            mine = self.shingles_of(conn, site_id, folded, lines)
            found = store.Sharing({}, {}, set())
            if len(mine) >= MIN_SHINGLES:
                values = sketch(mine)
                keys = band_keys(values).tolist()
                found = store.sharing_docs(conn, keys, article_id)
        old_keys = keys_from_bytes(old.bands) if old is not None else []
        if len(mine) < MIN_SHINGLES:
            if old is not None:
                store.drop_bands(conn, article_id, old_keys)
                self._leave(conn, old)
                store.drop_doc(conn, article_id)
            return
        self._remember(article_id, publication_id, mine)
        # A new version's band rows: only those that changed are written.
        kept = set(keys) & set(old_keys)
        store.drop_bands(conn, article_id, [key for key in old_keys if key not in kept])
        store.add_bands(conn, article_id, [key for key in keys if key not in kept])
        if first_seen is None:
            first_seen = min(first_snapshot, seen_at) if first_snapshot else seen_at
        if old is not None:
            first_seen = min(first_seen, old.first_seen_at)
        doc = Doc(
            article_id,
            publication_id,
            site_id,
            first_seen,
            folded.script,
            sketch_bytes(values),
            old.cluster_id if old is not None else None,
            old.similarity if old is not None else None,
        )
        if old is not None:
            store.put_doc(conn, doc, replace=True)
        # A new article's row is written once its cluster is known (``unwritten``): an
        # INSERT then an UPDATE of its cluster were two statements and two writes of each
        # of ``copy_doc``'s indexes.
        self._place(
            conn,
            doc,
            mine,
            found,
            int(time.time()) if now is None else now,
            unwritten=old is None,
        )

    def _place(
        self,
        conn: Connection,
        doc: Doc,
        mine: np.ndarray,
        found: store.Sharing,
        now: int,
        unwritten: bool = False,
    ) -> None:
        """Check the candidates exactly, then put the article in its cluster (``unwritten``:
        its ``copy_doc`` row is written here, with its cluster)."""
        copies = self._copies(conn, mine, _near(doc, found.docs))
        firsts = {
            cluster: found.docs[first]
            for cluster, first in found.firsts.items()
            if first in found.docs
        }
        self._cluster(conn, doc, copies, now, firsts, doc if unwritten else None)

    def _copies(self, conn: Connection, mine: np.ndarray, near: Sequence[Doc]) -> list[Doc]:
        """Those of the near candidates that are copies: every one in no cluster, and of
        each cluster's only as many as it takes to find one copy (the body joins that
        cluster whichever member it copies: checking the others changes nothing), the
        member first seen first (the cluster's first, if near: its shingles are needed
        next). Each round's bodies are read in one statement."""
        least = self.config.min_similarity
        alone: list[Doc] = []
        queues: dict[int, list[Doc]] = {}
        for other in sorted(near, key=lambda one: (one.first_seen_at, one.article_id)):
            if other.cluster_id is None:
                alone.append(other)
            else:
                queues.setdefault(other.cluster_id, []).append(other)
        copies: list[Doc] = []
        found: set[int] = set()
        step = alone + [queue.pop(0) for queue in queues.values()]
        while step:
            self._read(conn, step)
            for other in step:
                if containment(mine, self._doc_shingles(conn, other)) >= least:
                    copies.append(other)
                    if other.cluster_id is not None:
                        found.add(other.cluster_id)
            step = [
                queue.pop(0) for cluster, queue in queues.items() if queue and cluster not in found
            ]
        return copies

    def _note_lines(self, article_id: int, publication_id: int, folded: Folded) -> frozenset[int]:
        """The body's short lines' hashes (``line_blocks``), kept for a site's recheck."""
        key = (article_id, publication_id)
        found = self._lines[key] = frozenset(line_blocks(folded))
        self._lines.move_to_end(key)
        while len(self._lines) > _CACHE:
            self._lines.popitem(last=False)
        return found

    def _remember(self, article_id: int, publication_id: int, value: np.ndarray) -> None:
        self._shingles[(article_id, publication_id)] = value
        self._shingles.move_to_end((article_id, publication_id))
        while len(self._shingles) > _CACHE:
            self._shingles.popitem(last=False)

    def _read(self, conn: Connection, docs: Sequence[Doc]) -> None:
        """The shingles of those of ``docs`` not at hand, their bodies read in one statement
        (one each on MariaDB was a round trip per candidate or member), which of their lines
        are boilerplate in one more."""
        missing = [
            doc for doc in docs if (doc.article_id, doc.publication_id) not in self._shingles
        ]
        if len(missing) < 2:
            return
        texts = store.publication_texts(conn, [doc.publication_id for doc in missing])
        folded = fold_many([texts.get(doc.publication_id, "") for doc in missing])
        lines = [
            self._note_lines(doc.article_id, doc.publication_id, one)
            for doc, one in zip(missing, folded, strict=True)
        ]
        asked: dict[int, set[int]] = {}
        for doc, some in zip(missing, lines, strict=True):
            if doc.publication_id in texts:
                asked.setdefault(doc.site_id, set()).update(some)
        self._ask(conn, asked)
        for doc, one, some in zip(missing, folded, lines, strict=True):
            value = (
                np.empty(0, np.uint32)
                if doc.publication_id not in texts
                else self.shingles_of(conn, doc.site_id, one, some)
            )
            self._remember(doc.article_id, doc.publication_id, value)

    def _doc_shingles(self, conn: Connection, doc: Doc) -> np.ndarray:
        key = (doc.article_id, doc.publication_id)
        found = self._shingles.get(key)
        if found is not None:
            self._shingles.move_to_end(key)
            return found
        text = store.publication_text(conn, doc.publication_id)
        value = np.empty(0, np.uint32)
        if text is not None:
            folded = fold(text)
            lines = self._note_lines(doc.article_id, doc.publication_id, folded)
            value = self.shingles_of(conn, doc.site_id, folded, lines)
        self._remember(doc.article_id, doc.publication_id, value)
        return value

    def _cluster(
        self,
        conn: Connection,
        doc: Doc,
        copies: list[Doc],
        now: int,
        firsts: Mapping[int, Doc],
        unwritten: Doc | None,
    ) -> None:
        """``firsts``: the rows of clusters' firsts at hand (a cluster's first named in
        ``copy_cluster`` is its member first seen); ``unwritten``: ``doc``, when its row
        is not written yet."""
        if not copies:
            if unwritten is not None:
                store.put_doc(conn, unwritten, replace=False)
            if doc.cluster_id is not None:
                self._leave(conn, doc)
            return
        clusters = {other.cluster_id for other in copies if other.cluster_id is not None}
        if doc.cluster_id is not None and doc.cluster_id not in clusters:
            self._leave(conn, doc)
        if clusters:
            keep, named = min(clusters), None
            store.move_members(conn, clusters - {keep}, keep)
        else:
            keep, named = store.new_cluster(conn, doc.article_id, now), doc.article_id
        joining = [doc] + [other for other in copies if other.cluster_id is None]
        self._settle(
            conn,
            keep,
            full=len(clusters) > 1,
            joining=joining,
            named=named,
            named_row=firsts.get(keep) if len(clusters) == 1 else None,
            unwritten=unwritten,
        )

    def _settle(
        self,
        conn: Connection,
        cluster_id: int,
        full: bool,
        joining: Sequence[Doc] = (),
        named: int | None = None,
        named_row: Doc | None = None,
        unwritten: Doc | None = None,
    ) -> None:
        """Name the cluster's first and fill in its members' similarity to it: every
        member's when the first changed (or clusters merged), else the new members'.
        ``joining``: members that join it now, written with their similarity in one
        statement each (their cluster, then their similarity, were two); ``named``: the
        first of a cluster just made by them (none of its members is written yet);
        ``named_row``: the row of the first the cluster names, when at hand: if every joining
        member was seen after it, it stays the first and no other member is read;
        ``unwritten``: a joining member whose row is not written yet (it is inserted with
        its cluster and similarity)."""
        if named is None:
            if (
                named_row is not None
                and not full
                and named_row.cluster_id == cluster_id
                and all(
                    (member.first_seen_at, member.article_id)
                    > (named_row.first_seen_at, named_row.article_id)
                    for member in joining
                )
            ):
                present, named = [named_row], named_row.article_id
            else:
                present, named = store.cluster_docs(conn, cluster_id)
        else:
            present = []
        new = {member.article_id: replace(member, similarity=None) for member in joining}
        members = sorted(
            [member for member in present if member.article_id not in new] + list(new.values()),
            key=lambda member: (member.first_seen_at, member.article_id),
        )
        first = members[0]
        if named != first.article_id:
            store.set_first(conn, cluster_id, first.article_id)
            full = True
        self._read(
            conn,
            [
                member
                for number, member in enumerate(members)
                if number == 0 or full or member.similarity is None
            ],
        )
        reference = self._doc_shingles(conn, first)
        changed = []
        for member in members:
            if member.article_id == first.article_id:
                similarity = 1.0
            elif full or member.similarity is None:
                similarity = round(containment(reference, self._doc_shingles(conn, member)), 4)
            else:
                continue
            if similarity != member.similarity or member.cluster_id != cluster_id:
                changed.append((member.article_id, cluster_id, similarity))
        if unwritten is not None:
            mine = [row for row in changed if row[0] == unwritten.article_id]
            changed = [row for row in changed if row[0] != unwritten.article_id]
            if mine:
                unwritten = replace(unwritten, cluster_id=mine[0][1], similarity=mine[0][2])
            store.put_doc(conn, unwritten, replace=False)
        if len(changed) == 1:
            store.set_membership(conn, *changed[0])
        elif changed:
            store.set_memberships(conn, changed)

    def _leave(self, conn: Connection, doc: Doc) -> None:
        """Take the article out of its cluster; a cluster left with one member is gone."""
        cluster_id = doc.cluster_id
        if cluster_id is None:
            return
        store.set_membership(conn, doc.article_id, None, None)
        if store.cluster_size(conn, cluster_id) < 2:
            store.drop_cluster(conn, cluster_id)
        else:
            self._settle(conn, cluster_id, full=False)


def _near(doc: Doc, candidates: Mapping[int, Doc]) -> list[Doc]:
    """The candidates that agree with the body on enough bins (``MIN_AGREEMENT``) to be
    worth the exact check, all compared in one numpy step (a page may have hundreds)."""
    others = list(candidates.values())
    if not others:
        return []
    if any(len(other.bands) != 2 * BINS for other in others):
        return [other for other in others if agreement(doc.bands, other.bands) >= MIN_AGREEMENT]
    values = sketch_from_bytes(b"".join(other.bands for other in others)).reshape(-1, BINS)
    agreeing = np.count_nonzero(values == sketch_from_bytes(doc.bands), axis=1) >= MIN_AGREEMENT
    return [other for other, near in zip(others, agreeing.tolist(), strict=True) if near]
