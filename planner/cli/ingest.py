"""`poolplan ingest`: metric logs → topic profile (Parquet + JSON), quality counts and quarantine, with Spark."""

from __future__ import annotations

import click
from rich.console import Console

from pools.pool_rules import DEFAULT_FORECAST_HORIZON_DAYS

__all__ = ["command"]

_console = Console(stderr=True, highlight=False)
_GLOB = {"multiple": True, "metavar": "GLOB"}


@click.command(name="ingest")
@click.option("--prom", **_GLOB, help="jmx_exporter exposition text with ms timestamps (repeatable).")
@click.option("--query-range", **_GLOB, help="Prometheus query_range JSON exports, one document per file.")
@click.option("--telegraf", **_GLOB, help="Telegraf jolokia2 JSON lines.")
@click.option("--log-dirs", **_GLOB, help="kafka-log-dirs.sh --describe snapshots named log-dirs-<YYYYMMDDTHHMMSSZ>.txt.")
@click.option("--normalized-json", **_GLOB, help="Normalized per-minute rows as JSON lines.")
@click.option("--history", default=None, help="Normalized Parquet history to read and extend  [default: OUT/history].")
@click.option("--broker-map", type=click.Path(dir_okay=False), default=None, help="TOML: label value (instance, pod, agent URL) = broker id.")
@click.option("--cluster", default=None, help="Cluster name  [default: the snapshot's, else 'default'].")
@click.option("--snapshot", type=click.Path(dir_okay=False), default=None, help="Cluster snapshot JSON for partition counts.")
@click.option("--horizon-days", type=click.IntRange(min=0), default=DEFAULT_FORECAST_HORIZON_DAYS, show_default=True,
              help="Horizon the profile stores its forecast at (plan and audit re-derive it at the policy's).")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Profile directory (may exist).")
@click.option("--master", default="local[*]", show_default=True, help="local[N], spark://host:port, yarn or k8s://...")
@click.option("--remote", default=None, help="Spark Connect URL sc://host:port (instead of --master).")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE", help="Spark setting (repeatable).")
def command(
    prom: tuple[str, ...],
    query_range: tuple[str, ...],
    telegraf: tuple[str, ...],
    log_dirs: tuple[str, ...],
    normalized_json: tuple[str, ...],
    history: str | None,
    broker_map: str | None,
    cluster: str | None,
    snapshot: str | None,
    horizon_days: int,
    out: str,
    master: str,
    remote: str | None,
    confs: tuple[str, ...],
) -> int:
    """Turn metric logs into the topic profile the planner reads (DESIGN section 4).

    Counters become per-minute increases (resets and re-created meters handled, gaps flagged), which are
    stored in the normalized history so later runs read only Parquet. Malformed input goes to OUT/quarantine
    with a reason; OUT/quality.json reconciles read = accepted + ignored + quarantined per source.
    """
    from pools.atomic import check_output
    from spark_jobs.inputs import expand_globs, load_broker_map, partition_counts
    from spark_jobs.session import parse_conf

    check_output(out)
    globs = {"--prom": prom, "--query-range": query_range, "--telegraf": telegraf, "--log-dirs": log_dirs}
    files = {k: expand_globs(v, option=k) for k, v in {**globs, "--normalized-json": normalized_json}.items()}
    snap_cluster, counts = partition_counts(snapshot)
    bmap = load_broker_map(broker_map)
    spark_conf = parse_conf(confs)

    from spark_jobs.ingest import IngestInputs, IngestParams, run
    from spark_jobs.session import active_session_exists, build_session

    inputs = IngestInputs(*files.values(), history=history)
    params = IngestParams(cluster or snap_cluster or "default", bmap, horizon_days, counts)
    shared = active_session_exists()
    with _console.status("starting Spark") as status:
        spark = build_session(master, remote, spark_conf)
        try:
            result = run(spark, inputs, out, params, progress=lambda msg: status.update(msg))
        finally:
            if not shared:
                spark.stop()
    totals = result.quality["totals"]
    _console.print(
        f"profile: {result.topics} topics, {result.partitions} partitions -> {result.out_dir}; "
        f"records read {totals['read']}, accepted {totals['accepted']}, ignored {totals['ignored']}, "
        f"quarantined {totals['quarantined']}"
    )
    return 0
