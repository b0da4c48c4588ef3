"""Random and adversarial ``kafka-log-dirs.sh --describe`` captures, and the records the JVM reader
(`spark_jobs.log_dirs.read_log_dirs`: Spark's text reader and ``from_json``) makes of them: the oracle of a reader
that parses in Python workers.

`corpus` builds the files: stamped and unstamped names, status lines, blank lines, lines that are neither, and JSON
documents with every member the reader meets in its usual and unusual spellings (versions, brokers and sizes as
numbers, strings, floats, nulls or beyond an int/long, partitions with and without a ``-<n>`` suffix, ``isFuture``
true/false/null/a string, errors, empty and missing arrays, duplicate and extra keys, unicode escapes), broken JSON,
bytes that are not UTF-8, CRLF endings. The records are pinned in ``data/log_dirs_corpus.expected.jsonl.gz`` beside
the corpus (``log_dirs_corpus.files.json.gz``: file name to content), so a test needs neither the JVM reader nor
this generator's exact randomness.

Pinned with ``python -m tests.spark_jobs.log_dirs_corpus`` (Spark 4.0.5, local[2], UTC session).
"""

from __future__ import annotations

import base64
import gzip
import json
import random
from pathlib import Path

__all__ = ["corpus", "records", "DATA"]

DATA = Path(__file__).parent / "data"

_STATUS = ["Querying brokers for log directories information", "Received log directory information from brokers 0,1,2",
           "Received log directory information from brokers ", "Received log directory information from brokers 1, 2",
           "querying brokers for log directories information", "Received log directory information from brokers a"]
_OTHER_LINES = ["", " ", "\t", "bogus", "Error: timeout", "{", "{}", '{"version":1}', '{"version":1,"brokers":null}',
                '{"version":1,"brokers":[]}', "[1,2]", '  {"version":1,"brokers":[]}', "5", "null"]
_PARTITIONS = ["orders-0", "orders-12", "payments.ledger-3", "a-b-c-7", "é-topic-1", "日本-2", "x-123456789", "x-1234567890",
               "nodash", "t-", "-1", "t--1", "t-01", "t-1a", "t-ab", "", " t-1", "t-1 ", "\U0001F600-4"]
_BROKERS = ["0", "1", "2", "100", "-1", "null", '"5"', "5.0", "2147483648", "true", '"x"']
_SIZES = ["0", "41203847168", "812", "-5", "null", '"77"', "5.0", "5.5", "9223372036854775807", "9223372036854775808", "1e3",
          "true", '"x"']
_FUTURE = ["false", "false", "false", "true", "null", '"true"', "0"]
_VERSIONS = ["1", "1", "1", "1", "2", '"1"', "null", "1.0", "0"]


def _str(rng: random.Random, text: str) -> str:
    if rng.random() < 0.1:
        units = text.encode("utf-16-be")
        return '"' + "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2)) + '"'
    return json.dumps(text, ensure_ascii=rng.random() < 0.2)


def _obj(members: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f'"{k}":{v}' for k, v in members) + "}"


def _replica(rng: random.Random) -> str:
    regular = rng.random() < 0.7
    members = [
        ("partition", _str(rng, f"t{rng.randint(0, 30)}-{rng.randint(0, 11)}" if regular else rng.choice(_PARTITIONS))
         if rng.random() < 0.97 else rng.choice(["null", "5"])),
        ("size", str(rng.randint(0, 10**12)) if regular else rng.choice(_SIZES)),
        ("offsetLag", str(rng.randint(0, 100)) if rng.random() < 0.95 else rng.choice(["null", '"x"', "-1"])),
        ("isFuture", "false" if regular else rng.choice(_FUTURE)),
    ]
    if rng.random() < 0.05:
        members.pop(rng.randrange(len(members)))
    if rng.random() < 0.03:
        members.append(("size", rng.choice(_SIZES)))  # a duplicate key
    if rng.random() < 0.2:
        rng.shuffle(members)
    return _obj(members)


def _log_dir(rng: random.Random) -> str:
    partitions = "[" + ",".join(_replica(rng) for _ in range(rng.choice([0, 1, 2, 3, 5]))) + "]"
    members = [
        ("partitions", partitions if rng.random() < 0.95 else rng.choice(["null", "[]", "{}"])),
        ("error", "null" if rng.random() < 0.9 else _str(rng, "KafkaStorageException")),
        ("logDir", _str(rng, rng.choice(["/var/kafka/data", "/d1", "/données", ""])) if rng.random() < 0.97 else "null"),
    ]
    if rng.random() < 0.2:
        rng.shuffle(members)
    return _obj(members)


def _document(rng: random.Random) -> str:
    brokers = []
    for _ in range(rng.choice([1, 2, 3])):
        dirs = "[" + ",".join(_log_dir(rng) for _ in range(rng.choice([0, 1, 1, 2]))) + "]"
        members = [("broker", str(rng.randint(0, 5)) if rng.random() < 0.85 else rng.choice(_BROKERS)),
                   ("logDirs", dirs if rng.random() < 0.95 else rng.choice(["null", "{}"]))]
        if rng.random() < 0.03:
            members.pop(rng.randrange(len(members)))
        brokers.append(_obj(members))
    members = [("version", rng.choice(_VERSIONS)), ("brokers", "[" + ",".join(brokers) + "]")]
    if rng.random() < 0.1:
        members.reverse()
    if rng.random() < 0.03:
        members.append(("extra", "[1,{}]"))
    text = _obj(members)
    if rng.random() < 0.04:
        text = text[: rng.randrange(1, len(text))]  # truncated
    elif rng.random() < 0.03:
        text += rng.choice([" x", "}", " ", "{}"])
    return text


def corpus(files: int = 160, seed: int = 23) -> dict[str, bytes]:
    """The corpus: file name to content."""
    rng = random.Random(seed)
    out = {}
    for i in range(files):
        stamp = f"202503{1 + i % 28:02d}T{i % 24:02d}{(7 * i) % 60:02d}00Z"
        name = rng.choice([f"log-dirs-{stamp}.txt", f"log-dirs-{stamp}.txt", f"{stamp}-capture.log", f"log-dirs-latest-{i}.txt",
                           f"log-dirs-{stamp[:-1]}-{i}.txt", f"log-dirs-20250230T000000Z-{i}.txt"])
        lines = [_STATUS[0], _STATUS[1]] if rng.random() < 0.8 else [rng.choice(_STATUS) for _ in range(rng.randint(0, 3))]
        for _ in range(rng.choice([1, 1, 1, 2])):
            lines.append(_document(rng))
        for _ in range(rng.choice([0, 0, 1, 2])):
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(_OTHER_LINES))
        data = b"".join(line.encode() + (b"\r\n" if rng.random() < 0.1 else b"\n") for line in lines)
        if rng.random() < 0.05:
            data = data.replace(b'"partition":"', b'"partition":"\xff', 1)
        out[name] = data
    return out


def records() -> tuple[dict[str, bytes], list[dict]]:
    """The pinned corpus and the JVM reader's records of it (``file`` with the corpus's directory as ``{dir}``)."""
    files = {k: base64.b64decode(v) for k, v in json.loads(gzip.decompress((DATA / "log_dirs_corpus.files.json.gz").read_bytes())).items()}
    expected = [json.loads(line) for line in gzip.decompress((DATA / "log_dirs_corpus.expected.jsonl.gz").read_bytes()).splitlines()]
    return files, expected


def _pin() -> None:  # pragma: no cover - run by hand, with the JVM reader
    import math
    import os
    import tempfile

    from spark_jobs.log_dirs import read_log_dirs
    from spark_jobs.session import build_session

    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    spark = build_session(master="local[2]", conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}, app_name="pin")
    files = corpus()
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in files.items():
            (Path(tmp) / name).write_bytes(data)
        rows = [r.asDict() for r in read_log_dirs(spark, sorted(str(Path(tmp) / n) for n in files), cluster="c").collect()]
        prefix = "file:" + tmp
    spark.stop()
    out = []
    for r in rows:
        r["file"] = r["file"].replace(prefix, "{dir}") if r["file"] else None
        if r["value"] is not None and (math.isnan(r["value"]) or math.isinf(r["value"])):
            r["value"] = repr(r["value"])
        out.append(json.dumps(r, sort_keys=True, ensure_ascii=False))
    DATA.mkdir(exist_ok=True)
    encoded = json.dumps({k: base64.b64encode(v).decode() for k, v in sorted(files.items())}, sort_keys=True).encode()
    (DATA / "log_dirs_corpus.files.json.gz").write_bytes(gzip.compress(encoded, mtime=0))
    (DATA / "log_dirs_corpus.expected.jsonl.gz").write_bytes(gzip.compress("\n".join(sorted(out)).encode() + b"\n", mtime=0))


if __name__ == "__main__":  # pragma: no cover
    _pin()
