"""Plain one-partition-at-a-time re-statements of Kafka's placers, the oracles for the vectorised code.

They follow the Java control flow literally (one `JavaRandom`, `java_shuffle`, Python ints) and
trade speed for obviousness; property tests compare the production code against them.
"""

from __future__ import annotations

from pools.java_semantics import JavaRandom, hash_order, int32, java_shuffle, string_hash, utf16_key


def _jmod(a: int, b: int) -> int:
    """Java's ``%``: the sign of the dividend."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _at(items, i):
    """Java list access: a negative index fails instead of counting from the end."""
    if i < 0:
        raise IndexError(f"Index {i} out of bounds for length {len(items)}")
    return items[i]


def admin_utils(brokers, n, rf, fixed_start_index, start_partition_id, seed=0, skip_negative_rounds=True):
    """`AdminUtils.assignReplicasToBrokers` on valid input, partition id -> replicas.

    Java ``int`` arithmetic throughout; a negative list index raises `IndexError` with Java's message.
    """
    rnd = JavaRandom(seed)
    racked = any(rack is not None for _, rack in brokers)
    if racked:
        rack_of = {b: r for b, r in brokers}
        racks = sorted(set(rack_of.values()), key=utf16_key)
        columns = [sorted(b for b, r in rack_of.items() if r == rack) for rack in racks]
        arranged, row = [], 0
        while len(arranged) < len(rack_of):
            arranged += [c[row] for c in columns if row < len(c)]
            row += 1
    else:
        arranged = [b for b, _ in brokers]
    size = len(arranged)
    start = fixed_start_index if fixed_start_index >= 0 else rnd.next_int(size)
    shift = fixed_start_index if fixed_start_index >= 0 else rnd.next_int(size)
    pid = max(0, start_partition_id)
    out = {}
    for _ in range(n):
        if pid > 0 and pid % size == 0:
            shift = int32(shift + 1)
        first = _jmod(int32(pid + start), size)
        replicas = [_at(arranged, first)]
        if not racked:
            for j in range(rf - 1):
                replicas.append(_at(arranged, _jmod(first + 1 + _jmod(int32(shift + j), size - 1), size)))
        else:
            used_racks, used = {rack_of[replicas[0]]}, {replicas[0]}
            k = 0
            for _ in range(rf - 1):
                tries = 0
                while True:
                    x = int32(int32(shift * len(racks)) + k)
                    if skip_negative_rounds and tries >= size - 1 and x < 0:
                        # A negative Java remainder cycles over the leader's neighbours only: skip
                        # the rounds (up to 2**31 steps) Kafka spins through until x turns positive.
                        k -= x
                    tries += 1
                    b = _at(arranged, _jmod(first + 1 + _jmod(int32(int32(shift * len(racks)) + k), size - 1), size))
                    k += 1
                    if (rack_of[b] not in used_racks or len(used_racks) == len(racks)) and (
                        b not in used or len(used) == size
                    ):
                        replicas.append(b)
                        used_racks.add(rack_of[b])
                        used.add(b)
                        break
        out[pid] = replicas
        pid = int32(pid + 1)
    return out


class _List:
    def __init__(self):
        self.brokers, self.index, self.offset, self.epoch = [], 0, 0, 0

    def next(self, epoch):
        if not self.brokers:
            return -1
        if self.epoch != epoch:
            self.epoch, self.index = epoch, 0
            self.offset = (self.offset + 1) % len(self.brokers)
        if self.index >= len(self.brokers):
            return -1
        b = self.brokers[(self.index + self.offset) % len(self.brokers)]
        self.index += 1
        return b


def striped(brokers, num_partitions, rf, seed):
    """`StripedReplicaPlacer.place` on valid input, lists of replicas in placement order."""
    rnd = JavaRandom(seed)
    racks: dict = {}
    for b, rack, fenced in brokers:
        racks.setdefault(rack, (_List(), _List()))[0 if fenced else 1].brokers.append(b)
    order = hash_order(list(racks), lambda r: 0 if r is None else string_hash(r))
    for rack in order:
        for lst in racks[rack]:
            if lst.brokers:
                lst.brokers.sort()
                lst.offset = rnd.next_int(len(lst.brokers))
    names = sorted(racks, key=lambda r: (r is not None, utf16_key(r or "")))
    offset = rnd.next_int(len(names))
    unfenced = sum(not f for _, _, f in brokers)
    epoch, out = 0, []
    for _ in range(num_partitions):
        if epoch == unfenced and unfenced > 1:
            java_shuffle(names, rnd)
            for rack in order:
                for lst in racks[rack]:
                    java_shuffle(lst.brokers, rnd)
            epoch = 0
        if offset == len(names):
            offset = 0
        first = offset
        while (b := racks[names[first]][1].next(epoch)) < 0:
            first = (first + 1) % len(names)
        replicas, j = [b], offset
        for _ in range(rf - 1):
            b = -1
            while b < 0:
                if j == first:
                    first = -1
                else:
                    fenced, unf = racks[names[j]]
                    b = unf.next(epoch)
                    if b < 0:
                        b = fenced.next(epoch)
                j = (j + 1) % len(names)
            replicas.append(b)
        out.append(replicas)
        epoch += 1
        offset += 1
    return out
