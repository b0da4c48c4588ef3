"""Algorithms: Kafka-exact placement, consumer assignors, the pool model, plan emission, reports and the CLI."""
