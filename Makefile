# washline: two commands matter — `make demo` and `make test`.
# Everything else here is what those two need: a venv, a repo-local
# AIRFLOW_HOME and default Airflow connections for a laptop run.

SHELL := /bin/bash
.DEFAULT_GOAL := help

REPO        := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
PYTHON      ?= $(shell command -v python3.11 || command -v python3)
VENV        := $(REPO)/.venv
BIN         := $(VENV)/bin
STAMP       := $(VENV)/.washline-installed
DEMO_DS     ?= 2025-01-01
DEMO_SET    ?= febrl3

# Repo-local Airflow; nothing is written outside the clone.
export AIRFLOW_HOME                    ?= $(REPO)/.airflow
export WASHLINE_DATA                   ?= $(REPO)/data
export AIRFLOW__CORE__DAGS_FOLDER      ?= $(REPO)/dags
export AIRFLOW__CORE__PLUGINS_FOLDER   ?= $(REPO)/plugins
export AIRFLOW__CORE__LOAD_EXAMPLES    ?= False
export AIRFLOW__CORE__PARALLELISM      ?= 4
export AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION ?= True
export AIRFLOW__LOGGING__LOGGING_LEVEL ?= INFO
export PATH := $(BIN):$(PATH)
export PYTHONUNBUFFERED := 1

# Default connections for local runs. `?=` means a connection already in the
# environment (for example a PostgreSQL AIRFLOW_CONN_WASHLINE_STAGING) wins.
export AIRFLOW_CONN_SPARK_DEFAULT      ?= {"conn_type":"spark","host":"local[*]","extra":{"deploy-mode":"client"}}
export AIRFLOW_CONN_WASHLINE_STAGING   ?= {"conn_type":"sqlite","host":"$(WASHLINE_DATA)/staging/washline.db"}

.PHONY: help venv airflow-home land demo test test-fast env clean

help:
	@echo "make demo   # land FEBRL3 and run washline_nightly for $(DEMO_DS) with airflow dags test"
	@echo "make test   # run the whole test suite"
	@echo "make clean  # remove .venv, .airflow and data/"

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv
	$(BIN)/uv pip install --python $(BIN)/python --compile-bytecode -r requirements.txt
	$(BIN)/uv pip install --python $(BIN)/python --no-deps -e .
	@touch $@

venv: $(STAMP)

$(AIRFLOW_HOME)/airflow.db: $(STAMP)
	@mkdir -p $(AIRFLOW_HOME) $(WASHLINE_DATA)/staging
	$(BIN)/airflow db migrate > $(AIRFLOW_HOME)/db-migrate.log 2>&1 || (tail -n 40 $(AIRFLOW_HOME)/db-migrate.log; exit 1)

airflow-home: $(AIRFLOW_HOME)/airflow.db

land: venv
	$(BIN)/python -m washline.demo land --dataset $(DEMO_SET) --ds $(DEMO_DS)

demo: airflow-home land
	$(BIN)/airflow dags test washline_nightly $(DEMO_DS) > $(WASHLINE_DATA)/demo-$(DEMO_DS).log 2>&1 \
	  || (tail -n 60 $(WASHLINE_DATA)/demo-$(DEMO_DS).log; echo "demo failed; full log: $(WASHLINE_DATA)/demo-$(DEMO_DS).log"; exit 1)
	$(BIN)/python -m washline.demo summary --ds $(DEMO_DS)

test: airflow-home
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast: airflow-home
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

# `eval "$$(make -s env)"` gives your shell the same Airflow settings as make.
env:
	@for v in AIRFLOW_HOME WASHLINE_DATA AIRFLOW__CORE__DAGS_FOLDER AIRFLOW__CORE__PLUGINS_FOLDER \
	  AIRFLOW__CORE__LOAD_EXAMPLES AIRFLOW__CORE__PARALLELISM AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION \
	  AIRFLOW__LOGGING__LOGGING_LEVEL AIRFLOW_CONN_SPARK_DEFAULT AIRFLOW_CONN_WASHLINE_STAGING; do \
	  printf "export %s='%s'\n" "$$v" "$${!v}"; done
	@echo 'export PATH="$(BIN):$$PATH"'

clean:
	rm -rf $(VENV) $(AIRFLOW_HOME) $(WASHLINE_DATA)
