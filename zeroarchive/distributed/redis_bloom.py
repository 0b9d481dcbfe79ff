"""One Bloom filter whose bits live in redis, tested and set atomically by many workers.

``RedisBloom`` keeps one filter's bits in redis strings and tests-and-sets all k bits of
a batch of items in ONE atomic command: ``BITFIELD key SET u1 <offset> 1 ...`` returns
each bit's previous value and runs as one command, so of two workers racing on a URL
exactly one sees it as new. A filter split over several keys sends one BITFIELD per key
inside MULTI/EXEC (still one round trip, still atomic).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import redis
from redis.connection import ConnectionInterface

from zeroarchive.distributed.bloom import (
    BloomShape,
    current_false_positive_rate,
    estimated_items,
    positions,
    positions_of_batch,
)

logger = logging.getLogger(__name__)

# Batches at least this large are hashed and packed with numpy.
VECTOR_MIN = 16

Offsets = Sequence[int] | np.ndarray


@dataclass(frozen=True)
class BloomEstimate:
    """What ``bloom_stats`` prints and the periodic check looks at."""

    shape: BloomShape
    bits_set: int
    memory_bytes: int

    @property
    def items(self) -> float:
        return estimated_items(self.bits_set, self.shape.bits, self.shape.hashes)

    @property
    def false_positive_rate(self) -> float:
        return current_false_positive_rate(self.bits_set, self.shape.bits, self.shape.hashes)

    @property
    def overfull(self) -> bool:
        """The estimated rate has passed twice the configured one."""
        return self.false_positive_rate > 2 * self.shape.error_rate


def shape_json(s: BloomShape) -> str:
    return json.dumps(
        {
            "capacity": s.capacity,
            "error_rate": s.error_rate,
            "bits": s.bits,
            "hashes": s.hashes,
            "key_bits": s.key_bits,
        },
        sort_keys=True,
    )


def _shape_from_json(text: str | bytes) -> BloomShape:
    data = json.loads(text)
    return BloomShape(
        int(data["capacity"]),
        float(data["error_rate"]),
        int(data["bits"]),
        int(data["hashes"]),
        int(data["key_bits"]),
    )


class RedisBloom:
    """One Bloom filter whose bits live in redis keys ``<base>``, ``<base>:1``, ...

    ``ttl`` (seconds) makes every touched key expire that long after its last use.
    """

    def __init__(
        self, server: redis.Redis, base: str, bloom_shape: BloomShape, ttl: int | None = None
    ) -> None:
        self.server = server
        self.base = base
        self.shape = bloom_shape
        self.ttl = ttl
        self._conn: ConnectionInterface | None = None

    @classmethod
    def open(cls, server: redis.Redis, base: str, wanted: BloomShape) -> RedisBloom:
        """The filter at ``base`` with the shape it was created with.

        The first worker records the shape in ``<base>:shape``; later workers use that
        shape even when their settings differ (other positions would make the bits
        meaningless), and say so.
        """
        shape_key = shape_key_of(base)
        server.set(shape_key, shape_json(wanted), nx=True)
        stored = server.get(shape_key)
        actual = _shape_from_json(stored) if stored else wanted
        if actual != wanted:
            logger.warning(
                "Bloom filter %s exists with capacity %d, error rate %g, %d bits, %d hashes; "
                "using it, not the configured capacity %d, error rate %g (delete its keys to "
                "resize)",
                base,
                actual.capacity,
                actual.error_rate,
                actual.bits,
                actual.hashes,
                wanted.capacity,
                wanted.error_rate,
            )
        return cls(server, base, actual)

    def key(self, index: int) -> str:
        return self.base if index == 0 else f"{self.base}:{index}"

    def keys(self) -> list[str]:
        return [self.key(i) for i in range(self.shape.keys)]

    def add(self, items: Sequence[bytes]) -> list[bool]:
        """Test-and-set ``items`` atomically; True for each item that was new.

        An item is new when any of its k bits was clear. Items are applied in order, so a
        duplicate later in the same batch is not new. Batches of ``VECTOR_MIN`` items or
        more are hashed and packed with numpy (3x less Python per item); fewer go one by
        one, where numpy's fixed cost per call would dominate.
        """
        if not items:
            return []
        if len(items) >= VECTOR_MIN:
            return self._add_batch(items)
        s = self.shape
        k = s.hashes
        flat: list[int] = []
        for item in items:
            flat.extend(positions(item, s.bits, k))
        prev = self._bitfield_set({0: flat})[0] if s.keys == 1 else self._split_set(flat)
        return [0 in prev[i : i + k] for i in range(0, len(prev), k)]

    def _add_batch(self, items: Sequence[bytes]) -> list[bool]:
        s = self.shape
        flat = positions_of_batch(items, s.bits, s.hashes).ravel()
        if s.keys == 1:
            prev = np.asarray(self._bitfield_set({0: flat})[0], dtype=np.uint8)
        else:
            key_bits = np.uint64(s.key_bits)
            index = flat // key_bits
            offsets = flat % key_bits
            masks = {int(i): index == i for i in np.unique(index)}
            results = self._bitfield_set({i: offsets[mask] for i, mask in masks.items()})
            prev = np.empty(len(flat), dtype=np.uint8)
            for i, mask in masks.items():
                prev[mask] = results[i]
        new: list[bool] = (prev.reshape(-1, s.hashes).min(axis=1) == 0).tolist()
        return new

    def _split_set(self, flat: list[int]) -> list[int]:
        by_key: dict[int, list[int]] = {}
        where: list[tuple[int, int]] = []
        for position in flat:
            index, offset = divmod(position, self.shape.key_bits)
            offsets = by_key.setdefault(index, [])
            where.append((index, len(offsets)))
            offsets.append(offset)
        results = self._bitfield_set(by_key)
        return [results[index][j] for index, j in where]

    def _bitfield_set(self, by_key: Mapping[int, Offsets]) -> dict[int, list[int]]:
        order = sorted(by_key)
        commands = [_pack_bitfield_set(self.key(index), by_key[index]) for index in order]
        expires = (
            [] if self.ttl is None else [_pack("EXPIRE", self.key(i), str(self.ttl)) for i in order]
        )
        if len(order) == 1:
            # One BITFIELD is atomic by itself; the EXPIRE need not be.
            return {order[0]: self._send(commands + expires, 1 + len(expires))[0]}
        commands = [_pack("MULTI"), *commands, _pack("EXEC"), *expires]
        replies = self._send(commands, len(commands))[len(order) + 1]
        return dict(zip(order, replies, strict=True))

    def _send(self, commands: list[bytes], replies: int) -> list[Any]:
        """Send pre-packed commands in one write and read their replies.

        redis-py packs arguments one by one in Python, which costs more than the whole
        BITFIELD in redis at 4 arguments per bit; packing the offsets ourselves is 4x faster.
        The filter keeps one connection of its own: taking one from redis-py's pool and
        giving it back costs a lock and a poll of the socket, about a fifth of a check.
        """
        conn = self._conn
        if conn is None:
            conn = self._conn = self.server.connection_pool.make_connection()
        try:
            conn.send_packed_command([b"".join(commands)])
            return [conn.read_response() for _ in range(replies)]
        except BaseException:
            # Replies may be left unread; the next call reconnects.
            conn.disconnect()
            raise

    def close(self) -> None:
        """Close the filter's own connection (a later call opens a new one)."""
        if self._conn is not None:
            self._conn.disconnect()
            self._conn = None

    def contains(self, items: Sequence[bytes]) -> list[bool]:
        """Whether each item is (probably) in the filter, changing nothing."""
        s = self.shape
        by_key: dict[int, list[int]] = {}
        where: list[tuple[int, int]] = []
        for item in items:
            for position in positions(item, s.bits, s.hashes):
                index, offset = divmod(position, s.key_bits)
                offsets = by_key.setdefault(index, [])
                where.append((index, len(offsets)))
                offsets.append(offset)
        order = sorted(by_key)
        commands = [_pack_bitfield_get(self.key(index), by_key[index]) for index in order]
        results = dict(zip(order, self._send(commands, len(order)), strict=True))
        bits = [results[index][j] for index, j in where]
        k = s.hashes
        return [0 not in bits[i : i + k] for i in range(0, len(bits), k)]

    def estimate(self) -> BloomEstimate:
        """Bits set (BITCOUNT over every key) and memory used, in one round trip."""
        pipe = self.server.pipeline(transaction=False)
        for key in self.keys():
            pipe.bitcount(key)
        for key in self.keys():
            pipe.memory_usage(key, samples=0)
        replies = pipe.execute()
        n = self.shape.keys
        return BloomEstimate(self.shape, sum(replies[:n]), sum(int(m or 0) for m in replies[n:]))

    def delete(self) -> None:
        self.server.delete(*self.keys())


def _pack(*args: str) -> bytes:
    """One command in the redis protocol (RESP)."""
    parts = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        data = arg.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


def _pack_bitfield_set(key: str, offsets: Offsets) -> bytes:
    """``BITFIELD key SET u1 <offset> 1 ...``: sets each bit, returns its previous value.

    >>> _pack_bitfield_set("k", [5]) == _pack("BITFIELD", "k", "SET", "u1", "5", "1")
    True
    >>> many = [0, 7, 10, 99, 4294967295] * 4
    >>> _pack_bitfield_set("k", np.array(many, dtype=np.uint64)) == _pack_bitfield_set("k", many)
    True
    """
    name = key.encode()
    head = b"*%d\r\n$8\r\nBITFIELD\r\n$%d\r\n%s\r\n" % (2 + 4 * len(offsets), len(name), name)
    if isinstance(offsets, np.ndarray):
        return head + _set_ops_vectorised(offsets)
    body = "".join(
        [f"$3\r\nSET\r\n$2\r\nu1\r\n${len(o)}\r\n{o}\r\n$1\r\n1\r\n" for o in map(str, offsets)]
    )
    return head + body.encode("ascii")


_SET_HEAD = np.frombuffer(b"$3\r\nSET\r\n$2\r\nu1\r\n$", dtype=np.uint8)
_SET_TAIL = np.frombuffer(b"\r\n$1\r\n1\r\n", dtype=np.uint8)
_CRLF = np.frombuffer(b"\r\n", dtype=np.uint8)
_GAP = 0  # a byte the protocol text never holds: marks the unused cells of a row


def _set_ops_vectorised(offsets: np.ndarray) -> bytes:
    """The ``SET u1 <offset> 1`` arguments of every offset (< 2**32), built with numpy.

    Each offset gets a fixed-width row: the head, a 2-character length, CRLF, 10 digit
    cells right-aligned, the tail; unused cells hold ``_GAP`` and are dropped at the end,
    which leaves exactly the variable-length protocol text, in order.
    """
    n = len(offsets)
    head, digits_at = len(_SET_HEAD), len(_SET_HEAD) + 4
    rows = np.full((n, digits_at + 10 + len(_SET_TAIL)), _GAP, dtype=np.uint8)
    rows[:, :head] = _SET_HEAD
    rows[:, head + 2 : digits_at] = _CRLF
    rows[:, digits_at + 10 :] = _SET_TAIL
    rest = offsets.astype(np.uint32)
    width = np.ones(n, dtype=np.uint8)
    for cell in range(digits_at + 9, digits_at - 1, -1):
        quotient = rest // 10
        digit = (rest - quotient * 10).astype(np.uint8) + ord("0")
        if cell == digits_at + 9:
            rows[:, cell] = digit  # the last digit, also of 0
        else:
            more = rest > 0
            rows[:, cell] = np.where(more, digit, _GAP)
            width += more
        rest = quotient
    rows[:, head] = np.where(width >= 10, ord("1"), _GAP)
    rows[:, head + 1] = ord("0") + width % 10
    return rows[rows != _GAP].tobytes()


def _pack_bitfield_get(key: str, offsets: list[int]) -> bytes:
    """``BITFIELD_RO key GET u1 <offset> ...``: reads each bit.

    >>> _pack_bitfield_get("k", [5]) == _pack("BITFIELD_RO", "k", "GET", "u1", "5")
    True
    """
    name = key.encode()
    head = b"*%d\r\n$11\r\nBITFIELD_RO\r\n$%d\r\n%s\r\n" % (
        2 + 3 * len(offsets),
        len(name),
        name,
    )
    body = "".join([f"$3\r\nGET\r\n$2\r\nu1\r\n${len(o)}\r\n{o}\r\n" for o in map(str, offsets)])
    return head + body.encode("ascii")


def shape_key_of(base: str) -> str:
    return f"{base}:shape"


def list_key_of(base: str, round_id: str) -> str:
    return f"{base}:list:{round_id}"


def iter_list_keys(server: redis.Redis, base: str) -> Iterable[str]:
    """The list-round keys of a filter that still exist."""
    for key in server.scan_iter(match=list_key_of(base, "*"), count=1000):
        yield key.decode() if isinstance(key, bytes) else str(key)
