"""The session factory's checks that need no JVM."""

from __future__ import annotations

import pytest

from pools.errors import InputError
from spark_jobs.session import build_session, check_java, parse_conf


def test_missing_java_is_a_clear_input_error(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(InputError, match=r"Spark needs Java 17\+ but no 'java' was found on JAVA_HOME="):
        check_java()


def test_old_java_is_rejected(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text('#!/bin/sh\necho \'openjdk version "1.8.0_412"\' >&2\n')
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    with pytest.raises(InputError, match=r"is Java 8"):
        check_java()


def test_java_on_path_is_17_or_newer() -> None:
    assert check_java() >= 17


def test_conf_pairs() -> None:
    assert parse_conf(["a=1", "b=x=y", "a=2"]) == {"a": "2", "b": "x=y"}
    with pytest.raises(InputError, match="expected key=value"):
        parse_conf(["novalue"])


@pytest.mark.parametrize("master", ["local[", "mesos://x", "spark:/x"])
def test_bad_master_is_rejected_before_starting_a_jvm(master: str) -> None:
    with pytest.raises(InputError, match="expected local"):
        build_session(master)


def test_bad_remote_is_rejected() -> None:
    with pytest.raises(InputError, match="sc://host:port"):
        build_session(remote="http://x:15002")
