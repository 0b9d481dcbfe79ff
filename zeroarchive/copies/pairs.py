"""The copy index computed at once, as a rebuild does (pure functions over numpy arrays):
every pair of bodies that share a band key, the pairs whose sketches agree enough to be
checked exactly, and the clusters the copies among them make.

The parse hook finds a body's candidates one body at a time through ``copy_band``; a
rebuild has every sketch at hand, so one sort of all band keys gives every pair the hook
would have checked (each body against the bodies before it), and since a cluster is what
its copies join, whatever their order, the clusters are the connected parts of the copy
pairs (``components``).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

_LOW32 = np.uint64(0xFFFFFFFF)


def band_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each (band key, body) once, sorted by key then body: ``copy_band``'s rows in its
    own order when the bodies are numbered in article order. ``keys``: one row of band
    keys per body (``band_key_rows``), the bodies numbered by their row.

    >>> keys = np.array([[5, -1], [5, 7]], dtype=np.int32)
    >>> [k.tolist() for k in band_rows(keys)]
    [[-1, 5, 5, 7], [0, 0, 1, 1]]
    """
    bodies = np.repeat(np.arange(len(keys), dtype=np.uint64), keys.shape[1])
    # Signed keys as unsigned with the sign bit flipped sort in the keys' own order.
    unsigned = keys.ravel().view(np.uint32).astype(np.uint64) ^ np.uint64(0x80000000)
    combined = np.sort((unsigned << np.uint64(32)) | bodies)
    if len(combined):
        keep = np.empty(len(combined), dtype=bool)
        keep[0] = True
        np.not_equal(combined[1:], combined[:-1], out=keep[1:])
        combined = combined[keep]
    key = ((combined >> np.uint64(32)) ^ np.uint64(0x80000000)).astype(np.uint32).view(np.int32)
    return key, (combined & _LOW32).astype(np.int64)


def candidate_pairs(key: np.ndarray, body: np.ndarray) -> np.ndarray:
    """Every two bodies under one band key, once, the earlier first: an (n, 2) array of
    body numbers, sorted. ``key`` and ``body`` as ``band_rows`` gives them.

    >>> key = np.array([1, 1, 1, 2, 3, 3], dtype=np.int32)
    >>> body = np.array([0, 2, 3, 1, 0, 2])
    >>> candidate_pairs(key, body).tolist()
    [[0, 2], [0, 3], [2, 3]]
    """
    if len(key) < 2:
        return np.empty((0, 2), dtype=np.int64)
    shared = np.zeros(len(key), dtype=bool)
    same = key[1:] == key[:-1]
    shared[1:] |= same
    shared[:-1] |= same
    where = np.flatnonzero(shared)
    key, body = key[where], body[where]
    if not len(key):
        return np.empty((0, 2), dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    lengths = np.diff(np.append(starts, len(key)))
    after = np.repeat(starts + lengths, lengths) - np.arange(len(key)) - 1
    found = []
    rows = np.flatnonzero(after >= 1)
    offset = 1
    while len(rows):
        found.append(body[rows] * (1 << 32) + body[rows + offset])
        offset += 1
        rows = rows[after[rows] >= offset]
    coded = np.sort(np.concatenate(found))
    keep = np.empty(len(coded), dtype=bool)
    keep[0] = True
    np.not_equal(coded[1:], coded[:-1], out=keep[1:])
    coded = coded[keep]
    return np.stack([coded >> 32, coded & 0xFFFFFFFF], axis=1)


def agreeing(
    sketches: np.ndarray, pairs: np.ndarray, least: int, chunk: int = 500_000
) -> np.ndarray:
    """The pairs whose sketches (one row per body) agree on at least ``least`` bins.

    >>> sketches = np.array([[1, 2, 3], [1, 2, 4], [9, 9, 9]], dtype=np.uint16)
    >>> agreeing(sketches, np.array([[0, 1], [0, 2]]), 2).tolist()
    [[0, 1]]
    """
    kept = [
        part[np.count_nonzero(sketches[part[:, 0]] == sketches[part[:, 1]], axis=1) >= least]
        for part in (pairs[start : start + chunk] for start in range(0, len(pairs), chunk))
    ]
    return np.concatenate(kept) if kept else pairs


def components(edges: Iterable[tuple[int, int]]) -> list[list[int]]:
    """The connected parts of a graph given by its edges, each sorted, in the order in
    which they formed: by the least, over a part's edges, of the later body of the edge
    (when a one-at-a-time pass in body order would have made the cluster).

    >>> components([(3, 4), (0, 5), (4, 5), (1, 2)])
    [[1, 2], [0, 3, 4, 5]]
    """
    parent: dict[int, int] = {}

    def root(node: int) -> int:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    listed = list(edges)
    for one, other in listed:
        one, other = root(one), root(other)
        if one != other:
            parent[max(one, other)] = min(one, other)
    formed: dict[int, int] = {}
    for one, other in listed:
        top = root(one)
        formed[top] = min(formed.get(top, max(one, other)), max(one, other))
    parts: dict[int, list[int]] = {}
    for node in parent:
        parts.setdefault(root(node), []).append(node)
    return [sorted(parts[top]) for top in sorted(parts, key=lambda top: (formed[top], top))]
