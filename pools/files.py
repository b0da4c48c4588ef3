"""Reading the user's files: the one place where OS and decoding errors become an `InputError` naming the file.

Every reader of a user file (policy, inventory, snapshot, plan, profile, run config, consumer files, Kafka
tool output) goes through `read_text`, `load_toml` or `load_json`, so a missing file, a directory, a file that
is not UTF-8 or not valid TOML/JSON all end in one line that names the file and what was expected.

Examples
--------
>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "pools.toml"
>>> _ = p.write_bytes(b"\\xef\\xbb\\xbf[defaults]\\nheadroom = 0.7\\n")  # a UTF-8 byte-order mark is dropped
>>> load_toml(p)
{'defaults': {'headroom': 0.7}}
>>> _ = p.write_bytes(b"name = \\"caf\\xe9\\"\\n")  # Latin-1, not UTF-8
>>> try:
...     read_text(p)
... except InputError as exc:
...     print(str(exc).split(": ", 1)[1])
not UTF-8 text (byte offset 11: 0xe9); save it as UTF-8
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

import orjson

from pools.errors import InputError

__all__ = ["read_bytes", "read_text", "load_toml", "parse_toml", "load_json", "parse_json"]

_BOM = "\ufeff"


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of ``path``.

    Raises
    ------
    InputError
        The file is missing, a directory, unreadable or cannot be read (the message names it).
    """
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory; expected a file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def read_text(path: str | os.PathLike[str]) -> str:
    """The text of ``path``, decoded as UTF-8; a leading byte-order mark is dropped.

    Raises
    ------
    InputError
        As `read_bytes`, and for bytes that are not UTF-8 (the message gives the byte offset).
    """
    data = read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: not UTF-8 text (byte offset {exc.start}: 0x{data[exc.start]:02x}); save it as UTF-8"
        ) from None
    return text.removeprefix(_BOM)


def load_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The TOML document in ``path``.

    Raises
    ------
    InputError
        As `read_text`, and for invalid TOML (with the line and column tomllib reports).
    """
    return parse_toml(read_text(path), str(path))


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """The TOML document in ``text`` (read from ``source``, named in errors); see `load_toml`."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{source}: invalid TOML: {exc}") from None
    except RecursionError:
        raise InputError(f"{source}: invalid TOML: arrays or tables nested too deeply") from None


def load_json(path: str | os.PathLike[str]) -> Any:
    """The JSON document in ``path``; ``NaN``, ``Infinity`` and numbers past a double are rejected (not JSON).

    Raises
    ------
    InputError
        As `read_text`, and for invalid JSON (with its line and column).
    """
    return parse_json(read_text(path), str(path))


def parse_json(text: str | bytes, source: str) -> Any:
    """The JSON document in ``text`` (read from ``source``, named in errors); see `load_json`.

    Integers past 64 bits come back as floats (a count that large is then rejected by its schema).

    Examples
    --------
    >>> parse_json('{"a": [1, 2]}', "x.json")
    {'a': [1, 2]}
    >>> parse_json('{"a": 1e999}', "x.json")
    Traceback (most recent call last):
    ...
    pools.errors.InputError: x.json: invalid JSON at line 1 column 7: number is infinity when parsed as double
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        message = str(exc.msg).split(": line ")[0]
        raise InputError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {message}") from None
