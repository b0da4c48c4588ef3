"""Jackson's JSON tree reading and writing, as Kafka's tools parse and print JSON.

Kafka's command-line tools parse JSON with Jackson's ``ObjectMapper.readTree`` (trailing text after the
first value ignored, integers typed ``int``/``long``/``BigInteger`` by size, any fraction or exponent a
``double``) and write it with ``ObjectMapper.writeValueAsString``. Their error messages embed Jackson's
compact rendering of nodes and Java's ``List.toString``. This module re-types those rules so that
`pools.kafka_formats.reassignment` can print exactly what Kafka prints; the JDK semantics underneath
(hashing, ``HashSet`` order, ``Integer.parseInt``) are `pools.java_semantics`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "JacksonParseError",
    "MISSING",
    "read_tree",
    "render_node",
    "encode_compact",
    "java_list_str",
]

_VALID_VALUES = "(JSON String, Number, Array, Object or token 'null', 'true' or 'false')"
_VALID_TOKENS = "('true', 'false' or 'null')"
_NON_NUMERIC = "JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS"
_REDACTED = "[Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: {}, column: {}]"
_WS = " \t\n\r"
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


class _Missing:
    """Jackson's ``MissingNode``: what ``readTree`` returns for blank input (rendered as empty text)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


class JacksonParseError(Exception):
    """A JSON syntax error, with the Jackson exception class and its message's first line."""

    def __init__(self, java_class: str, message: str) -> None:
        super().__init__(message)
        self.java_class = java_class
        self.message = message


def read_tree(text: str) -> Any:
    """Parse the first JSON value of ``text`` as Jackson's ``ObjectMapper.readTree`` does.

    Objects become dicts (a repeated key keeps its first position and its last value), arrays lists,
    integers ints, numbers with a fraction or exponent floats. Text after the first value is ignored.
    Blank input gives `MISSING`.

    Raises
    ------
    JacksonParseError
        For malformed JSON, with Jackson's exception class and message.
    """
    start = len(text) - len(text.lstrip(_WS))
    if text[start : start + 1] in ("{", "["):
        try:  # C-speed path; anything it rejects is re-read below for Jackson's exact message
            return _FAST.raw_decode(text, start)[0]
        except (ValueError, RecursionError):
            pass
    return _Parser(text).root()


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


_FAST = json.JSONDecoder(parse_constant=_reject_constant, strict=True)


def render_node(node: Any) -> str:
    """Jackson's ``JsonNode.toString()``: compact JSON, doubles as Java prints them."""
    if node is MISSING:
        return ""
    return encode_compact(node)


def encode_compact(value: Any) -> str:
    """``ObjectMapper.writeValueAsString`` for plain data: compact, key order kept, Jackson escapes."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_quote(k)}:{encode_compact(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(encode_compact(v) for v in value) + "]"
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def java_list_str(items: Iterable[Any]) -> str:
    """Java's ``AbstractCollection.toString``: ``[a, b, c]`` with strings unquoted."""
    return "[" + ", ".join(str(i) for i in items) + "]"


def _quote(s: str) -> str:
    if not _NEEDS_ESCAPE.search(s):
        return f'"{s}"'
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20:
            short = {8: "b", 9: "t", 10: "n", 12: "f", 13: "r"}.get(code)
            out.append("\\" + short if short else f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _java_double(x: float) -> str:
    """Java's ``Double.toString``: plain between 1e-3 and 1e7, else ``d.dddE[-]n``; quoted non-finite."""
    if math.isnan(x):
        return '"NaN"'
    if math.isinf(x):
        return '"Infinity"' if x > 0 else '"-Infinity"'
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    digits, exponent = _shortest_digits(abs(x))
    if 1e-3 <= abs(x) < 1e7:
        point = exponent + 1
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    frac = digits[1:] or "0"
    return f"{sign}{digits[0]}.{frac}E{exponent}"


def _shortest_digits(x: float) -> tuple[str, int]:
    """The shortest round-tripping decimal digits of ``x`` and its decimal exponent."""
    mant, _, e = repr(x).partition("e")
    intpart, _, frac = mant.partition(".")
    exponent = int(e) if e else 0
    if intpart == "0":
        digits = frac.lstrip("0")
        exponent -= len(frac) - len(digits) + 1
    else:
        digits = intpart + frac
        exponent += len(intpart) - 1
    return digits.rstrip("0") or "0", exponent


class _Parser:
    """A recursive-descent reader with Jackson's token rules and messages."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.n = len(text)

    # -- positions and errors ---------------------------------------------------------------
    def _line_col(self, pos: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return line, col

    def _fail(self, message: str, java_class: str = "com.fasterxml.jackson.core.JsonParseException") -> None:
        raise JacksonParseError(java_class, message)

    def _eof(self, message: str) -> None:
        self._fail("Unexpected end-of-input" + message, "com.fasterxml.jackson.core.io.JsonEOFException")

    def _unexpected(self, pos: int, comment: str) -> None:
        self._fail(f"Unexpected character ({_char_desc(self.text[pos])}): {comment}")

    def _skip_ws(self) -> None:
        while self.pos < self.n and self.text[self.pos] in _WS:
            self.pos += 1

    # -- grammar ------------------------------------------------------------------------------
    def root(self) -> Any:
        self._skip_ws()
        if self.pos >= self.n:
            return MISSING
        return self._value(root=True, context=None)

    def _value(self, *, root: bool, context: tuple[str, int] | None) -> Any:
        ch = self.text[self.pos]
        if ch == "{":
            return self._object()
        if ch == "[":
            return self._array()
        if ch == '"':
            self.pos += 1
            return self._string("string value")
        if ch == "-" or ch in "0123456789":
            return self._number(root)
        if ch in "tfn":
            return self._keyword()
        if root and ch in "]}":
            self._mismatch_or_value(ch, ("root", -1))
        if ch in "}," or (ch == "]" and context is not None and context[0] == "Array"):
            self._unexpected(self.pos, "expected a value")
        if ch == "+":
            if self.text.startswith("+Infinity", self.pos):
                self._fail(f"Non-standard token '+Infinity': enable `{_NON_NUMERIC}` to allow")
            self._fail(
                "Unexpected character ('+' (code 43)) in numeric value: JSON spec does not allow numbers to have "
                "plus signs: enable `JsonReadFeature.ALLOW_LEADING_PLUS_SIGN_FOR_NUMBERS` to allow"
            )
        if ch.isidentifier() or ch.isalnum():
            word = self._identifier()
            if word in ("NaN", "Infinity"):
                self._fail(f"Non-standard token '{word}': enable `{_NON_NUMERIC}` to allow")
            self._fail(f"Unrecognized token '{word}': was expecting {_VALID_TOKENS}")
        self._unexpected(self.pos, f"expected a valid value {_VALID_VALUES}")
        return None

    def _mismatch_or_value(self, ch: str, context: tuple[str, int]) -> None:
        """``_closeScope``: a close marker that does not match the open scope (``root`` starts at column 0)."""
        kind, start = context
        expected = {"Array": "]", "Object": "}"}.get(kind, "}" if ch == "]" else "]")
        if ch != expected:
            line, col = self._line_col(start) if start >= 0 else (1, 0)
            self._fail(
                f"Unexpected close marker '{ch}': expected '{expected}' "
                f"(for {kind} starting at {_REDACTED.format(line, col)})"
            )

    def _close_eof(self, kind: str, start: int) -> None:
        line, col = self._line_col(start)
        self._eof(f": expected close marker for {kind} (start marker at {_REDACTED.format(line, col)})")

    def _object(self) -> dict[str, Any]:
        start = self.pos
        self.pos += 1
        result: dict[str, Any] = {}
        self._skip_ws()
        if self.pos >= self.n:
            self._close_eof("Object", start)
        if self.text[self.pos] == "}":
            self.pos += 1
            return result
        while True:
            self._skip_ws()
            if self.pos >= self.n:
                self._close_eof("Object", start)
            ch = self.text[self.pos]
            if ch != '"':
                if ch == "]":
                    self._mismatch_or_value(ch, ("Object", start))
                self._unexpected(self.pos, "was expecting double-quote to start field name")
            self.pos += 1
            key = self._string("name")
            self._skip_ws()
            if self.pos >= self.n:
                self._eof(" within/between Object entries")
            if self.text[self.pos] != ":":
                self._unexpected(self.pos, "was expecting a colon to separate field name and value")
            self.pos += 1
            self._skip_ws()
            if self.pos >= self.n:
                self._close_eof("Object", start)
            result[key] = self._value(root=False, context=("Object", start))
            self._skip_ws()
            if self.pos >= self.n:
                self._close_eof("Object", start)
            ch = self.text[self.pos]
            if ch == "}":
                self.pos += 1
                return result
            if ch == "]":
                self._mismatch_or_value(ch, ("Object", start))
            if ch != ",":
                self._unexpected(self.pos, "was expecting comma to separate Object entries")
            self.pos += 1

    def _array(self) -> list[Any]:
        start = self.pos
        self.pos += 1
        result: list[Any] = []
        self._skip_ws()
        if self.pos >= self.n:
            self._close_eof("Array", start)
        if self.text[self.pos] == "]":
            self.pos += 1
            return result
        if self.text[self.pos] == "}":
            self._mismatch_or_value("}", ("Array", start))
        while True:
            self._skip_ws()
            if self.pos >= self.n:
                self._close_eof("Array", start)
            result.append(self._value(root=False, context=("Array", start)))
            self._skip_ws()
            if self.pos >= self.n:
                self._close_eof("Array", start)
            ch = self.text[self.pos]
            if ch == "]":
                self.pos += 1
                return result
            if ch == "}":
                self._mismatch_or_value(ch, ("Array", start))
            if ch != ",":
                self._unexpected(self.pos, "was expecting comma to separate Array entries")
            self.pos += 1

    def _string(self, what: str) -> str:
        out: list[str] = []
        while True:
            if self.pos >= self.n:
                self._eof(" in field name" if what == "name" else f": was expecting closing quote for a {what}")
            ch = self.text[self.pos]
            self.pos += 1
            if ch == '"':
                text = "".join(out)  # join escaped surrogate pairs, keep lone surrogates as Java does
                return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
            if ch == "\\":
                out.append(self._escape())
            elif ord(ch) < 0x20:
                self._fail(
                    f"Illegal unquoted character ({_char_desc(ch)}): has to be escaped using backslash "
                    f"to be included in {what}"
                )
            else:
                out.append(ch)

    def _escape(self) -> str:
        if self.pos >= self.n:
            self._eof(" in character escape sequence")
        ch = self.text[self.pos]
        self.pos += 1
        simple = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
        if ch in simple:
            return simple[ch]
        if ch != "u":
            self._fail(f"Unrecognized character escape {_char_desc(ch)}")
        code = 0
        for _ in range(4):
            if self.pos >= self.n:
                self._eof(" in character escape sequence")
            h = self.text[self.pos]
            self.pos += 1
            if h not in "0123456789abcdefABCDEF":
                self._unexpected(self.pos - 1, "expected a hex-digit for character escape sequence")
            code = code * 16 + int(h, 16)
        return chr(code)

    def _number(self, root: bool) -> int | float:
        start = self.pos
        if self.text[self.pos] == "-":
            self.pos += 1
            if self.pos >= self.n:
                self._eof(" in a Number value")
            if self.text[self.pos] not in "0123456789":
                self._fail(
                    f"Unexpected character ({_char_desc(self.text[self.pos])}) in numeric value: "
                    "expected digit (0-9) to follow minus sign, for valid numeric value"
                )
        int_start = self.pos
        while self.pos < self.n and self.text[self.pos] in "0123456789":
            self.pos += 1
        if self.pos - int_start > 1 and self.text[int_start] == "0":
            self._fail("Invalid numeric value: Leading zeroes not allowed")
        is_float = False
        if self.pos < self.n and self.text[self.pos] == ".":
            is_float = True
            self.pos += 1
            frac = self.pos
            while self.pos < self.n and self.text[self.pos] in "0123456789":
                self.pos += 1
            if self.pos == frac:
                self._number_tail_error("Decimal point not followed by a digit")
        if self.pos < self.n and self.text[self.pos] in "eE":
            is_float = True
            self.pos += 1
            if self.pos < self.n and self.text[self.pos] in "+-":
                self.pos += 1
            exp = self.pos
            while self.pos < self.n and self.text[self.pos] in "0123456789":
                self.pos += 1
            if self.pos == exp:
                self._number_tail_error("Exponent indicator not followed by a digit")
        if root and self.pos < self.n and self.text[self.pos] not in _WS:
            self._unexpected(self.pos, "Expected space separating root-level values")
        literal = self.text[start : self.pos]
        return float(literal) if is_float else int(literal)

    def _number_tail_error(self, comment: str) -> None:
        if self.pos >= self.n:
            self._eof(" in a Number value")
        self._fail(f"Unexpected character ({_char_desc(self.text[self.pos])}) in numeric value: {comment}")

    def _identifier(self) -> str:
        start = self.pos
        self.pos += 1
        while (self.pos < self.n and (self.text[self.pos].isalnum() or self.text[self.pos] in "_$")
               and self.pos - start < 256):
            self.pos += 1
        return self.text[start : self.pos]

    def _keyword(self) -> Any:
        word = self._identifier()
        values = {"true": True, "false": False, "null": None}
        if word in values:
            return values[word]
        self._fail(f"Unrecognized token '{word}': was expecting {_VALID_TOKENS}")
        return None


def _char_desc(ch: str) -> str:
    code = ord(ch)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"(CTRL-CHAR, code {code})"
    if code > 255:
        return f"'{ch}' (code {code} / 0x{code:x})"
    return f"'{ch}' (code {code})"
