"""The Java semantics Kafka's algorithms and tools depend on, written once for placement, assignors and formats.

Kafka's results hang on details of the JDK: `String.hashCode` and `String.compareTo` work on UTF-16 code
units (a lone surrogate included), `int` arithmetic wraps at 32 bits, `Integer.parseInt` accepts any Unicode
decimal digit, `HashMap`/`HashSet` iterate bucket by bucket, and `java.util.Random` is a 48-bit LCG. Each is
re-typed here from the JDK's documented algorithm (JDK 17, the version Kafka 3.x and 4.x run on); the
conformance vectors under ``tests/data/conformance`` pin them to Kafka's own output.
"""

from __future__ import annotations

import struct
import unicodedata
from collections.abc import Callable, Hashable, Iterable, MutableSequence
from typing import TypeVar

import numpy as np

__all__ = [
    "INT_MIN",
    "INT_MAX",
    "int32",
    "parse_java_int",
    "string_hash",
    "utf16_key",
    "topic_partition_hash",
    "uuid_hash",
    "table_size_for",
    "hashset_copy_capacity",
    "hash_order",
    "JavaRandom",
    "java_shuffle",
]

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")
I = TypeVar("I")

#: The range of a Java ``int``.
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
#: `HashMap.MAXIMUM_CAPACITY`.
_MAXIMUM_CAPACITY = 1 << 30
_SIGN, _WORD = 1 << 31, 1 << 32
_MULT, _ADD, _MASK = 0x5DEECE66D, 0xB, (1 << 48) - 1
#: Spare LCG states drawn ahead by `JavaRandom.next_ints` for redraws of rejected values.
_SLACK = 64


def int32(x: I) -> I:
    """Wrap an integer, or each of a numpy integer array, to a signed 32-bit Java ``int`` (two's complement).

    Examples
    --------
    >>> int32(INT_MAX + 1), int32(-1), int32(1 << 32)
    (-2147483648, -1, 0)
    >>> import numpy as np
    >>> int32(np.array([INT_MAX, INT_MAX + 1]))
    array([ 2147483647, -2147483648])
    """
    return (x + _SIGN) % _WORD - _SIGN


def parse_java_int(text: str) -> int:
    r"""``Integer.parseInt(text)``: optional sign, Unicode decimal digits, 32-bit range.

    Raises
    ------
    ValueError
        With Java's ``NumberFormatException`` message, e.g. ``For input string: "x"``.

    Examples
    --------
    >>> parse_java_int("-12"), parse_java_int("+7"), parse_java_int("\u0663")  # ARABIC-INDIC DIGIT THREE
    (-12, 7, 3)
    >>> parse_java_int("2147483648")
    Traceback (most recent call last):
    ...
    ValueError: For input string: "2147483648"
    """
    error = ValueError(f'For input string: "{text}"')
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body:
        raise error
    value = 0
    for ch in body:
        digit = unicodedata.decimal(ch, None)
        if digit is None:
            raise error
        value = value * 10 + digit
    value = -value if text[0] == "-" else value
    if not INT_MIN <= value <= INT_MAX:
        raise error
    return value


def _utf16(s: str) -> bytes:
    # Java strings are UTF-16 code units and may hold a lone surrogate (a JSON "\ud800" escape gives one);
    # surrogatepass keeps it as the one code unit Java has instead of failing.
    return s.encode("utf-16-be", "surrogatepass")


def string_hash(s: str) -> int:
    r"""`String.hashCode()`: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, as a Java ``int``.

    Examples
    --------
    >>> string_hash("hello"), string_hash("Aa") == string_hash("BB"), string_hash("\ud800")
    (99162322, True, 55296)
    """
    h = 0
    data = _utf16(s)
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return int32(h)


def utf16_key(s: str) -> bytes:
    r"""Sort key that orders strings as `String.compareTo` does (by UTF-16 code unit).

    Examples
    --------
    >>> utf16_key("\U0001F680") < utf16_key("\uffff")  # a surrogate pair sorts below U+FFFF
    True
    >>> sorted(["rack-a", "C2", "Rack-B", "C10"], key=utf16_key)
    ['C10', 'C2', 'Rack-B', 'rack-a']
    """
    return _utf16(s)


def topic_partition_hash(topic: str, partition: int) -> int:
    """`TopicPartition.hashCode()`: ``31 * (31 + partition) + topic.hashCode()``.

    Examples
    --------
    >>> topic_partition_hash("t", 0)
    1077
    """
    return int32(31 * (31 + partition) + string_hash(topic))


def uuid_hash(msb: int, lsb: int) -> int:
    """`Uuid.hashCode()`: ``(int)(x >> 32) ^ (int)x`` with ``x = msb ^ lsb``.

    Examples
    --------
    >>> uuid_hash(0, 1), uuid_hash(1 << 32, 0)
    (1, 1)
    """
    x = (msb ^ lsb) & 0xFFFFFFFFFFFFFFFF
    return int32((x >> 32) ^ (x & 0xFFFFFFFF))


def table_size_for(cap: int) -> int:
    """`HashMap.tableSizeFor`: the smallest power of two >= ``cap``, between 1 and ``MAXIMUM_CAPACITY``.

    Examples
    --------
    >>> table_size_for(0), table_size_for(16), table_size_for(17)
    (1, 16, 32)
    """
    n = 1
    while n < cap and n < _MAXIMUM_CAPACITY:
        n <<= 1
    return n


def _float32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def hashset_copy_capacity(n: int) -> int:
    """The initial capacity ``new HashSet<>(collection)`` passes its map: ``max((int) (n / .75f) + 1, 16)``.

    The division is in ``float`` (exact here: a double quotient of two floats rounds to the float quotient),
    the cast saturates at ``INT_MAX`` and the ``+ 1`` wraps, as in Java.

    Examples
    --------
    >>> hashset_copy_capacity(3), hashset_copy_capacity(12), hashset_copy_capacity(100)
    (16, 17, 134)
    """
    quotient = _float32(_float32(n) / _float32(0.75))
    truncated = INT_MAX if quotient >= 2.0**31 else int(quotient)
    return max(int32(truncated + 1), 16)


def hash_order(keys: Iterable[K], hash_of: Callable[[K], int], *, initial_capacity: int = 16) -> list[K]:
    """Iteration order of a `HashMap`/`HashSet` after inserting ``keys`` one by one.

    Parameters
    ----------
    keys : iterable
        In insertion order; a repeated key keeps its first position.
    hash_of : callable
        The key's Java ``hashCode()``.
    initial_capacity : int
        The constructor's argument (``new HashMap<>(n)``; 16 for ``new HashMap<>()``; ``new HashSet<>(c)`` passes
        `hashset_copy_capacity` of ``c.size()``). The table starts at ``tableSizeFor(initial_capacity)`` and doubles
        whenever the size exceeds three quarters of it.

    Returns
    -------
    list
        Buckets ``(h ^ (h >>> 16)) & (capacity - 1)`` in ascending order, each bucket in insertion order (a resize
        keeps that order). Treeified buckets (8+ keys colliding in a table of 64+) are not modelled.

    Examples
    --------
    >>> hash_order([17, 1, 2], lambda k: k)  # 17 and 1 share bucket 1 of 16
    [17, 1, 2]
    >>> hash_order([17, 1, 2], lambda k: k, initial_capacity=32)
    [1, 2, 17]
    """
    distinct: list[K] = list(dict.fromkeys(keys))
    capacity = table_size_for(initial_capacity)
    while len(distinct) > capacity * 0.75 and capacity < _MAXIMUM_CAPACITY:
        capacity <<= 1
    mask = capacity - 1

    def bucket(k: K) -> int:
        h = hash_of(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    return sorted(distinct, key=bucket)


class JavaRandom:
    """`java.util.Random`: the 48-bit LCG with Java's seed scrambling and `nextInt(bound)`, one draw at a time
    (`next_int`) or a whole schedule of bounds at once (`next_ints`).

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
        """`Random.next(bits)`: the top ``bits`` of the advanced state, as a signed int.

        Examples
        --------
        >>> JavaRandom(0).next_bits(32)  # new Random(0).nextInt()
        -1155484576
        """
        self._seed = (self._seed * _MULT + _ADD) & _MASK
        return int32(self._seed >> (48 - bits))

    def next_int(self, bound: int) -> int:
        """`Random.nextInt(bound)`, including the power-of-two path and the rejection loop.

        Examples
        --------
        >>> JavaRandom(0).next_int(16) == JavaRandom(0).next_bits(31) * 16 >> 31
        True
        """
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

    def next_ints(self, bounds: np.ndarray | Iterable[int]) -> np.ndarray:
        """``[self.next_int(b) for b in bounds]`` in O(log N) numpy passes, leaving the same state behind.

        The LCG is jumped ahead by doubling (state ``k + m`` is an affine function of state ``k``); each draw
        reads `Random.next(31)`, a power-of-two bound takes the high bits, any other bound the remainder, redrawn
        while Java's rejection test overflows (which shifts every later draw).

        Examples
        --------
        >>> a, b = JavaRandom(42), JavaRandom(42)
        >>> a.next_ints([10, 10, 16, 3]).tolist() == [b.next_int(n) for n in (10, 10, 16, 3)]
        True
        >>> a.next_int(1000) == b.next_int(1000)
        True
        """
        bounds = np.asarray(bounds, dtype=np.int64)
        n = len(bounds)
        if n and bounds.min() <= 0:
            raise ValueError("bound must be positive")
        states = _lcg_states(self._seed, n + _SLACK)
        raw = (states >> np.uint64(17)).astype(np.int64)
        out = np.empty(n, dtype=np.int64)
        pow2 = (bounds & (bounds - 1)) == 0
        start, extra = 0, 0
        while start < n:
            if start + extra + (n - start) > len(raw):
                states = _lcg_states(self._seed, n + extra + _SLACK)
                raw = (states >> np.uint64(17)).astype(np.int64)
            u = raw[start + extra : n + extra]
            b = bounds[start:]
            r = np.where(pow2[start:], (b * u) >> 31, u % b)
            rejected = np.flatnonzero(~pow2[start:] & (u - r + b - 1 >= 1 << 31))
            stop = n if not len(rejected) else start + int(rejected[0])
            out[start:stop] = r[: stop - start]
            if stop < n:
                extra += 1
            start = stop
        if n + extra:
            self._seed = int(states[n + extra - 1])
        return out


def _mulmod48(a: int, v: np.ndarray) -> np.ndarray:
    """``a * v mod 2**48`` for a scalar and a uint64 vector (uint64 products wrap mod 2**64)."""
    return (np.uint64(a) * v) & np.uint64(_MASK)


def _lcg_states(state: int, n: int) -> np.ndarray:
    """The next ``n`` LCG states after ``state``: state ``m + k`` is ``A_m * state_k + C_m``."""
    out = np.empty(n, dtype=np.uint64)
    if n == 0:
        return out
    out[0] = (state * _MULT + _ADD) & _MASK
    m, a, c = 1, _MULT, _ADD
    while m < n:
        k = min(m, n - m)
        out[m : m + k] = (_mulmod48(a, out[:k]) + np.uint64(c)) & np.uint64(_MASK)
        a, c = (a * a) & _MASK, (a * c + c) & _MASK
        m *= 2
    return out


def java_shuffle(items: MutableSequence[T], rnd: JavaRandom) -> None:
    """`Collections.shuffle(list, rnd)` in place: swap ``i-1`` with ``nextInt(i)`` for i = n..2.

    Examples
    --------
    >>> items = [0, 1, 2, 3, 4]
    >>> java_shuffle(items, JavaRandom(1))
    >>> sorted(items) == [0, 1, 2, 3, 4] and items != [0, 1, 2, 3, 4]
    True
    """
    for i in range(len(items), 1, -1):
        j = rnd.next_int(i)
        items[i - 1], items[j] = items[j], items[i - 1]
