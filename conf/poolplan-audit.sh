#!/bin/sh
# One scheduled audit of one cluster (docs/scheduled-audits.md): capture it with Kafka's tools, audit it against the
# last audit that ran, write the metrics the node exporter serves. Settings come from the environment:
#   BOOTSTRAP (required)  the cluster's bootstrap servers, HOST:PORT[,HOST:PORT...]
#   CLUSTER               its name in the findings and metrics (default: kafka)
#   CONF                  pools.toml, brokers.toml [, client.properties] [, profile/] (default: /etc/poolplan)
#   STATE                 where runs are kept, one directory per audit (default: /var/lib/poolplan/$CLUSTER)
#   TEXTFILE_DIR          the node exporter's --collector.textfile.directory (default: /var/lib/prometheus/node-exporter)
#   KAFKA_BIN             the Kafka tools' directory (default: found on PATH)
#   KEEP_DAYS             runs older than this are removed (default: 90)
# Exit 0 when the audit ran (findings page through Prometheus), else poolplan's code: 2 bad input, 3 a Kafka tool
# failed. A failed run writes no metrics, so PoolplanAuditStale fires after a day.
set -u
: "${BOOTSTRAP:?BOOTSTRAP: expected the cluster's bootstrap servers, HOST:PORT[,HOST:PORT...]}"
CLUSTER=${CLUSTER:-kafka}
CONF=${CONF:-/etc/poolplan}
STATE=${STATE:-/var/lib/poolplan/$CLUSTER}
TEXTFILE_DIR=${TEXTFILE_DIR:-/var/lib/prometheus/node-exporter}
KEEP_DAYS=${KEEP_DAYS:-90}
RUN=$STATE/runs/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$STATE/runs" || exit 2

set -- --bootstrap-server "$BOOTSTRAP" --inventory "$CONF/brokers.toml" --cluster "$CLUSTER" --out "$RUN/snapshot.json"
[ -f "$CONF/client.properties" ] && set -- "$@" --command-config "$CONF/client.properties"
[ -n "${KAFKA_BIN:-}" ] && set -- "$@" --kafka-bin "$KAFKA_BIN"
poolplan snapshot "$@" || exit $?

set -- --snapshot "$RUN/snapshot.json" --policy "$CONF/pools.toml" --out "$RUN/audit" \
    --metrics "$TEXTFILE_DIR/poolplan-$CLUSTER.prom"
[ -d "$CONF/profile" ] && set -- "$@" --profile "$CONF/profile"
[ -d "$STATE/latest/audit" ] && set -- "$@" --since "$STATE/latest/audit"   # drift since the last audit that ran
poolplan audit "$@"
code=$?
[ "$code" -gt 1 ] && exit "$code"
ln -sfn "$RUN" "$STATE/latest"                                             # the next audit's baseline
find "$STATE/runs" -mindepth 1 -maxdepth 1 -type d -mtime "+$KEEP_DAYS" -exec rm -r {} +
exit 0
