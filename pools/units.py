"""How poolplan writes sizes, rates, durations and shares for people: one home, decimal SI units everywhere.

Decimal units (1 kB = 1000 B, 1 MB = 10⁶ B, 1 GB = 10⁹ B, 1 TB = 10¹² B) because Kafka's capacities are
quoted that way: a 1 Gbit/s link is 125 MB/s, a 4 TB disk holds 4·10¹² bytes, and the policy's ``[new_broker]``
table is written in those numbers. The report, the runbook and the console all format through this module, so
a size reads the same wherever it appears. Machine-readable files keep raw bytes and bytes/s.

Numbers keep three significant digits (``8.60 MB/s``, ``41.7 GB``, ``145 MB/s``): enough to compare, few enough
to read.
"""

from __future__ import annotations

import math

__all__ = ["format_bytes", "format_rate", "format_load", "format_duration", "format_percent", "format_count",
           "BYTE_UNITS"]

#: Decimal byte units, smallest first, with their size in bytes.
BYTE_UNITS: tuple[tuple[str, float], ...] = (("B", 1.0), ("kB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12),
                                              ("PB", 1e15))


def format_bytes(value: float | None, *, signed: bool = False) -> str:
    """A byte count in the largest decimal unit that keeps it at least 1, to three significant digits.

    Parameters
    ----------
    value : float or None
        Bytes; ``None`` (unknown) gives ``"—"``.
    signed : bool
        Prefix ``+`` to positive values (for deltas); negative values always carry ``−``.

    Examples
    --------
    >>> format_bytes(41_729_306_357), format_bytes(512), format_bytes(33.12e12), format_bytes(0)
    ('41.7 GB', '512 B', '33.1 TB', '0 B')
    >>> format_bytes(-1.5e9, signed=True), format_bytes(2.5e6, signed=True), format_bytes(None)
    ('−1.50 GB', '+2.50 MB', '—')
    """
    if value is None or math.isnan(value):
        return "—"
    sign = "−" if value < 0 else "+" if signed and value > 0 else ""
    magnitude = abs(float(value))
    unit, scale = BYTE_UNITS[0]
    for name, size in BYTE_UNITS:
        if magnitude >= size * 0.9995:  # 999.96 kB rounds to 1.00 MB, not "1000 kB"
            unit, scale = name, size
    if unit == "B":
        return f"{sign}{magnitude:,.0f} B"
    return f"{sign}{_three_digits(magnitude / scale)} {unit}"


def format_rate(value: float | None, *, signed: bool = False) -> str:
    """Bytes per second, like `format_bytes` with ``/s``.

    Examples
    --------
    >>> format_rate(8_604_624), format_rate(125e6), format_rate(36_250_000), format_rate(None)
    ('8.60 MB/s', '125 MB/s', '36.2 MB/s', '—')
    """
    text = format_bytes(value, signed=signed)
    return text if text == "—" else f"{text}/s"


def format_load(value: float | None, dimension: str, *, signed: bool = False) -> str:
    """A load or capacity in a capacity dimension's unit: ``nw_in``/``nw_out`` bytes/s, ``disk`` bytes, ``replicas``.

    Examples
    --------
    >>> format_load(181.25e6, "nw_in"), format_load(41.4e12, "disk"), format_load(5000, "replicas")
    ('181 MB/s', '41.4 TB', '5,000 replicas')
    """
    if dimension in ("nw_in", "nw_out"):
        return format_rate(value, signed=signed)
    if dimension == "disk":
        return format_bytes(value, signed=signed)
    text = format_count(value, signed=signed)
    return text if text == "—" else f"{text} replicas"


def format_duration(seconds: float | None) -> str:
    """A duration rounded up to the whole minute (seconds under one minute), as an operator plans with it.

    Examples
    --------
    >>> format_duration(45), format_duration(2967), format_duration(3840), format_duration(90061)
    ('45 s', '50 min', '1 h 04 min', '25 h 02 min')
    >>> format_duration(0), format_duration(None)
    ('0 s', '—')
    """
    if seconds is None or math.isnan(seconds):
        return "—"
    if math.ceil(seconds) < 60:
        return f"{math.ceil(seconds)} s"
    minutes = math.ceil(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def format_percent(fraction: float | None, *, signed: bool = False, points: bool = False, digits: int = 1) -> str:
    """A fraction as a percentage with ``digits`` decimals; ``points`` for a difference of percentages (``pp``).

    Examples
    --------
    >>> format_percent(0.275), format_percent(None), format_percent(-0.0123, points=True)
    ('27.5 %', '—', '−1.2 pp')
    >>> format_percent(0.05, signed=True), format_percent(0.00757, signed=True, digits=2)
    ('+5.0 %', '+0.76 %')
    """
    if fraction is None or math.isnan(fraction):
        return "—"
    value = round(fraction * 100, digits)
    sign = "−" if value < 0 else "+" if signed and value > 0 else ""
    return f"{sign}{abs(value):.{digits}f} {'pp' if points else '%'}"


def format_count(value: float | None, *, signed: bool = False) -> str:
    """A whole count with thousands separators.

    Examples
    --------
    >>> format_count(4000), format_count(-3, signed=True), format_count(2, signed=True), format_count(None)
    ('4,000', '−3', '+2', '—')
    """
    if value is None or math.isnan(value):
        return "—"
    whole = round(value)
    sign = "−" if whole < 0 else "+" if signed and whole > 0 else ""
    return f"{sign}{abs(whole):,d}"


def _three_digits(value: float) -> str:
    """``value`` (≥ 1, < 1000 after unit scaling) with three significant digits."""
    if round(value, 2) < 10:
        return f"{value:.2f}"
    if round(value, 1) < 100:
        return f"{value:.1f}"
    return f"{value:,.0f}"
