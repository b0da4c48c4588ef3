"""Split one Prometheus API response of any size into its ``data.result`` elements, in bounded memory.

A ``query_range`` document is one JSON object whose bulk is the ``data.result`` array of series. This module
reads the document in fixed-size chunks and yields each element of that array as its own bytes, so memory
holds one chunk and one series at a time, never the document. Structure is found with numpy over each chunk:
quotes not escaped by an odd run of backslashes delimit strings, brackets outside strings change the depth,
and only the brackets at depth ≤ 3 (a handful per series) are looked at one by one in Python. Everything
outside the depth-3 containers (``status``, ``error``, ``data.resultType`` …, the *skeleton*) is kept as text
and parsed at the end. Any JSON layout works (compact, pretty-printed, any key order).

Examples
--------
>>> doc = (b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"1"},"values":[[1,"2"]]}, '
...        b'{"metric":{}}]}}')
>>> parts = list(split_result(iter([doc[:40], doc[40:]])))
>>> [p for kind, p in parts if kind == SERIES]
[b'{"metric":{"a":"1"},"values":[[1,"2"]]}', b'{"metric":{}}']
>>> parts[-1]
('end', {'status': 'success', 'data': {'resultType': 'matrix', 'result': []}})
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import numpy as np
import orjson

__all__ = ["SERIES", "END", "BROKEN", "split_result", "read_chunks", "CHUNK_BYTES"]

#: Kinds of what `split_result` yields: one element of ``data.result``; the parsed skeleton (last); or the
#: reason the document's structure broke (last, instead of ``END``) with the text left over.
SERIES, END, BROKEN = "series", "end", "broken"
#: Bytes read at a time.
CHUNK_BYTES = 8 << 20

#: +1 for an opening bracket, -1 for a closing one, 0 for any other byte.
_STEP = np.zeros(256, np.int8)
_STEP[[ord("{"), ord("[")]] = 1
_STEP[[ord("}"), ord("]")]] = -1
_KEY = re.compile(rb'"((?:[^"\\]|\\.)*)"\s*:\s*$')
#: The container path of the array whose elements are yielded.
_RESULT_PATH = (b"data", b"result")


def read_chunks(stream: BinaryIO, size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The bytes of ``stream`` in chunks of ``size``."""
    while chunk := stream.read(size):
        yield chunk


class _Scanner:
    """The state carried from one chunk to the next."""

    def __init__(self) -> None:
        self.in_string = False
        self.backslashes = 0  # the run of backslashes that ended the previous chunk
        self.depth = 0
        self.keys: list[bytes | None] = []  # the key of each open container at depth 1..3
        self.skeleton = bytearray()
        self.skipping = False  # inside a depth-3 container (its text is not skeleton)
        self.element = bytearray()  # the result element being collected
        self.in_element = False

    def real_quotes(self, b: np.ndarray) -> np.ndarray:
        """Positions of the quotes that open or close a string (not escaped by an odd run of backslashes)."""
        quotes = np.flatnonzero(b == 34)
        bs = b == 92
        carry = self.backslashes
        if not carry and not bs.any():
            return quotes
        idx = np.arange(b.size)
        last_other = np.maximum.accumulate(np.where(bs, -1, idx))  # the last byte at or before i that is not one
        run = np.where(bs, idx - last_other + np.where(last_other < 0, carry, 0), 0)  # backslashes ending at i
        before = np.where(quotes > 0, run[np.maximum(quotes - 1, 0)], carry)
        self.backslashes = int(run[-1])
        return quotes[before % 2 == 0]

    def brackets(self, b: np.ndarray) -> tuple[np.ndarray, int]:
        """Positions of the brackets outside strings, and the number of real quotes in the chunk.

        A bracket is inside a string when an odd number of real quotes precede it (plus the carried state).
        Without a backslash (no escaped quote), quotes and brackets are found in one pass and each bracket's
        quotes are counted along them; else the real quotes are found first and each bracket looked up among them.
        """
        folded = b | 0x20  # "[" and "]" fold onto "{" and "}": two compares, not a table look-up per byte
        if not self.backslashes and not (b == 92).any():
            events = np.flatnonzero((b == 34) | (folded == 0x7B) | (folded == 0x7D))
            quote = b[events] == 34
            quotes = np.cumsum(quote, dtype=np.int32 if b.size < 1 << 31 else np.int64)  # the quotes up to each event
            inside = (quotes & 1).astype(bool) ^ self.in_string
            return events[~(quote | inside)], int(quotes[-1]) if quotes.size else 0
        quotes = self.real_quotes(b)
        brackets = np.flatnonzero((folded == 0x7B) | (folded == 0x7D))
        outside = (np.searchsorted(quotes, brackets) + self.in_string) % 2 == 0
        return brackets[outside], quotes.size

    def feed(self, chunk: bytes) -> Iterator[tuple[str, Any]]:
        b = np.frombuffer(chunk, np.uint8)
        brackets, quotes = self.brackets(b)
        step = _STEP[b[brackets]].astype(np.int64)
        after = self.depth + np.cumsum(step)
        before = after - step
        low = np.flatnonzero((after <= 3) | (before <= 3))
        pos = 0  # chunk offset up to which text has been routed to the skeleton or the element
        for i in low.tolist():
            p = int(brackets[i])
            opened = step[i] > 0
            d_before, d_after = int(before[i]), int(after[i])
            if opened and d_after == 4:
                self.route(chunk, pos, p)
                pos = p
                if self.keys[1:3] == list(_RESULT_PATH) and self.keys[0] is None:
                    self.in_element = True
                    self.element = bytearray()
                continue
            if not opened and d_before == 4:
                if self.in_element:
                    self.element += chunk[pos : p + 1]
                    pos = p + 1
                    self.in_element = False
                    yield SERIES, bytes(self.element)
                    self.element = bytearray()
                continue
            if opened:  # a container at depth 1..3 opens
                self.route(chunk, pos, p + 1)
                pos = p + 1
                match = _KEY.search(bytes(self.skeleton[-4096:-1])) if d_after > 1 else None
                self.keys.append(match.group(1) if match else None)
                if d_after == 3:
                    self.skipping = True
            else:  # closes back to depth 0..2
                if d_before == 3:
                    self.route(chunk, pos, p)
                    pos = p
                    self.skipping = False
                if d_after < 0:
                    raise ValueError("a closing bracket without an opening one")
                self.keys.pop()
        self.route(chunk, pos, len(chunk))
        self.depth = int(after[-1]) if after.size else self.depth
        self.in_string = bool((quotes + self.in_string) % 2)

    def route(self, chunk: bytes, start: int, end: int) -> None:
        """Text between structural events goes to the element being collected, else to the skeleton."""
        if start >= end:
            return
        if self.in_element:
            self.element += chunk[start:end]
        elif not self.skipping:
            self.skeleton += chunk[start:end]


def split_result(chunks: Iterable[bytes]) -> Iterator[tuple[str, Any]]:
    """Yield ``(SERIES, bytes)`` for each element of ``data.result``, then ``(END, skeleton)``.

    The skeleton is the document without the contents of its depth-3 containers (so ``data.result`` is
    ``[]``), parsed. When the document's structure breaks (unbalanced brackets, truncated, trailing text,
    an unparseable skeleton) the last item is ``(BROKEN, text)`` instead, ``text`` being at most the first
    2,000 characters of what could not be used; elements yielded before stay valid.
    """
    scanner = _Scanner()
    try:
        for chunk in chunks:
            yield from scanner.feed(chunk)
    except ValueError as exc:
        yield BROKEN, f"{exc}: {_text(scanner.skeleton)}"
        return
    if scanner.depth != 0 or scanner.in_string:
        tail = scanner.element if scanner.in_element else scanner.skeleton
        yield BROKEN, f"truncated document: {_text(tail)}"
        return
    try:
        yield END, orjson.loads(bytes(scanner.skeleton))
    except orjson.JSONDecodeError as exc:
        yield BROKEN, f"{exc}: {_text(scanner.skeleton)}"


def _text(data: bytes | bytearray) -> str:
    return bytes(data[:2000]).decode("utf-8", "replace")
