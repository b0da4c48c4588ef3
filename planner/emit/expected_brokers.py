"""The pre-flight of a bundle whose plan places replicas on brokers still to buy (``plan.json``'s
``planned_brokers``): ``check-brokers.sh`` refuses while any of them is not registered in the cluster.

The script asks the cluster with ``kafka-broker-api-versions.sh``, which prints one line per registered broker as
Kafka's ``Node.toString`` does (``host:9092 (id: 101 rack: r1) -> (`` or, on newer versions, ``... (id: 101 rack:
r1 isFenced: false) -> (``); a broker that is fenced or not yet started is not listed. Exit codes: 0 every
expected broker is registered on its planned rack; 1 one line naming the brokers still missing (or, when none is
missing, those on another rack than planned: rack spread was planned with the planned racks); 2 when the tool
fails or the usage is wrong.

>>> from pools.new_brokers import PlannedBroker
>>> from pools.snapshot import Capacity
>>> script = check_brokers_script([PlannedBroker(101, "r1", "stream", Capacity(1, 1, 1, 1))])
>>> "expected='101 r1'" in script and script.startswith("#!/bin/sh")
True
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from pools.new_brokers import PlannedBroker

__all__ = ["CHECK_BROKERS", "check_brokers_script"]

#: The script's name in the bundle.
CHECK_BROKERS = "check-brokers.sh"

_SCRIPT = """#!/bin/sh
# Pre-flight of this bundle (poolplan emit): its plan places replicas on brokers still to buy. Run no batch
# until this prints "all N expected brokers are registered".
# Usage: sh check-brokers.sh BOOTSTRAP_SERVERS [--command-config client.properties]
# Exit 0: every expected broker is registered on its planned rack; 1: some are not (one line names them);
# 2: the cluster could not be asked.
# One expected broker a line: its id, a space, its planned rack (any text; null: not checked).
expected={expected}
[ $# -ge 1 ] || {{ echo "usage: sh check-brokers.sh BOOTSTRAP_SERVERS [--command-config FILE]" >&2; exit 2; }}
bootstrap=$1
shift
listing=$(kafka-broker-api-versions.sh --bootstrap-server "$bootstrap" "$@") || {{
    echo "check-brokers: kafka-broker-api-versions.sh failed: the registered brokers are unknown" >&2; exit 2; }}
# "host:9092 (id: 101 rack: RACK) -> (", or "... rack: RACK isFenced: false) -> (" on newer Kafka: "101 RACK"
registered=$(printf '%s\\n' "$listing" | sed -n 's/^.*(id: \\([0-9][0-9]*\\) rack: \\(.*\\)) -> ( *$/\\1 \\2/p' |
    sed 's/ isFenced: [a-z]*$//')
missing=""
moved=""
while IFS= read -r pair; do
    id=${{pair%% *}}
    rack=${{pair#* }}
    got=$(printf '%s\\n' "$registered" | awk -v id="$id" '$1 == id {{ sub(/^[^ ]* /, ""); print; exit }}')
    if [ -z "$got" ]; then
        missing="$missing${{missing:+, }}$id"
    elif [ "$rack" != "null" ] && [ "$got" != "$rack" ]; then
        moved="$moved${{moved:+, }}$id on rack $got (planned $rack)"
    fi
done <<EXPECTED
$expected
EXPECTED
if [ -n "$missing" ]; then
    echo "check-brokers: refusing: broker(s) $missing still to buy are not registered in the cluster; run this bundle once they have joined" >&2
    exit 1
fi
if [ -n "$moved" ]; then
    echo "check-brokers: refusing: broker(s) $moved: re-plan with the racks the brokers have" >&2
    exit 1
fi
echo "check-brokers: all {count} expected brokers are registered: {ids}"
"""


def check_brokers_script(planned: Sequence[PlannedBroker]) -> str:
    """The text of ``check-brokers.sh`` for the plan's brokers still to buy (POSIX ``sh``; ``null`` stands for a
    broker planned without a rack, whose rack is not checked). A rack may be any text (spaces, quotes, ``$``): the
    list is one shell-quoted literal, read a line at a time."""
    lines = "\n".join(f"{b.id} {b.rack if b.rack is not None else 'null'}" for b in planned)
    return _SCRIPT.format(
        expected=shlex.quote(lines),
        count=len(planned), ids=", ".join(str(b.id) for b in planned))
