"""Each class of bad input ends in exit 2 and one line naming the file and field; nothing written, nothing changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.robustness.helpers import READERS, assert_clean_failure, command_lines, tree

ROOT = Path(__file__).resolve().parents[2]


def _edit_json(path: Path, edit) -> None:
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


# --- encodings: every reader of a text file -------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("document", sorted(READERS))
@pytest.mark.parametrize("encoding", ["latin-1", "utf-16"])
def test_a_file_that_is_not_utf8_is_named_with_its_byte_offset(run_copy, tmp_path, run_cli, document, encoding):
    path = run_copy / document
    path.write_bytes(path.read_text().replace('"', '"', 1).encode(encoding) + "é".encode("latin-1"))
    before = tree(run_copy)
    for name in READERS[document]:
        out = tmp_path / f"out-{name}"
        code, stdout, err = run_cli(*command_lines(run_copy, out)[name])
        if name == "report" and document != "pools.toml":  # the report names an unreadable stage output instead
            assert code == 0 and "Traceback" not in err
            continue
        assert_clean_failure(code, stdout, err, names=str(path), field="not UTF-8 text (byte offset")
        assert not out.exists()
    assert tree(run_copy) == before


def test_a_byte_order_mark_does_not_hide_the_first_line(run_copy, tmp_path, run_cli):
    for document in ("snapshot.json", "plan/plan.json", "pools.toml"):
        path = run_copy / document
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    code, _, err = run_cli(*command_lines(run_copy, tmp_path / "o")["emit"])
    assert code == 0, err


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("describe", "Topic: t\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \n\tTopic: caf\xe9"),
        ("inventory", "[[broker]]\nid = 1\nrack = 'r\xe9'\n"),
    ],
)
def test_snapshot_inputs_that_are_not_utf8(tmp_path, run_cli, name, text):
    files = {"describe": tmp_path / "d.txt", "inventory": tmp_path / "b.toml"}
    files["describe"].write_text("Topic: t\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \n"
                                 "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n")
    files["inventory"].write_text("[[broker]]\nid = 1\ndisk_bytes = 10\nnw_in_Bps = 10\nnw_out_Bps = 10\n")
    files[name].write_bytes(text.encode("latin-1"))
    code, out, err = run_cli("snapshot", "--describe", files["describe"], "--inventory", files["inventory"],
                             "--out", tmp_path / "snap.json")
    assert_clean_failure(code, out, err, names=str(files[name]), field="not UTF-8")
    assert not (tmp_path / "snap.json").exists()


# --- outputs that cannot be written --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["plan", "emit", "audit", "report", "place"])
def test_an_output_below_a_regular_file_is_refused_before_any_work(run_copy, tmp_path, run_cli, name):
    blocker = tmp_path / "file"
    blocker.write_text("keep me")
    code, out, err = run_cli(*command_lines(run_copy, blocker / "sub")[name])
    assert_clean_failure(code, out, err, names=str(blocker / "sub"), field="cannot write below a regular file")
    assert blocker.read_text() == "keep me"


def test_commands_outside_a_run_refuse_bad_outputs(tmp_path, run_cli, data_dir):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    kafka = data_dir / "kafka-formats"
    lines = [
        ["sample", "--out", blocker / "s"],
        ["snapshot", "--describe", kafka / "kafka-topics-describe-3.8.txt", "--inventory",
         ROOT / "conf" / "brokers.toml", "--out", blocker / "s.json"],
        ["consumers", "--simulate", tmp_path / "script.json", "--out", blocker / "c.json"],
        ["run", "--config", ROOT / "conf" / "quarterly.toml", "--out", blocker / "run"],
    ]
    (tmp_path / "script.json").write_text('{"topics": {"t": 2}, "members": [], "events": []}')
    for argv in lines:
        code, out, err = run_cli(*argv)
        assert_clean_failure(code, out, err, names=str(blocker), field="below a regular file")


@pytest.mark.skipif(not shutil.which("setpriv") or os.geteuid() != 0, reason="needs root to drop to nobody")
def test_a_read_only_output_directory_is_one_line(valid_run, tmp_path):
    shared = tmp_path / "shared"
    shutil.copytree(valid_run, shared)
    os.chmod(tmp_path, 0o755)
    for p in [shared, *shared.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    readonly = tmp_path / "readonly"
    readonly.mkdir(mode=0o555)
    argv = command_lines(shared, readonly / "out")["audit"]
    proc = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c",
                           "import sys; from planner.cli import main; sys.exit(main(sys.argv[1:]))", *argv], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "cannot write" in proc.stderr and proc.stderr.count("\n") == 1
    assert list(readonly.iterdir()) == []


# --- hand-edited documents: types, NaN/Inf, negatives, duplicates, references --------------------------------


def _replicas(doc):
    doc["partitions"][3]["replicas"] = []


def _dup_partition(doc):
    doc["partitions"].append(dict(doc["partitions"][0]))


@pytest.mark.parametrize(
    ("document", "edit", "field"),
    [
        ("snapshot.json", lambda d: d["brokers"][0].update(id="1"), "brokers[0].id: expected an integer"),
        ("snapshot.json", lambda d: d["brokers"][1].update(capacity=[1, 2]), "brokers[1].capacity: expected an object"),
        ("snapshot.json", lambda d: d["brokers"][0]["capacity"].update(disk=-4), "brokers[0].capacity.disk"),
        ("snapshot.json", lambda d: d["brokers"].append(dict(d["brokers"][0])), "broker 1 is listed twice"),
        ("snapshot.json", _replicas, "partitions[3].replicas: expected a non-empty list of distinct broker ids"),
        ("snapshot.json", lambda d: d["partitions"][2].update(replicas=[5, 5]), "partitions[2].replicas"),
        ("snapshot.json", lambda d: d["partitions"][0].update(leader=99), "partitions[0].leader"),
        ("snapshot.json", lambda d: d["partitions"][0].update(isr=[99]), "partitions[0].isr"),
        ("snapshot.json", lambda d: d["partitions"][0].update(partition=-1), "partitions[0].partition"),
        ("snapshot.json", _dup_partition, "is listed twice"),
        ("snapshot.json", lambda d: d["partitions"][0].update(sizes=[2**70] * len(d["partitions"][0]["replicas"])),
         "partitions[0].sizes[0]"),
        ("snapshot.json", lambda d: d.update(partitions={"a": 1}), "partitions: expected a JSON array"),
        ("snapshot.json", lambda d: d["topics"][0]["configs"].update({"min.insync.replicas": "two"}),
         "topics[0].configs.min.insync.replicas"),
        ("plan/plan.json", lambda d: d["partitions"][12].update(replicas=[]),
         "partitions[12].replicas: expected a non-empty list of distinct broker ids"),
        ("plan/plan.json", lambda d: d["partitions"][12].update(replicas=[1, 1]),
         "partitions[12].replicas: expected a non-empty list of distinct broker ids"),
        ("plan/plan.json", lambda d: d["partitions"][12].update(replicas=[777]), "partitions[12].replicas: broker 777"),
        ("plan/plan.json", lambda d: d["partitions"][5].update(partition="0"), "partitions[5].partition: expected an integer"),
        ("plan/plan.json", lambda d: d["partitions"][5].update(size_bytes=-1), "partitions[5].size_bytes"),
        ("plan/plan.json", _dup_partition, "is listed twice"),
        ("plan/plan.json", lambda d: d.update(brokers=[1, 2]), "brokers: expected an object"),
        ("plan/plan.json", lambda d: d["solver"].update(gap="small"), "solver.gap: expected a number"),
        ("plan/plan.json", lambda d: d["topics"].update({"x": "nowhere"}), "topics.x: pool 'nowhere'"),
        ("plan/plan.json", lambda d: d.update(brokers_to_add={"p0": -1}), "brokers_to_add.p0: expected an integer >= 0"),
        ("plan/plan.json", lambda d: d["utilisation"]["brokers"].update(x={}), "utilisation.brokers.x"),
    ],
)
def test_hand_edited_documents_stop_at_load_naming_the_field(run_copy, tmp_path, run_cli, document, edit, field):
    _edit_json(run_copy / document, edit)
    before = tree(run_copy)
    for name in READERS[document]:
        if name == "report":
            continue  # the report names an unreadable stage output in the report instead of stopping
        out = tmp_path / f"out-{name}"
        code, stdout, err = run_cli(*command_lines(run_copy, out)[name])
        assert_clean_failure(code, stdout, err, names=document.split("/")[-1], field=field)
        assert not out.exists()
    assert tree(run_copy) == before


@pytest.mark.slow
def test_the_report_names_a_broken_stage_output_instead_of_failing(run_copy, tmp_path, run_cli):
    _edit_json(run_copy / "audit" / "findings.json", lambda d: d["findings"][0].update(broker=-3))
    code, _, err = run_cli(*command_lines(run_copy, tmp_path / "o")["report"])
    assert code == 0 and "Traceback" not in err
    markdown = (tmp_path / "o" / "report" / "report.md").read_text()
    assert "findings[0].broker: expected an integer >= 0, got -3" in markdown


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("bytes_in_p99", float("nan"), "bytes_in_p99: expected a finite number >= 0, got nan"),
        ("bytes_in_p99", float("inf"), "bytes_in_p99: expected a finite number >= 0, got inf"),
        ("storage_bytes", -5, "storage_bytes: expected a finite number >= 0, got -5"),
        ("partitions", 2_000_000_000, "partitions: expected 0..100000, got 2000000000"),
        ("topic", "dup", "topic dup is listed twice"),
    ],
)
def test_a_hand_edited_profile_is_refused_naming_row_and_column(run_copy, tmp_path, run_cli, column, value, message):
    path = run_copy / "profile" / "topic_profile.parquet"
    table = pq.read_table(path)
    values = table.column(column).to_pylist()
    values[1] = value
    if column == "topic":
        values[0] = values[1]
    table = table.set_column(table.schema.get_field_index(column), column, pa.array(values, table.schema.field(column).type))
    pq.write_table(table, path)
    for name in ("plan", "audit"):
        code, out, err = run_cli(*command_lines(run_copy, tmp_path / name)[name])
        assert_clean_failure(code, out, err, names="topic_profile.parquet", field=message)


def test_a_corrupt_profile_file_is_one_line(run_copy, tmp_path, run_cli):
    path = run_copy / "profile" / "topic_profile.parquet"
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    code, out, err = run_cli(*command_lines(run_copy, tmp_path / "o")["plan"])
    assert_clean_failure(code, out, err, names="topic_profile.parquet", field="not a readable Parquet file")


# --- the policy contradicting itself -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[[tenant]]\nname='a'\nmust_not_share_with=['a']\n[[pool]]\nname='p'\ndefault=true\n",
         "tenant[0].must_not_share_with: tenant 'a' names itself"),
        ("[[tenant]]\nname='a'\n[[tenant]]\nname='a'\n[[pool]]\nname='p'\n", "tenant[1].name: tenant 'a' is defined twice"),
        ("[[pool]]\nname='p'\n[[pool]]\nname='p'\n", "pool[1].name: pool 'p' is defined twice"),
        ("[[pool]]\nname='p'\ntenants=['ghost']\n", "pool[0].tenants: unknown tenant 'ghost'"),
        ("[[pool]]\nname='p'\nbrokers=[1, 1]\n", "pool[0].brokers: broker 1 is listed twice"),
        ("[[pool]]\nname='p'\nbrokers=[-1]\n", "pool[0].brokers[0]: expected an integer >= 0"),
        ("[defaults]\nheadroom=nan\n[[pool]]\nname='p'\n", "defaults.headroom: expected a fraction in (0, 1], got nan"),
        ("[defaults]\nmin_brokers=10000000000\n[[pool]]\nname='p'\n", "defaults.min_brokers: expected an integer <= 50000"),
        ("[new_broker]\nnw_in=inf\nnw_out=1\ndisk=1\nreplicas=1\n[[pool]]\nname='p'\n", "new_broker.nw_in"),
        ("pool = 3\n", "pool: expected an array"),
    ],
)
def test_policy_self_contradictions_are_load_errors(run_copy, tmp_path, run_cli, text, field):
    (run_copy / "pools.toml").write_text(text)
    code, out, err = run_cli(*command_lines(run_copy, tmp_path / "o")["audit"])
    assert_clean_failure(code, out, err, names="pools.toml", field=field)
    assert not (tmp_path / "o").exists()


# --- limits that protect memory ------------------------------------------------------------------------------------


def test_place_refuses_counts_past_the_limit(run_copy, run_cli):
    code, out, err = run_cli("place", "--brokers", "1,2,3", "--topic", "t", "--partitions", "2000000000",
                             "--replication-factor", "2")
    assert_clean_failure(code, out, err, names="--partitions", field="past the limit of 100000 partitions per topic")
    code, out, err = run_cli("place", "--brokers", "1,2,3", "--topic", "t", "--partitions", "3",
                             "--replication-factor", "70000")
    assert_clean_failure(code, out, err, names="--replication-factor", field="past the limit of 32767")


def test_consumer_inputs_past_the_partition_limit(run_copy, tmp_path, run_cli):
    describe = tmp_path / "groups.txt"
    describe.write_text("GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID\n"
                        "g t 999999999 1 2 1 c /h c\n")
    code, out, err = run_cli("consumers", "--describe", describe, "--profile", run_copy / "profile",
                             "--capacity-bytes", "1000")
    assert_clean_failure(code, out, err, names="groups.txt:2", field="PARTITION must be an integer in 0..99999")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"topics": {"t": 4}, "members": [{"member_id": "a", "topics": ["t"]}],
                                  "events": [{"event": "add_partitions", "topic": "t", "count": 500_000_000}]}))
    code, out, err = run_cli("consumers", "--simulate", script)
    assert_clean_failure(code, out, err, names="script.json", field="events[0].count: 500000000 is past the limit")
    script.write_text(json.dumps({"topics": {"t": 500_000_000}, "members": [], "events": []}))
    code, out, err = run_cli("consumers", "--simulate", script)
    assert_clean_failure(code, out, err, names="script.json", field="topics.t: expected an integer <= 100000")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_numbers_on_the_command_line_must_be_finite(run_copy, tmp_path, run_cli, value):
    argv = command_lines(run_copy, tmp_path / "o")["plan"][:-2] + ["--time-limit", value]
    code, _, err = run_cli(*argv)
    assert code == 2 and "is not a finite number" in err and "Traceback" not in err


@pytest.mark.parametrize("document", ["pools.toml", "snapshot.json"])
def test_documents_nested_too_deeply_are_one_line(run_copy, tmp_path, run_cli, document):
    deep = "a = " + "[" * 50_000 + "]" * 50_000 if document.endswith(".toml") else "[" * 50_000 + "]" * 50_000
    (run_copy / document).write_text(deep)
    code, out, err = run_cli(*command_lines(run_copy, tmp_path / "o")["audit"])
    assert_clean_failure(code, out, err, names=document, field="invalid")
