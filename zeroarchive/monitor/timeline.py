"""An article's story for its page: the version a reader sees now, and one timeline of
its snapshots and versions in the order they happened."""

from __future__ import annotations

from dataclasses import dataclass

from zeroarchive.storage.browse import PublicationVersion, SnapshotFacts, SnapshotParse


def latest(versions: list[PublicationVersion]) -> PublicationVersion | None:
    """The version a reader sees now: the last one first seen (of any parser version)."""
    return max(versions, key=lambda v: (v.first_seen_at, v.parsed_at), default=None)


@dataclass(frozen=True)
class Moment:
    """One entry of an article's timeline: a snapshot, or a version first seen."""

    at: int
    snapshot: SnapshotFacts | None = None
    version: PublicationVersion | None = None
    parsed_as: tuple[SnapshotParse, ...] = ()


def timeline(
    snapshots: list[SnapshotFacts],
    versions: list[PublicationVersion],
    parses: list[SnapshotParse],
) -> list[Moment]:
    """Snapshots and versions in the order they happened (a version after the snapshot
    it was first seen in), each snapshot with what it was parsed into."""
    parsed: dict[int, list[SnapshotParse]] = {}
    for parse in parses:
        parsed.setdefault(parse.snapshot_at, []).append(parse)
    moments = [
        Moment(
            snapshot.snapshot_at,
            snapshot=snapshot,
            parsed_as=tuple(parsed.get(snapshot.snapshot_at, ())),
        )
        for snapshot in snapshots
    ]
    moments += [Moment(version.first_seen_at, version=version) for version in versions]
    return sorted(moments, key=lambda moment: (moment.at, moment.snapshot is None))
