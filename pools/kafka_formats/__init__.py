"""Readers and writers for Kafka's own file formats, exactly as Kafka's tools print and read them."""

from pools.kafka_formats.broker_configs import BrokerCordon, cordons_from_configs, parse_broker_configs
from pools.kafka_formats.consumer_groups import parse_consumer_group_members, parse_consumer_groups_describe
from pools.kafka_formats.cruise_control import (
    DEFAULT_BROKER_ID,
    capacity_for,
    parse_broker_sets_json,
    parse_capacity_json,
)
from pools.kafka_formats.inventory import BrokerCapacity, parse_inventory_toml
from pools.kafka_formats.leader_election import format_leader_election_json, parse_leader_election_json
from pools.kafka_formats.log_dirs import (
    BrokerLogDirs,
    LogDirInfo,
    LogDirsReport,
    ReplicaInfo,
    parse_log_dirs,
    replica_sizes,
)
from pools.kafka_formats.reassignment import (
    ANY_LOG_DIR,
    ReassignmentEntry,
    ReassignmentError,
    ReassignmentThrottles,
    calculate_throttles,
    format_current_assignment,
    format_reassignment_json,
    format_topics_to_move_json,
    log_dir_moving_brokers,
    parse_reassignment_json,
    parse_topics_to_move_json,
)
from pools.kafka_formats.topics_describe import PartitionDescription, TopicDescription, parse_topics_describe

__all__ = [
    "ANY_LOG_DIR",
    "DEFAULT_BROKER_ID",
    "BrokerCapacity",
    "BrokerCordon",
    "BrokerLogDirs",
    "LogDirInfo",
    "LogDirsReport",
    "PartitionDescription",
    "ReassignmentEntry",
    "ReassignmentError",
    "ReassignmentThrottles",
    "ReplicaInfo",
    "TopicDescription",
    "calculate_throttles",
    "capacity_for",
    "cordons_from_configs",
    "format_current_assignment",
    "format_leader_election_json",
    "format_reassignment_json",
    "format_topics_to_move_json",
    "log_dir_moving_brokers",
    "parse_broker_configs",
    "parse_broker_sets_json",
    "parse_capacity_json",
    "parse_consumer_group_members",
    "parse_consumer_groups_describe",
    "parse_inventory_toml",
    "parse_leader_election_json",
    "parse_log_dirs",
    "parse_reassignment_json",
    "parse_topics_describe",
    "parse_topics_to_move_json",
    "replica_sizes",
]
