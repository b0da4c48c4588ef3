# poolplan: the two entry points the README starts with.
#   make quarterly   creates .venv if needed, then a complete quarterly run on generated sample data (Spark embedded)
#   make test        creates .venv if needed, then the whole test suite
#   make lock        re-resolves constraints.txt to the newest versions pyproject.toml allows (then run make test)
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
RUN    ?= runs/quarterly

.PHONY: quarterly test java venv lock

# Exit 1 means the run completed with findings (the sample plants problems for the audit to find): not a failure.
quarterly: venv java
	$(VENV)/bin/poolplan run --config conf/quarterly.toml --out $(RUN) --force || test $$? -eq 1

test: venv java
	$(PY) -m pytest -q $(PYTEST_ARGS)

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
