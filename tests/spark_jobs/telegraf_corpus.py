"""Random and adversarial Telegraf JSON lines, and the records the JVM reader (`spark_jobs.telegraf.read_telegraf`,
Spark's JSON reader) makes of them: the oracle of a reader that parses in Python workers.

`corpus` builds the lines: Telegraf's own shape with every field, tag and timestamp spelling the reader meets
(numbers as JSON numbers or strings, floats, exponents, ``NaN``/``Infinity`` tokens, nulls, missing and empty
members, duplicate keys, unicode escapes and surrogate pairs, non-ASCII, nested values where a string is expected)
and whole lines Spark's JSON reader treats in its own ways (blank, broken, truncated, trailing garbage, a top-level
array of objects, scalars, single quotes, comments, leading zeros, bytes that are not UTF-8, CRLF, a byte-order
mark). The records are pinned in ``data/telegraf_corpus.expected.jsonl.gz`` beside the corpus (``.json.gz``), so
a test needs neither the JVM reader nor this generator's exact randomness.

Pinned with ``python -m tests.spark_jobs.telegraf_corpus`` (Spark 4.0.5, local[2], UTC session).
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

__all__ = ["corpus", "BROKERS", "records", "DATA"]

DATA = Path(__file__).parent / "data"
BROKERS = {"http://kafka-1:8778/jolokia": 1, "http://kafka-2:8778/jolokia": 2, "kafka-3": 3}

_FIELDS = ["BytesInPerSec.Count", "BytesOutPerSec.Count", "MessagesInPerSec.Count", "BytesInPerSec.OneMinuteRate",
           "Size", "TotalFetchRequestsPerSec.Count", "bytesinpersec.count", "Count", "BytesInPerSec.Count "]
_NAMES = ["kafka_topic", "kafka_topic", "kafka_topic", "kafka_partition", "kafka_partition", "cpu", "Kafka_Topic", "kafka_topic "]
_TOPICS = ["orders", "payments.v2", "a-b_c", "é-topic", "日本", "\U0001F600", "", " ", "x" * 300]
_AGENTS = [*BROKERS, "http://kafka-9:8778/jolokia", "7", "0", "-1", "07", " 7", "2147483648", ""]
_HOSTS = ["kafka-3", "kafka-1", "5", "host-x", ""]
_PARTITIONS = ["0", "2", "17", "-1", "007", "x", "", " 3", "2147483648", "3.0"]
_NUMBERS = ["0", "1", "1000", "123456789012", "1.5", "1.50", "1e3", "1E+3", "2.5e-3", "-5", "-0", "0.0", "9223372036854775807",
            "9223372036854775808", "1e19", "1e400", "-1e400", "NaN", "Infinity", "-Infinity", "+Infinity", "12345678901234567890123",
            "3.141592653589793238", "4.9e-324"]
_STRINGS = ['"123"', '"1.5"', '"NaN"', '"Infinity"', '"-inf"', '"1,5"', '" 42 "', '"0x10"', '"1d"', '""', '"abc"', '"1e3"',
            '"\\u0031\\u0032"']
_OTHER = ["null", "true", "false", "[1,2]", '{"a":1}', "[]", "{}"]
_TIMESTAMPS = ["1740960000", "1740960060", "1740960000123", "1740960000123456", "1740960000123456789", "1740960000.5",
               "1.74096e9", '"1740960000"', '"1740960000123"', '"x"', "0", "-1740960000", "null", "1e30", "true", "99999999999",
               "100000000000000", "1740960000000000000000", '" 1740960000 "', "[1740960000]"]


def _string(rng: random.Random, text: str) -> str:
    """``text`` as a JSON string, sometimes with its characters as unicode escapes (surrogate pairs beyond the BMP)."""
    if rng.random() < 0.15:
        units = text.encode("utf-16-be")
        return '"' + "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2)) + '"'
    return json.dumps(text, ensure_ascii=rng.random() < 0.2)


def _value(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.55:
        return str(rng.choice([rng.randint(0, 10**13), rng.randint(0, 1000)]))
    if r < 0.75:
        return rng.choice(_NUMBERS)
    if r < 0.9:
        return rng.choice(_STRINGS)
    return rng.choice(_OTHER)


def _object(members: list[tuple[str, str]], rng: random.Random) -> str:
    sep = "," if rng.random() < 0.85 else rng.choice([", ", " , "])  # mostly as Telegraf writes them
    colon = ":" if rng.random() < 0.85 else rng.choice([": ", " :"])
    return "{" + sep.join(f"{json.dumps(k)}{colon}{v}" for k, v in members) + "}"


def _line(rng: random.Random) -> str:
    name = rng.choice(_NAMES)
    tags: list[tuple[str, str]] = []
    if name != "cpu" or rng.random() < 0.5:
        if rng.random() < 0.93:
            tags.append(("topic", _string(rng, rng.choice(_TOPICS)) if rng.random() < 0.97 else rng.choice(["null", "5", "{}"])))
        if name.startswith("kafka_partition") or rng.random() < 0.05:
            part = rng.choice(_PARTITIONS)
            tags.append(("partition", _string(rng, part) if rng.random() < 0.85 else rng.choice(["3", "null", "3.0"])))
        if rng.random() < 0.85:
            tags.append(("jolokia_agent_url", _string(rng, rng.choice(_AGENTS))))
        if rng.random() < 0.3:
            tags.append(("host", _string(rng, rng.choice(_HOSTS))))
        if rng.random() < 0.05:
            tags.append(("topic", _string(rng, rng.choice(_TOPICS))))  # a duplicate key
    rng.shuffle(tags)
    fields = [(rng.choice(_FIELDS), _value(rng)) for _ in range(rng.choice([1, 1, 2, 3, 4]))]
    if rng.random() < 0.04:
        fields.append((fields[0][0], _value(rng)))  # a duplicate field
    members = [
        ("fields", _object(fields, rng) if rng.random() < 0.95 else rng.choice(["{}", "null", "[]", '"x"', "5"])),
        ("name", _string(rng, name) if rng.random() < 0.97 else rng.choice(["null", "5", "{}"])),
        ("tags", _object(tags, rng) if rng.random() < 0.97 else rng.choice(["{}", "null", "[]"])),
        ("timestamp", rng.choice(_TIMESTAMPS) if rng.random() < 0.3 else str(1740960000 + 60 * rng.randint(0, 500))),
    ]
    r = rng.random()
    if r < 0.03:
        members.pop(rng.randrange(len(members)))  # a member missing
    elif r < 0.05:
        members.append(("extra", _value(rng)))
    elif r < 0.07:
        members.append(("name", _string(rng, rng.choice(_NAMES))))  # a duplicate top-level key: the last counts
    if rng.random() < 0.1:
        rng.shuffle(members)
    return _object(members, rng)


#: Whole lines Spark's JSON reader treats in its own ways (one each, among the random ones).
_SPECIAL = [
    "",
    " ",
    "\t",
    '{"broken',
    '{"fields":{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000} x',
    '{"fields":{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000}{"name":"b"}',
    '[{"fields":{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000},'
    '{"fields":{"Size":9},"name":"kafka_partition","tags":{"topic":"a","partition":"1","jolokia_agent_url":"7"},"timestamp":1740960000}]',
    '[{"fields":{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000},5]',
    "[]",
    "5",
    "null",
    '"text"',
    "true",
    "{}",
    "{'fields':{'BytesInPerSec.Count':5},'name':'kafka_topic','tags':{'topic':'sq','jolokia_agent_url':'7'},'timestamp':1740960000}",
    '{"fields":{"BytesInPerSec.Count":5},/*c*/"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000}',
    '{"fields":{"BytesInPerSec.Count":05},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000}',
    '{"fields":{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"a\\qb","jolokia_agent_url":"7"},"timestamp":1740960000}',
    '{"fields":{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"a\tb","jolokia_agent_url":"7"},"timestamp":1740960000}',
    '{"fields":{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"\\ud800x","jolokia_agent_url":"7"},"timestamp":1740960000}',
    '{fields:{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000}',
    '{"fields":{"BytesInPerSec.Count":5,},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000}',
    '{"fields":{"BytesInPerSec.Count":.5},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000}',
    '{"fields":{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000,"fields":{"Size":1}}',
    '{"fields":{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000}   ',
    '  {"fields":{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000}',
    '{"Fields":{"BytesInPerSec.Count":5},"NAME":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000}',
    '{"fields":{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7","topic":"b"},"timestamp":1740960000}',
    '{"fields":{"BytesInPerSec.Count":5,"BytesInPerSec.Count":6},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000}',
    '{"fields":{"BytesInPerSec.Count":5},"name":"kafka_topic","tags":{"topic":"a","jolokia_agent_url":"7"},"timestamp":1740960000',
]


def corpus(lines: int = 4000, seed: int = 23) -> bytes:
    """The corpus: ``lines`` random lines and every `_SPECIAL` line among them, LF and CRLF endings, some bytes that
    are not UTF-8, a byte-order mark at the start."""
    rng = random.Random(seed)
    out = [_line(rng) for _ in range(lines)]
    for special in _SPECIAL:
        out.insert(rng.randrange(len(out) + 1), special)
    data = []
    for text in out:
        raw = text.encode()
        if rng.random() < 0.01 and b'"topic":"' in raw:
            raw = raw.replace(b'"topic":"', b'"topic":"\xff\xfe', 1)  # not UTF-8 inside a string
        data.append(raw + (b"\r\n" if rng.random() < 0.1 else b"\n"))
    return b"\xef\xbb\xbf" + b"".join(data)


def records() -> tuple[bytes, list[dict]]:
    """The pinned corpus and the JVM reader's records of it (``file`` relative to the corpus's directory, ``{dir}``)."""
    lines = gzip.decompress((DATA / "telegraf_corpus.json.gz").read_bytes())
    expected = [json.loads(line) for line in gzip.decompress((DATA / "telegraf_corpus.expected.jsonl.gz").read_bytes()).splitlines()]
    return lines, expected


def _pin() -> None:  # pragma: no cover - run by hand, with the JVM reader
    import math
    import os
    import tempfile

    from spark_jobs.session import build_session
    from spark_jobs.staging import ReaderOptions
    from spark_jobs.telegraf import read_telegraf

    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    spark = build_session(master="local[2]", conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}, app_name="pin")
    data = corpus()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpus.json"
        path.write_bytes(data)
        rows = [r.asDict() for r in read_telegraf(spark, [str(path)], ReaderOptions("c", BROKERS)).collect()]
        uri = rows[0]["file"].rsplit("/", 1)[0] if rows else ""
    spark.stop()
    out = []
    for r in rows:
        r["file"] = r["file"].replace(uri, "{dir}") if r["file"] else None
        if r["value"] is not None and (math.isnan(r["value"]) or math.isinf(r["value"])):
            r["value"] = repr(r["value"])
        out.append(json.dumps(r, sort_keys=True, ensure_ascii=False))
    DATA.mkdir(exist_ok=True)
    (DATA / "telegraf_corpus.json.gz").write_bytes(gzip.compress(data, mtime=0))
    (DATA / "telegraf_corpus.expected.jsonl.gz").write_bytes(gzip.compress("\n".join(sorted(out)).encode() + b"\n", mtime=0))


if __name__ == "__main__":  # pragma: no cover
    _pin()
