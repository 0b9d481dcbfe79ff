"""Copies (zeroarchive/copies/): real Taiwanese news articles and variants of them made
here (converted to the other script and retitled, cut, reordered with an ad, verbatim,
wrapped in a farm's boilerplate, a page's markup changed), clustered as the parse run
adds them, on SQLite and MariaDB; the real `scrapy parse_snapshots` and `scrapy copies`."""

from __future__ import annotations

import functools
import gzip
import itertools
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import opencc
import pytest
from sqlalchemy import Engine, event, select

from tests.conftest import FIXTURES, scrapy
from zeroarchive.copies.fingerprint import (
    BINS,
    SIMPLIFIED,
    TRADITIONAL,
    Folded,
    containment,
    fold,
    keys_from_bytes,
    shingles,
    signature,
)
from zeroarchive.copies.hook import copies_hook
from zeroarchive.copies.index import CopiesConfig
from zeroarchive.copies.read import Cluster, cluster_of, clusters
from zeroarchive.copies.rebuild import rebuild, row_format
from zeroarchive.core.items import FetchedPage, Parsed
from zeroarchive.parser import PARSER_VERSION, parse_snapshot
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import Archive, open_archive
from zeroarchive.storage.publications import ArticleInfo, PublicationStore
from zeroarchive.storage.schema import (
    article,
    copy_band,
    copy_block,
    copy_cluster,
    copy_doc,
    publication,
)

NOW = 1_700_000_000
HOUR = 3600
PAGES = FIXTURES / "tw-news-2014" / "html"
#: Real articles of several outlets (liberty_times_s3 is left out: the same story as
#: liberty_times_news_s1 under another URL).
ARTICLES = (
    "liberty_times_news_s1",
    "cna_s1",
    "cts_s1",
    "ettoday_s1",
    "now_news_s1",
    "tvbs_s1",
    "china_times_s2",
    "apple_daily_s1",
)
#: What a content farm puts around every article it takes (made up for the test, in the
#: style of the real ones).
FARM_TOP = "本文轉載自網路，版權歸原作者所有，如有侵權請聯繫我們刪除，謝謝您的理解與支持。"
FARM_BOTTOM = (
    "免責聲明：本站所刊載之文章僅代表作者個人觀點，不代表本站立場，本站不對其內容之真實性負責，"
    "讀者應自行判斷。歡迎分享本文給更多朋友，並追蹤我們的粉絲專頁獲得最新消息與更多精彩內容。"
)
FARM_FOOTER = (
    "訂閱我們的電子報，每天早上八點準時送上今日最重要的國內外新聞摘要、生活資訊與健康知識，"
    "完全免費，隨時可以取消訂閱。加入會員即可收藏文章、留言討論，與數十萬讀者一起關心社會大小事。"
)
AD = "【廣告】限時優惠！立即下載APP領取新會員好禮，再抽最新款手機，活動只到本週日為止。"


@functools.cache
def text(name: str) -> str:
    """An article's body as the project's parser reads its saved page."""
    raw = gzip.decompress((PAGES / f"{name}.html.gz").read_bytes())
    return parse_snapshot("Article", raw, "utf-8", f"https://news.example/{name}").text


def lines(body: str) -> list[str]:
    return [line for line in body.split("\n") if line.strip()]


def cut(body: str, share: float) -> str:
    """The body's first lines up to ``share`` of its characters."""
    kept, size = [], 0
    for line in lines(body):
        if size >= share * len(body):
            break
        kept.append(line)
        size += len(line)
    return "\n".join(kept)


def reordered_with_ad(body: str) -> str:
    """The body's paragraphs in another order, an ad in the middle."""
    parts = lines(body)
    middle = len(parts) // 2
    moved = [*parts[middle:], AD, *parts[:middle]]
    return "\n".join(moved)


def wrapped_brief(name: str) -> str:
    """A short brief of the article (its longest paragraph's start) in a farm's wrapping,
    which is most of the body."""
    brief = max(lines(text(name)), key=len)[:40]
    return f"{FARM_TOP}\n{brief}\n{FARM_BOTTOM}\n{FARM_FOOTER}"


def to_simplified(body: str) -> str:
    return str(opencc.OpenCC("t2s").convert(body))


class Archived:
    """An archive with sites, to which publication versions are added as parse runs do."""

    def __init__(self, url: str, config: CopiesConfig | None = None) -> None:
        self.archive: Archive = open_archive(url=url)
        self.store = PublicationStore(self.archive.engine, PARSER_VERSION)
        self.store.register_parser({}, NOW)
        self.hooks = (copies_hook(config),)
        self.sites: dict[str, int] = {}
        self.count = 0

    def site(self, name: str) -> int:
        if name not in self.sites:
            spec = parse_spec(
                {
                    "name": name,
                    "url": f"https://{name}.example/",
                    "type": "news",
                    "config": {"article": "/"},
                }
            )
            self.sites[name] = self.archive.sites.upsert(spec, NOW)[0]
        return self.sites[name]

    def publish(self, site: str, body: str, at: int, title: str = "標題") -> int:
        """A new article on ``site`` first seen at ``at`` with this body; its id."""
        self.count += 1
        url = f"https://{site}.example/a/{self.count}"
        site_id = self.site(site)
        self.archive.articles.add(site_id, "Article", [url], at)
        with self.archive.engine.begin() as conn:
            article_id = int(
                conn.execute(select(article.c.article_id).where(article.c.url == url)).scalar_one()
            )
        self.edit(article_id, site_id, url, body, at, title)
        return article_id

    def edit(
        self, article_id: int, site_id: int, url: str, body: str, at: int, title: str = "標題"
    ) -> None:
        parsed = Parsed(canonical_url=url, title=title, text=body)
        info = ArticleInfo(article_id, site_id, "Article", url)
        self.store.add_version(info, at, parsed, parsed.digest(), at, self.hooks)

    def cluster(self, article_id: int) -> Cluster | None:
        return cluster_of(self.archive.engine, article_id)


@pytest.fixture
def archived(db_url: str) -> Archived:
    return Archived(db_url)


def members(cluster: Cluster | None) -> list[int]:
    assert cluster is not None
    return [member.article_id for member in cluster.members]


def test_each_kind_of_variant_joins_its_original_and_unrelated_articles_stay_apart(
    archived: Archived,
) -> None:
    original = text("liberty_times_news_s1")
    first = archived.publish("ltn", original, NOW)
    unrelated = [
        archived.publish("ltn", text(name), NOW + i) for i, name in enumerate(ARTICLES[1:4])
    ]
    converted = archived.publish("cn", to_simplified(original), NOW + HOUR, "林义雄停止禁食了")
    short = archived.publish("farm", cut(original, 2 / 3), NOW + 2 * HOUR)
    mixed = archived.publish("farm2", reordered_with_ad(original), NOW + 3 * HOUR)
    same = archived.publish("mirror", original, NOW + 4 * HOUR)
    wrapped = archived.publish(
        "farm3", f"{FARM_TOP}\n{original}\n{FARM_BOTTOM}", NOW + 5 * HOUR, "震驚！"
    )
    found = archived.cluster(short)
    assert members(found) == [first, converted, short, mixed, same, wrapped]
    assert found is not None and found.first.article_id == first
    by_id = {member.article_id: member for member in found.members}
    assert [by_id[i].script for i in (first, converted, short, mixed, same)] == [
        "same",
        "converted",
        "same",
        "same",
        "same",
    ]
    assert by_id[first].similarity == 1.0 and by_id[same].similarity == 1.0
    assert all(member.similarity >= 0.8 for member in found.members)
    assert by_id[converted].site == "cn" and by_id[converted].url.endswith(f"/a/{converted}")
    for other in unrelated:
        assert archived.cluster(other) is None
    assert [c.cluster_id for c in clusters(archived.archive.engine)] == [found.cluster_id]


def test_a_farm_s_boilerplate_makes_no_copies_of_its_unrelated_articles(
    archived: Archived,
) -> None:
    """Short unrelated stories wrapped in the same long disclaimer: more of each body is
    the disclaimer than the story, until the site's boilerplate is learnt; a real copy
    on the same farm is still found."""
    for i, name in enumerate(ARTICLES):
        archived.publish("farm", wrapped_brief(name), NOW + i)
    assert list(clusters(archived.archive.engine)) == []
    original = archived.publish("ltn", text("cna_s1"), NOW - HOUR)
    copy = archived.publish("farm", f"{FARM_TOP}\n{text('cna_s1')}\n{FARM_BOTTOM}", NOW + HOUR)
    assert members(archived.cluster(copy)) == [original, copy]


def test_without_learnt_boilerplate_the_wrapped_stories_would_be_copies(db_url: str) -> None:
    """The test above fails without the boilerplate: a farm learning it only after 100
    articles clusters its unrelated stories."""
    archived = Archived(db_url, CopiesConfig(boilerplate_articles=100))
    for i, name in enumerate(ARTICLES[:3]):
        archived.publish("farm", wrapped_brief(name), NOW + i)
    assert len(list(clusters(archived.archive.engine))) == 1


def test_first_is_the_member_seen_earliest_and_cluster_ids_stay(archived: Archived) -> None:
    """Copies crawled before the original (several parse runs): the cluster made by the
    copies keeps its id as the original joins, and the original becomes its first."""
    original = text("ettoday_s1")
    copy1 = archived.publish("farm", to_simplified(original), NOW + 5 * HOUR)
    copy2 = archived.publish("farm2", cut(original, 0.7), NOW + 6 * HOUR)
    before = archived.cluster(copy1)
    assert members(before) == [copy1, copy2] and before is not None
    assert before.first.script == "same" and before.members[1].script == "converted"
    first = archived.publish("ettoday", original, NOW)
    after = archived.cluster(copy2)
    assert after is not None and after.cluster_id == before.cluster_id
    assert members(after) == [first, copy1, copy2]
    assert [m.script for m in after.members] == ["same", "converted", "same"]
    assert after.first.first_seen_at == NOW


def test_merged_clusters_keep_the_older_id(archived: Archived) -> None:
    """Copies of an article's first half and copies of its second half are two clusters
    until the whole article, which holds both, joins them. (Two halves of about one length:
    each is found in the whole with probability 0.88, these two are.)"""
    halves = (text("china_times_s2"), text("tvbs_s1"))
    whole = "\n".join(halves)
    older = [archived.publish(f"a{i}", halves[0], NOW + i) for i in range(2)]
    newer = [archived.publish(f"b{i}", halves[1], NOW + 10 + i) for i in range(2)]
    found = (archived.cluster(older[0]), archived.cluster(newer[0]))
    ids = {cluster.cluster_id for cluster in found if cluster is not None}
    assert len(ids) == 2
    joined = archived.publish("whole", whole, NOW - HOUR)
    cluster = archived.cluster(newer[1])
    assert cluster is not None and cluster.cluster_id == min(ids)
    assert members(cluster) == [joined, *older, *newer]
    with archived.archive.engine.connect() as conn:
        assert conn.execute(select(copy_cluster.c.cluster_id)).scalars().all() == [min(ids)]


@contextmanager
def recorded_statements(engine: Engine) -> Iterator[list[str]]:
    """The SQL statements ``engine`` runs inside the block, in order."""
    statements: list[str] = []

    def seen(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", seen)


def _bodies_read(engine: object, statements: list[str]) -> int:
    """How many publication bodies the recorded statements asked for."""
    return sum(
        len(found.split(","))
        for statement in statements
        if "publication_text FROM publication" in statement
        for found in re.findall(r"publication_id IN \(([^)]*)\)", statement)
    )


def test_a_copy_of_a_later_member_that_is_no_copy_of_the_first_joins_its_cluster(
    archived: Archived,
) -> None:
    """The hook checks a cluster's near members one after another, first seen first, until
    one is a copy: a body that copies a later member but not the first still joins."""
    original = text("now_news_s1")
    aside = cut(text("tvbs_s1"), 0.1 * len(original) / len(text("tvbs_s1")))
    member = cut(original, 0.8) + "\n" + aside
    newcomer = aside + "\n" + cut(original, 0.45)
    pieces = [shingles("".join(fold(body).lines)) for body in (original, member, newcomer)]
    assert containment(pieces[1], pieces[0]) >= 0.8
    assert containment(pieces[2], pieces[0]) < 0.8 <= containment(pieces[2], pieces[1])
    first = archived.publish("news", original, NOW)
    second = archived.publish("farm", member, NOW + HOUR)
    assert members(archived.cluster(second)) == [first, second]
    third = archived.publish("farm2", newcomer, NOW + 2 * HOUR)
    cluster = archived.cluster(third)
    assert members(cluster) == [first, second, third] and cluster is not None
    assert cluster.members[2].similarity < 0.8


def test_a_copy_of_a_cluster_reads_one_member_s_body_not_each(archived: Archived) -> None:
    """A new copy of a story with several copies clustered already reads the body of one of
    them (the first: its similarity is computed against it), not of every near member."""
    original = text("cna_s1")
    ids = [archived.publish(f"farm{n}", original, NOW + n * HOUR) for n in range(5)]
    assert members(archived.cluster(ids[-1])) == ids
    archived.hooks = (copies_hook(),)  # nothing kept from the publishing above
    engine = archived.archive.engine
    with recorded_statements(engine) as statements:
        newest = archived.publish("farm9", cut(original, 0.9), NOW + 9 * HOUR)
    assert members(archived.cluster(newest)) == [*ids, newest]
    assert _bodies_read(engine, statements) == 1


def test_a_new_copy_s_row_is_written_once_and_no_other_member_or_whole_boilerplate_read(
    archived: Archived,
) -> None:
    """A new copy of a clustered story whose first is among its candidates: its
    ``copy_doc`` row is inserted with its cluster and similarity (no UPDATE of it after),
    the cluster's other members are not read (the first's row came with the candidates),
    and no site's whole boilerplate is read (only the lines of the bodies it folds)."""
    original = text("cna_s1")
    ids = [archived.publish(f"farm{n}", original, NOW + n * HOUR) for n in range(4)]
    archived.hooks = (copies_hook(),)  # nothing kept from the publishing above
    engine = archived.archive.engine
    with recorded_statements(engine) as statements:
        newest = archived.publish("farm9", cut(original, 0.9), NOW + 9 * HOUR)
    cluster = archived.cluster(newest)
    assert members(cluster) == [*ids, newest] and cluster is not None
    assert cluster.members[-1].similarity >= 0.8
    hooked = [s for s in statements if "copy_" in s]
    assert not [s for s in hooked if s.startswith("UPDATE copy_doc")]
    assert not [s for s in hooked if "WHERE d.cluster_id" in s]
    assert not [s for s in hooked if "copy_block" in s and "articles >=" in s and "IN (" not in s]
    with engine.connect() as conn:
        row = conn.execute(select(copy_doc).where(copy_doc.c.article_id == newest)).one()
    assert row.cluster_id == cluster.cluster_id
    assert row.similarity == cluster.members[-1].similarity


def test_a_new_version_keeps_exactly_its_band_rows(archived: Archived) -> None:
    """A new version writes only the band rows that changed: the article's rows are the
    keys of its new sketch, none left of the old."""
    article_id = archived.publish("ltn", text("cts_s1"), NOW)
    url = f"https://ltn.example/a/{article_id}"
    archived.edit(article_id, archived.sites["ltn"], url, cut(text("cts_s1"), 0.8), NOW + HOUR)
    with archived.archive.engine.connect() as conn:
        bands = conn.execute(
            select(copy_doc.c.bands).where(copy_doc.c.article_id == article_id)
        ).scalar_one()
        rows = conn.execute(
            select(copy_band.c.band_key).where(copy_band.c.article_id == article_id)
        ).scalars()
        assert sorted(rows) == sorted(keys_from_bytes(bands))


def test_a_new_version_that_is_no_longer_a_copy_leaves_its_cluster(archived: Archived) -> None:
    original = archived.publish("ltn", text("cts_s1"), NOW)
    copy = archived.publish("farm", text("cts_s1"), NOW + HOUR)
    assert members(archived.cluster(copy)) == [original, copy]
    archived.edit(
        copy,
        archived.sites["farm"],
        f"https://farm.example/a/{copy}",
        text("cna_s1"),
        NOW + 2 * HOUR,
    )
    assert archived.cluster(copy) is None and archived.cluster(original) is None


def test_the_fold_and_the_fingerprint() -> None:
    traditional = text("liberty_times_news_s1")
    simplified = to_simplified(traditional)
    assert fold(traditional).script == TRADITIONAL and fold(simplified).script == SIMPLIFIED
    assert fold(traditional).lines == fold(simplified).lines
    one, other = shingles("".join(fold(traditional).lines)), shingles(text("cna_s1"))
    assert containment(one, one) == 1.0 and containment(one, other) < 0.1
    # The signature is the least hash of each of BINS equal ranges of the hash space.
    edges = [(1 << 32) * b // BINS for b in range(BINS + 1)]
    least = [
        min(h for h in one.tolist() if low <= h < high) for low, high in itertools.pairwise(edges)
    ]
    assert signature(one).tolist() == least
    # A bin with none of the hashes takes the next full one's, mixed with the distance
    # (each empty bin its own value): two bodies that agree from there on agree on it.
    few = one[:: len(one) // 8][:8]
    more = np.sort(np.concatenate([few, one[1:4]]))
    empty = [b for b in range(BINS) if not any(edges[b] <= h < edges[b + 1] for h in more.tolist())]
    assert len(set(signature(more)[empty].tolist())) == len(empty) > BINS // 2
    assert any(signature(few)[b] == signature(more)[b] for b in empty)
    # The share of equal values estimates the Jaccard similarity.
    half = shingles("".join(fold(cut(traditional, 0.5)).lines))
    jaccard = len(np.intersect1d(one, half)) / len(np.union1d(one, half))
    agree = float(np.mean(signature(one) == signature(half)))
    assert abs(agree - jaccard) < 0.15


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"COPIES_MIN_SIMILARITY": "1.5"}, "COPIES_MIN_SIMILARITY"),
        ({"COPIES_BOILERPLATE_ARTICLES": "1"}, "COPIES_BOILERPLATE_ARTICLES"),
        ({"COPIES_REBUILD_BATCH": "0"}, "COPIES_REBUILD_BATCH"),
    ],
)
def test_bad_settings_are_refused(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CopiesConfig.from_settings(settings)


def test_rebuild_gives_the_same_clusters_and_resumes_where_it_stopped(
    archived: Archived, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = text("china_times_s2")
    ids = [
        archived.publish("news", original, NOW),
        archived.publish("farm", to_simplified(cut(original, 0.8)), NOW + HOUR),
        archived.publish("news", text("apple_daily_s1"), NOW + 2),
        archived.publish("farm2", reordered_with_ad(original), NOW + 2 * HOUR),
    ]
    engine = archived.archive.engine

    def found() -> list[tuple[object, ...]]:
        """The clusters without their ids (a rebuild makes them anew)."""
        return [(c.first, c.members) for c in clusters(engine)]

    expected = found()
    assert [m.article_id for m in expected[0][1]] == [ids[0], ids[1], ids[3]]
    import zeroarchive.copies.rebuild as module

    real = module.fingerprint_batch
    calls = []

    def stop_on_the_second(*args: object) -> None:
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "fingerprint_batch", stop_on_the_second)
    with pytest.raises(SystemExit) as stopped:
        rebuild(engine, CopiesConfig(rebuild_batch=2))
    assert stopped.value.code == 130
    monkeypatch.undo()
    done, resumed = rebuild(engine, CopiesConfig(rebuild_batch=2))
    assert (done, resumed) == (2, True)
    assert found() == expected
    done, resumed = rebuild(engine)
    assert (done, resumed) == (4, False)
    assert found() == expected


@pytest.mark.parametrize("held", [1, 2_000_000], ids=["written-each-batch", "written-once"])
def test_the_boilerplate_pass_counts_as_the_hook_and_resumes_where_it_wrote(
    archived: Archived, monkeypatch: pytest.MonkeyPatch, held: int
) -> None:
    """The rebuild counts each site's edge lines in memory and writes them ``BLOCK_ROWS``
    at a time: the counts are the hook's, and a stop between two writes goes on from the
    last one (lines counted after it are counted again, not twice)."""
    for i, name in enumerate(ARTICLES):
        archived.publish("farm", wrapped_brief(name), NOW + i)
        archived.publish("news", text(name), NOW + i)
    engine = archived.archive.engine

    def blocks() -> list[tuple[int, int, int]]:
        with engine.connect() as conn:
            rows = conn.execute(select(copy_block).order_by(copy_block.c.site_id, "block"))
            return [tuple(row) for row in rows]

    by_hook = blocks()
    assert max(count for _, _, count in by_hook) == len(ARTICLES)
    import zeroarchive.copies.rebuild as module

    monkeypatch.setattr(module, "BLOCK_ROWS", held)
    real = module.fold_many
    calls = []

    def stop_on_the_third(texts: list[str]) -> list[Folded]:
        calls.append(texts)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(texts)

    monkeypatch.setattr(module, "fold_many", stop_on_the_third)
    with pytest.raises(SystemExit):
        rebuild(engine, CopiesConfig(rebuild_batch=3))
    written = blocks()
    if held > 1:
        assert written == []
    else:
        # Two batches of three written one by one: the farm's wrapping on its first three.
        assert max(count for _, _, count in written) == 3
    monkeypatch.setattr(module, "fold_many", real)
    done, resumed = rebuild(engine, CopiesConfig(rebuild_batch=3))
    assert (done, resumed) == (2 * len(ARTICLES), True)
    assert blocks() == by_hook


def test_a_rebuild_reads_again_only_the_bodies_holding_boilerplate_and_fingerprints_alike(
    archived: Archived, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole rebuild keeps each body's sketch from its boilerplate pass and reads again
    only the bodies that hold a line of their site's boilerplate (the farm's); a rebuild
    resumed in its fingerprints pass reads every body again: the same ``copy_doc``."""
    for i, name in enumerate(ARTICLES):
        archived.publish("farm", wrapped_brief(name), NOW + i)
        archived.publish("news", text(name), NOW + i)
    archived.publish("farm2", to_simplified(text("cna_s1")), NOW + HOUR)
    engine = archived.archive.engine
    import zeroarchive.copies.rebuild as module

    def docs() -> list[tuple[object, ...]]:
        """``copy_doc`` but the cluster ids (each rebuild makes its clusters anew)."""
        columns = [column for column in copy_doc.c if column.name != "cluster_id"]
        with engine.connect() as conn:
            rows = conn.execute(select(*columns).order_by(copy_doc.c.article_id))
            return [tuple(row) for row in rows]

    real_batch, real_texts = module.fingerprint_batch, module.store.publication_texts
    read: list[int] = []
    inside: list[bool] = []

    def counted(conn: object, ids: list[int]) -> dict[int, str]:
        if inside:
            read.extend(ids)
        return real_texts(conn, ids)  # type: ignore[arg-type]

    def fingerprinting(*args: object) -> None:
        if not isinstance(args[2], module._Kept):
            read.extend(row.publication_id for row in args[2])  # type: ignore[attr-defined]
        inside.append(True)
        try:
            real_batch(*args)  # type: ignore[arg-type]
        finally:
            inside.clear()

    monkeypatch.setattr(module.store, "publication_texts", counted)
    monkeypatch.setattr(module, "fingerprint_batch", fingerprinting)
    done, _ = rebuild(engine, CopiesConfig(rebuild_batch=4))
    assert done == 2 * len(ARTICLES) + 1
    with engine.connect() as conn:
        farm = set(
            conn.execute(
                select(publication.c.publication_id).where(
                    publication.c.site_id == archived.sites["farm"]
                )
            ).scalars()
        )
    # Wrapped briefs: the farm's boilerplate is most of each, what is left too short.
    assert len(read) == len(ARTICLES) and set(read) == farm
    kept = docs()

    def stop(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "fingerprint_batch", stop)
    with pytest.raises(SystemExit):
        rebuild(engine, CopiesConfig(rebuild_batch=4))
    monkeypatch.setattr(module, "fingerprint_batch", fingerprinting)
    read.clear()
    done, resumed = rebuild(engine, CopiesConfig(rebuild_batch=4))
    assert (done, resumed) == (2 * len(ARTICLES) + 1, True)
    assert len(read) == 2 * len(ARTICLES) + 1
    assert docs() == kept


def test_a_rebuild_on_mariadb_rewrites_the_tables_it_filled(archived: Archived) -> None:
    """InnoDB leaves pages split by lengthened rows about half full: a rebuild ends by
    rewriting ``copy_doc``, whose rows its clusters pass lengthened, there (``copy_band``
    is written in key order, and ``copy_block``, compressed, came out larger rewritten;
    SQLite's pages need no such pass). Where the index is compressed (migration 0034),
    ``copy_doc`` is written uncompressed until that rewrite compresses it again (a
    compressed page's update cost the server ~25 times as much)."""
    original = text("china_times_s2")
    archived.publish("news", original, NOW)
    archived.publish("farm", to_simplified(original), NOW + HOUR)
    engine = archived.archive.engine
    with recorded_statements(engine) as statements:
        done, _ = rebuild(engine)
    assert done == 2 and len(list(clusters(engine))) == 1
    rewrites = [s for s in statements if s.startswith(("OPTIMIZE TABLE", "ALTER TABLE"))]
    if engine.dialect.name == "sqlite":
        assert rewrites == []
        return
    with engine.connect() as conn:
        formats = {name: row_format(conn, name) for name in ("copy_doc", "copy_band")}
    assert formats["copy_doc"] == formats["copy_band"]
    if formats["copy_band"] == "Compressed":
        assert rewrites == [
            "ALTER TABLE copy_doc ROW_FORMAT=DYNAMIC KEY_BLOCK_SIZE=0",
            "ALTER TABLE copy_doc ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8",
        ]
    else:
        assert rewrites == ["OPTIMIZE TABLE copy_doc"]


def _page(archive: Archive, site: str, url: str, body: bytes, at: int) -> int:
    spec = parse_spec(
        {
            "name": site,
            "url": f"https://{site}.example/",
            "type": "news",
            "config": {"article": "/"},
        }
    )
    site_id = archive.sites.upsert(spec, NOW)[0]
    archive.articles.add(site_id, "Article", [url], at)
    with archive.engine.connect() as conn:
        article_id = int(
            conn.execute(select(article.c.article_id).where(article.c.url == url)).scalar_one()
        )
    page = FetchedPage(
        article_id=article_id,
        site_id=site_id,
        article_type="Article",
        fetched_at=at,
        status=200,
        final_url=url,
        headers={"Content-Type": ["text/html; charset=utf-8"]},
        encoding="utf-8",
        body=body,
    )
    archive.snapshots.save([page])
    return article_id


def test_parse_snapshots_clusters_real_pages_and_the_cli_shows_them(
    db_url: str, tmp_path: Path
) -> None:
    """A real page (Liberty Times, 2014), a copy with other markup and another title
    crawled first but seen later, and one in Simplified script; through the real commands."""
    archive = open_archive(url=db_url)
    page = gzip.decompress((PAGES / "liberty_times_news_s1.html.gz").read_bytes()).decode()
    remarked = (
        page.replace("<p>", '<p class="para"><span style="font-size:16px">')
        .replace("</p>", "</span></p>\n<br/>")
        .replace("<title>義光禁食》林義雄宣布停止禁食", "<title>震驚！他宣布了")
    )
    copy = _page(archive, "farm", "https://farm.example/n/1", remarked.encode(), NOW + 2 * HOUR)
    first = _page(
        archive,
        "ltn",
        "https://news.ltn.com.tw/news/politics/breakingnews/994343",
        page.encode(),
        NOW,
    )
    converted = _page(
        archive, "cn", "https://cn.example/n/1", to_simplified(page).encode(), NOW + HOUR
    )
    other = _page(
        archive,
        "ltn",
        "https://news.ltn.com.tw/other",
        gzip.decompress((PAGES / "cna_s1.html.gz").read_bytes()),
        NOW,
    )
    parsed = scrapy("parse_snapshots", db_url=db_url, cwd=tmp_path)
    assert parsed.returncode == 0, parsed.output
    done = scrapy("copies", "--json", db_url=db_url, cwd=tmp_path)
    assert done.returncode == 0, done.output
    [cluster] = [json.loads(line) for line in done.stdout.splitlines()]
    assert cluster["first"] == {
        "article_id": first,
        "site": "ltn",
        "url": "https://news.ltn.com.tw/news/politics/breakingnews/994343",
        "first_seen_at": NOW,
    }
    assert [(m["article_id"], m["script"], m["first_seen_at"]) for m in cluster["members"]] == [
        (first, "same", NOW),
        (converted, "converted", NOW + HOUR),
        (copy, "same", NOW + 2 * HOUR),
    ]
    assert all(m["similarity"] >= 0.8 for m in cluster["members"])
    assert set(cluster) == {"cluster", "first", "members"}
    one = scrapy("copies", "--article", str(copy), "--json", db_url=db_url, cwd=tmp_path)
    assert [json.loads(line) for line in one.stdout.splitlines()] == [cluster]
    alone = scrapy("copies", "--article", str(other), "--json", db_url=db_url, cwd=tmp_path)
    assert (alone.returncode, alone.stdout) == (0, "")
    on_site = scrapy("copies", "--site", "cn", db_url=db_url, cwd=tmp_path)
    assert f"article {converted}" in on_site.stdout and on_site.stderr.strip().endswith(
        "1 cluster(s)"
    )
    later = scrapy("copies", "--since", "2030-01-01", "--json", db_url=db_url, cwd=tmp_path)
    assert (later.returncode, later.stdout) == (0, "")
    strict = scrapy("copies", "--min-similarity", "1.01", db_url=db_url, cwd=tmp_path)
    assert strict.returncode == 2 and "--min-similarity" in strict.stderr
    again = scrapy("copies", "--rebuild", db_url=db_url, cwd=tmp_path)
    assert again.returncode == 0 and "4 article(s) fingerprinted" in again.stderr
    done = scrapy("copies", "--json", db_url=db_url, cwd=tmp_path)
    [rebuilt] = [json.loads(line) for line in done.stdout.splitlines()]
    assert rebuilt["members"] == cluster["members"]


def test_with_the_hook_off_parse_snapshots_leaves_copies_to_the_rebuild(
    db_url: str, tmp_path: Path
) -> None:
    archive = open_archive(url=db_url)
    page = gzip.decompress((PAGES / "cts_s1.html.gz").read_bytes())
    first = _page(archive, "cts", "https://news.cts.com.tw/a/1", page, NOW)
    copy = _page(archive, "farm", "https://farm.example/n/2", page, NOW + HOUR)
    parsed = scrapy("parse_snapshots", "-s", "COPIES_ENABLED=False", db_url=db_url, cwd=tmp_path)
    assert parsed.returncode == 0, parsed.output
    done = scrapy("copies", "--json", db_url=db_url, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "")
    again = scrapy("copies", "--rebuild", db_url=db_url, cwd=tmp_path)
    assert again.returncode == 0, again.output
    done = scrapy("copies", "--article", str(first), db_url=db_url, cwd=tmp_path)
    assert f"article {first}" in done.stdout and f"article {copy}" in done.stdout
