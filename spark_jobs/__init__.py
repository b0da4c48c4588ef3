"""PySpark jobs: the SparkSession factory and the ingest job that writes the topic profile."""
