# supportbot: `make run` sets everything up and serves the product; `make test` runs the whole suite.
SHELL := /bin/bash
PY := .venv/bin/python
export SUPPORTBOT_PGDATA ?= /var/lib/supportbot/pgdata
export SUPPORTBOT_PGPORT ?= 54329
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: setup db stop run worker test test-llm lint docs bench bench-workers

setup:
	@scripts/setup.sh

db: setup
	@scripts/db.sh

stop:
	@scripts/pg.sh stop $(SUPPORTBOT_PGDATA)

# The demo (the sample help centre, its glossary, policy, decision and fusion) goes into the collection helpcentre
# and nowhere else: `ingest` refuses to put other articles there, and every other collection is left alone. The
# chat serves CHAT_COLLECTION (default helpcentre): `make run CHAT_COLLECTION=mine` serves a collection of your
# own (a variable set on make's command line, or exported, reaches the commands' environment as it is;
# ensure_staff says which collection is served, and warns when it does not exist).
run: db
	$(PY) manage.py ingest knowledge/sample/helpcentre --collection helpcentre
	$(PY) manage.py voice helpcentre --load knowledge/sample/helpcentre_voice.json
	$(PY) manage.py glossary knowledge/sample/glossary.tsv --collection helpcentre
	$(PY) manage.py policy conversations/sample/policy.md --collection helpcentre
	$(PY) manage.py load_customers customers/sample/customers.json
	$(PY) manage.py calibrate --collection helpcentre --if-missing --signals conversations/sample/helpcentre_signals.json
	$(PY) manage.py fit_fusion --collection helpcentre --if-missing --load knowledge/sample/helpcentre_fusion.json
	$(PY) manage.py ensure_staff --base-url http://$(HOST):$(PORT)
	$(PY) manage.py runserver $(HOST):$(PORT)

# Chat turns and ingestion in Celery worker processes, with beat for scheduled re-syncs (needs REDIS_URL;
# run `make run` with the same REDIS_URL: CHAT_TURN_RUNNER and INGEST_RUNNER are "celery" once it is set).
# WORKERS processes, one task each at a time. Run beat (-B) in one worker only: see README.
WORKERS ?= 1
worker: setup
	@mkdir -p var
	$(PY) -m celery -A supportbot worker -Q turns,ingest -c $(WORKERS) -B -s var/celerybeat-schedule -l info

test:
	@scripts/setup.sh test
	@scripts/test.sh $(PYTEST_ARGS)

# Only the tests that drive a real local model server (part of `make test` too).
test-llm:
	@scripts/setup.sh test
	@scripts/test.sh -m llm $(PYTEST_ARGS)

lint:
	@scripts/setup.sh test
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy

# The documentation site from docs/ into var/site, strict (a broken link or anchor fails); the generated pages
# (configuration, commands, evaluation figures) are written again first.
docs:
	@scripts/setup.sh test
	$(PY) -m lab.docs_pages
	.venv/bin/properdocs build --strict

bench: db
	$(PY) manage.py bench ingest $(BENCH_ARGS)

# Documents per minute through the ingestion workers at 1 and 2 processes (needs REDIS_URL).
bench-workers: db
	$(PY) manage.py bench workers $(BENCH_ARGS)
