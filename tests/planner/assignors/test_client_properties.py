"""Invariants of the client assignors on random groups driven through multi-step rebalances."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.assignors import assign
from planner.assignors.common import java_member_order, parse_members, sort_members
from planner.assignors.sticky import DEFAULT_GENERATION, MemberData, abstract_sticky_assign

TOPICS = ("t0", "t1", "t2", "T3")
RACKS = ("r0", "r1", "r2")
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow])


@st.composite
def groups(draw, uniform: bool | None = None):
    """Topics with partition counts, optional replica racks, and members with subscriptions."""
    topics = {t: draw(st.integers(0, 9)) for t in draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True))}
    names = list(topics) + ["absent"]
    n = draw(st.integers(1, 7))
    same = draw(st.booleans()) if uniform is None else uniform
    shared = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    with_racks = draw(st.booleans())
    members = []
    for i in range(n):
        subscribed = shared if same else draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        members.append({
            "member_id": f"m{draw(st.integers(0, 30))}-{i}",
            "group_instance_id": draw(st.none() | st.sampled_from(["i0", "i1", "i2", ""])),
            "rack": draw(st.sampled_from(RACKS + ("",))) if with_racks else None,
            "topics": subscribed,
            "owned_partitions": {},
            "generation": None,
        })
    partition_racks = None
    if with_racks:
        partition_racks = {
            t: [draw(st.lists(st.sampled_from(RACKS), min_size=1, max_size=2)) for _ in range(c)]
            for t, c in topics.items()
        }
    return topics, members, partition_racks


def _eligible(topics: dict, members: list) -> dict[tuple[str, int], set[str]]:
    """Each existing partition of a subscribed topic and the members subscribed to it."""
    out: dict[tuple[str, int], set[str]] = {}
    for m in members:
        for t in m["topics"]:
            for p in range(topics.get(t, 0)):
                out.setdefault((t, p), set()).add(m["member_id"])
    return out


def _owners(result: dict) -> dict[tuple[str, int], list[str]]:
    owners: dict[tuple[str, int], list[str]] = {}
    for m, by_topic in result.items():
        for t, ps in by_topic.items():
            for p in ps:
                owners.setdefault((t, p), []).append(m)
    return owners


def _check_valid(topics: dict, members: list, result: dict, *, in_transfer_ok: bool = False) -> None:
    assert list(result) == [m["member_id"] for m in members]
    eligible = _eligible(topics, members)
    owners = _owners(result)
    assert set(owners) <= set(eligible), "assigned a partition nobody may own"
    owned_by = {(t, p): m["member_id"] for m in members for t, ps in m["owned_partitions"].items() for p in ps}
    for tp, subscribers in eligible.items():
        got = owners.get(tp, [])
        assert len(got) <= 1, f"{tp} assigned twice: {got}"
        if got:
            assert got[0] in subscribers, f"{tp} given to non-subscriber {got[0]}"
        elif not (in_transfer_ok and tp in owned_by):
            raise AssertionError(f"{tp} left unassigned")


def _sizes(result: dict) -> list[int]:
    return [sum(len(ps) for ps in by_topic.values()) for by_topic in result.values()]


def _rejoin(members: list, result: dict, generation: int) -> list:
    return [{**m, "owned_partitions": result[m["member_id"]], "generation": generation} for m in members]


@SETTINGS
@given(groups())
def test_range_assigns_each_partition_once_with_per_topic_balance(group) -> None:
    topics, members, racks = group
    result = assign("range", topics, members, racks)
    _check_valid(topics, members, result)
    for t in topics:
        counts = [len(result[m["member_id"]].get(t, [])) for m in members if t in m["topics"]]
        if counts:
            assert max(counts) - min(counts) <= 1


@SETTINGS
@given(groups())
def test_roundrobin_assigns_each_partition_once_and_balances_uniform_groups(group) -> None:
    topics, members, racks = group
    result = assign("roundrobin", topics, members, racks)
    _check_valid(topics, members, result)
    if all(m["topics"] == members[0]["topics"] for m in members):
        assert max(_sizes(result)) - min(_sizes(result)) <= 1


@st.composite
def rebalances(draw):
    """A group and a sequence of membership/subscription changes."""
    topics, members, racks = draw(groups())
    kinds = ["join", "leave", "stale_rejoin", "resubscribe", "grow", "none"]
    changes = draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=4))
    return topics, members, racks, changes, draw(st.randoms(use_true_random=False))


def _apply(change: str, step: int, topics: dict, members: list, departed: list, rnd) -> tuple[dict, list]:
    """One change between rebalances; leavers go to ``departed`` and may come back stale."""
    if change == "join":
        template = rnd.choice(members)
        joiner = f"new-{step}"
        members = members + [{**template, "member_id": joiner, "owned_partitions": {}, "generation": None}]
    elif change == "leave" and len(members) > 1:
        leaver = rnd.choice(members)
        departed.append(leaver)
        members = [m for m in members if m is not leaver]
    elif change == "stale_rejoin" and departed:
        # Back with the assignment and generation it had when it left.
        members = members + [departed.pop(0)]
    elif change == "resubscribe":
        victim = rnd.choice(members)
        topics_now = sorted(set(victim["topics"]) ^ {rnd.choice(TOPICS)}) or [TOPICS[0]]
        members = [{**m, "topics": topics_now} if m is victim else m for m in members]
    elif change == "grow":
        # Partitions are only ever added; a deleted topic (count 0) stays deleted.
        topic = rnd.choice(list(topics))
        if topics[topic]:
            topics = {**topics, topic: 0 if rnd.random() < 0.2 else topics[topic] + rnd.randint(1, 5)}
    return topics, members


@SETTINGS
@given(rebalances())
def test_eager_sticky_is_valid_balanced_and_sticky_through_rebalances(case) -> None:
    topics, members, racks, changes, rnd = case
    departed: list = []
    result = assign("sticky", topics, members, racks)
    _check_valid(topics, members, result)
    for generation, change in enumerate(changes, start=1):
        members = _rejoin(members, result, generation)
        topics, members = _apply(change, generation, topics, members, departed, rnd)
        result = assign("sticky", topics, members, racks)
        _check_valid(topics, members, result)
        _check_uniform_bounds(topics, members, racks, result)


@SETTINGS
@given(rebalances())
def test_cooperative_sticky_only_withholds_partitions_still_owned_elsewhere(case) -> None:
    topics, members, racks, changes, rnd = case
    departed: list = []
    generation = 0
    result = assign("cooperative-sticky", topics, members, racks)
    _check_valid(topics, members, result)
    for change in changes:
        generation += 1
        members = _rejoin(members, result, generation)
        topics, members = _apply(change, generation, topics, members, departed, rnd)
        # Before joining, a cooperative member drops partitions of topics it no longer subscribes to.
        members = [
            {**m, "owned_partitions": {t: ps for t, ps in m["owned_partitions"].items() if t in m["topics"]}}
            for m in members
        ]
        result = assign("cooperative-sticky", topics, members, racks)
        _check_valid(topics, members, result, in_transfer_ok=True)
        _check_cooperative_protocol(members, result)
        full = _full_sticky_assignment(topics, members, racks)
        _check_valid(topics, members, full)
        _check_uniform_bounds(topics, members, racks, full)
        assert all(set(ps) <= set(full[m].get(t, [])) for m, by_topic in result.items() for t, ps in by_topic.items())


def _check_cooperative_protocol(members: list, result: dict) -> None:
    """No member is given a partition another member still reports owning (stale double claims aside)."""
    claimants: dict[tuple[str, int], list[str]] = {}
    for m in members:
        for t, ps in m["owned_partitions"].items():
            for p in ps:
                claimants.setdefault((t, p), []).append(m["member_id"])
    for m, by_topic in result.items():
        for t, ps in by_topic.items():
            for p in ps:
                owners = claimants.get((t, p), [m])
                assert len(owners) > 1 or owners == [m], f"{(t, p)} given to {m} while {owners} owns it"


def _full_sticky_assignment(topics: dict, members: list, racks) -> dict:
    """The cooperative assignor's assignment before withholding transfers."""
    parsed = parse_members(members)
    data = {
        m.member_id: MemberData(m.owned_partitions, m.generation if m.generation is not None else DEFAULT_GENERATION)
        for m in parsed
    }
    raw = abstract_sticky_assign(topics, parsed, racks or {}, data).assignment
    out: dict = {}
    for m in parsed:
        by_topic: dict = {}
        for t, p in raw[m.member_id]:
            by_topic.setdefault(t, []).append(p)
        out[m.member_id] = by_topic
    return out


def _check_uniform_bounds(topics: dict, members: list, racks, result: dict) -> None:
    """With identical subscriptions: sizes within one, and each member keeps min(owned, minQuota)."""
    if any(set(m["topics"]) != set(members[0]["topics"]) for m in members):
        return
    sizes = _sizes(result)
    assert max(sizes) - min(sizes) <= 1
    if racks:
        return
    total = sum(sizes)
    min_quota = total // len(members)
    claims = [tp for m in members for t, ps in m["owned_partitions"].items() for tp in ((t, p) for p in ps)]
    if len(claims) != len(set(claims)):
        return
    for m in members:
        owned = m["owned_partitions"].items()
        valid = {(t, p) for t, ps in owned if t in m["topics"] for p in ps if p < topics.get(t, 0)}
        kept = {(t, p) for t, ps in result[m["member_id"]].items() for p in ps} & valid
        assert len(kept) >= min(len(valid), min_quota), f"{m['member_id']} kept {len(kept)} of {len(valid)}"


def _reference_roundrobin(topics: dict, members: list) -> dict:
    """Kafka's loop, partition by partition: a circular iterator over MemberInfo-sorted members."""
    ring = [m.member_id for m in sort_members(java_member_order(parse_members(members)))]
    subscribed = {m["member_id"]: set(m["topics"]) for m in members}
    out: dict = {m["member_id"]: {} for m in members}
    cursor = 0
    for t in sorted({t for m in members for t in m["topics"] if topics.get(t)}):
        for p in range(topics[t]):
            while t not in subscribed[ring[cursor]]:
                cursor = (cursor + 1) % len(ring)
            out[ring[cursor]].setdefault(t, []).append(p)
            cursor = (cursor + 1) % len(ring)
    return out


def _reference_range(topics: dict, members: list) -> dict:
    """Kafka's ranges without racks: per topic, sorted subscribers, the first count % n get one more."""
    ordered = sort_members(java_member_order(parse_members(members)))
    out: dict = {m["member_id"]: {} for m in members}
    for t in sorted(topics):
        consumers = [m.member_id for m in ordered if t in m.topics]
        if not consumers or not topics[t]:
            continue
        per, extra = divmod(topics[t], len(consumers))
        start = 0
        for i, c in enumerate(consumers):
            length = per + (1 if i < extra else 0)
            if length:
                out[c][t] = list(range(start, start + length))
            start += length
    return out


@SETTINGS
@given(groups())
def test_closed_form_range_and_roundrobin_equal_kafkas_loops(group) -> None:
    topics, members, _ = group
    assert assign("range", topics, members) == _reference_range(topics, members)
    assert assign("roundrobin", topics, members) == _reference_roundrobin(topics, members)
