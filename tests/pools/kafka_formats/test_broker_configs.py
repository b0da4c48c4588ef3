"""kafka-configs.sh --describe --entity-type brokers output (Kafka 4.3, KIP-1066 cordoned.log.dirs)."""

from __future__ import annotations

import pytest

from pools.errors import InputError
from pools.kafka_formats.broker_configs import BrokerCordon, cordons_from_configs, parse_broker_configs


def test_capture_reads_every_broker_and_the_defaults(data_dir):
    text = (data_dir / "kafka-formats" / "kafka-configs-describe-brokers-4.3.txt").read_text()
    configs = parse_broker_configs(text)
    assert sorted(configs, key=lambda b: -1 if b is None else b) == [None, 1, 2, 3, 4]
    assert configs[1]["cordoned.log.dirs"] == "/data/d2"
    assert configs[2] == {}
    assert configs[3]["ssl.keystore.password"] == "null"
    assert configs[4]["cordoned.log.dirs"] == "/data/d1,/data/d3"  # a list value keeps its commas
    assert configs[None] == {"log.cleaner.threads": "2"}
    assert cordons_from_configs(configs) == {
        1: BrokerCordon(1, log_dirs=("/data/d2",)),
        3: BrokerCordon(3, all_log_dirs=True),
        4: BrokerCordon(4, log_dirs=("/data/d1", "/data/d3")),
    }


def test_all_configs_header_and_an_empty_cordon():
    text = ("All configs for broker 7 are:\n"
            "  cordoned.log.dirs= sensitive=false synonyms={DEFAULT_CONFIG:cordoned.log.dirs=}\n"
            "  log.dirs=/d1,/d2 sensitive=false synonyms={STATIC_BROKER_CONFIG:log.dirs=/d1,/d2}\n")
    configs = parse_broker_configs(text)
    assert configs == {7: {"cordoned.log.dirs": "", "log.dirs": "/d1,/d2"}}
    assert cordons_from_configs(configs) == {}


@pytest.mark.parametrize("text, expected", [
    ("  cordoned.log.dirs=* sensitive=false synonyms={}\n", "x.txt:1: a config line before any"),
    ("Dynamic configs for broker x are:\n", "x.txt:1: expected a broker id"),
    ("Dynamic configs for broker 1 are:\nDynamic configs for broker 1 are:\n", "x.txt:2: broker 1 is described twice"),
    ("Dynamic configs for broker 1 are:\ncordoned.log.dirs=*\n", "x.txt:2: expected 'Dynamic configs"),
    ("Topic: t\tPartition: 0\n", "x.txt:1: expected 'Dynamic configs"),
    ("\n", "x.txt: expected 'Dynamic configs for broker <id> are:' lines"),
])
def test_malformed_output_names_the_line(text, expected):
    with pytest.raises(InputError) as err:
        parse_broker_configs(text, source="x.txt")
    assert str(err.value).startswith(expected)
