"""Typed validation of the TOML and JSON documents poolplan reads: one way to turn a pydantic error into a line.

Every schema (policy, broker inventory, run config, consumers config, plan, findings) is a pydantic model checked
with `validate`, and every error reads ``file: key.path: what was expected, got value`` — the key path in the
document's own spelling (``pool[2].headroom``, ``partitions[12].replicas``).

Examples
--------
>>> from pydantic import BaseModel
>>> class Doc(Strict):
...     count: ByteCount
>>> validate(Doc, {"count": -1}, "a.toml")
Traceback (most recent call last):
...
pools.errors.InputError: a.toml: count: expected an integer >= 0, got -1
>>> validate(Doc, {"count": 1, "colour": "red"}, "a.toml")
Traceback (most recent call last):
...
pools.errors.InputError: a.toml: colour: unknown key
"""

from __future__ import annotations

import math
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from pools.errors import InputError
from pools.input_limits import INT32_MAX, INT64_MAX

__all__ = [
    "Strict",
    "validate",
    "error_text",
    "location",
    "Finite",
    "NonNegFinite",
    "PositiveFinite",
    "BrokerId",
    "PartitionId",
    "ByteCount",
    "Name",
]

T = TypeVar("T")


class Strict(BaseModel):
    """Base of every schema: unknown keys are errors, no type coercion (``"3"`` is not a count), frozen."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value!r}")
    return value


#: A finite float (ints accepted); NaN and infinities are errors.
Finite = Annotated[float, AfterValidator(_finite)]
NonNegFinite = Annotated[float, Field(ge=0), AfterValidator(_finite)]
PositiveFinite = Annotated[float, Field(gt=0), AfterValidator(_finite)]
BrokerId = Annotated[int, Field(ge=0, le=INT32_MAX)]
PartitionId = Annotated[int, Field(ge=0, le=INT32_MAX)]
ByteCount = Annotated[int, Field(ge=0, le=INT64_MAX)]
Name = Annotated[str, Field(min_length=1)]

_EXPECTED = {
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "bool_type": "expected true or false",
    "list_type": "expected an array",
    "tuple_type": "expected an array",
    "model_type": "expected a table",
    "model_attributes_type": "expected a table",
    "dict_type": "expected a table",
    "missing": "missing (required)",
    "extra_forbidden": "unknown key",
    "literal_error": None,
    "enum": None,
}
_BOUNDS = {
    "greater_than_equal": ("ge", ">="),
    "greater_than": ("gt", ">"),
    "less_than_equal": ("le", "<="),
    "less_than": ("lt", "<"),
}
_NO_VALUE = {"missing", "extra_forbidden", "model_type", "model_attributes_type", "dict_type"}


def location(loc: tuple[Any, ...]) -> str:
    """``("pool", 2, "headroom")`` → ``pool[2].headroom``; pydantic's union/validator tags are dropped."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = str(part)
        if text.startswith(("function-", "float", "int", "str", "dict[", "list[", "tuple[", "lax-", "strict-",
                            "json-", "nullable", "constrained-", "is-instance", "union[", "tagged-union")):
            continue
        out += f".{text}" if out else text
    return out or "document"


def error_text(exc: ValidationError, source: str, at: str = "") -> str:
    """The first error of ``exc`` as ``source: key.path: expected ..., got value``; ``at`` prefixes the path."""
    err = exc.errors(include_url=False)[0]
    kind = err["type"]
    value = err.get("input")
    if kind in _BOUNDS:
        key, sign = _BOUNDS[kind]
        bound = err.get("ctx", {}).get(key)
        noun = "an integer" if isinstance(value, int) and not isinstance(value, bool) else "a number"
        message = f"expected {noun} {sign} {_number(bound)}"
    elif kind in ("too_short", "too_long"):
        ctx = err.get("ctx", {})
        message = (f"expected at least {ctx.get('min_length')} item(s)" if kind == "too_short"
                   else f"expected at most {ctx.get('max_length')} item(s)")
    elif kind == "value_error":
        message = str(err.get("ctx", {}).get("error", err["msg"]))
    else:
        message = _EXPECTED.get(kind) or err["msg"]
    if message.startswith("expected") and kind not in _NO_VALUE and not message.endswith(f"got {value!r}"):
        if not isinstance(value, (dict, list)) or len(repr(value)) <= 60:
            message += f", got {_short(value)}"
    if not source.endswith(".toml"):
        message = message.replace("a table", "an object")
    path = location(tuple(err["loc"]))
    if at:
        path = at if path == "document" else f"{at}{'' if path.startswith('[') else '.'}{path}"
    return f"{source}: {path}: {message}"


def _number(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate(schema: type[T] | TypeAdapter[T], doc: Any, source: str, *, at: str = "") -> T:
    """``doc`` validated against ``schema`` (a pydantic model or `TypeAdapter`), else one `InputError` line.

    ``at`` is where ``doc`` sits in its file (``partitions[12]``), for a schema of one entry.
    """
    try:
        if isinstance(schema, TypeAdapter):
            return schema.validate_python(doc)
        return schema.model_validate(doc)  # type: ignore[attr-defined,no-any-return]
    except ValidationError as exc:
        raise InputError(error_text(exc, source, at)) from None
