#!/bin/sh
# Spark 4 needs Java 17 or newer: fail early with a clear message instead of a JVM stack trace.
if ! command -v java >/dev/null 2>&1; then
  echo "poolplan: Java 17+ is required for Spark but 'java' is not on PATH (install e.g. openjdk-17-jre-headless, or set JAVA_HOME/bin on PATH)" >&2
  exit 1
fi
version=$(java -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')
major=$(echo "$version" | awk -F. '{ if ($1 == "1") print $2; else print $1 }')
case "$major" in
  ''|*[!0-9]*) echo "poolplan: could not read the Java version from 'java -version' (got '$version')" >&2; exit 1 ;;
esac
if [ "$major" -lt 17 ]; then
  echo "poolplan: Java 17+ is required for Spark, found Java $version at $(command -v java)" >&2
  exit 1
fi
