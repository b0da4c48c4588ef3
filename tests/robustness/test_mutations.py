"""The class-level guarantee: any mutation of a valid document ends in a clean result or exit 2, never a traceback.

Hypothesis mutates valid snapshot.json, plan.json, findings.json, pools.toml, profile and run-config documents
(type swaps, NaN/Inf, negatives, huge integers, deletions, duplications, wrong encodings, truncation) and runs the
real commands that read them. Examples are bounded so the module takes seconds.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.plugin import examples
from tests.robustness.helpers import READERS, command_lines, tree

SETTINGS = settings(max_examples=examples(8), derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
#: findings.json is read by the report alone, which renders charts (about a second each): fewer examples.
REPORT_SETTINGS = settings(SETTINGS, max_examples=examples(4))

#: Values a hand edit puts where another value was.
VALUES = st.one_of(
    st.none(), st.booleans(), st.sampled_from(["", "x", "1", "nan", "-1", "p0"]),
    st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from([-1, 0, 2**31, 2**63, 10**9]),
    st.floats(allow_nan=True, allow_infinity=True), st.just([]), st.just({}), st.just([1, 1]), st.just([None]),
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:4]):
            out += _paths(v, prefix + (i,))
    return out


@st.composite
def mutated(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` with one edit: a value replaced, a key or item deleted, an item duplicated or wrapped in a list."""
    doc = copy.deepcopy(doc)
    path = draw(st.sampled_from(_paths(doc)[1:]))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    op = draw(st.sampled_from(["replace", "delete", "duplicate", "wrap", "negate"]))
    if op == "replace":
        parent[key] = draw(VALUES)
    elif op == "delete":
        del parent[key]
    elif op == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[key]))
    elif op == "negate" and isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
        parent[key] = -parent[key] - 1
    else:
        parent[key] = [parent[key]]
    return doc


@st.composite
def damaged_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` truncated, re-encoded, prefixed with a byte-order mark or with bytes that are not UTF-8."""
    op = draw(st.sampled_from(["truncate", "utf16", "bom", "latin1"]))
    if op == "truncate":
        return data[: draw(st.integers(min_value=0, max_value=max(0, len(data) - 1)))]
    if op == "utf16":
        return data.decode().encode("utf-16")
    if op == "bom":
        return b"\xef\xbb\xbf" + data
    at = draw(st.integers(min_value=0, max_value=len(data)))
    return data[:at] + b"\xe9\xff" + data[at:]


def _dump(document: str, doc: Any) -> bytes:
    if document.endswith(".toml"):
        try:
            return tomli_w.dumps(_toml_safe(doc)).encode()
        except (TypeError, ValueError):
            return b"[[pool]]\nname = 3\n"
    return json.dumps(doc, allow_nan=True).encode()


def _toml_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _toml_safe(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_toml_safe(v) for v in value if v is not None]
    return value


def _readers(document: str) -> tuple[str, ...]:
    """The commands to run on a broken ``document``: the report (seconds of charts) only for the findings it alone
    reads; it names any other unreadable stage output in the report (tests/robustness/test_bad_input.py)."""
    names = READERS[document]
    return names if document == "audit/findings.json" else tuple(n for n in names if n != "report")


def _check(run_cli, run: Path, out: Path, names: tuple[str, ...]) -> None:
    before = tree(run)
    for name in names:
        target = out / name
        code, stdout, err = run_cli(*command_lines(run, target)[name])
        assert "Traceback" not in stdout + err
        assert code in (0, 1, 2), (name, code, err)
        if code == 2:
            assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1, err
            assert not target.exists() or name == "report"
    assert tree(run) == before


def _load(document: str, run: Path) -> Any:
    import tomllib

    path = run / document
    return tomllib.loads(path.read_text()) if document.endswith(".toml") else json.loads(path.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("document", sorted(READERS))
def test_mutated_documents_never_end_in_a_traceback(valid_run, tmp_path_factory, run_cli, document):
    base = _load(document, valid_run)

    @(REPORT_SETTINGS if document == "audit/findings.json" else SETTINGS)
    @given(doc=mutated(base))
    def check(doc: Any) -> None:
        run = tmp_path_factory.mktemp("m")
        shutil.copytree(valid_run, run, dirs_exist_ok=True)
        (run / document).write_bytes(_dump(document, doc))
        _check(run_cli, run, run.parent / f"{run.name}-out", _readers(document))

    check()


@pytest.mark.slow
@pytest.mark.parametrize("document", sorted(READERS))
def test_damaged_bytes_never_end_in_a_traceback(valid_run, tmp_path_factory, run_cli, document):
    data = (valid_run / document).read_bytes()

    @(REPORT_SETTINGS if document == "audit/findings.json" else SETTINGS)
    @given(raw=damaged_bytes(data))
    def check(raw: bytes) -> None:
        run = tmp_path_factory.mktemp("b")
        shutil.copytree(valid_run, run, dirs_exist_ok=True)
        (run / document).write_bytes(raw)
        _check(run_cli, run, run.parent / f"{run.name}-out", _readers(document))

    check()


_PROFILE_VALUES = st.sampled_from([float("nan"), float("inf"), -1.0, -1, 0, 2**40, None])


def test_mutated_profiles_never_end_in_a_traceback(valid_run, tmp_path_factory, run_cli):
    table = pq.read_table(valid_run / "profile" / "topic_profile.parquet")
    numeric = [f.name for f in table.schema if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)]

    @SETTINGS
    @given(column=st.sampled_from(numeric), row=st.integers(0, table.num_rows - 1), value=_PROFILE_VALUES,
           duplicate=st.booleans())
    def check(column: str, row: int, value: Any, duplicate: bool) -> None:
        run = tmp_path_factory.mktemp("p")
        shutil.copytree(valid_run, run, dirs_exist_ok=True)
        field = table.schema.field(column)
        values = table.column(column).to_pylist()
        values[row] = int(value) if pa.types.is_integer(field.type) and isinstance(value, float) and value == value \
            and abs(value) != float("inf") else value
        try:
            column_values = pa.array(values, type=field.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            column_values = pa.array([None if v != v else v for v in values], type=pa.float64())
        broken = table.set_column(table.schema.get_field_index(column), column, column_values)
        if duplicate:
            broken = pa.concat_tables([broken, broken.slice(0, 1)])
        pq.write_table(broken, run / "profile" / "topic_profile.parquet")
        _check(run_cli, run, run.parent / f"{run.name}-out", ("plan", "audit"))

    check()


_RUN = {
    "run": {"stages": ["snapshot", "audit", "report"]},
    "snapshot": {"describe": "{config_dir}/describe.txt", "inventory": "{config_dir}/brokers.toml", "cluster": "c"},
    "audit": {"policy": "{config_dir}/pools.toml", "fail-on": "error"},
    "report": {"policy": "{config_dir}/pools.toml"},
}


def test_mutated_run_configs_fail_before_the_first_stage(tmp_path_factory, run_cli):
    @SETTINGS
    @given(doc=mutated(_RUN))
    def check(doc: Any) -> None:
        root = tmp_path_factory.mktemp("r")
        (root / "q.toml").write_bytes(_dump("q.toml", doc))
        code, out, err = run_cli("run", "--config", root / "q.toml", "--out", root / "run")
        assert "Traceback" not in out + err
        assert code == 2, err  # describe.txt and brokers.toml do not exist: every config is bad input
        assert not (root / "run").exists()

    check()


#: Tokens a hand edit or a broken capture puts into a line of Kafka tool output.
_TOKENS = st.sampled_from(["-1", "0", "99999999999", "", "x", "none", "1,1", "N/A", "2147483648", ":", "\t", "é"])


@st.composite
def edited_text(draw: st.DrawFn, text: str) -> str:
    """``text`` with one line duplicated, deleted, truncated, or one of its fields replaced by a token."""
    lines = text.split("\n")
    i = draw(st.integers(0, len(lines) - 1))
    op = draw(st.sampled_from(["duplicate", "delete", "truncate", "field", "word"]))
    if op == "duplicate":
        lines.insert(i, lines[i])
    elif op == "delete":
        del lines[i]
    elif op == "truncate":
        lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
    else:
        sep = "\t" if op == "field" else " "
        parts = lines[i].split(sep)
        j = draw(st.integers(0, len(parts) - 1))
        key, colon, _ = parts[j].partition(":")
        parts[j] = f"{key}: {draw(_TOKENS)}" if colon and op == "field" else draw(_TOKENS)
        lines[i] = sep.join(parts)
    return "\n".join(lines)


def test_edited_kafka_tool_output_never_ends_in_a_traceback(data_dir, tmp_path_factory, run_cli):
    formats = data_dir / "kafka-formats"
    describe = (formats / "kafka-topics-describe-3.8.txt").read_text()
    log_dirs = (formats / "kafka-log-dirs-describe.txt").read_text()
    inventory = (Path(__file__).resolve().parents[2] / "conf" / "brokers.toml").read_text()

    @SETTINGS
    @given(which=st.sampled_from(["describe", "log_dirs", "inventory"]), data=st.data())
    def check(which: str, data: st.DataObject) -> None:
        root = tmp_path_factory.mktemp("k")
        texts = {"describe": describe, "log_dirs": log_dirs, "inventory": inventory}
        texts[which] = data.draw(edited_text(texts[which]))
        for name, text in texts.items():
            (root / name).write_text(text)
        code, out, err = run_cli("snapshot", "--describe", root / "describe", "--log-dirs", root / "log_dirs",
                                 "--inventory", root / "inventory", "--out", root / "out" / "snapshot.json")
        assert "Traceback" not in out + err and code in (0, 2), err
        assert code == 0 or not (root / "out").exists()

    check()


def test_edited_consumer_group_output_never_ends_in_a_traceback(data_dir, valid_run, tmp_path_factory, run_cli):
    formats = data_dir / "kafka-formats"
    describe = (formats / "kafka-consumer-groups-describe.txt").read_text()
    members = (formats / "kafka-consumer-groups-members-verbose.txt").read_text()

    @SETTINGS
    @given(which=st.sampled_from(["describe", "members"]), data=st.data())
    def check(which: str, data: st.DataObject) -> None:
        root = tmp_path_factory.mktemp("g")
        texts = {"describe": describe, "members": members}
        texts[which] = data.draw(edited_text(texts[which]))
        for name, text in texts.items():
            (root / name).write_text(text)
        code, out, err = run_cli("consumers", "--describe", root / "describe", "--members", root / "members",
                                 "--profile", valid_run / "profile", "--capacity-bytes", "1000000",
                                 "--format", "json", "--out", root / "out.json")
        assert "Traceback" not in out + err and code in (0, 1, 2), err
        assert code != 2 or not (root / "out.json").exists()

    check()


_SCRIPT = {
    "topics": {"t0": 4, "t1": 2},
    "members": [{"member_id": "a", "topics": ["t0", "t1"]}, {"member_id": "b", "topics": ["t0"], "rack": "r1"}],
    "events": [{"event": "join", "member": "c", "topics": ["t1"]}, {"event": "crash", "member": "a"},
               {"event": "return", "member": "a"}, {"event": "add_partitions", "topic": "t0", "count": 6},
               {"event": "delete_topic", "topic": "t1"}],
}


def test_mutated_rebalance_scripts_never_end_in_a_traceback(tmp_path_factory, run_cli):
    @SETTINGS
    @given(doc=mutated(_SCRIPT), strategy=st.sampled_from(["cooperative-sticky", "uniform", "range"]))
    def check(doc: Any, strategy: str) -> None:
        root = tmp_path_factory.mktemp("s")
        (root / "script.json").write_bytes(_dump("script.json", doc))
        code, out, err = run_cli("consumers", "--simulate", root / "script.json", "--strategy", strategy)
        assert "Traceback" not in out + err and code in (0, 2), err

    check()
