"""A bundle onto brokers still to buy names them and refuses to run while they are not registered."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from planner.emit import build_bundle
from planner.emit.expected_brokers import CHECK_BROKERS, check_brokers_script
from planner.pool_planner import plan_pools
from pools.kafka_formats import parse_reassignment_json
from pools.new_brokers import PlannedBroker
from pools.snapshot import Capacity
from tests.planner.test_pool_planner import _four_broker_pool

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX sh")


@pytest.fixture(scope="module")
def bought():
    """Issue 24's case: a pool of four brokers that needs two more (ids 5 and 6) and its bundle."""
    snapshot, policy, profile = _four_broker_pool(75e6)
    plan = plan_pools(snapshot, policy, profile).plan
    return plan, build_bundle(plan, snapshot)


def _run(script: str, tmp_path: Path, listing: str | None, *args: str) -> subprocess.CompletedProcess:
    """Run ``script`` with a fake ``kafka-broker-api-versions.sh`` that prints ``listing`` (None: fails)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / "kafka-broker-api-versions.sh"
    body = "echo 'Connection to node -1 could not be established' >&2; exit 1" if listing is None else \
        f"cat <<'EOF'\n{listing}EOF"
    tool.write_text(f"#!/bin/sh\n{body}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    (tmp_path / CHECK_BROKERS).write_text(script)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["sh", CHECK_BROKERS, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          check=False)


def _listing(*brokers: tuple[int, str | None], fenced: bool = False) -> str:
    """What ``kafka-broker-api-versions.sh`` prints: a Node line per broker, then its API versions."""
    suffix = " isFenced: false" if fenced else ""
    return "".join(f"b{b}:9092 (id: {b} rack: {rack if rack else 'null'}{suffix}) -> (\n"
                   "\tProduce(0): 0 to 11 [usable: 11],\n)\n" for b, rack in brokers)


def test_the_bundle_names_the_brokers_to_buy_and_checks_them_first(bought) -> None:
    plan, files = bought
    assert [b.id for b in plan.planned_brokers] == [5, 6]
    cluster = {"brokers": [1, 2, 3, 4, 5, 6], "topics": {"t": [list(m.old_replicas) for m in plan.partitions]}}
    targets = {b for e in parse_reassignment_json(files["reassignment.json"], cluster) for b in e.replicas}
    assert {5, 6} <= targets
    assert json.loads(files["summary.json"])["expected_brokers"] == [
        {"id": 5, "rack": None, "pool": "core"}, {"id": 6, "rack": None, "pool": "core"}]
    runbook = files["runbook.md"]
    assert "| 5 | (none) | core |" in runbook and "0. The brokers still to buy (5, 6)" in runbook
    executes = [line for line in runbook.splitlines() if "--execute --throttle" in line and "batches/" in line]
    assert executes and all(line.strip().startswith("sh check-brokers.sh <BOOTSTRAP_SERVERS> && ") for line in executes)
    assert "expected='5 null\n6 null'\n" in files[CHECK_BROKERS]


def test_every_wave_of_a_plan_onto_brokers_to_buy_checks_them(bought) -> None:
    from planner.emit import EmitOptions
    from planner.emit.waves import cut_waves, wave_bundles
    from pools.demand import topic_demand

    plan = bought[0]
    snapshot, _, profile = _four_broker_pool(75e6)
    waves = cut_waves(plan, snapshot, topic_demand(snapshot, profile), 20)  # the raw snapshot: 5 and 6 join
    files = wave_bundles(plan, snapshot, waves, EmitOptions())
    assert len(waves) > 1
    assert all(f"wave-{w:03d}/{CHECK_BROKERS}" in files for w in range(1, len(waves) + 1))


def test_a_plan_that_buys_nothing_has_no_check(bought) -> None:
    snapshot, policy, profile = _four_broker_pool(40e6)
    files = build_bundle(plan_pools(snapshot, policy, profile).plan, snapshot)
    assert CHECK_BROKERS not in files and "check-brokers" not in files["runbook.md"]


def test_the_check_refuses_in_one_line_while_a_broker_is_missing(bought, tmp_path) -> None:
    script = bought[1][CHECK_BROKERS]
    done = _run(script, tmp_path, _listing((1, None), (2, None), (3, None), (4, None), (6, None)), "b1:9092")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == ["check-brokers: refusing: broker(s) 5 still to buy are not registered in the "
                                        "cluster; run this bundle once they have joined"]
    done = _run(script, tmp_path, _listing(*((b, None) for b in range(1, 7)), fenced=True), "b1:9092")
    assert (done.returncode, done.stdout) == (0, "check-brokers: all 2 expected brokers are registered: 5, 6\n")


def test_the_check_refuses_a_broker_on_another_rack_and_an_unreachable_cluster(tmp_path) -> None:
    cap = Capacity(1, 1, 1, 1)
    script = check_brokers_script([PlannedBroker(101, "r1", "s", cap), PlannedBroker(102, "r2", "s", cap)])
    done = _run(script, tmp_path, _listing((1, "r1"), (101, "r1"), (102, "r3")), "b:9092", "--command-config", "c")
    assert done.returncode == 1
    assert done.stderr == "check-brokers: refusing: broker(s) 102 on rack r3 (planned r2): re-plan with the racks " \
                          "the brokers have\n"
    done = _run(script, tmp_path, None, "b:9092")
    assert done.returncode == 2 and done.stderr.splitlines()[-1].startswith("check-brokers: kafka-broker-api-versions")
    assert _run(script, tmp_path, "", ).returncode == 2  # no bootstrap servers: usage


@pytest.mark.parametrize("fenced", [False, True])
def test_racks_with_spaces_quotes_and_dollars_are_compared_whole(tmp_path, fenced) -> None:
    """broker.rack is any string: the script neither splits it nor lets the shell expand it."""
    cap = Capacity(1, 1, 1, 1)
    odd = ["us east 1a", "it's $HOME `x`", "r) -> (x", "a  b"]
    script = check_brokers_script([PlannedBroker(200 + i, rack, "s", cap) for i, rack in enumerate(odd)])
    done = _run(script, tmp_path, _listing(*((200 + i, rack) for i, rack in enumerate(odd)), fenced=fenced), "b:9092")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "check-brokers: all 4 expected brokers are registered: 200, 201, 202, 203\n"
    moved = _listing((200, "us east 1b"), *((201 + i, rack) for i, rack in enumerate(odd[1:])), fenced=fenced)
    done = _run(script, tmp_path, moved, "b:9092")
    assert done.returncode == 1
    assert done.stderr == "check-brokers: refusing: broker(s) 200 on rack us east 1b (planned us east 1a): re-plan " \
                          "with the racks the brokers have\n"
