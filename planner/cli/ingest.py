"""`poolplan ingest`: metric logs or a Prometheus server → topic profile (Parquet + JSON), quality counts and
quarantine, with Spark."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from planner.cli.console import console_level
from planner.cli.options import renamed_option, take_renamed
from planner.cli.stage import Outcome, Stage, run_command
from pools.errors import InputError
from pools.pool_rules import DEFAULT_FORECAST_HORIZON_DAYS
from pools.progress import ProgressReporter
from pools.units import format_plural

if TYPE_CHECKING:
    from spark_jobs.ingest import IngestResult
    from spark_jobs.ingest_stage import IngestOptions

__all__ = ["command", "STAGE"]
_GLOB = {"multiple": True, "metavar": "GLOB"}
_PROM = "Prometheus pull"


@click.command(name="ingest")
@click.option("--prom", **_GLOB, help="jmx_exporter exposition text with ms timestamps (repeatable).")
@click.option("--query-range", **_GLOB, help="Prometheus query_range JSON exports, one document per file, any size.")
@click.option(
    "--range-values",
    default="auto",
    show_default=True,
    help="What query_range values are: auto (by metric name: counters, or level:metric:increase1m / :rate5m), "
    "counter, increase:<window> or rate:<window>.",
)
@click.option("--telegraf", **_GLOB, help="Telegraf jolokia2 JSON lines.")
@click.option("--log-dirs", **_GLOB,
    help="kafka-log-dirs.sh --describe snapshots named log-dirs-<YYYYMMDDTHHMMSSZ>.txt.")
@click.option("--normalized-json", **_GLOB, help="Normalized per-minute rows as JSON lines.")
@click.option("--prometheus", "prometheus_url", default=None, metavar="URL",
    help="Pull the counters from this Prometheus HTTP API (also Thanos, Mimir, VictoriaMetrics).")
@click.option("--days", type=click.IntRange(min=1), default=None,
    help=f"{_PROM}: whole UTC days before --end  [default: 14].")
@click.option("--start", default=None, help=f"{_PROM}: range start (RFC 3339, date or Unix seconds).")
@click.option("--end", default=None,
    help=f"{_PROM}: range end, exclusive: a sample at exactly this time is not read  [default: now].")
@click.option("--step", default="60s", show_default=True,
              help=f"{_PROM}: step of --prometheus-query increase and of --prometheus-mode per-topic (longer than 60s: "
              "each step's highest one-minute rate).")
@click.option(
    "--prometheus-query",
    "query",
    type=click.Choice(["counters", "increase"]),
    default="counters",
    show_default=True,
    help=f"{_PROM}: every raw counter sample (exact, gaps kept), or increase() per step computed by the server "
    "(loses bytes at missed scrapes, resets and new meters: see docs/formats.md).",
)
@click.option(
    "--prometheus-mode",
    "mode",
    type=click.Choice(["raw", "per-topic"]),
    default="raw",
    show_default=True,
    help=f"{_PROM}: every per-(broker, topic) series (raw: as --prometheus-query says), or the server's sums per topic "
    "(per-topic: sum by (topic) of each scrape step's rate, or a team's topic:...:rate1m recording rules; about "
    "brokers times fewer samples; what it cannot see is in quality.json: see docs/formats.md).",
)
@click.option("--metric-names", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="TOML naming the meters' series, the topic/instance labels and a selector, when not as "
                   "jmx_exporter, Strimzi or Confluent name them (docs/formats.md).")
@click.option("--quarantine-unmapped", is_flag=True,
              help=f"{_PROM}: quarantine the series of instances the broker map does not name, with a warning "
              "(default: exit 2).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=120.0, show_default=True,
    help=f"{_PROM}: seconds to wait for a response.")
@click.option("--max-in-flight", "in_flight", type=click.IntRange(min=1), default=4, show_default=True,
    help=f"{_PROM}: requests at a time.")
@click.option("--retries", type=click.IntRange(min=0), default=5, show_default=True,
    help=f"{_PROM}: retries on errors, 429 and 5xx (exponential backoff).")
@click.option("--bearer-token-file", type=click.Path(dir_okay=False), default=None,
    help=f"{_PROM}: file holding a bearer token.")
@click.option("--bearer-token-env", default=None, metavar="NAME",
    help=f"{_PROM}: environment variable holding a bearer token.")
@click.option("--basic-auth-user", default=None, help=f"{_PROM}: basic-auth user name.")
@click.option("--basic-auth-password-file", type=click.Path(dir_okay=False), default=None,
    help=f"{_PROM}: file holding the basic-auth password.")
@click.option("--basic-auth-password-env", default=None, metavar="NAME",
    help=f"{_PROM}: environment variable holding the basic-auth password.")
@click.option("--ca-file", type=click.Path(dir_okay=False), default=None,
    help=f"{_PROM}: CA bundle to verify the server's certificate.")
@click.option("--insecure", is_flag=True, help=f"{_PROM}: do not verify the server's certificate.")
@click.option("--history", default=None, help="Normalized Parquet history to read and extend  [default: OUT/history].")
@click.option("--broker-map", type=click.Path(dir_okay=False), default=None,
    help="TOML: label value (instance, pod, agent URL) = broker id.")
@click.option("--cluster", default=None, help="Cluster name  [default: the snapshot's, else 'default'].")
@click.option("--snapshot", type=click.Path(dir_okay=False), default=None,
    help="Cluster snapshot JSON for partition counts.")
@click.option("--profile-horizon-days", "horizon_days", type=click.IntRange(min=0),
              default=DEFAULT_FORECAST_HORIZON_DAYS, show_default=True,
              help="Horizon the profile stores its forecast at (plan and audit re-derive it at the policy's "
                   "forecast_horizon_days, or their own --horizon-days).")
@renamed_option("--horizon-days", "--profile-horizon-days", type=click.IntRange(min=0))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Profile directory (may exist).")
@click.option("--master", default="local[*]", show_default=True, help="local[N], spark://host:port, yarn or k8s://...")
@click.option("--remote", default=None, help="Spark Connect URL sc://host:port (instead of --master).")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE", help="Spark setting (repeatable).")
def command(**params: Any) -> int:
    """Turn metric logs into the topic profile the planner reads (DESIGN section 4).

    Counters become per-minute increases (resets and re-created meters handled, gaps flagged), which are
    merged into the normalized history so later runs read only Parquet (and a Prometheus pull fetches only
    the days the history lacks). Malformed input goes to OUT/quarantine with a reason; OUT/quality.json
    reconciles read = accepted + ignored + quarantined per source; Spark's own log (and the JVM's) is
    OUT/spark.log (also on the console with -v).
    Exit 2 on bad input (nothing written, the history unchanged), 3 when Spark or Prometheus fails.
    """
    return run_command(STAGE, params)


def _options(params: Mapping[str, Any]) -> IngestOptions:
    """The command's parameters → `IngestOptions` (the Prometheus settings grouped, used only with a URL)."""
    from spark_jobs.ingest_stage import IngestOptions, PrometheusOptions

    options = dict(params)
    take_renamed(options, "--horizon-days", "--profile-horizon-days", "horizon_days")
    url, confs = options.pop("prometheus_url"), options.pop("confs")
    fields = PrometheusOptions.__dataclass_fields__
    prom = {k: options.pop(k) for k in list(options) if k in fields and k != "url"}
    if url is None and any(v not in (None, False, fields[k].default) for k, v in prom.items()):
        raise InputError("--days, --start, --end, --step and the other Prometheus options need --prometheus URL")
    return IngestOptions(prometheus=PrometheusOptions(url=url, **prom) if url else None, conf=confs, **options)


def _ingest(options: IngestOptions, *, progress: ProgressReporter) -> IngestResult:
    """`spark_jobs.ingest_stage.ingest`, with Spark's and the JVM's log also on the console at DEBUG (``-v``)."""
    from spark_jobs.ingest_stage import ingest

    return ingest(options, progress=progress, spark_console=console_level() <= logging.DEBUG)


def _outcome(result: IngestResult) -> Outcome:
    from spark_jobs.spark_log import LOG_FILE

    totals = result.quality["totals"]
    return Outcome(
        subject="profile",
        summary=f"{format_plural(result.topics, 'topic')}, {format_plural(result.partitions, 'partition')}; "
                f"{format_plural(totals['read'], 'record')} read: {totals['accepted']:,} accepted, "
                f"{totals['ignored']:,} ignored, {totals['quarantined']:,} quarantined",
        written=result.out_dir,
        logs=(result.out_dir / LOG_FILE,),
    )


STAGE = Stage("ingest", command, _options, _ingest, _outcome, stdout=False)
