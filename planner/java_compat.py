"""Java semantics Kafka's algorithms depend on: `java.util.Random`, `String.hashCode`,
`HashMap`/`HashSet` iteration order and `String.compareTo` ordering.

These are re-typed from the documented Java algorithms so that placements and assignments
that depend on them come out exactly as Kafka computes them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, MutableSequence, Sequence
from typing import TypeVar

__all__ = [
    "JavaRandom",
    "java_shuffle",
    "int32",
    "string_hash",
    "utf16_key",
    "topic_partition_hash",
    "uuid_hash",
    "table_size_for",
    "hashmap_capacity",
    "hashmap_order",
]

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

_MULT, _ADD, _MASK = 0x5DEECE66D, 0xB, (1 << 48) - 1


def int32(x: int) -> int:
    """Wrap an integer to a signed 32-bit Java ``int``."""
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


class JavaRandom:
    """`java.util.Random`: the 48-bit LCG with Java's seed scrambling and `nextInt(bound)`.

    Examples
    --------
    >>> r = JavaRandom(42)
    >>> [r.next_int(10) for _ in range(5)]
    [0, 3, 8, 4, 0]
    """

    __slots__ = ("_seed",)

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ _MULT) & _MASK

    def next_bits(self, bits: int) -> int:
        """`Random.next(bits)`: the top ``bits`` of the advanced state, as a signed int."""
        self._seed = (self._seed * _MULT + _ADD) & _MASK
        return int32(self._seed >> (48 - bits))

    def next_int(self, bound: int) -> int:
        """`Random.nextInt(bound)`, including the power-of-two path and the rejection loop."""
        if bound <= 0:
            raise ValueError("bound must be positive")
        r = self.next_bits(31)
        if bound & (bound - 1) == 0:
            return (bound * r) >> 31
        u = r
        while True:
            r = u % bound
            if u - r + bound - 1 < 1 << 31:
                return r
            u = self.next_bits(31)


def java_shuffle(items: MutableSequence[T], rnd: JavaRandom) -> None:
    """`Collections.shuffle(list, rnd)` in place: swap ``i-1`` with ``nextInt(i)`` for i = n..2."""
    for i in range(len(items), 1, -1):
        j = rnd.next_int(i)
        items[i - 1], items[j] = items[j], items[i - 1]


def string_hash(s: str) -> int:
    """`String.hashCode()`: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, as a Java int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return int32(h)


def utf16_key(s: str) -> bytes:
    """Sort key that orders strings as `String.compareTo` does (UTF-16 code units)."""
    return s.encode("utf-16-be")


def topic_partition_hash(topic: str, partition: int) -> int:
    """`TopicPartition.hashCode()`: ``31 * (31 + partition) + topic.hashCode()``."""
    return int32(31 * (31 + partition) + string_hash(topic))


def uuid_hash(msb: int, lsb: int) -> int:
    """`Uuid.hashCode()`: ``(int)(x >> 32) ^ (int)x`` with ``x = msb ^ lsb``."""
    x = (msb ^ lsb) & 0xFFFFFFFFFFFFFFFF
    return int32((x >> 32) ^ (x & 0xFFFFFFFF))


def table_size_for(cap: int) -> int:
    """`HashMap.tableSizeFor`: the smallest power of two >= ``cap`` (at least 1)."""
    n = 1
    while n < cap:
        n <<= 1
    return n


def hashmap_capacity(size: int, initial: int = 16) -> int:
    """Table length of a `HashMap` after inserting ``size`` keys one by one (load factor 0.75)."""
    cap = table_size_for(max(initial, 1))
    while size > 0.75 * cap:
        cap <<= 1
    return cap


def hashmap_order(
    keys: Iterable[K],
    hash_of: Callable[[K], int],
    *,
    capacity: int | None = None,
) -> list[K]:
    """Iteration order of a `HashMap`/`HashSet` holding ``keys`` inserted in the given order.

    Buckets are visited in ascending order of ``(h ^ (h >>> 16)) & (capacity - 1)``; keys that share a
    bucket come in insertion order (resizes keep that order). ``capacity`` defaults to the table length
    reached by inserting the keys one at a time into a default map; pass it explicitly for maps built
    with an initial capacity (``new HashSet<>(collection)`` uses ``max(n / 0.75 + 1, 16)``).
    Treeified buckets (8+ colliding keys in a table of 64+) are not modelled.
    """
    distinct: list[K] = list(dict.fromkeys(keys))
    cap = capacity if capacity is not None else hashmap_capacity(len(distinct))
    mask = cap - 1

    def bucket(k: K) -> int:
        h = hash_of(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    return sorted(distinct, key=bucket)


