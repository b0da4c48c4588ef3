"""Readers and writers for Kafka's own file formats, exactly as Kafka's tools print and read them."""

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

__all__ = [
    "ANY_LOG_DIR",
    "ReassignmentEntry",
    "ReassignmentError",
    "ReassignmentThrottles",
    "calculate_throttles",
    "format_current_assignment",
    "format_reassignment_json",
    "format_topics_to_move_json",
    "log_dir_moving_brokers",
    "parse_reassignment_json",
    "parse_topics_to_move_json",
]
