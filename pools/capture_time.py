"""When a capture of a Kafka tool's output was taken: its own stamp, else its file name's.

Kafka's tools print no time. A capture carries one in either of two ways an operator's cron job writes:

- its own stamp: a first line holding only an ISO-8601 time with its UTC offset, written before the tool's output
  (``{ date -u +%Y-%m-%dT%H:%M:%SZ; kafka-log-dirs.sh ... ; } > capture.txt``; ``date -Iseconds`` too);
- its file name: ``<YYYYMMDDTHHMMSSZ>`` anywhere in it (``log-dirs-20261102T000000Z.txt``, as
  ``date -u +%Y%m%dT%H%M%SZ`` prints it), or an ISO-8601 time with its offset (``log-dirs-2026-11-02T00:00:00Z.txt``).

The stamp line wins over the name. A stamp that is not a real time (``2026-02-30T00:00:00Z``, no offset) is bad
input, never ignored.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from pools.errors import InputError

__all__ = ["captured_at", "taken_at_from_name", "iso_time"]

_NAME = re.compile(r"(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z")
_LINE = re.compile(r"^\d{4}-\d{2}-\d{2}T\S+$")
_ISO_NAME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})")


def taken_at_from_name(name: str) -> str | None:
    """``2026-11-02T00:00:00Z`` from a name containing ``20261102T000000Z``, else None (the digits unchecked).

    >>> taken_at_from_name("log-dirs-20261102T000000Z.txt"), taken_at_from_name("log-dirs.txt")
    ('2026-11-02T00:00:00Z', None)
    """
    m = _NAME.search(name)
    if m is None:
        return None
    y, mo, d, h, mi, s = m.groups()
    return f"{y}-{mo}-{d}T{h}:{mi}:{s}Z"


def captured_at(text: str, name: str, *, source: str) -> tuple[float | None, str]:
    """The capture's time in seconds since the epoch (None when it carries none) and its text with the stamp line
    blanked (line numbers kept), for the tool's parser.

    >>> captured_at("2026-11-02T00:01:00Z\\n{}", "x.txt", source="x.txt")
    (1793577660.0, '\\n{}')
    >>> captured_at("{}", "log-dirs-20261102T000000Z.txt", source="x")[0]
    1793577600.0
    >>> captured_at("{}", "log-dirs-2026-11-02T00:00:30+00:00.txt", source="x")[0]
    1793577630.0
    >>> captured_at("2026-11-02T00:01:00\\n{}", "x.txt", source="x.txt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pools.errors.InputError: x.txt:1: expected an ISO-8601 time with its UTC offset (...), got '2026-11-02T00:01:00'
    """
    first, _, rest = text.partition("\n")
    stamp = first.strip()
    if _LINE.match(stamp):
        return _seconds(stamp, f"{source}:1"), "\n" + rest
    iso = _ISO_NAME.search(name)
    named = iso.group(0) if iso else taken_at_from_name(name)
    return (_seconds(named, f"{source}: the file name's stamp") if named else None), text


def _seconds(stamp: str, where: str) -> float:
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise InputError(f"{where}: expected an ISO-8601 time with its UTC offset (2026-11-02T00:00:00Z), "
                         f"got {stamp!r}")
    return when.timestamp()


def iso_time(seconds: float) -> str:
    """``seconds`` since the epoch as ``2026-11-02T00:00:00Z`` (whole seconds; fractions kept as ``.ffffff``).

    >>> iso_time(1793577600.0), iso_time(1.5)
    ('2026-11-02T00:00:00Z', '1970-01-01T00:00:01.500000Z')
    """
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat().replace("+00:00", "Z")
