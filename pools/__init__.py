"""The domain: cluster snapshots, pool policies, topic profiles, plans and Kafka's file formats."""
