"""Atomic file and directory writes: write to a temporary sibling, then rename.

`check_output` is the check every command makes on its outputs before any work, so an output below a regular
file, in a read-only directory or already present (without ``--force``) is an `InputError` naming the path
before minutes of work are lost.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pools.errors import InputError

__all__ = ["check_output", "make_dir", "write_text", "write_bytes", "write_json", "dump_json", "atomic_dir",
    "remove_file"]


def check_output(path: str | os.PathLike[str], *, directory: bool = True, overwrite: bool = True) -> Path:
    """Check that ``path`` can be written (as a directory, or a file with ``directory=False``), before any work.

    Walks up to the nearest existing ancestor, which must be a writable directory (missing ones are created
    later): it must take a new entry, tried with a temporary directory removed at once. With ``overwrite`` false, an
    existing ``path`` is refused too.

    Raises
    ------
    InputError
        Naming the path and what is wrong with it.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "file"
    >>> _ = f.write_text("x")
    >>> try:
    ...     check_output(f / "out")
    ... except InputError as exc:
    ...     print(str(exc).split(": ", 1)[1].split(" (")[0])
    cannot write below a regular file
    """
    target = Path(path)
    try:
        _check_output(target, directory, overwrite)
    except PermissionError as exc:
        raise InputError(f"{target}: cannot write: permission denied on {exc.filename or target}") from None
    return target


def _check_output(target: Path, directory: bool, overwrite: bool) -> None:
    if target.exists():
        if not overwrite:
            raise InputError(f"{target}: already exists (pass --force to overwrite)")
        if directory and not target.is_dir():
            raise InputError(f"{target}: exists and is not a directory")
        if not directory and target.is_dir():
            raise InputError(f"{target}: is a directory; expected a file path")
    ancestor = target.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InputError(f"{target}: cannot write below a regular file ({ancestor})")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(f"{target}: cannot write: {ancestor} is not writable")
    try:  # what os.access cannot see: a read-only mount, /sys, an ACL, root squashed on NFS
        os.rmdir(tempfile.mkdtemp(prefix=".poolplan-probe.", dir=ancestor))
    except OSError as exc:
        raise InputError(f"{target}: cannot write: {ancestor} refuses a new entry ({exc.strerror or exc})") from None


@contextmanager
def _writing(target: Path) -> Iterator[None]:
    """Turn an OS error while writing ``target`` into one `InputError` line naming it (never a traceback)."""
    try:
        yield
    except OSError as exc:
        where = exc.filename or target
        raise InputError(f"{target}: cannot write ({exc.strerror or exc}: {where})") from None


def make_dir(path: str | os.PathLike[str]) -> Path:
    """Create the directory ``path`` and its missing parents (an `InputError` naming it when the OS refuses).

    >>> import tempfile, pathlib
    >>> make_dir(pathlib.Path(tempfile.mkdtemp()) / "a" / "b").is_dir()
    True
    """
    target = Path(path)
    with _writing(target):
        target.mkdir(parents=True, exist_ok=True)
    return target


def write_bytes(path: str | os.PathLike[str], data: bytes, *, mode: int | None = None) -> Path:
    """Write ``data`` to ``path`` atomically (temp file in the same directory, fsync, rename); ``mode``: the
    file's permission bits (default the temp file's owner-only ones)."""
    target = Path(path)
    with _writing(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                if mode is not None:
                    os.fchmod(fh.fileno(), mode)
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return target


def remove_file(path: str | os.PathLike[str]) -> None:
    """Remove an output file of an earlier run if it is there (an `InputError` naming it when that fails)."""
    target = Path(path)
    with _writing(target):
        target.unlink(missing_ok=True)


def write_text(path: str | os.PathLike[str], text: str, *, mode: int | None = None) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically (``mode`` as for `write_bytes`)."""
    return write_bytes(path, text.encode("utf-8"), mode=mode)


def dump_json(obj: Any) -> str:
    """Serialise ``obj`` deterministically: sorted keys, two-space indent, trailing newline."""
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as deterministic JSON (see `dump_json`) atomically."""
    return write_text(path, dump_json(obj))


@contextmanager
def atomic_dir(path: str | os.PathLike[str], *, overwrite: bool = False) -> Iterator[Path]:
    """Build a directory under a temporary name and rename it into place on success.

    Yields the temporary directory to write into. On an exception the temporary
    directory is removed and ``path`` is left untouched. An existing ``path`` is
    replaced only when ``overwrite`` is true; otherwise `InputError` (see `check_output`) is raised
    before any work is done.
    """
    target = Path(path)
    check_output(target, overwrite=overwrite)
    with _writing(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        with _writing(target):
            if target.exists():
                old = target.with_name(f".{target.name}.old")
                shutil.rmtree(old, ignore_errors=True)
                os.replace(target, old)
                os.replace(tmp, target)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
