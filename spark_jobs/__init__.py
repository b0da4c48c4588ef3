"""PySpark jobs: metric logs → normalized per-minute history → topic profile. The only package importing pyspark.

Modules, from input to profile:

* the job: `ingest_stage` (the ``ingest`` stage as one library call, typed options), `ingest_inputs` (globs,
  broker map, snapshot partition counts; no Spark), `ingest` (the job itself: ``run`` and ``main``), `session`
  (the SparkSession factory), `spark_log` and `spark_progress` (Spark's log and progress for the console);
* the readers, each emitting the classified records of `records`: `prom_text`, `query_range` (with `json_stream`)
  and `telegraf` (Telegraf's own lines) parse in Python workers that write them through `staging`; `prometheus`
  pulls from a server, `metric_names` says which series are Kafka's meters, `log_dirs` reads replica sizes and
  `normalized_json` reads ready per-minute rows;
* the history: `history_contract` (its schemas, flags, limits, directories, row order and steps files: what
  every writer and reader agrees on), `rates` (samples to per-minute increases), `minute_merge` (the pivot of
  increases into rows and the merge of the workers' buckets), `history` (reading it, merging days into it);
* the profile: `profile` (per-topic aggregates in Spark), `day_profile` (the same from per-day partials) and
  `growth` (weekly-robust growth, pure Python).
"""
