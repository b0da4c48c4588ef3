"""kafka-consumer-groups.sh output parsers: the example captures and malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest

from pools.errors import InputError
from pools.kafka_formats.consumer_groups import (
    parse_consumer_group_members,
    parse_consumer_group_state,
    parse_consumer_groups_describe,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "kafka-formats"
HEADER = "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID"


def test_describe_example_file() -> None:
    groups = parse_consumer_groups_describe((DATA / "kafka-consumer-groups-describe.txt").read_text())
    assert [g.group for g in groups] == ["billing", "audit"]
    billing, audit = groups
    assert billing.active and not audit.active
    assert billing.topics == ("orders",)
    assert len(billing.consumers) == 2
    row = billing.partitions[2]
    assert (row.partition, row.current_offset, row.log_end_offset, row.lag) == (2, None, 3100, None)
    assert row.host == "/10.0.0.6" and row.client_id == "consumer-billing-2"
    assert [(p.partition, p.lag, p.consumer_id) for p in audit.partitions] == [(0, 312, None), (1, 0, None)]


def test_describe_without_the_stderr_notice_still_marks_the_group_inactive() -> None:
    text = "\n".join(l for l in (DATA / "kafka-consumer-groups-describe.txt").read_text().splitlines() if "Consumer group" not in l)
    audit = parse_consumer_groups_describe(text)[1]
    assert audit.group == "audit" and not audit.active


def test_describe_keeps_client_ids_with_spaces() -> None:
    row = parse_consumer_groups_describe(f"{HEADER}\ng t 0 1 2 1 c-1 /h my client\n")[0].partitions[0]
    assert row.client_id == "my client"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("g t 0 1 2 1 c /h c\n", r"src:1: expected the header 'GROUP TOPIC PARTITION"),
        (f"{HEADER}\ng t 0 1 2\n", r"src:2: expected at least the 6 columns"),
        (f"{HEADER}\ng t x 1 2 1 c /h c\n", r"src:2: PARTITION must be an integer, got 'x'"),
        (f"{HEADER}\n\ng t 0 1 2 ? c /h c\n", r"src:3: LAG must be an integer or '-', got '\?'"),
    ],
)
def test_describe_rejects_malformed(text: str, match: str) -> None:
    with pytest.raises(InputError, match=match):
        parse_consumer_groups_describe(text, source="src")


def test_members_verbose_example_file() -> None:
    members = parse_consumer_group_members((DATA / "kafka-consumer-groups-members-verbose.txt").read_text())
    assert [(m.group, m.group_instance_id, m.partition_count, m.assignment) for m in members] == [
        ("billing", None, 2, (("orders", (0, 1)),)),
        ("billing", "billing-2", 1, (("orders", (2,)),)),
    ]
    assert members[0].host == "/10.0.0.5" and members[1].client_id == "consumer-billing-2"


def test_members_java_spelling_without_topics_and_without_instance_column() -> None:
    text = (
        "GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS ASSIGNMENT\n"
        "g c-1 /h c 3 (0,1), (2)\n"
        "g c-2 /h c 0 -\n"
    )
    first, second = parse_consumer_group_members(text)
    assert first.group_instance_id is None
    assert first.assignment == ((None, (0, 1)), (None, (2,)))
    assert second.assignment == ()


def test_members_without_verbose_has_no_assignment() -> None:
    (member,) = parse_consumer_group_members("GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS\ng c /h c 4\n")
    assert member.partition_count == 4 and member.assignment is None


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ("g c /h c 2 t(0)", r"f:2: #PARTITIONS is 2 but ASSIGNMENT lists 1 partitions"),
        ("g c /h c two t(0)", r"f:2: #PARTITIONS must be an integer, got 'two'"),
        ("g c /h c 1 t[0]", r"f:2: expected ASSIGNMENT like"),
        ("g c /h", r"f:2: expected GROUP CONSUMER-ID"),
    ],
)
def test_members_rejects_malformed(row: str, match: str) -> None:
    with pytest.raises(InputError, match=match):
        parse_consumer_group_members(f"GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS ASSIGNMENT\n{row}\n", source="f")


def test_state() -> None:
    text = (
        "GROUP   COORDINATOR (ID)        ASSIGNMENT-STRATEGY  STATE   #MEMBERS\n"
        "billing 10.0.0.1:9092  (1)      range                Stable  2\n"
        "audit   10.0.0.2:9092  (2)                           Empty   0\n"
    )
    billing, audit = parse_consumer_group_state(text)
    assert (billing.coordinator_id, billing.assignment_strategy, billing.state, billing.members) == (1, "range", "Stable", 2)
    assert (audit.assignment_strategy, audit.state, audit.members) == ("", "Empty", 0)
    with pytest.raises(InputError, match=r"s:2: expected 'GROUP HOST:PORT \(ID\)"):
        parse_consumer_group_state("GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS\ng h:1 1 r Stable 2\n", source="s")
