"""`spark_jobs.prom_text`: the worker reader makes the records the JVM reader made, line for line, in any split."""

from __future__ import annotations

import gzip
import json
import math
import random
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import spark_jobs.prom_text as prom_text
from spark_jobs.metric_names import DEFAULT, MetricNames
from spark_jobs.prom_text import LABELS_PATTERN, LINE_PATTERN, java_double, java_long, parse_file, split_points
from spark_jobs.staging import ReaderOptions
from tests.spark_jobs.prom_text_corpus import BROKERS, NAMES_FILE_ARGS

DATA = Path(__file__).parent / "data"

#: The JVM reader's Java patterns (possessive quantifiers), the oracle of `LINE_PATTERN` and `LABELS_PATTERN`.
_JAVA_QUOTED = r'"(?:[^"\\]++|\\.)*+"'
JAVA_LINE = (
    r"^([A-Za-z_:][A-Za-z0-9_:]*+)(?:[ \t]*+(\{(?:[^\"}]++|" + _JAVA_QUOTED + r")*+\}))?[ \t]++(\S++)(?:[ \t]++(\S++))?[ \t]*+$"
)
JAVA_LABELS = r"^[ \t]*+(?:[A-Za-z_][A-Za-z0-9_]*+[ \t]*+=[ \t]*+" + _JAVA_QUOTED + r"[ \t]*+(?:,[ \t]*+|$))*+$"
#: What Java's '$' also matched before, at a line's end.
_JAVA_FINAL_TERMINATORS = "\u0085\u2028\u2029"


def _corpus(tmp_path: Path) -> tuple[Path, list[dict]]:
    """The pinned corpus in a directory whose name needs quoting in a URI, and the JVM reader's records of it."""
    folder = tmp_path / "kafka-1:7071 x"
    folder.mkdir()
    path = folder / "corpus %.prom"
    path.write_bytes(gzip.decompress((DATA / "prom_text_corpus.prom.gz").read_bytes()))
    expected = [json.loads(line) for line in gzip.decompress((DATA / "prom_text_corpus.expected.jsonl.gz").read_bytes()).splitlines()]
    assert str(tmp_path) == prom_text.file_uri(str(tmp_path)).removeprefix("file:")  # only the pinned part needs quoting
    return path, expected


def _key(row: dict, tmp_path: Path, names: str) -> str:
    row = {**row, "file": row["file"].replace(f"file:{tmp_path}", "{dir}"), "names": names}
    value = row["value"]
    if value is not None and (math.isnan(value) or math.isinf(value)):
        row["value"] = repr(value)
    return json.dumps(row, sort_keys=True, ensure_ascii=False)


def _parsed(path: Path, tmp_path: Path, split: int | None) -> Counter:
    got: Counter = Counter()
    for label, names in (("default", DEFAULT), ("names_file", MetricNames(**NAMES_FILE_ARGS))):
        for part in split_points(str(path), split) if split else [None]:
            for batch in parse_file(str(path), ReaderOptions("c", BROKERS, names), part=part):
                got.update(_key(r, tmp_path, label) for r in batch.to_pylist())
    return got


@pytest.mark.slow
@pytest.mark.parametrize(("split", "chunk"), [(None, None), (None, 4096), (20_000, 1500)])
def test_every_corpus_line_gives_the_jvm_readers_record(tmp_path: Path, monkeypatch, split: int | None, chunk: int | None) -> None:
    path, expected = _corpus(tmp_path)
    if chunk:
        monkeypatch.setattr(prom_text, "_CHUNK_BYTES", chunk)
    if split:
        assert len(split_points(str(path), split)) > 10
    got = _parsed(path, tmp_path, split)
    want = Counter(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in expected)
    assert sum(got.values()) == sum(want.values())
    assert got - want == Counter() and want - got == Counter()


def test_lines_end_at_lf_cr_or_crlf_in_chunks_of_any_size(tmp_path: Path, monkeypatch) -> None:
    """Hadoop's line reader: LF, CR and CRLF end a line, a mark at the file's start is not text, no empty last line."""
    path = tmp_path / "a.prom"
    path.write_bytes(b"\xef\xbb\xbfa 1 2\r\n\r\rb 3 4\n\xef\xbb\xbfc 5 6\r\n")
    for chunk in (1, 2, 3, 5, 1 << 20):
        monkeypatch.setattr(prom_text, "_CHUNK_BYTES", chunk)
        for part in [None, *split_points(str(path), 4)]:
            rows = [r for b in parse_file(str(path), ReaderOptions("c"), part=part) for r in b.to_pylist()]
            if part is None:
                assert [(r["reason"], r["raw"]) for r in rows] == [
                    ("other_metric", None), ("blank", None), ("blank", None), ("other_metric", None), ("malformed_line", "\ufeffc 5 6"),
                ]


def test_the_corpus_holds_every_kind_and_reason(tmp_path: Path) -> None:
    _, expected = _corpus(tmp_path)
    reasons = {(r["kind"], r["reason"]) for r in expected}
    for reason in ("not_utf8", "malformed_line", "malformed_labels", "bad_value", "nan_value", "infinite_value", "negative_value",
                   "value_out_of_range", "missing_timestamp", "bad_timestamp", "unknown_broker", "bad_partition"):
        assert ("rejected", reason) in reasons
    for reason in ("blank", "comment", "other_metric", "broker_total"):
        assert ("ignored", reason) in reasons
    assert {("counter", None), ("size", None)} <= reasons


def test_a_final_unicode_line_separator_is_not_an_end_of_line(tmp_path: Path) -> None:
    """Java's '$' matched before a final U+2028: the JVM reader took ``{topic="a"}\\u2028`` for a label block."""
    head = 'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a"'
    path = tmp_path / "a.prom"
    path.write_text(
        f"{head},\u2028}} 5 1740960000000\n"
        f"{head}}} 5 1740960000000 \u2028\n"
        f'kafka_log_log_size{{instance="kafka-1:7071",topic="a",partition="3\u2028"}} 5 1740960000000\n'
    )
    rows = [r for b in parse_file(str(path), ReaderOptions("c", BROKERS)) for r in b.to_pylist()]
    assert [r["reason"] for r in rows] == ["malformed_labels", "malformed_line", "bad_partition"]


def _random_line(rng: random.Random) -> str:
    alphabet = ['a', 'k', '_', ':', '1', '{', '}', '"', '\\', ',', '=', ' ', '\t', '\x0b', '\u2028', 'é', '.', '+', '#', 'x']
    words = ['name', 'topic="a"', 'instance="k"', '{', '}', ',', ' ', '5', '1740960000000', '"', '\\"', '\\\\', '=']
    def noise(k: int) -> str:
        return "".join(rng.choice(words) if rng.random() < 0.5 else rng.choice(alphabet) for _ in range(rng.randint(0, k)))

    if rng.random() < 0.5:
        return noise(14).rstrip(_JAVA_FINAL_TERMINATORS)
    block = "{" + noise(8) + "}" if rng.random() < 0.8 else ""
    tail = rng.choice(["", "", " ", "\t"])
    ts = rng.choice(["", " 1740960000000", "\t" + noise(2)])
    gap, sep = rng.choice(["", " "]), rng.choice([" ", "\t ", ""])
    return f"name{gap}{block}{sep}{noise(2) or '5'}{ts}{tail}".rstrip(_JAVA_FINAL_TERMINATORS)


@pytest.mark.spark
def test_the_re2_patterns_match_the_java_patterns_group_for_group(spark) -> None:
    """Possessive and greedy quantifiers take the same here: RE2's patterns give Java's groups on any line."""
    from pyspark.sql import functions as F

    rng = random.Random(5)
    lines = [_random_line(rng) for _ in range(20_000)]
    lines += ["n " + rng.choice(["5", "5 6", "{}"]) for _ in range(50)]
    df = spark.createDataFrame([(x,) for x in lines], "line string")
    java = df.select(
        F.col("line").rlike(JAVA_LINE).alias("ok"), *[F.regexp_extract("line", JAVA_LINE, i).alias(f"g{i}") for i in range(1, 5)],
        F.col("line").rlike(JAVA_LABELS).alias("labels_ok"),
    ).collect()
    fields = pc.extract_regex(pa.array(lines), LINE_PATTERN)
    labels_ok = pc.match_substring_regex(pa.array(lines), LABELS_PATTERN).to_pylist()
    matched = 0
    for line, j, f, lab in zip(lines, java, fields.to_pylist(), labels_ok):
        assert j["ok"] == (f is not None), line
        assert j["labels_ok"] == lab, line
        if f is not None:
            matched += 1
            assert (j["g1"], j["g2"], j["g3"], j["g4"]) == (f["name"], f["labels"], f["value"], f["ts"]), line
    assert matched > 3000


_NUMBER_ALPHABET = ["0", "1", "9", "5", ".", "e", "E", "+", "-", "x", "X", "p", "a", "f", "d", "D", "F", " ", "\x01", "\u2028",
                    "inf", "Inf", "INF", "inity", "Infinity", "nan", "NaN", "0x", "7", "3", "2147483647", "9223372036854775807", "0" * 5]


@pytest.mark.spark
def test_values_and_timestamps_read_as_sparks_try_cast_reads_them(spark) -> None:
    from pyspark.sql import functions as F

    rng = random.Random(11)
    texts = ["".join(rng.choice(_NUMBER_ALPHABET) for _ in range(rng.randint(0, 5))) for _ in range(20_000)]
    texts += ["9223372036854775808", "-9223372036854775808", "-9223372036854775809", "2147483648", "-2147483648", "+-1", "1e400", "0x1p99999"]
    rows = spark.createDataFrame([(t,) for t in texts], "t string").select(
        F.col("t").try_cast("double").alias("d"), F.col("t").try_cast("long").alias("l"), F.col("t").try_cast("int").alias("i")
    ).collect()
    array = pa.array(texts)
    (d, d_ok), (lg, l_ok), (i, i_ok) = java_double(array), java_long(array), java_long(array, 32)
    for k, (text, row) in enumerate(zip(texts, rows)):
        assert d_ok[k] == (row["d"] is not None), text
        if row["d"] is not None:
            assert (math.isnan(d[k]) and math.isnan(row["d"])) or d[k] == row["d"], text
        assert (lg[k] if l_ok[k] else None) == row["l"], text
        assert (i[k] if i_ok[k] else None) == row["i"], text


@pytest.mark.spark
def test_staged_records_in_parts_equal_the_whole_files_and_name_the_file_as_spark_does(spark, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    from spark_jobs.prom_text import read_prom_text, stage_prom_text

    path, expected = _corpus(tmp_path)
    (tmp_path / "empty.prom").write_bytes(b"")
    paths = [str(path), str(tmp_path / "empty.prom")]
    staged = stage_prom_text(spark, paths, str(tmp_path / "staged"), ReaderOptions("c", BROKERS, split_bytes=100_000))
    assert len(list((tmp_path / "staged").glob("prom_text-*.parquet"))) > 3  # the corpus was read in parts
    got = Counter(_key(r.asDict(), tmp_path, "default") for r in staged.collect())
    want = Counter(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in expected if r["names"] == "default")
    assert got == want
    lazy = read_prom_text(spark, paths, ReaderOptions("c", BROKERS))
    assert lazy.count() == sum(want.values())
    assert {r["file"] for r in lazy.select("file").distinct().collect()} == {
        r["f"] for r in spark.read.text(str(path)).select(F.col("_metadata.file_path").alias("f")).distinct().collect()
    }


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".zst"])
def test_a_compressed_file_gives_the_records_of_its_text(tmp_path: Path, suffix: str) -> None:
    """Hadoop's codecs decompressed ``.gz``/``.bz2``/``.zst`` for the JVM reader; such a file is read whole."""
    text = (
        b'kafka_server_brokertopicmetrics_bytesin_total{instance="kafka-1:7071",topic="a"} 5 1740960000000\r\n'
        b'kafka_log_log_size{instance="kafka-1:7071",topic="a",partition="x"} 5 1740960000000\n# c\n'
    ) * 1000
    plain, packed = tmp_path / "a.prom", tmp_path / f"a.prom{suffix}"
    plain.write_bytes(text)
    with pa.CompressedOutputStream(str(packed), {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}[suffix]) as out:
        out.write(text)
    assert split_points(str(packed), 100) == [None]

    def rows(path: Path) -> list:
        return [(r["kind"], r["reason"], r["value"]) for b in parse_file(str(path), ReaderOptions("c", BROKERS)) for r in b.to_pylist()]

    assert rows(packed) == rows(plain) and len(rows(plain)) == 3000


def test_remote_log_size_bytes_is_a_size_without_a_partition_in_every_exporter_spelling() -> None:
    """Kafka's ``kafka.server:type=BrokerTopicMetrics,name=RemoteLogSizeBytes,topic=<t>`` gauge as jmx_exporter's
    kafka-2_0_0 ``Value`` rule names it (lower-cased or not) and as its default export does; the remote copy meter's
    counter is a counter, another remote gauge is not read, and a local log size still needs its partition."""
    at = 1740960000000
    lines = [
        f'kafka_server_brokertopicmetrics_remotelogsizebytes{{instance="kafka-1:7071",topic="orders"}} 7.5E11 {at}',
        f'kafka_server_BrokerTopicMetrics_RemoteLogSizeBytes{{instance="kafka-2:7071",topic="orders"}} 2E11 {at}',
        f'kafka_server_BrokerTopicMetrics_Value{{instance="kafka-1:7071",name="RemoteLogSizeBytes",topic="logs"}} 5 {at}',
        f'kafka_server_brokertopicmetrics_remotecopybytes_total{{instance="kafka-1:7071",topic="orders"}} 9 {at}',
        f'kafka_server_BrokerTopicMetrics_Value{{instance="kafka-1:7071",name="RemoteCopyLagBytes",topic="x"}} 1 {at}',
        f'kafka_server_brokertopicmetrics_remotelogsizebytes{{instance="kafka-1:7071"}} 9.5E11 {at}',
        f'kafka_log_log_size{{instance="kafka-1:7071",topic="orders"}} 10 {at}',
    ]
    rows = prom_text._records([line.encode() for line in lines], {"kafka-1:7071": 1, "kafka-2:7071": 2}).to_pylist()
    got = [(r["kind"], r["reason"], r["metric"], r["broker_id"], r["topic"], r["partition"], r["value"]) for r in rows]
    assert got == [
        ("size", None, "remote_log_size", 1, "orders", None, 7.5e11),
        ("size", None, "remote_log_size", 2, "orders", None, 2e11),
        ("size", None, "remote_log_size", 1, "logs", None, 5.0),
        ("counter", None, "remote_copy_bytes", 1, "orders", None, 9.0),
        ("ignored", "other_metric", None, 1, "x", None, None),
        ("ignored", "broker_total", None, 1, None, None, None),
        ("rejected", "bad_partition", None, 1, "orders", None, None),
    ]


def test_the_remote_copy_and_fetch_meters_are_counters_in_every_exporter_spelling() -> None:
    """Kafka's ``RemoteCopyBytesPerSec`` and ``RemoteFetchBytesPerSec`` BrokerTopicMetrics meters: their ``Count`` in
    every spelling `MetricNames.remote` knows is a counter record of ``remote_copy_bytes`` / ``remote_fetch_bytes``;
    a rate gauge of them is not read from text (the counter is there), nor their broker-wide series."""
    at = 1740960000000
    i = 'instance="kafka-1:7071"'
    lines = [
        f'kafka_server_brokertopicmetrics_remotecopybytes_total{{{i},topic="a"}} 1 {at}',  # kafka-2_0_0, lower-cased
        f'kafka_server_BrokerTopicMetrics_RemoteFetchBytes_total{{{i},topic="a"}} 2 {at}',  # kafka-2_0_0
        f'kafka_server_brokertopicmetrics_remotefetchbytespersec{{{i},topic="a"}} 3 {at}',  # Confluent's Count
        f'kafka_server_brokertopicmetrics_remotecopybytespersec_count{{{i},topic="a"}} 4 {at}',
        f'kafka_server_BrokerTopicMetrics_Count{{{i},name="RemoteCopyBytesPerSec",topic="a"}} 5 {at}',  # no rules
        f'kafka_topic_RemoteFetchBytesPerSec_total{{{i},metric="RemoteFetchBytesPerSec",topic="a"}} 6 {at}',
        f'kafka_server_BrokerTopicMetrics_OneMinuteRate{{{i},name="RemoteFetchBytesPerSec",topic="a"}} 7 {at}',
        f'kafka_server_brokertopicmetrics_remotecopybytes_total{{{i}}} 8 {at}',  # the broker's total
        f'kafka_server_BrokerTopicMetrics_Count{{{i},name="RemoteCopyErrorsPerSec",topic="a"}} 9 {at}',
    ]
    rows = prom_text._records([line.encode() for line in lines], {"kafka-1:7071": 1}).to_pylist()
    assert [(r["kind"], r["reason"], r["metric"], r["value"]) for r in rows] == [
        ("counter", None, "remote_copy_bytes", 1.0),
        ("counter", None, "remote_fetch_bytes", 2.0),
        ("counter", None, "remote_fetch_bytes", 3.0),
        ("counter", None, "remote_copy_bytes", 4.0),
        ("counter", None, "remote_copy_bytes", 5.0),
        ("counter", None, "remote_fetch_bytes", 6.0),
        ("ignored", "other_metric", None, None),
        ("ignored", "broker_total", None, None),
        ("ignored", "other_metric", None, None),
    ]
