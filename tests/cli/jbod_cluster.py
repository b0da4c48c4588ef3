"""A 14-broker JBOD cluster in Kafka's own formats, cordoned from one chosen source (KIP-1066).

Two pools of six brokers (``pay``: 1-6, ``ops``: 7-12) over three racks, two brokers of each pool per rack, and two
empty brokers in no pool (13 on r1, 14 on r2) for ``brokers add`` and ``replace``; every broker has two log dirs,
``/var/lib/kafka/data-0`` and ``data-1``, most replicas in ``data-0`` (so a balance of the dirs has work to do).
The cordons are the same whatever their source:

- brokers 5, 10 and 14 entirely (``cordoned.log.dirs=*``, ``cordoned = true``, or both dirs ``isCordoned``): 5 is
  the only other broker of rack r2 in pool ``pay``, 10 the only other of rack r1 in pool ``ops``;
- ``data-1`` of broker 3 and ``data-0`` of broker 8.

`write_cluster` writes ``describe.txt``, ``log-dirs.json``, ``brokers.toml``, ``pools.toml`` and, for the configs
source, ``broker-configs.txt``.
"""

from __future__ import annotations

import json
from pathlib import Path

DIRS = ("/var/lib/kafka/data-0", "/var/lib/kafka/data-1")
BROKERS = tuple(range(1, 15))
RACK = {b: f"r{(b - 1) % 3 + 1}" for b in BROKERS}
POOL = {b: "pay" if b <= 6 else "ops" if b <= 12 else None for b in BROKERS}
#: Whole brokers cordoned, and (broker, dir) cordons.
CORDONED_BROKERS = (5, 10, 14)
CORDONED_DIRS = ((3, DIRS[1]), (8, DIRS[0]))
SOURCES = ("inventory", "configs", "is_cordoned")
#: topic → (partitions, replication factor, size of a replica in GB)
TOPICS = {"pay.ledger": (6, 3, 40), "pay.refunds": (6, 2, 25), "pay.notifications": (4, 2, 10),
          "pay.archive": (8, 3, 60), "ops.logs": (6, 3, 30), "ops.metrics": (6, 2, 15)}


def _replicas(topic: str, p: int, rf: int) -> tuple[int, ...]:
    """Rack-aware round robin over the topic's pool, as Kafka's rack-aware placement does."""
    members = [b for b in BROKERS if POOL[b] == topic.split(".")[0]]
    by_rack = sorted(members, key=lambda b: (RACK[b], b))
    order = [by_rack[i // 3 + (i % 3) * 2] for i in range(6)]  # r1, r2, r3, r1, r2, r3
    start = (p + len(topic)) % 6
    return tuple(order[(start + k) % 6] for k in range(rf))


def partitions() -> dict[tuple[str, int], tuple[int, ...]]:
    """Every partition's replicas."""
    return {(t, p): _replicas(t, p, rf) for t, (n, rf, _) in TOPICS.items() for p in range(n)}


def _describe() -> str:
    lines = []
    for t, (n, rf, _) in TOPICS.items():
        lines.append(f"Topic: {t}\tTopicId: {t.replace('.', 'x'):x<22}\tPartitionCount: {n}\tReplicationFactor: {rf}"
                     "\tConfigs: min.insync.replicas=1")
        for p in range(n):
            r = ",".join(map(str, _replicas(t, p, rf)))
            lines.append(f"\tTopic: {t}\tPartition: {p}\tLeader: {r.split(',')[0]}\tReplicas: {r}\tIsr: {r}"
                         "\tElr: \tLastKnownElr: ")
    return "\n".join(lines) + "\n"


def _log_dirs(source: str) -> str:
    held: dict[tuple[int, str], list[dict]] = {(b, d): [] for b in BROKERS for d in DIRS}
    for (t, p), replicas in partitions().items():
        size = TOPICS[t][2] * 10**9 + p * 10**8
        for b in replicas:
            # most in data-0, every replica of a cordoned broker: uneven dirs a balance would even out
            d = DIRS[1] if (p + b) % 5 == 0 and b not in CORDONED_BROKERS else DIRS[0]
            held[b, d].append({"partition": f"{t}-{p}", "size": size, "offsetLag": 0, "isFuture": False})
    marked = set(CORDONED_DIRS) | {(b, d) for b in CORDONED_BROKERS for d in DIRS} if source == "is_cordoned" else set()
    brokers = [{"broker": b, "logDirs": [{"logDir": d, "error": None, "partitions": held[b, d],
                                          **({"isCordoned": True} if (b, d) in marked else {})} for d in DIRS]}
               for b in BROKERS]
    return ("Querying brokers for log directories information\nReceived log directory information from brokers "
            + ",".join(map(str, BROKERS)) + "\n" + json.dumps({"version": 1, "brokers": brokers}) + "\n")


def _inventory(source: str) -> str:
    out = ["[defaults]", "disk_bytes = 1_500_000_000_000", "nw_in_Bps = 125_000_000", "nw_out_Bps = 125_000_000", ""]
    for b in BROKERS:
        out += ["[[broker]]", f"id = {b}", f'rack = "{RACK[b]}"', *([f'pool = "{POOL[b]}"'] if POOL[b] else [])]
        if source == "inventory":
            if b in CORDONED_BROKERS:
                out.append("cordoned = true")
            out += [f'cordoned_log_dirs = ["{d}"]' for c, d in CORDONED_DIRS if c == b]
        out.append("")
    return "\n".join(out)


def _configs() -> str:
    out = []
    for b in BROKERS:
        out.append(f"Dynamic configs for broker {b} are:")
        value = "*" if b in CORDONED_BROKERS else ",".join(d for c, d in CORDONED_DIRS if c == b)
        if value:
            out.append(f"  cordoned.log.dirs={value} sensitive=false "
                       f"synonyms={{DYNAMIC_BROKER_CONFIG:cordoned.log.dirs={value}}}")
    return "\n".join(out) + "\n"


POLICY = """[defaults]
headroom = 0.7
tolerated_broker_failures = 1
min_brokers = 3

[[pool]]
name = "pay"
topics = ['pay[.].*']

[[pool]]
name = "ops"
topics = ['ops[.].*']
"""


def write_cluster(root: Path, source: str) -> dict[str, Path]:
    """The cluster's files under ``root``, cordoned from ``source`` (one of `SOURCES`), by role, and a profile
    (``profile/``: 2 MB/s in per partition, 4 MB/s out, storage as the replicas' sizes)."""
    from benchmarks.random_clusters import profile_row
    from pools.profile import save_profile

    root.mkdir(parents=True, exist_ok=True)
    save_profile(root / "profile", [profile_row(t, n, n * 2e6, n * 4e6, n * (size * 1e9 + (n - 1) * 5e7))
                                    for t, (n, _, size) in TOPICS.items()])
    files = {"describe": ("describe.txt", _describe()), "log_dirs": ("log-dirs.json", _log_dirs(source)),
             "inventory": ("brokers.toml", _inventory(source)), "policy": ("pools.toml", POLICY)}
    if source == "configs":
        files["broker_configs"] = ("broker-configs.txt", _configs())
    out = {"profile": root / "profile"}
    for role, (name, text) in files.items():
        (root / name).write_text(text, encoding="utf-8")
        out[role] = root / name
    return out
