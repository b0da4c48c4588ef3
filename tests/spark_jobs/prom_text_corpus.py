"""Random and adversarial exposition-text lines, and the records the reader must make of them.

`corpus` builds the lines (every spelling `spark_jobs.metric_names` knows, label blocks with escapes, commas,
trailing commas and spaces, bad UTF-8, CR/LF/CRLF, blank and comment lines, every value and timestamp spelling
Spark's casts accept or refuse, unknown brokers, bad partitions, broker-wide series). The records expected of it
were computed by the JVM reader this one replaced (Spark's ``spark.read.text``, Java regexes, ``try_cast``) and
are pinned in ``data/prom_text_corpus.expected.jsonl.gz`` beside the corpus itself (``.prom.gz``), so the test
needs neither the old reader nor this generator's exact randomness.

Lines ending in U+0085, U+2028 or U+2029 outside a quoted label value are left out: Java's ``$`` matches before
such a final "line terminator", which made the JVM reader read ``{topic="a"}\\u2028`` as a well-formed label block
and a partition ``"3\\u2028"`` as an id (then a size with no partition). The worker reader's ``$`` is the end of
the line (`test_readers.test_a_final_unicode_line_separator_is_not_an_end_of_line`).
"""

from __future__ import annotations

import random

__all__ = ["corpus", "BROKERS", "NAMES_FILE_ARGS"]

BROKERS = {"kafka-1:7071": 1, "kafka-2:7071": 2, "pod-b": 12}
#: The `MetricNames` of the second pinned run: a user's names file (a named counter, a named rate, other labels).
NAMES_FILE_ARGS = {
    "names": {"bytes_in": ("my_bytes_in_total", "counter"), "bytes_out": ("my_bytes_out_rate", "rate")},
    "topic_label": "t",
    "instance_labels": ("host", "instance"),
}

_METERS = ("BytesIn", "BytesOut", "MessagesIn")
_NAMES = [
    *[f"kafka_server_BrokerTopicMetrics_{m}_total" for m in _METERS],
    *[f"kafka_server_brokertopicmetrics_{m.lower()}_total" for m in _METERS],
    *[f"kafka_server_brokertopicmetrics_{m.lower()}persec" for m in _METERS],
    *[f"kafka_server_brokertopicmetrics_{m.lower()}persec_oneminuterate" for m in _METERS],
    *[f"kafka_server_broker_topic_metrics_{m.lower()}persec_rate" for m in _METERS],
    *[f"kafka_topic_{m}PerSec_total" for m in _METERS],
    "kafka_server_BrokerTopicMetrics_Count",
    "kafka_server_BrokerTopicMetrics_OneMinuteRate",
    "kafka_server_BrokerTopicMetrics_FiveMinuteRate",
    "kafka_server_BrokerTopicMetrics_MeanRate",
    "kafka_server_BrokerTopicMetrics",
    "kafka_server_brokertopicmetrics_replicationbytesin_total",
    "kafka_server_brokertopicmetrics_totalfetchrequests_total",
    "KAFKA_SERVER_BROKERTOPICMETRICS_BYTESIN_TOTAL",
    "kafka__server__brokertopicmetrics__bytes_in__total",
    "kafka_log_log_size",
    "kafka_log_Log_Value",
    "KAFKA_LOG_LOG_SIZE",
    "kafka_log_log_numlogsegments",
    "my_bytes_in_total",
    "my_bytes_out_rate",
    "jvm_memory_bytes_used",
    "up",
    ":colon:name",
    "_x",
]
_METER_LABEL_VALUES = ["BytesInPerSec", "bytesoutpersec", "Messages_In_Per_Sec", "TotalFetchRequestsPerSec", "Size", "size",
                       "NumLogSegments", "BytesIn", "", "BytesInPerSecX"]
_INSTANCES = ["kafka-1:7071", "kafka-2:7071", "kafka-9:7071", "7", "0", "123456789", "1234567890", "07", "-1", " 7", "pod-b",
              "", "\u0661", "kafka-1:7071\u2028x"]
_TOPICS = ["orders", "payments.ledger", "a,b", 'a\\"b', "a\\\\", "a}b", "a{b", "a=b", "ü-topic", "a\\nb", "", " ", "t\u2028x",
           "a b", "\\u00e9"]
_PARTITIONS = ["0", "3", "x", "-1", "+2", " 4", "123456789", "1234567890", "", "007", "1e2", "2147483648", "\u0663"]
_VALUES = ["0", "5", "12", "123.0", "1.0004966371E10", "8.60786391633E11", "NaN", "nan", "+Inf", "-Inf", "Inf", "inf", "Infinity",
           "-Infinity", "infinity", "+NaN", "+nan", "-3", "-0", "-0.0", "1e3", "1E+2", "0x10", "0x1p3", "0x1.8p1d", "+5", "1d", "1.5f",
           "1F", "5.", ".5", ".", "1,5", "9.3e18", "9223372036854775807", "9223372036854775808", "1e400", "1e-400", "\x015", "5\x01",
           "abc", "1_000", "\u0661", "00012", "e3", "1e", "+", "Infinityd", "NaNd"]
_TIMESTAMPS = ["1740960000000", "1740960060000", "17409600000.5", "0", "-5", "-0", "1e12", "+1740960000000", "99999999999999999999",
               "9223372036854775807", "9223372036854775808", "0x10", "1740960000000d", "\x011740960000000", "1", "00001740960000000"]
_SEP = [" ", "  ", "\t", " \t", "\t\t"]


def _labels(rng: random.Random) -> str:
    pairs: list[tuple[str, str]] = []
    pick = rng.random
    if pick() < 0.8:
        pairs.append((rng.choice(["instance", "instance", "pod", "host"]), rng.choice(_INSTANCES)))
    if pick() < 0.2:
        pairs.append(("pod", rng.choice(_INSTANCES)))
    if pick() < 0.3:
        pairs.append(("job", "kafka"))
    if pick() < 0.85:
        pairs.append((rng.choice(["topic", "topic", "topic", "t"]), rng.choice(_TOPICS)))
    if pick() < 0.4:
        pairs.append(("partition", rng.choice(_PARTITIONS)))
    if pick() < 0.35:
        pairs.append((rng.choice(["name", "metric"]), rng.choice(_METER_LABEL_VALUES)))
    rng.shuffle(pairs)
    parts = []
    for k, v in pairs:
        eq = rng.choice(["=", "=", "=", " = ", "\t=", "= "])
        parts.append(f'{k}{eq}"{v}"')
    body = ""
    for i, p in enumerate(parts):
        body += p
        if i < len(parts) - 1:
            body += rng.choice([",", ",", ",", ", ", " ,", ",\t"])
    if pick() < 0.3:
        body += ","
    if pick() < 0.1:
        body = " " + body + " "
    damage = pick()
    if damage < 0.03:
        body = body.replace(",", " ", 1)  # a missing comma
    elif damage < 0.05:
        body += ',1bad="x"'
    elif damage < 0.07:
        body += ',x="unterminated'
    elif damage < 0.08:
        body += ",,"
    elif damage < 0.09:
        body += ',x="a\\\u2028"'  # an escape Java's '.' does not take
    elif damage < 0.10:
        body += ",x=y"
    return "{" + body + "}"


def _line(rng: random.Random) -> str:
    name = rng.choice(_NAMES)
    labels = _labels(rng) if rng.random() < 0.93 else rng.choice(["", "{}", "{ }"])
    pre = rng.choice(["", "", "", " ", "\t"]) if labels else ""
    value = rng.choice(_VALUES) if rng.random() < 0.5 else str(rng.choice([rng.randint(0, 10**15), rng.random() * 1e12]))
    line = name + pre + labels + rng.choice(_SEP) + value
    r = rng.random()
    if r < 0.8:
        line += rng.choice(_SEP) + (rng.choice(_TIMESTAMPS) if rng.random() < 0.3 else str(1740960000000 + 60_000 * rng.randint(0, 500)))
    elif r < 0.85:
        line += rng.choice(_SEP) + "1740960000000" + rng.choice(_SEP) + "7"  # a fourth field
    if rng.random() < 0.1:
        line += rng.choice(_SEP)
    return line


_SPECIAL = [
    "",
    " ",
    "   ",
    "\t",
    "\x0b",
    "# HELP kafka_server_brokertopicmetrics_bytesin_total Attribute exposed for management",
    "# TYPE kafka_server_brokertopicmetrics_bytesin_total counter",
    "  # indented comment",
    "\t# tab-indented comment",
    "#",
    "garbage",
    "kafka_server_brokertopicmetrics_bytesin_total",
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a"}',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a"}5 1740960000000',
    ' kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a"} 5 1740960000000',
    'kafka_server_brokertopicmetrics_bytesin_total {instance="kafka-1:7071",topic="a"} 5 1740960000000',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a"}\u00a05 1740960000000',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a"} 5\x0b1740960000000',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a"} 5\x0c1740960000000',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a\u0085b"} 5 1740960000000',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a\\\u0085b"} 5 1740960000000',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a"}} 5 1740960000000',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a"} 5 1740960000000 # comment',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a\\"} 5 1740960000000',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="x",topic="y"} 5 1740960000000',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",xtopic="y"} 5 1740960000000',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",a="topic=\\"z\\"",topic="y"} 5 1740960000000',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",a=",topic=\\"z\\"",topic="y"} 5 1740960000000',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",a=",topic="} 5 1740960000000',
    "kafka_log_log_size{" + ",".join(f'l{i}="{"v" * 40}"' for i in range(80)) + ',topic="long",instance="kafka-1:7071",partition="0"} 5 1',
    'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="' + "\u00e9" * 2500 + '"} x 1',
]
_BAD_BYTES = [b"\xff", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\xf8\x88\x80\x80\x80", b"\xc2"]


def corpus(lines: int = 6000, seed: int = 23) -> bytes:
    """The corpus: `_SPECIAL` lines, then ``lines`` random ones, joined by LF, CRLF or CR, some with bad bytes."""
    rng = random.Random(seed)
    out = bytearray(b"\xef\xbb\xbf")  # a byte-order mark, as some editors write
    texts = _SPECIAL + [_line(rng) for _ in range(lines)]
    for i, text in enumerate(texts):
        data = text.encode()
        if i >= len(_SPECIAL) and rng.random() < 0.03:
            at = rng.randrange(len(data) + 1)
            data = data[:at] + rng.choice(_BAD_BYTES) + data[at:]
        out += data
        out += rng.choice([b"\n"] * 8 + [b"\r\n", b"\r"])
    out += b'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="last"} 9 1740960000000'  # no final newline
    return bytes(out)
