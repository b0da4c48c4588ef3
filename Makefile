# poolplan: the entry points the README starts with.
#   make quarterly   creates .venv if needed, then a complete quarterly run on generated sample data (Spark embedded)
#   make check       the inner loop between two edits (under 3 minutes on 2 cores): every test not marked slow and
#                    not using Spark, on parallel workers, with the small Hypothesis profile and the stored
#                    exact-reference optima; the 15 slowest are named at the end
#   make check-spark the fast tests that use the SparkSession (the spark mark; run it after touching spark_jobs)
#   make test        creates .venv if needed, then the whole test suite on parallel workers (CI runs this)
#   make lint        ruff over the code (make check and make test run it first)
#   make lock        re-resolves constraints.txt to the newest versions pyproject.toml allows (then run make test)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
RUN    ?= runs/quarterly
# pytest-xdist: one worker per core; tests sharing an expensive module fixture (a Spark cluster, a Prometheus
# server, an ingest) carry an xdist_group mark and run on one worker. The 15 slowest tests are printed.
PARALLEL ?= -n auto --dist loadgroup --durations=15

.PHONY: quarterly check check-spark test lint java venv lock

# Exit 1 means the run completed with findings (the sample plants problems for the audit to find): not a failure.
quarterly: venv java
	$(VENV)/bin/poolplan run --config conf/quarterly.toml --out $(RUN) --force || test $$? -eq 1

check: lint java
	$(PY) -m pytest -q $(PARALLEL) -m 'not slow and not spark' --hypothesis-profile=check $(PYTEST_ARGS)

check-spark: lint java
	$(PY) -m pytest -q $(PARALLEL) -m 'spark and not slow' --hypothesis-profile=check $(PYTEST_ARGS)

test: lint java
	$(PY) -m pytest -q $(PARALLEL) --hypothesis-profile=ci $(PYTEST_ARGS)

# ruff (pyproject.toml's [tool.ruff]) over the product, the tests and the benchmarks; make check and make test run it first.
lint: venv
	$(VENV)/bin/ruff check pools planner spark_jobs tests benchmarks

java:
	@sh conf/check-java.sh

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $@

# A throw-away venv resolves every extra afresh; its versions become the new constraints.
lock:
	rm -rf .venv-lock
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install --quiet --upgrade pip
	.venv-lock/bin/python -m pip install --quiet -e '.[test,bench]'
	{ sed -n '1,2p' constraints.txt; .venv-lock/bin/python -m pip freeze --exclude-editable | grep -iv '^poolplan'; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	rm -rf .venv-lock
	@echo "constraints.txt re-resolved; run make test before committing it"
