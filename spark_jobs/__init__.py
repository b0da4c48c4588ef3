"""PySpark jobs: metric logs → normalized per-minute history → topic profile. The only package importing pyspark.

Modules: `session` (the SparkSession factory), the readers `prom_text`, `query_range`, `telegraf`,
`log_dirs` and `history` (each emitting the classified records of `records`; `prom_text`, `query_range` and
`telegraf` (Telegraf's own lines) parse in Python workers that write them through `staging`), `rates` (counters to
per-minute rows), `profile` (per-topic aggregates), `growth` (weekly-robust growth, pure Python), `inputs`
(globs, broker map, snapshot partition counts) and `ingest` (the job: ``run`` and ``main``).
"""
