# poolplan: the two entry points the README starts with.
#   make quarterly   creates .venv if needed, then a complete quarterly run on generated sample data (Spark embedded)
#   make test        creates .venv if needed, then the whole test suite
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
RUN    ?= runs/quarterly

.PHONY: quarterly test java venv

quarterly: venv java
	$(VENV)/bin/poolplan run --config conf/quarterly.toml --out $(RUN) --force

test: venv java
	$(PY) -m pytest -q $(PYTEST_ARGS)

java:
	@sh conf/check-java.sh

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@
