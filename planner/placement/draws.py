"""Many successive `java.util.Random.nextInt(bound)` draws at once, vectorised with numpy.

The 48-bit LCG is jumped ahead by doubling (state ``k + m`` is an affine function of state ``k``),
so a whole schedule of bounds is drawn in O(log N) numpy passes. `pools.java_semantics.JavaRandom`
is the one-draw-at-a-time reference; both give the same numbers for the same seed.
"""

from __future__ import annotations

__all__ = ["scramble", "next_ints"]

import numpy as np

_MULT, _ADD, _MASK = 0x5DEECE66D, 0xB, (1 << 48) - 1
_SLACK = 64


def scramble(seed: int) -> int:
    """The 48-bit state of ``new Random(seed)`` (Java's initial scramble)."""
    return (seed ^ _MULT) & _MASK


def next_ints(state: int, bounds: np.ndarray) -> tuple[np.ndarray, int]:
    """``[nextInt(b) for b in bounds]`` from the 48-bit ``state``; return the draws and the new state.

    Each draw reads `Random.next(31)`; a power-of-two bound takes the high bits, any other bound
    the remainder, redrawn while Java's rejection test overflows (which shifts every later draw).

    Examples
    --------
    >>> from pools.java_semantics import JavaRandom
    >>> r = JavaRandom(42)
    >>> draws, _ = next_ints(scramble(42), np.array([10, 10, 16, 3]))
    >>> draws.tolist() == [r.next_int(b) for b in (10, 10, 16, 3)]
    True
    """
    bounds = np.asarray(bounds, dtype=np.int64)
    n = len(bounds)
    if n and bounds.min() <= 0:
        raise ValueError("bound must be positive")
    states = _states(state, n + _SLACK)
    raw = (states >> np.uint64(17)).astype(np.int64)
    out = np.empty(n, dtype=np.int64)
    pow2 = (bounds & (bounds - 1)) == 0
    start, extra = 0, 0
    while start < n:
        if start + extra + (n - start) > len(raw):
            states = _states(state, n + extra + _SLACK)
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
    last = n + extra
    return out, (int(states[last - 1]) if last else state)


def _mulmod48(a: int, v: np.ndarray) -> np.ndarray:
    """``a * v mod 2**48`` for a scalar and a uint64 vector (uint64 products wrap mod 2**64)."""
    return (np.uint64(a) * v) & np.uint64(_MASK)


def _states(state: int, n: int) -> np.ndarray:
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
