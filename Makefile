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
# `make demo`: <data set>:<logical date> per night, in order (entity registry across nights)
DEMO_NIGHTS ?= febrl4a:2025-01-01 febrl4b:2025-01-02
AIRFLOW_PORT ?= 8080
AIRFLOW_USER ?= admin
RUN_DIR      = $(AIRFLOW_HOME)/run
SERVICES     = api-server scheduler dag-processor triggerer

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

.PHONY: help venv airflow-home land demo test test-fast env up down clean

help:
	@echo "make demo   # two nights with airflow dags test: FEBRL4 part A on 2025-01-01, part B on 2025-01-02"
	@echo "make land   # land $(DEMO_SET) for $(DEMO_DS) only"
	@echo "make test   # run the whole test suite (make test-fast: without Spark and Airflow runs)"
	@echo "make up     # Airflow as a local service (UI/API on http://127.0.0.1:$(AIRFLOW_PORT))"
	@echo "make down   # stop it"
	@echo "make clean  # remove .venv, .airflow and data/"

# The venv gets the development lock (the runtime lock plus test and demo
# packages at the same versions); the Docker image installs requirements.txt only.
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python --compile-bytecode -r requirements-dev.txt
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	@touch $@

venv: $(STAMP)

$(AIRFLOW_HOME)/airflow.db: $(STAMP)
	@mkdir -p $(AIRFLOW_HOME) $(WASHLINE_DATA)/staging
	$(BIN)/airflow db migrate > $(AIRFLOW_HOME)/db-migrate.log 2>&1 || (tail -n 40 $(AIRFLOW_HOME)/db-migrate.log; exit 1)

airflow-home: $(AIRFLOW_HOME)/airflow.db

land: venv
	$(BIN)/python -m washline.demo land --dataset $(DEMO_SET) --ds $(DEMO_DS)

# Each night: land its data set alone for its date, `airflow dags test`, print the summary
# (log: $(WASHLINE_DATA)/demo-<ds>.log). A night before an already published one is kept, not rerun.
demo: airflow-home
	@for night in $(DEMO_NIGHTS); do \
	  $(BIN)/python -m washline.demo night --dataset $${night%%:*} --ds $${night##*:} || exit 1; echo; done

# Both on PYTEST_WORKERS pytest-xdist workers (one Spark session each), whole modules per worker
# (module fixtures share one DAG run or one Spark job across their asserts), heaviest modules first
# (tests/conftest.py orders them; --no-loadscope-reorder keeps that order). PYTEST_WORKERS=0: one process.
# test-fast: no Spark and no Airflow run (markers spark, airflow).
PYTEST_WORKERS ?= 2
PYTEST_XDIST    = $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder)

test: airflow-home
	$(BIN)/python -m pytest $(PYTEST_XDIST) $(PYTEST_ARGS)

test-fast: airflow-home
	$(BIN)/python -m pytest $(PYTEST_XDIST) -m "not spark and not airflow" $(PYTEST_ARGS)

# Airflow as a local service: api-server (UI + REST + execution API), scheduler
# with LocalExecutor, dag-processor and triggerer, listening on 127.0.0.1 only.
# Tasks call back to the execution API, so its URL must match the port.
up: airflow-home
	@mkdir -p $(RUN_DIR)
	@export AIRFLOW__API__HOST=127.0.0.1 AIRFLOW__API__PORT=$(AIRFLOW_PORT) AIRFLOW__API__WORKERS=1 \
	  AIRFLOW__CORE__EXECUTION_API_SERVER_URL=http://127.0.0.1:$(AIRFLOW_PORT)/execution/ \
	  AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=$(AIRFLOW_USER):admin; \
	for svc in $(SERVICES); do \
	  if [ -f $(RUN_DIR)/$$svc.pid ] && kill -0 $$(cat $(RUN_DIR)/$$svc.pid) 2>/dev/null; then \
	    echo "$$svc already running (pid $$(cat $(RUN_DIR)/$$svc.pid))"; continue; fi; \
	  setsid $(BIN)/airflow $$svc > $(RUN_DIR)/$$svc.log 2>&1 < /dev/null & echo $$! > $(RUN_DIR)/$$svc.pid; \
	done
	@$(BIN)/python -m washline.service wait --url http://127.0.0.1:$(AIRFLOW_PORT)/api/v2/version --timeout 180 || \
	  (echo "api-server did not come up; see $(RUN_DIR)/api-server.log"; tail -n 30 $(RUN_DIR)/api-server.log; exit 1)
	@echo "Airflow is up: http://127.0.0.1:$(AIRFLOW_PORT)  user $(AIRFLOW_USER), password in $(AIRFLOW_HOME)/simple_auth_manager_passwords.json.generated"
	@echo "logs: $(RUN_DIR)/*.log   stop with: make down"

down:
	@for svc in $(SERVICES); do \
	  if [ -f $(RUN_DIR)/$$svc.pid ]; then pid=$$(cat $(RUN_DIR)/$$svc.pid); \
	    kill -TERM -- -$$pid 2>/dev/null && echo "stopping $$svc (pid $$pid)"; fi; done; \
	for i in $$(seq 1 30); do alive=0; for svc in $(SERVICES); do \
	  [ -f $(RUN_DIR)/$$svc.pid ] && kill -0 $$(cat $(RUN_DIR)/$$svc.pid) 2>/dev/null && alive=1; done; \
	  [ $$alive = 0 ] && break; sleep 1; done; \
	for svc in $(SERVICES); do [ -f $(RUN_DIR)/$$svc.pid ] && kill -KILL -- -$$(cat $(RUN_DIR)/$$svc.pid) 2>/dev/null; \
	  rm -f $(RUN_DIR)/$$svc.pid; done; echo "Airflow stopped"

# `eval "$$(make -s env)"` gives your shell the same Airflow settings as make.
env:
	@for v in AIRFLOW_HOME WASHLINE_DATA AIRFLOW__CORE__DAGS_FOLDER AIRFLOW__CORE__PLUGINS_FOLDER \
	  AIRFLOW__CORE__LOAD_EXAMPLES AIRFLOW__CORE__PARALLELISM AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION \
	  AIRFLOW__LOGGING__LOGGING_LEVEL AIRFLOW_CONN_SPARK_DEFAULT AIRFLOW_CONN_WASHLINE_STAGING; do \
	  printf "export %s='%s'\n" "$$v" "$${!v}"; done
	@echo 'export PATH="$(BIN):$$PATH"'

clean:
	rm -rf $(VENV) $(AIRFLOW_HOME) $(WASHLINE_DATA)
