"""Every stage of a quarterly run as one library call: typed options in, files written, a result back.

A stage module holds a frozen ``<Stage>Options`` dataclass (one field per option of the ``poolplan`` command of
the same name, already parsed) and one function taking it and ``progress`` (`pools.progress.ProgressReporter`) that
reads its inputs, does the work through the library, writes its outputs atomically and returns a result holding
what it wrote and the figures a console shows. The command line (``planner/cli/<stage>.py``) and ``poolplan run``
both call these functions; neither goes through the other. Exit codes and console text stay in ``planner/cli``.

The ingest stage lives beside Spark, in `spark_jobs.ingest_stage`.
"""
