"""Reading user files and checking outputs: every failure is one InputError line that names the path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pools.atomic import check_output
from pools.errors import InputError
from pools.files import load_json, load_toml, read_text

ROOT = Path(__file__).resolve().parents[2]


def test_text_is_utf8_without_its_byte_order_mark(tmp_path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes("\ufeffTopic: é\n".encode())
    assert read_text(path) == "Topic: é\n"


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"ok\n\xff\xfe", r"a.txt: not UTF-8 text \(byte offset 3: 0xff\)"),
        ("[x]\nk = 'é'".encode("utf-16"), r"a.txt: not UTF-8 text \(byte offset 0: 0xff\)"),
    ],
)
def test_bytes_that_are_not_utf8_name_the_file_and_offset(tmp_path, data, match) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(data)
    with pytest.raises(InputError, match=match):
        read_text(path)


def test_missing_files_and_directories_are_input_errors(tmp_path) -> None:
    with pytest.raises(InputError, match="nope.toml: no such file"):
        load_toml(tmp_path / "nope.toml")
    with pytest.raises(InputError, match="is a directory; expected a file"):
        read_text(tmp_path)


def test_invalid_toml_and_json_name_line_and_column(tmp_path) -> None:
    toml, js = tmp_path / "p.toml", tmp_path / "p.json"
    toml.write_text("[defaults]\nheadroom = = 1\n")
    js.write_text('{"a": 1,\n "b": NaN}')
    with pytest.raises(InputError, match=r"p.toml: invalid TOML: .*line 2"):
        load_toml(toml)
    with pytest.raises(InputError, match=r"p.json: invalid JSON at line 2 column 7"):
        load_json(js)
    js.write_text('{"a": 1,\n "b": }')
    with pytest.raises(InputError, match=r"p.json: invalid JSON at line 2 column 7"):
        load_json(js)


def test_outputs_are_checked_before_any_work(tmp_path) -> None:
    regular = tmp_path / "file"
    regular.write_text("x")
    with pytest.raises(InputError, match="cannot write below a regular file"):
        check_output(regular / "run" / "plan")
    with pytest.raises(InputError, match="exists and is not a directory"):
        check_output(regular)
    with pytest.raises(InputError, match="already exists"):
        check_output(tmp_path, overwrite=False)
    assert check_output(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"


def test_a_read_only_directory_is_refused() -> None:
    top = Path(tempfile.mkdtemp())  # under /tmp, reachable by any user (pytest's tmp_path is not)
    locked = top / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    check = f"from pools.atomic import check_output; check_output({str(locked / 'out')!r})"
    # root writes anywhere, so as root (CI) the check runs as nobody, as an operator's account would
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    top.chmod(0o755)
    proc = subprocess.run([*drop, sys.executable, "-c", check], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    shutil.rmtree(top)
    assert proc.returncode != 0 and "is not writable" in proc.stderr, proc.stderr


REFUSING = Path("/sys/kernel")  # sysfs: writable by its mode bits for root, yet it takes no new entry


@pytest.mark.skipif(not REFUSING.is_dir(), reason="needs Linux's sysfs")
def test_a_directory_that_refuses_new_entries_despite_its_mode_is_refused() -> None:
    with pytest.raises(InputError, match=r"/sys/kernel/out: cannot write: /sys/kernel refuses a new entry"):
        check_output(REFUSING / "out")
    assert not [p for p in REFUSING.iterdir() if p.name.startswith(".poolplan-probe.")]


def test_make_dir_names_the_directory_the_os_refuses(tmp_path) -> None:
    from pools.atomic import make_dir

    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match=r"file/out: cannot write \(Not a directory"):
        make_dir(tmp_path / "file" / "out")
    assert make_dir(tmp_path / "a" / "b").is_dir()
